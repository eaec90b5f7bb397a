"""``deltalog commit``: actions from a file or stdin become one new version, or nothing at all.

Tables are created through the library (``DeltaLog.create``) so the commit under test is the engine's
real write path; a hand-written log (``logwriter.make_table``) is used only for a protocol the engine
refuses to write. Each failing case also checks that no commit file appeared: "nothing was written" is the contract.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pytest
from click.testing import CliRunner, Result

from deltalog import ConcurrentAppendError, DeltaLog, DeltaLogError, Transaction
from deltalog.cli.main import cli
from deltalog.core.log.codec import decode_line
from tests.unit.logkit import Y2026, protocol, txn
from tests.unit.logwriter import make_table

add, metadata, remove = Y2026.add, Y2026.metadata, Y2026.remove

COMMIT_KEYS = {
    "table",
    "version",
    "attempts",
    "winners",
    "txn_id",
    "operation",
    "skipped",
    "read_version",
    "isolation_level",
    "num_actions",
}
SCHEMA = pa.schema([("id", pa.int64()), ("date", pa.string())])


@pytest.fixture
def table(tmp_path: Path) -> Path:
    """An empty table partitioned by ``date`` at version 0."""
    root = tmp_path / "t"
    DeltaLog.for_table(root).create(SCHEMA, partition_columns=["date"])
    return root


def day_add(name: str, date: str | None = "2026-11-01", size: int = 100) -> dict[str, Any]:
    prefix = f"date={date}" if date is not None else "date=__HIVE_DEFAULT_PARTITION__"
    return add(
        f"{prefix}/{name}.parquet",
        {"date": date},
        size=size,
        stats={"numRecords": 1, "minValues": {"id": 1}, "maxValues": {"id": 1}, "nullCount": {"id": 0}},
    )


def jsonl(actions: Sequence[Mapping[str, Any] | str]) -> bytes:
    """Actions as a commit file; a str is written verbatim (for malformed lines)."""
    return b"".join((a.encode() if isinstance(a, str) else orjson.dumps(a)) + b"\n" for a in actions)


def write(tmp_path: Path, actions: Sequence[Mapping[str, Any] | str], name: str = "actions.jsonl") -> Path:
    path = tmp_path / name
    path.write_bytes(jsonl(actions))
    return path


def run(*args: Any, stdin: bytes | None = None) -> Result:
    return CliRunner().invoke(cli, ["commit", *(str(a) for a in args)], input=stdin)


def ok(*args: Any, stdin: bytes | None = None) -> str:
    result = run(*args, stdin=stdin)
    assert result.exit_code == 0, (result.stdout, result.stderr, result.exception)
    assert result.stderr == ""
    return result.stdout


def as_json(*args: Any, stdin: bytes | None = None) -> Any:
    return orjson.loads(ok(*args, "--json", stdin=stdin))


def fails(*args: Any, code: int = 1, stdin: bytes | None = None) -> str:
    """A failing commit keeps the CLI contract: one ``error:`` line on stderr, nothing on stdout."""
    result = run(*args, stdin=stdin)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == code, (result.exit_code, result.stderr)
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    return lines[0]


def commit_files(root: Path) -> list[str]:
    return sorted(p.name for p in (root / "_delta_log").glob("*.json"))


def latest(root: Path) -> int:
    return DeltaLog.for_table(root).latest_version()


# ------------------------------------------------------------------------------------------- happy path


def test_commit_appends_a_version_that_deltalake_reads(table: Path, tmp_path: Path) -> None:
    actions = write(tmp_path, [day_add("a"), day_add("b", "2026-11-02", 200)])
    doc = as_json(
        table,
        "--actions",
        actions,
        "--operation",
        "WRITE",
        "--operation-parameters",
        '{"mode": "Append", "partitionBy": ["date"]}',
    )
    assert set(doc) == COMMIT_KEYS
    assert doc["table"] == str(table)
    assert (doc["version"], doc["attempts"], doc["winners"], doc["skipped"]) == (1, 1, [], False)
    assert (doc["read_version"], doc["isolation_level"], doc["num_actions"]) == (0, "Serializable", 2)
    assert doc["operation"] == "WRITE"
    snap = DeltaLog.for_table(table).snapshot()
    assert snap.version == 1
    assert sorted(snap.files().column("path").to_pylist()) == ["date=2026-11-01/a.parquet", "date=2026-11-02/b.parquet"]
    info = snap.commit_info or {}
    assert info["txnId"] == doc["txn_id"]
    assert info["operationParameters"] == {"mode": "Append", "partitionBy": '["date"]'}  # Spark's JSON-text values
    assert info["isBlindAppend"] is True

    import deltalake  # installed by scripts/test (dev extra): the peer must read what the CLI committed

    lake = deltalake.DeltaTable(str(table))
    assert lake.version() == 1
    assert sorted(lake.file_uris()) == sorted(str(table / p) for p in snap.files().column("path").to_pylist())


def test_commit_human_output_is_a_short_summary(table: Path, tmp_path: Path) -> None:
    out = ok(table, "--actions", write(tmp_path, [day_add("a")]), "--operation", "WRITE")
    assert out.splitlines()[0] == "Committed"
    for key, value in [
        ("location", str(table)),
        ("version", "1"),
        ("operation", "WRITE"),
        ("actions", "1"),
        ("read version", "0"),
        ("isolation", "Serializable"),
        ("attempts", "1"),
        ("winners", "-"),
    ]:
        assert any(line.split() == [*key.split(), value] for line in out.splitlines()), (key, out)
    assert "txn id" in out


def test_commit_reads_actions_from_stdin(table: Path) -> None:
    doc = as_json(table, "--actions", "-", "--operation", "WRITE", stdin=jsonl([day_add("a"), day_add("b")]))
    assert (doc["version"], doc["num_actions"]) == (1, 2)
    assert DeltaLog.for_table(table).snapshot().num_files == 2


def test_commit_removes_and_adds_in_one_version(table: Path, tmp_path: Path) -> None:
    ok(table, "--actions", write(tmp_path, [day_add("a"), day_add("b")], "v1.jsonl"), "--operation", "WRITE")
    rewrite = [remove("date=2026-11-01/a.parquet"), remove("date=2026-11-01/b.parquet"), day_add("ab")]
    doc = as_json(
        table,
        "--actions",
        write(tmp_path, rewrite, "v2.jsonl"),
        "--operation",
        "OPTIMIZE",
        "--isolation",
        "WriteSerializable",
    )
    assert (doc["version"], doc["num_actions"], doc["isolation_level"]) == (2, 3, "WriteSerializable")
    assert DeltaLog.for_table(table).snapshot().files().column("path").to_pylist() == ["date=2026-11-01/ab.parquet"]


def test_commit_accepts_txn_and_domain_metadata_lines(table: Path, tmp_path: Path) -> None:
    lines = [
        day_add("a"),
        txn("other-app", 4),
        {"domainMetadata": {"domain": "myapp.state", "configuration": '{"k": 1}', "removed": False}},
    ]
    assert as_json(table, "--actions", write(tmp_path, lines), "--operation", "WRITE")["num_actions"] == 3
    snap = DeltaLog.for_table(table).snapshot()
    assert snap.app_version("other-app") == 4
    assert snap.domain_metadata["myapp.state"].configuration == '{"k": 1}'


# ------------------------------------------------------------------------------------------- exactly once


def test_exactly_once_skips_a_version_the_app_already_reached(table: Path, tmp_path: Path) -> None:
    actions = write(tmp_path, [day_add("a")])
    first = as_json(table, "--actions", actions, "--operation", "WRITE", "--app-id", "ingest", "--app-version", 3)
    assert (first["version"], first["num_actions"], first["skipped"]) == (1, 2, False)  # the add + the txn
    assert DeltaLog.for_table(table).snapshot().app_version("ingest") == 3

    again = as_json(table, "--actions", actions, "--operation", "WRITE", "--app-id", "ingest", "--app-version", 3)
    assert set(again) == COMMIT_KEYS
    assert again["skipped"] is True
    assert (again["version"], again["attempts"], again["winners"], again["num_actions"]) == (None, 0, [], 0)
    assert again["read_version"] == 1
    same = ok(table, "--actions", actions, "--operation", "WRITE", "--app-id", "ingest", "--app-version", 3)
    assert same.startswith("skipped: application ingest already reached version 3; nothing was written")
    older = ok(table, "--actions", actions, "--operation", "WRITE", "--app-id", "ingest", "--app-version", 2)
    assert older == (
        f"skipped: application ingest already reached version 3 (asked for 2); nothing was written "
        f"({table} stays at version 1)\n"
    )
    assert latest(table) == 1

    newer = as_json(
        table,
        "--actions",
        write(tmp_path, [day_add("b")], "b.jsonl"),
        "--operation",
        "WRITE",
        "--app-id",
        "ingest",
        "--app-version",
        4,
    )
    assert newer["version"] == 2
    assert DeltaLog.for_table(table).snapshot().app_version("ingest") == 4


@pytest.mark.parametrize("given", [["--app-id", "ingest"], ["--app-version", "3"]])
def test_app_id_and_app_version_go_together(table: Path, tmp_path: Path, given: list[str]) -> None:
    line = fails(table, "--actions", write(tmp_path, [day_add("a")]), "--operation", "WRITE", *given, code=2)
    assert "--app-id and --app-version must be given together" in line
    assert latest(table) == 0


# ------------------------------------------------------------------------------------------- refusals


def test_duplicate_path_is_refused_with_its_rule_and_nothing_written(table: Path, tmp_path: Path) -> None:
    before = commit_files(table)
    line = fails(table, "--actions", write(tmp_path, [day_add("a"), day_add("a")]), "--operation", "WRITE")
    assert line == (
        "error: file date=2026-11-01/a.parquet is added twice in one commit "
        "(rule: no-duplicate-paths; nothing was written)"
    )
    assert commit_files(table) == before


def test_add_and_remove_of_one_path_is_refused(table: Path, tmp_path: Path) -> None:
    lines = [day_add("a"), remove("date=2026-11-01/a.parquet")]
    line = fails(table, "--actions", write(tmp_path, lines), "--operation", "WRITE")
    assert "(rule: no-duplicate-paths; nothing was written)" in line
    assert latest(table) == 0


def test_partition_values_that_do_not_match_the_table_are_refused(table: Path, tmp_path: Path) -> None:
    line = fails(
        table, "--actions", write(tmp_path, [add("x.parquet", {"region": "eu"}, size=1)]), "--operation", "WRITE"
    )
    assert "(rule: partition-values; nothing was written)" in line
    assert latest(table) == 0


def test_commit_info_line_is_refused(table: Path, tmp_path: Path) -> None:
    actions = write(tmp_path, [day_add("a"), {"commitInfo": {"operation": "WRITE"}}])
    line = fails(table, "--actions", actions, "--operation", "WRITE")
    assert line == (
        f"error: {actions}:2: a commitInfo line cannot be committed: the transaction writes its own "
        "(rule: no-reserved-actions; nothing was written)"
    )
    assert latest(table) == 0


@pytest.mark.parametrize(
    ("lines", "where", "says"),
    [
        ([day_add("a"), '{"add": {"path": "b"'], 2, "malformed JSON at column"),
        (["", day_add("a"), "", "[1, 2]"], 4, "a line must be a JSON object holding exactly one action"),
        ([{"add": day_add("a")["add"], "remove": {"path": "z"}}], 1, "exactly one action"),
        ([{"ad": {"path": "a"}}], 1, "unknown action 'ad'"),
        ([{"add": "a.parquet"}], 1, "add must be a JSON object"),
        (
            [{"add": {"path": "a", "partitionValues": {"date": "x"}, "modificationTime": 1, "dataChange": True}}],
            1,
            "required field 'size' is missing",
        ),
        ([{"add": {**day_add("a")["add"], "size": "100"}}], 1, 'add.size must be an integer, not "100"'),
        ([{"add": {**day_add("a")["add"], "dataChange": 1}}], 1, "add.dataChange must be true or false"),
        ([{"add": {**day_add("a")["add"], "size": True}}], 1, "add.size must be an integer"),
        (
            [{"add": {**day_add("a")["add"], "partitionValues": {"date": 5}}}],
            1,
            "add.partitionValues must be an object of strings or nulls",
        ),
        ([{"add": {**day_add("a")["add"], "path": ""}}], 1, "add.path is empty"),
        ([{"txn": {"appId": "a", "version": "7"}}], 1, 'txn.version must be an integer, not "7"'),
        ([{"remove": {"path": 3}}], 1, "remove.path must be a string"),
        ([{"checkpointMetadata": {"version": 1}}], 1, "belongs only in checkpoints"),
    ],
)
def test_a_bad_line_is_named_by_file_and_line(
    table: Path, tmp_path: Path, lines: list[Any], where: int, says: str
) -> None:
    actions = write(tmp_path, lines)
    line = fails(table, "--actions", actions, "--operation", "WRITE")
    assert line.startswith(f"error: {actions}:{where}: "), line
    assert says in line
    assert latest(table) == 0


def test_a_bad_stdin_line_is_named_as_stdin(table: Path) -> None:
    line = fails(table, "--actions", "-", "--operation", "WRITE", stdin=b"\n\nnot json\n")
    assert line.startswith("error: <stdin>:3: malformed JSON")


def test_an_empty_file_is_refused(table: Path, tmp_path: Path) -> None:
    """An empty input is more often a failed producer than a wish to commit nothing (and mark a batch done)."""
    actions = write(tmp_path, [])
    assert fails(table, "--actions", actions, "--operation", "WRITE", "--app-id", "a", "--app-version", 1) == (
        f"error: {actions} holds no actions: nothing to commit"
    )
    assert fails(table, "--actions", "-", "--operation", "WRITE", stdin=b"\n \n") == (
        "error: <stdin> holds no actions: nothing to commit"
    )
    assert latest(table) == 0


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--operation-parameters", "[1]"], "must be a JSON object"),
        (["--operation-parameters", "{nope"], "not valid JSON"),
        (["--isolation", "SnapshotIsolation"], "--isolation"),
        (["--app-version", "-1", "--app-id", "a"], "--app-version"),
        (["--read-where", "date"], "is not COLUMN=VALUE"),
    ],
)
def test_usage_errors_exit_2(table: Path, tmp_path: Path, extra: list[str], says: str) -> None:
    line = fails(table, "--actions", write(tmp_path, [day_add("a")]), "--operation", "WRITE", *extra, code=2)
    assert says in line
    assert latest(table) == 0


def test_missing_actions_file_and_missing_options_are_usage_errors(table: Path, tmp_path: Path) -> None:
    assert "does not exist" in fails(table, "--actions", tmp_path / "nope.jsonl", "--operation", "WRITE", code=2)
    assert "--operation" in fails(table, "--actions", write(tmp_path, [day_add("a")]), code=2)
    assert "--actions" in fails(table, "--operation", "WRITE", code=2)


def test_no_table_is_exit_1(tmp_path: Path) -> None:
    line = fails(tmp_path / "none", "--actions", write(tmp_path, [day_add("a")]), "--operation", "WRITE")
    assert "no Delta table" in line


def test_unknown_read_where_column_is_exit_1(table: Path, tmp_path: Path) -> None:
    line = fails(table, "--actions", write(tmp_path, [day_add("a")]), "--operation", "WRITE", "--read-where", "x=1")
    assert "unknown column 'x'" in line
    assert latest(table) == 0


def test_unsupported_writer_feature_is_exit_1(tmp_path: Path) -> None:
    root = make_table(tmp_path / "fancy", [[protocol(1, 7, writer_features=["fancyNewThing"]), metadata()]])
    line = fails(root, "--actions", write(tmp_path, [add("a.parquet")]), "--operation", "WRITE")
    assert "writer feature 'fancyNewThing'" in line
    assert commit_files(root) == ["00000000000000000000.json"]


# ------------------------------------------------------------------------------------------- conflicts


def land_between_read_and_commit(monkeypatch: pytest.MonkeyPatch, root: Path, actions: list[dict[str, Any]]) -> None:
    """After the CLI's transaction records its read, another writer commits ``actions`` (a real commit).

    This is the race ``--read-where`` exists for, placed deterministically: the transaction's snapshot is
    then one version behind, and its commit must check that winner.
    """
    real_read = Transaction.read

    def read_then_race(self: Transaction, where: Any = None) -> pa.Table:
        files = real_read(self, where)
        other = DeltaLog.for_table(root).start_transaction()
        other.commit([a for line in actions for a in decode_line(orjson.dumps(line))], operation="WRITE")
        return files

    monkeypatch.setattr(Transaction, "read", read_then_race)


def test_concurrent_append_into_the_read_partition_conflicts(
    table: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    land_between_read_and_commit(monkeypatch, table, [day_add("theirs", "2026-11-01")])
    line = fails(
        table,
        "--actions",
        write(tmp_path, [day_add("ours", "2026-11-01")]),
        "--operation",
        "WRITE",
        "--read-where",
        "date=2026-11-01",
    )
    assert line.startswith("error: conflict (ConcurrentAppendError): ")
    assert "date=2026-11-01/theirs.parquet" in line
    assert line.endswith("; nothing was written")
    assert latest(table) == 1  # the winner only
    assert DeltaLog.for_table(table).snapshot().files().column("path").to_pylist() == ["date=2026-11-01/theirs.parquet"]


def test_concurrent_append_elsewhere_is_retried_past(
    table: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    land_between_read_and_commit(monkeypatch, table, [day_add("theirs", "2026-11-02")])
    doc = as_json(
        table,
        "--actions",
        write(tmp_path, [day_add("ours", "2026-11-01")]),
        "--operation",
        "WRITE",
        "--read-where",
        "date=2026-11-01",
        "--read-where",
        "date=2026-11-03",
    )
    assert (doc["version"], doc["attempts"], doc["winners"], doc["read_version"]) == (2, 2, [1], 0)


def test_read_where_with_a_column_twice_reads_both_partitions(
    table: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    land_between_read_and_commit(monkeypatch, table, [day_add("theirs", "2026-11-03")])
    line = fails(
        table,
        "--actions",
        write(tmp_path, [day_add("ours")]),
        "--operation",
        "WRITE",
        "--read-where",
        "date=2026-11-01",
        "--read-where",
        "date=2026-11-03",
    )
    assert "ConcurrentAppendError" in line


def test_read_where_empty_value_reads_the_null_partition(
    table: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    land_between_read_and_commit(monkeypatch, table, [day_add("theirs", None)])
    line = fails(
        table, "--actions", write(tmp_path, [day_add("ours")]), "--operation", "WRITE", "--read-where", "date="
    )
    assert "ConcurrentAppendError" in line


def test_write_serializable_lets_a_concurrent_blind_append_through(
    table: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only the writes need a serial order there: the blind append could have landed after this commit."""
    land_between_read_and_commit(monkeypatch, table, [day_add("theirs")])
    doc = as_json(
        table,
        "--actions",
        write(tmp_path, [day_add("ours")]),
        "--operation",
        "WRITE",
        "--read-where",
        "date=2026-11-01",
        "--isolation",
        "WriteSerializable",
    )
    assert (doc["version"], doc["winners"], doc["isolation_level"]) == (2, [1], "WriteSerializable")


