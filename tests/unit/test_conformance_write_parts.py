"""The write runner's parts: DV file names, the stats comparison, sample rows, the report, the worker pool."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import orjson
import pyarrow as pa
import pytest

from conformance.sample_rows import ROWS, sample_table, sample_value
from conformance.version_state import VersionState, dv_file, z85_decode
from conformance.workers import TIMED_OUT, run_all
from conformance.write_report import report
from conformance.write_result import FAILED, PASSED, REFUSED, UNREADABLE, Step, WriteResult
from conformance.writes import clustering_columns
from deltalog.actions import DomainMetadata, Metadata
from deltalog.arrow.schema import to_arrow_schema
from tests.unit.conformance_worker_fns import answer_or_hang, boom, die


# ---------------------------------------------------------------------------------------------- DV file names
def test_dv_file_names_follow_the_protocol_examples() -> None:
    # PROTOCOL.md "Deletion Vector Descriptor Schema": prefix "ab", then a Z85-encoded UUID
    dv = {"storage_type": "u", "path_or_inline_dv": "ab^-aqEH.-t@S}K{vb[*k^"}
    assert dv_file(dv) == "ab/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin"
    bare = {"storage_type": "u", "path_or_inline_dv": "vBn[lx{q8@P<9BNH/isA"}
    assert dv_file(bare) == "deletion_vector_61d16c75-6994-46b7-a15b-8b538852e50e.bin"
    assert dv_file({"storage_type": "p", "path_or_inline_dv": "file:///t/x%20y.bin"}) == "/t/x y.bin"
    assert dv_file({"storage_type": "i", "path_or_inline_dv": "wi5b=000010000siXQKl0"}) is None


def test_z85_decodes_the_rfc_example() -> None:
    # ZeroMQ RFC 32: "HelloWorld" is the 8 bytes 86 4F D2 6F B5 59 F7 5B
    assert z85_decode("HelloWorld") == bytes.fromhex("864FD26FB559F75B")
    with pytest.raises(ValueError, match="multiple of 5"):
        z85_decode("abc")


# ---------------------------------------------------------------------------------------------- comparing stats
def _state(stats: dict | None, configuration: dict[str, str]) -> VersionState:
    metadata = Metadata(id="t", schema_string='{"type":"struct","fields":[]}', configuration=configuration)
    row = ("a.parquet", (), 1, 1, None, None, None, None, None, None if stats is None else orjson.dumps(stats))
    return VersionState(1, None, metadata, (row,), (), (), frozenset())


FULL = {"numRecords": 2, "minValues": {"d": 1.5, "s": "a"}, "maxValues": {"d": 2.5, "s": "b"}}
FEWER = {"numRecords": 2, "minValues": {"s": "a"}, "maxValues": {"s": "b"}}


def test_stats_must_match_exactly_when_checkpoints_keep_json_stats() -> None:
    assert _state(FULL, {}).differences(_state(FULL, {})) == []
    (diff,) = _state(FULL, {}).differences(_state(FEWER, {}))
    assert diff.startswith("files: 1 gone or changed")


def test_without_json_stats_in_checkpoints_fewer_stats_pass_but_different_ones_fail() -> None:
    off = {"delta.checkpoint.writeStatsAsJson": "false"}
    assert _state(FULL, off).differences(_state(FEWER, off)) == []
    assert _state(FULL, off).differences(_state(None, off)) == []
    wrong = {**FEWER, "minValues": {"s": "z"}}
    assert len(_state(FULL, off).differences(_state(wrong, off))) == 1


# ---------------------------------------------------------------------------------------------- sample rows
SCHEMA = {
    "type": "struct",
    "fields": [
        {"name": "i", "type": "integer", "nullable": False, "metadata": {}},
        {"name": "d", "type": "decimal(3,3)", "nullable": True, "metadata": {}},
        {"name": "e", "type": "decimal(1,0)", "nullable": True, "metadata": {}},
        {"name": "ts", "type": "timestamp", "nullable": True, "metadata": {}},
        {"name": "ntz", "type": "timestamp_ntz", "nullable": True, "metadata": {}},
        {"name": "v", "type": "void", "nullable": True, "metadata": {}},
        {
            "name": "s",
            "type": {
                "type": "struct",
                "fields": [{"name": "x", "type": "string", "nullable": False, "metadata": {}}],
            },
            "nullable": True,
            "metadata": {},
        },
        {
            "name": "a",
            "type": {"type": "array", "elementType": "long", "containsNull": False},
            "nullable": False,
            "metadata": {},
        },
        {
            "name": "m",
            "type": {"type": "map", "keyType": "string", "valueType": "binary", "valueContainsNull": True},
            "nullable": True,
            "metadata": {},
        },
        {"name": "g", "type": "long", "nullable": True, "metadata": {"delta.generationExpression": "i + 1"}},
    ],
}


def test_sample_rows_fit_every_type_and_are_null_only_where_allowed() -> None:
    table = sample_table(SCHEMA, to_arrow_schema(SCHEMA))
    assert table.num_rows == ROWS
    assert "g" not in table.column_names  # generated: the writer computes it
    rows = table.to_pylist()
    assert [r["i"] for r in rows] == [1, 2, 3]  # positive, never null
    assert [r["d"] for r in rows] == [Decimal("0.001"), Decimal("0.002"), None]  # fits decimal(3,3)
    assert [r["e"] for r in rows] == [Decimal(1), Decimal(2), None]
    assert rows[0]["ts"] == dt.datetime(2024, 1, 1, 12, 0, 0, tzinfo=dt.timezone.utc)
    assert rows[0]["ntz"] == dt.datetime(2024, 1, 1, 12, 0, 0)
    assert all(r["v"] is None for r in rows)
    assert rows[0]["s"] == {"x": "s0"} and rows[2]["s"] is None
    assert rows[2]["a"] == [3, 3]  # neither the column nor its elements may be null
    assert rows[0]["m"] == [("s0", None)]


def test_sample_rows_without_nulls() -> None:
    table = sample_table(SCHEMA, to_arrow_schema(SCHEMA), nulls=False)
    assert all(v is not None for name, v in table.to_pylist()[-1].items() if name != "v")


def test_sample_value_refuses_a_type_it_does_not_know() -> None:
    with pytest.raises(ValueError, match="interval"):
        sample_value("interval", 0, nulls=False)
    assert sample_value("variant", 0, nulls=False) == {"metadata": b"\x01\x00\x00", "value": b"\x00"}
    assert pa.array([sample_value("variant", 0, nulls=False)]).type.num_fields == 2


def test_clustering_columns_come_from_the_clustering_domain() -> None:
    domain = DomainMetadata("delta.clustering", '{"clusteringColumns":[["a"],["s","x"]]}', False)
    assert clustering_columns({"delta.clustering": domain}) == [["a"], ["s", "x"]]
    assert clustering_columns({"delta.clustering": DomainMetadata("delta.clustering", "not json", False)}) == []
    assert clustering_columns({}) == []


# ---------------------------------------------------------------------------------------------- the report
def _result(name: str, status: str) -> WriteResult:
    r = WriteResult(name, ["deletionVectors"] if status != PASSED else ["appendOnly"])
    if status == REFUSED:
        why = "the table uses writer feature 'deletionVectors'"
        r.steps.append(Step("checkpoint", REFUSED, why, "deletionVectors"))
    elif status == FAILED:
        r.failures.append("v3 changed: files")
    elif status == UNREADABLE:
        r.unreadable = "CorruptLogError"
    return r


def test_report_counts_refusals_apart_and_ends_with_the_grep_line() -> None:
    results = [_result("a", PASSED), _result("b", REFUSED), _result("c", REFUSED), _result("d", UNREADABLE)]
    lines, ok = report(results)
    assert ok
    assert lines[-1] == "1 passed, 0 failed"
    assert lines[-2] == "conformance writes: 4 tables: 1 passed, 2 refused, 0 failed, 1 unreadable (skipped)"
    assert "refused b: maintenance refused, append passed" in lines
    assert "        - refused: checkpoint: the table uses writer feature 'deletionVectors'" in lines
    header = next(line for line in lines if line.startswith("writer feature"))
    assert header.split() == ["writer", "feature", *["passed", "refused", "failed"] * 2]
    assert lines[lines.index(header) - 1].split() == ["maintenance", "append"]
    row = next(line for line in lines if line.startswith("deletionVectors"))
    assert row.split() == ["deletionVectors", "0", "2", "0", "2", "0", "0"]  # maintenance refused, append passed
    steps = next(line for line in lines if line.startswith("checkpoint "))
    assert steps.split() == ["checkpoint", "0", "2", "0", "0"]
    assert "maintenance (checkpoint, cleanup, vacuum): 1 passed, 2 refused, 0 failed" in lines
    assert "append: 3 passed, 0 refused, 0 failed" in lines


def test_a_step_failure_fails_its_own_group_and_any_other_failure_both() -> None:
    r = WriteResult("t", ["appendOnly"])
    r.steps += [Step("checkpoint", PASSED), Step("append", FAILED, "KeyError: 'x'")]
    r.failures.append("append: KeyError: 'x'")
    assert (r.maintenance, r.append, r.status) == (PASSED, FAILED, FAILED)
    r.failures.append("protocol violation introduced (at the end): ...")
    assert (r.maintenance, r.append) == (FAILED, FAILED)


def test_report_fails_on_any_failure_and_on_nothing_checked() -> None:
    lines, ok = report([_result("a", PASSED), _result("x", FAILED)])
    assert not ok
    assert lines[-1] == "1 passed, 1 failed"
    assert "FAIL    x (0.0s): maintenance failed, append failed" in lines and "        - v3 changed: files" in lines
    assert report([_result("d", UNREADABLE)])[1] is False
    assert report([])[1] is False


# ---------------------------------------------------------------------------------------------- the workers
def test_a_hung_input_times_out_and_the_others_still_run() -> None:
    seen: list[int] = []
    out = run_all(answer_or_hang, [0, -1, 2, 3], workers=2, timeout=10, on_result=lambda i, _: seen.append(i))
    assert out == [0, TIMED_OUT, 2, 3]
    assert sorted(seen) == [0, 1, 2, 3]


def test_a_worker_that_dies_or_raises_is_that_input_s_result_only() -> None:
    assert run_all(die, [3], workers=1, timeout=60) == ["worker died: exit code 3"]
    assert run_all(boom, [1, 2], workers=1, timeout=60) == ["worker error: KeyError: 'boom'"] * 2
    assert run_all(answer_or_hang, [], workers=2, timeout=1) == []
