"""The ``_last_checkpoint`` hint: the spec's JSON checksum, parsing, and rejection of doubtful copies."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deltalog.core.log.last_checkpoint import HintError, LastCheckpoint, checksum, parse
from tests.corpus import corpus_dir

SETTINGS = settings(max_examples=200, deadline=None, database=None)
SPEC_VECTOR = (
    '{"k0":"\'v 0\'", "checksum": "adsaskfljadfkjadfkj", "k1":{"k2": 2, "k3": ["v3", [1, 2], '
    '{"k4": "v4", "k5": ["v5", "v6", "v7"]}]}}'
)
SPEC_CHECKSUM = "6a92d155a59bf2eecbd4b4ec7fd1f875"


# ---------------------------------------------------------------------------------------------- reference

_UNRESERVED = set(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


def _url(s: str) -> str:
    return "".join(chr(b) if b in _UNRESERVED else f"%{b:02X}" for b in s.encode("utf-8"))


def _ref_entries(value: Any, path: list[str], out: list[tuple[str, str]]) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            _ref_entries(v, [*path, f'"{_url(k)}"'], out)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _ref_entries(v, [*path, str(i)], out)
    elif isinstance(value, bool):
        out.append(("+".join(path), "true" if value else "false"))
    elif value is None:
        out.append(("+".join(path), "null"))
    elif isinstance(value, str):
        out.append(("+".join(path), f'"{_url(value)}"'))
    else:
        out.append(("+".join(path), str(value)))


def reference_checksum(obj: dict[str, Any], spark_order: bool = True) -> str:
    """An independent implementation of the spec's algorithm (Spark sorts whole ``path=value`` strings)."""
    entries: list[tuple[str, str]] = []
    _ref_entries({k: v for k, v in obj.items() if k != "checksum"}, [], entries)
    lines = sorted(f"{p}={v}" for p, v in entries) if spark_order else [f"{p}={v}" for p, v in sorted(entries)]
    return hashlib.md5(",".join(lines).encode("utf-8")).hexdigest()


def spark_shaped_hint(version: int = 10) -> dict[str, Any]:
    """What Delta Spark writes: version/size first, sizes, a checkpoint schema with nested structs, maps,
    empty metadata objects and booleans, plus tags."""

    def field(name: str, t: Any) -> dict[str, Any]:
        return {"name": name, "type": t, "nullable": True, "metadata": {}}

    string_map = {"type": "map", "keyType": "string", "valueType": "string", "valueContainsNull": True}
    schema = {
        "type": "struct",
        "fields": [
            field("txn", {"type": "struct", "fields": [field("appId", "string"), field("version", "long")]}),
            field(
                "add",
                {
                    "type": "struct",
                    "fields": [
                        field("path", "string"),
                        field("partitionValues", string_map),
                        field("size", "long"),
                        field("dataChange", "boolean"),
                        field("stats", "string"),
                    ],
                },
            ),
            field(
                "protocol",
                {
                    "type": "struct",
                    "fields": [
                        field("minReaderVersion", "integer"),
                        field("readerFeatures", {"type": "array", "elementType": "string", "containsNull": True}),
                    ],
                },
            ),
        ],
    }
    return {
        "version": version,
        "size": 13,
        "sizeInBytes": 14800,
        "numOfAddFiles": 1,
        "checkpointSchema": schema,
        "tags": {"author": "J\u00fcrgen / ops", "empty": ""},
    }


# ---------------------------------------------------------------------------------------------- checksum


def test_spec_test_vector() -> None:
    obj = orjson.loads(SPEC_VECTOR)
    assert checksum(obj) == SPEC_CHECKSUM
    assert reference_checksum(obj) == SPEC_CHECKSUM


def test_spec_vector_checksum_key_is_ignored() -> None:
    obj = orjson.loads(SPEC_VECTOR)
    without = {k: v for k, v in obj.items() if k != "checksum"}
    assert checksum(without) == SPEC_CHECKSUM
    # ... and a hint carrying the correct checksum parses
    hint = {"version": 3, **without}
    hint["checksum"] = reference_checksum(hint)
    assert parse(orjson.dumps(hint)).version == 3


def test_spark_shaped_hint_always_runs() -> None:
    hint = spark_shaped_hint()
    expected = reference_checksum(hint)
    assert checksum(hint) == expected
    hint["checksum"] = expected
    parsed = parse(orjson.dumps(hint))
    assert parsed == LastCheckpoint(
        version=10, size=13, parts=None, size_in_bytes=14800, num_of_add_files=1, checksum=expected, raw=hint
    )


def test_spark_order_for_long_scalar_arrays() -> None:
    """With 11+ scalars in an array, Spark's whole-string order differs from the spec's path order."""
    features = [f"f{i}" for i in range(12)]
    hint = {"version": 4, "size": 3, "v2Checkpoint": {"nonFileActions": [{"protocol": {"writerFeatures": features}}]}}
    spark, spec = reference_checksum(hint, spark_order=True), reference_checksum(hint, spark_order=False)
    assert spark != spec
    assert checksum(hint) == spark
    assert parse(orjson.dumps({**hint, "checksum": spark})).version == 4