def test_without_read_where_a_blind_append_never_conflicts(
    table: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_start = DeltaLog.start_transaction

    def start_then_race(self: DeltaLog, *args: Any, **kwargs: Any) -> Transaction:
        started = real_start(self, *args, **kwargs)
        real_start(DeltaLog.for_table(table)).commit(decode_line(orjson.dumps(day_add("theirs"))), operation="WRITE")
        return started

    monkeypatch.setattr(DeltaLog, "start_transaction", start_then_race)
    doc = as_json(table, "--actions", write(tmp_path, [day_add("ours")]), "--operation", "WRITE")
    assert (doc["version"], doc["winners"]) == (2, [1])


def test_library_conflict_when_an_append_lands_in_what_was_read(table: Path) -> None:
    """The same race through the library alone: read a partition, another writer appends there, commit fails."""
    log = DeltaLog.for_table(table)
    txn_ = log.start_transaction()
    txn_.read(where={"date": "2026-11-01"})
    DeltaLog.for_table(table).start_transaction().commit(decode_line(orjson.dumps(day_add("theirs"))))
    with pytest.raises(ConcurrentAppendError) as caught:
        txn_.commit(decode_line(orjson.dumps(day_add("ours"))))
    assert caught.value.winning_version == 1
    assert latest(table) == 1


# ------------------------------------------------------------------------------------------- engine gap


def test_engine_refuses_an_ill_typed_txn_version(table: Path) -> None:
    """A ``txn`` whose version is the string "7" must never be committed: afterwards the app's exactly-once
    check would compare a str with an int. ``decode_line`` refuses it with a DeltaLogError."""
    log = DeltaLog.for_table(table)
    with pytest.raises(DeltaLogError):
        log.start_transaction().commit(decode_line(b'{"txn": {"appId": "a", "version": "7"}}'))
    assert latest(table) == 0
