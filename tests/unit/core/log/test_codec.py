"""The JSON spelling of actions: round trips, Delta's key names, omitted nulls, tolerance of the unknown."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deltalog.core import actions as A
from deltalog.core.log.codec import ActionDecodeError, decode_commit, decode_line, encode_actions, encode_line, to_dict
from deltalog.errors import CorruptLogError, InvalidArgumentError

SETTINGS = settings(max_examples=200, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])

# orjson refuses lone surrogates, and Delta strings are UTF-8: generate only encodable text.
text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
names = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=8)
longs = st.integers(min_value=-(2**63), max_value=2**63 - 1)
nonneg = st.integers(min_value=0, max_value=2**63 - 1)
opt = st.none  # shorthand: st.none() | x

string_maps = st.dictionaries(names, st.none() | text, max_size=4)
tag_maps = st.dictionaries(names, text, max_size=3)

dvs = st.builds(
    A.DeletionVector,
    storage_type=st.sampled_from(["u", "i", "p"]),
    path_or_inline_dv=names,
    size_in_bytes=st.integers(min_value=0, max_value=2**31 - 1),
    cardinality=nonneg,
    offset=st.none() | st.integers(min_value=0, max_value=2**31 - 1),
)

stats_text = st.none() | st.builds(
    lambda n, lo, hi: orjson.dumps({"numRecords": n, "minValues": {"a": lo}, "maxValues": {"a": hi}}).decode(),
    nonneg,
    longs,
    longs,
)

adds = st.builds(
    A.Add,
    path=names,
    partition_values=string_maps,
    size=nonneg,
    modification_time=nonneg,
    data_change=st.booleans(),
    stats=stats_text,
    tags=st.none() | tag_maps,
    deletion_vector=st.none() | dvs,
    base_row_id=st.none() | nonneg,
    default_row_commit_version=st.none() | nonneg,
    clustering_provider=st.none() | st.just("liquid"),
)

removes = st.builds(
    lambda a, ts, dc: A.remove_for(a, deletion_timestamp=ts, data_change=dc), adds, nonneg, st.booleans()
)

metadatas = st.builds(
    A.Metadata,
    id=names,
    name=st.none() | text,
    description=st.none() | text,
    format=st.builds(A.Format, provider=st.just("parquet"), options=st.dictionaries(names, text, max_size=2)),
    schema_string=st.none() | st.just('{"type":"struct","fields":[]}'),
    partition_columns=st.lists(names, max_size=3).map(tuple),
    configuration=st.dictionaries(names, text, max_size=3),
    created_time=st.none() | nonneg,
)

features = st.lists(
    st.sampled_from(["deletionVectors", "columnMapping", "v2Checkpoint", "appendOnly"]), max_size=3, unique=True
).map(tuple)
protocols = st.builds(
    A.Protocol,
    min_reader_version=st.integers(1, 3),
    min_writer_version=st.integers(1, 7),
    reader_features=st.none() | features,
    writer_features=st.none() | features,
)

txns = st.builds(A.Txn, app_id=names, version=nonneg, last_updated=st.none() | nonneg)

_CI_KNOWN = {
    "timestamp",
    "inCommitTimestamp",
    "operation",
    "operationParameters",
    "readVersion",
    "isolationLevel",
    "isBlindAppend",
    "operationMetrics",
    "engineInfo",
    "txnId",
    "userMetadata",
}
commit_infos = st.builds(
    A.CommitInfo,
    timestamp=st.none() | nonneg,
    in_commit_timestamp=st.none() | nonneg,
    operation=st.none() | st.sampled_from(["WRITE", "DELETE", "MERGE", "CREATE TABLE"]),
    # Spark writes every parameter value as JSON text, so string values round-trip unchanged.
    operation_parameters=st.none() | st.dictionaries(names, text, max_size=3),
    read_version=st.none() | nonneg,
    isolation_level=st.none() | st.sampled_from(["Serializable", "WriteSerializable"]),
    is_blind_append=st.none() | st.booleans(),
    operation_metrics=st.none() | st.dictionaries(names, text, max_size=3),
    engine_info=st.none() | text,
    txn_id=st.none() | text,
    user_metadata=st.none() | text,
    other=st.dictionaries(
        names.filter(lambda k: k not in _CI_KNOWN), st.none() | st.booleans() | longs | text, max_size=3
    ),
)

domains = st.builds(A.DomainMetadata, domain=names, configuration=text, removed=st.booleans())

cdcs = st.builds(
    A.Cdc,
    path=names,
    partition_values=string_maps,
    size=nonneg,
    data_change=st.just(False),
    tags=st.none() | tag_maps,
)

any_action = st.one_of(adds, removes, metadatas, protocols, txns, commit_infos, domains, cdcs)


# ---------------------------------------------------------------------------------------------- round trips


@SETTINGS
@given(any_action)
def test_decode_inverts_encode(action: A.Action) -> None:
    assert decode_line(encode_line(action)) == [action]


@settings(SETTINGS, max_examples=100)
@given(st.lists(any_action, min_size=1, max_size=6))
def test_commit_bytes_round_trip(actions: list[A.Action]) -> None:
    data = encode_actions(actions)
    assert data.endswith(b"\n")
    assert data.count(b"\n") == len(actions)
    decoded = decode_commit(data, "_delta_log/00000000000000000001.json")
    infos = [a for a in actions if isinstance(a, A.CommitInfo)]
    assert decoded.actions == tuple(a for a in actions if not isinstance(a, A.CommitInfo))
    assert decoded.commit_info == (to_dict(infos[-1])["commitInfo"] if infos else None)


def _walk_keys(value: Any) -> list[str]:
    """Every object key in an encoded action, except inside free-form maps."""
    out: list[str] = []
    if isinstance(value, dict):
        for k, v in value.items():
            out.append(k)
            if k not in (
                "partitionValues",
                "tags",
                "configuration",
                "options",
                "operationParameters",
                "operationMetrics",
            ):
                out.extend(_walk_keys(v))
    return out


@SETTINGS
@given(st.one_of(adds, removes, metadatas, protocols, txns, domains, cdcs))
def test_encoding_uses_camel_case_and_omits_none(action: A.Action) -> None:
    obj = orjson.loads(encode_line(action))
    assert len(obj) == 1
    ((key, body),) = obj.items()
    assert key in {"add", "remove", "metaData", "protocol", "txn", "domainMetadata", "cdc"}
    for k in _walk_keys(body):
        assert "_" not in k, f"snake_case key {k!r} in {obj}"

    # No optional field is written as null; only map values (partition values) may be null.
    def no_null_fields(v: Any, free: bool = False) -> None:
        if isinstance(v, dict):
            for k, x in v.items():
                if not free:
                    assert x is not None, f"field {k!r} written as null in {obj}"
                no_null_fields(x, free=k in ("partitionValues", "tags"))

    no_null_fields(body)


@SETTINGS
@given(adds)
def test_add_always_has_partition_values(add: A.Add) -> None:
    body = orjson.loads(encode_line(add))["add"]
    assert body["partitionValues"] == dict(add.partition_values)
    for required in ("path", "size", "modificationTime", "dataChange"):
        assert required in body


def test_known_action_keys() -> None:
    meta = A.Metadata(id="t")
    assert set(to_dict(meta)) == {"metaData"}
    assert set(to_dict(A.Protocol(1, 2))) == {"protocol"}
    assert set(to_dict(A.Txn("app", 1))) == {"txn"}
    assert set(to_dict(A.CommitInfo(timestamp=1))) == {"commitInfo"}
    assert set(to_dict(A.DomainMetadata("d", "{}"))) == {"domainMetadata"}
    assert set(to_dict(A.Cdc("c", {}, 1))) == {"cdc"}


def test_exact_bytes_of_a_small_add() -> None:
    add = A.Add(path="a%20b.parquet", partition_values={"p": None}, size=1, modification_time=2, data_change=True)
    assert encode_line(add) == (
        b'{"add":{"path":"a%20b.parquet","partitionValues":{"p":null},"size":1,"modificationTime":2,"dataChange":true}}'
    )


def test_add_with_empty_partition_values_writes_empty_object() -> None:
    body = orjson.loads(encode_line(A.Add("f", {}, 1, 1, True)))["add"]
    assert body["partitionValues"] == {}
    assert "stats" not in body and "tags" not in body and "deletionVector" not in body


def test_bare_remove_omits_absent_partition_values() -> None:
    """A remove without extended metadata must not grow a ``partitionValues`` field it never had.

    Only add and cdc always carry ``partitionValues``; for a remove the field is optional and Delta omits
    absent fields (NON_ABSENT), so a bare remove must also survive a round trip unchanged.
    """
    rm = A.Remove(path="x.parquet", deletion_timestamp=5, data_change=True)
    body = orjson.loads(encode_line(rm))["remove"]
    assert "partitionValues" not in body, body
    assert decode_line(encode_line(rm)) == [rm]


def test_commit_info_operation_parameters_are_json_text() -> None:
    ci = A.CommitInfo(operation="WRITE", operation_parameters={"mode": "Append", "partitionBy": ["p"], "n": 3})
    params = orjson.loads(encode_line(ci))["commitInfo"]["operationParameters"]
    assert params == {"mode": "Append", "partitionBy": '["p"]', "n": "3"}


def test_commit_info_keeps_unknown_fields() -> None:
    line = b'{"commitInfo":{"timestamp":7,"clusterId":"c-1","notebook":{"notebookId":"9"}}}'
    (ci,) = decode_line(line)
    assert isinstance(ci, A.CommitInfo)
    assert ci.timestamp == 7
    assert ci.other == {"clusterId": "c-1", "notebook": {"notebookId": "9"}}
    assert orjson.loads(encode_line(ci)) == orjson.loads(line)


# ---------------------------------------------------------------------------------------------- tolerance


@SETTINGS
@given(
    st.one_of(adds, removes, protocols, txns, domains, cdcs),
    st.dictionaries(
        st.text("abcdefghijklmnopqrstuvwxyzQXZ", min_size=1, max_size=6).map(lambda s: "zz" + s),
        st.none() | st.booleans() | longs | text | st.lists(longs, max_size=2),
        min_size=1,
        max_size=3,
    ),
)
def test_unknown_fields_are_ignored(action: A.Action, extra: dict[str, Any]) -> None:
    obj = to_dict(action)
    ((key, body),) = obj.items()
    body = {**body, **extra}
    assert decode_line(orjson.dumps({key: body})) == [action]


@SETTINGS
@given(
    any_action,
    st.sampled_from(["checkpoint", "futureAction", "zzz", "addFile"]),
    st.dictionaries(names, longs, max_size=2),
)
def test_unknown_action_keys_are_ignored(action: A.Action, unknown: str, body: dict[str, int]) -> None:
    assert decode_line(orjson.dumps({unknown: body})) == []
    ((key, known),) = to_dict(action).items()
    assert decode_line(orjson.dumps({unknown: body, key: known})) == [action]


def test_null_optional_fields_read_as_absent() -> None:
    line = (
        b'{"add":{"path":"f","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true,'
        b'"stats":null,"tags":null,"deletionVector":null,"baseRowId":null}}'
    )
    assert decode_line(line) == [A.Add("f", {}, 1, 1, True)]


def test_add_missing_partition_values_reads_as_empty() -> None:
    (add,) = decode_line(b'{"add":{"path":"f","size":1,"modificationTime":1,"dataChange":true}}')
    assert isinstance(add, A.Add) and add.partition_values == {}


@pytest.mark.parametrize(
    "line",
    [
        b'{"add":{"partitionValues":{},"size":1,"modificationTime":1,"dataChange":true}}',
        b'{"txn":{"version":1}}',
        b'{"protocol":{"minWriterVersion":2}}',
        b'{"add":["not","an","object"]}',
        b'{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":"deletionVectors"}}',
    ],
)
def test_malformed_known_actions_raise(line: bytes) -> None:
    with pytest.raises(ActionDecodeError):
        decode_line(line)


@pytest.mark.parametrize("line", [b"[1,2]", b'"add"', b"3", b"null"])
def test_line_must_be_an_object(line: bytes) -> None:
    with pytest.raises(ActionDecodeError):
        decode_line(line)


def test_to_dict_refuses_non_actions() -> None:
    with pytest.raises(TypeError):
        to_dict(object())  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------- commit files

PATH = "_delta_log/00000000000000000007.json"


def test_a_commit_decodes_to_its_commit_info_and_its_other_actions() -> None:
    data = (
        b'{"commitInfo":{"operation":"WRITE","txnId":"t"}}\n\n  \n'
        b'{"add":{"path":"f","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true}}\n'
        b'{"remove":null,"txn":{"appId":"a","version":3}}\n'
        b'{"cdc":{"path":"c","partitionValues":{},"size":1,"dataChange":false},"unknownAction":{"x":1}}\n'
    )
    decoded = decode_commit(data, PATH)
    assert decoded.commit_info == {"operation": "WRITE", "txnId": "t"}
    assert decoded.actions == (
        A.Add("f", {}, 1, 1, True),
        A.Txn("a", 3),
        A.Cdc("c", {}, 1, False),
    )


@pytest.mark.parametrize(
    ("data", "line", "says"),
    [
        (b'{"commitInfo":{}}\n{"add":{"path":"f"\n', 2, "malformed JSON at column"),
        (b'{"commitInfo":{}}\n\n[1]\n', 3, "must be a JSON object"),
        (b'{"txn":{"appId":"a","version":"3"}}\n', 1, "txn"),
        (b'{"commitInfo":{}}\n{"commitInfo":3}\n', 2, "commitInfo"),
    ],
)
def test_a_bad_commit_line_is_corrupt_log_naming_file_and_line(data: bytes, line: int, says: str) -> None:
    with pytest.raises(CorruptLogError) as err:
        decode_commit(data, PATH)
    assert (err.value.path, err.value.line) == (PATH, line)
    assert str(err.value).startswith(f"{PATH} line {line}: ") and says in str(err.value)


def test_a_caller_may_check_lines_first_and_word_its_own_errors() -> None:
    """What the CLI does with a file of actions a user gives: stricter lines, its own error type."""
    seen: list[tuple[int, Any]] = []

    def check(line: int, obj: Any) -> None:
        seen.append((line, obj))
        if "txn" in obj:
            raise InvalidArgumentError(f"input:{line}: no txn here")

    add = b'{"add":{"path":"f","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true}}'
    with pytest.raises(InvalidArgumentError, match=r"^input:3: no txn here$"):
        decode_commit(add + b'\n\n{"txn":{"appId":"a","version":1}}\n', "input", check)
    assert [n for n, _ in seen] == [1, 3]
    with pytest.raises(InvalidArgumentError, match=r"^input:2: malformed JSON at column 1"):
        decode_commit(add + b"\nnot json\n", "input", check, lambda n, why: InvalidArgumentError(f"input:{n}: {why}"))


# ---------------------------------------------------------------------------------------------- remove_for


@SETTINGS
@given(adds, nonneg, st.booleans())
def test_remove_for_copies_the_add(add: A.Add, ts: int, data_change: bool) -> None:
    rm = A.remove_for(add, deletion_timestamp=ts, data_change=data_change)
    assert rm.path == add.path
    assert rm.deletion_timestamp == ts
    assert rm.data_change is data_change
    assert rm.extended_file_metadata is True
    assert rm.partition_values == add.partition_values
    assert rm.size == add.size
    assert rm.stats == add.stats
    assert rm.tags == add.tags
    assert rm.deletion_vector == add.deletion_vector
    assert rm.base_row_id == add.base_row_id
    assert rm.default_row_commit_version == add.default_row_commit_version
    assert add.remove(deletion_timestamp=ts, data_change=data_change) == rm
    body = orjson.loads(encode_line(rm))["remove"]
    assert body["extendedFileMetadata"] is True
    assert body["partitionValues"] == dict(add.partition_values)
    assert body["size"] == add.size


def test_remove_for_defaults_deletion_timestamp_to_now() -> None:
    import time

    before = int(time.time() * 1000)
    rm = A.remove_for(A.Add("f", {}, 1, 1, True))
    after = int(time.time() * 1000)
    assert rm.deletion_timestamp is not None and before <= rm.deletion_timestamp <= after
    assert rm.data_change is True


def test_dv_unique_id() -> None:
    assert A.DeletionVector("u", "ab", 1, 1, offset=4).unique_id == "uab@4"
    assert A.DeletionVector("i", "xyz", 1, 1).unique_id == "ixyz"
    assert A.dv_unique_id("p", "s3://b/dv.bin", 0) == "ps3://b/dv.bin@0"