json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.text(st.characters(blacklist_categories=("Cs",)), max_size=8)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(st.characters(blacklist_categories=("Cs",)), max_size=6), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(SETTINGS, max_examples=100)
@given(st.dictionaries(st.text(st.characters(blacklist_categories=("Cs",)), max_size=6), json_values, max_size=5))
def test_checksum_matches_reference(obj: dict[str, Any]) -> None:
    assert checksum(obj) == reference_checksum(obj)


@SETTINGS
@given(st.integers(0, 2**63 - 1), st.integers(-1, 10**9), st.none() | st.integers(2, 100))
def test_checksummed_hint_parses(version: int, size: int, parts: int | None) -> None:
    hint: dict[str, Any] = {"version": version, "size": size}
    if parts is not None:
        hint["parts"] = parts
    hint["checksum"] = reference_checksum(hint)
    parsed = parse(orjson.dumps(hint))
    assert (parsed.version, parsed.size, parsed.parts, parsed.checksum) == (version, size, parts, hint["checksum"])


# ---------------------------------------------------------------------------------------------- corpus


def _corpus_hints(corpus: Path | None) -> list[Path]:
    if corpus is None:
        return []
    found = []
    for p in sorted((corpus / "tables").glob("**/_delta_log/_last_checkpoint")):
        try:
            obj = orjson.loads(p.read_bytes())
        except orjson.JSONDecodeError:
            continue
        if isinstance(obj, dict) and "checksum" in obj:
            found.append(p)
    return found


CORPUS = corpus_dir()
CORPUS_HINTS = _corpus_hints(CORPUS)


@pytest.mark.corpus
@pytest.mark.parametrize(
    "path",
    CORPUS_HINTS or [None],
    ids=[str(p.parent.parent).split("/tables/", 1)[-1] for p in CORPUS_HINTS] or ["no-hint"],
)
def test_corpus_hint_checksums_validate(path: Path | None) -> None:
    assert path is not None, f"the corpus at {CORPUS} holds no _last_checkpoint with a checksum"
    data = path.read_bytes()
    obj = orjson.loads(data)
    hint = parse(data)  # raises HintError on a mismatch
    assert hint.checksum == obj["checksum"]
    assert checksum(obj) == obj["checksum"]
    assert reference_checksum(obj) == obj["checksum"]


# ---------------------------------------------------------------------------------------------- parse


def test_minimal_hint_without_checksum() -> None:
    hint = parse(b'{"version":7,"size":-1}')
    assert (hint.version, hint.size, hint.parts, hint.checksum) == (7, -1, None, None)


def test_optional_fields_and_unknown_keys() -> None:
    hint = parse(b'{"version":7,"size":12,"parts":3,"sizeInBytes":99,"numOfAddFiles":4,"size_in_bytes":5,"x":{}}')
    assert (hint.version, hint.size, hint.parts, hint.size_in_bytes, hint.num_of_add_files) == (7, 12, 3, 99, 4)
    assert hint.raw is not None and hint.raw["x"] == {}


@pytest.mark.parametrize(
    "data",
    [
        b'{"version":10,"size":13,"sizeInBy',  # torn: half of an object
        b'{"version":10,',
        b"",
        b"   ",
        b"not json",
        b"[10]",
        b'"10"',
        b"10",
        b"null",
    ],
)
def test_torn_or_malformed_is_hint_error(data: bytes) -> None:
    with pytest.raises(HintError):
        parse(data)


@pytest.mark.parametrize(
    "data",
    [
        b'{"size":13}',
        b'{"version":null}',
        b'{"version":"10"}',
        b'{"version":-1}',
        b'{"version":true}',
        b'{"version":1.5}',
        b'{"version":[10]}',
    ],
)
def test_bad_version_is_hint_error(data: bytes) -> None:
    with pytest.raises(HintError):
        parse(data)


def test_checksum_mismatch_is_hint_error() -> None:
    hint = spark_shaped_hint()
    hint["checksum"] = reference_checksum(hint)
    parse(orjson.dumps(hint))
    tampered = {**hint, "version": 11}
    with pytest.raises(HintError, match="checksum"):
        parse(orjson.dumps(tampered))
    wrong = {**hint, "checksum": "0" * 32}
    with pytest.raises(HintError, match="checksum"):
        parse(orjson.dumps(wrong))


def test_torn_checksummed_hint_is_hint_error() -> None:
    hint = spark_shaped_hint()
    hint["checksum"] = reference_checksum(hint)
    data = orjson.dumps(hint)
    for cut in (1, len(data) // 3, len(data) // 2, len(data) - 1):
        with pytest.raises(HintError):
            parse(data[:cut])
