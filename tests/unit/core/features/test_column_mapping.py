"""Column mapping at the log level (issue 14 Build 7): ids and physical names for new columns (nested too), a
monotonic maxColumnId, mode changes, and physical keys in the adds a commit makes."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from deltalog.core import actions as A
from deltalog.core.features import column_mapping as CM
from deltalog.core.schema import COLUMN_ID, PHYSICAL_NAME, walk_fields
from deltalog.errors import InvalidCommitError, PropertyError, SchemaError, UnsupportedFeatureError

MAPPED = A.Protocol(2, 5)
FEATURES = A.Protocol(3, 7, ("columnMapping",), ("columnMapping",))


def field(name: str, t: Any = "long", ident: int | None = None, physical: str | None = None) -> dict[str, Any]:
    meta = {COLUMN_ID: ident, PHYSICAL_NAME: physical} if ident is not None else {}
    return {"name": name, "type": t, "nullable": True, "metadata": meta}


def struct(*fields: dict[str, Any]) -> dict[str, Any]:
    return {"type": "struct", "fields": list(fields)}


def meta(schema: dict[str, Any], **conf: str) -> A.Metadata:
    return A.Metadata(id="t", schema_string=orjson.dumps(schema).decode(), configuration=conf)


def mappings(schema: Any) -> dict[str, tuple[Any, Any]]:
    return {
        at.path: (at.field["metadata"].get(COLUMN_ID), at.field["metadata"].get(PHYSICAL_NAME))
        for at in walk_fields(schema)
    }


NESTED = struct(
    field("a"),
    field("s", struct(field("x"), field("y"))),
    field("arr", {"type": "array", "elementType": struct(field("e")), "containsNull": True}),
    field("m", {"type": "map", "keyType": "string", "valueType": struct(field("v")), "valueContainsNull": True}),
)


def counter() -> Any:
    names = iter(f"col-{i}" for i in range(100))
    return lambda: next(names)


def test_mode_is_honoured_only_with_the_feature() -> None:
    assert CM.mode(MAPPED, {CM.MODE: "name"}) == "name" and CM.mode(FEATURES, {CM.MODE: "ID"}) == "id"
    assert CM.mode(A.Protocol(1, 4), {CM.MODE: "name"}) == "none"
    with pytest.raises(PropertyError, match="none, name, id"):
        CM.mode(MAPPED, {CM.MODE: "names"})
    assert CM.max_column_id({}) == 0 and CM.max_column_id({CM.MAX_COLUMN_ID: "7"}) == 7
    with pytest.raises(PropertyError, match="maxColumnId"):
        CM.max_column_id({CM.MAX_COLUMN_ID: "-1"})


def test_every_field_nested_too_gets_an_id_and_a_unique_physical_name() -> None:
    out, top = CM.assign(NESTED, max_id=0)
    got = mappings(out)
    assert sorted(i for i, _ in got.values()) == list(range(1, 9)) and top == 8
    names = [n for _, n in got.values()]
    assert len(set(names)) == 8 and all(n.startswith("col-") and len(n) == 40 for n in names)
    assert mappings(NESTED)["a"] == (None, None)  # the input is not changed


def test_existing_pairs_are_kept_and_renames_keep_them() -> None:
    before = struct(field("a", ident=1, physical="col-a"), field("b", ident=4, physical="col-b"))
    after = struct(field("renamed", ident=1, physical="col-a"), field("b", ident=4, physical="col-b"), field("c"))
    out, top = CM.assign(after, max_id=6, previous=before, name_factory=counter())
    assert mappings(out) == {"renamed": (1, "col-a"), "b": (4, "col-b"), "c": (7, "col-0")}
    assert top == 7


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        (struct(field("a", ident=1, physical="col-a"), field("x", ident=9, physical="col-x")), "its own"),
        (struct(field("a", ident=1, physical="col-other")), "its own"),
        (struct(field("a", ident=1, physical="col-a"), {**field("h"), "metadata": {COLUMN_ID: 3}}), "without"),
        (struct(field("a", ident=1, physical="col-a"), {**field("h"), "metadata": {PHYSICAL_NAME: "p"}}), "without"),
    ],
)
def test_foreign_or_half_mapping_metadata_is_refused(schema: dict[str, Any], message: str) -> None:
    before = struct(field("a", ident=1, physical="col-a"))
    with pytest.raises(SchemaError, match=message):
        CM.assign(schema, max_id=1, previous=before)


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        (struct(field("a", ident=1, physical="p"), field("b", ident=1, physical="q")), "used twice"),
        (struct(field("a", ident=1, physical="p"), field("b", ident=2, physical="p")), "used twice"),
        (struct(field("a", ident=0, physical="p")), "32-bit"),
        (struct(field("a", ident=2**31, physical="p")), "32-bit"),
        (struct({**field("a"), "metadata": {COLUMN_ID: True, PHYSICAL_NAME: "p"}}), "32-bit"),
        (struct(field("a", ident=1, physical="")), "not a name"),
    ],
)
def test_a_new_tables_own_mapping_must_be_sound(schema: dict[str, Any], message: str) -> None:
    with pytest.raises(SchemaError, match=message):
        CM.assign(schema, max_id=0)


def test_creating_a_mapped_table_sets_max_column_id() -> None:
    out = CM.mapped_metadata(None, meta(NESTED, **{CM.MODE: "id"}), FEATURES)
    assert out.configuration[CM.MAX_COLUMN_ID] == "8" and len(mappings(orjson.loads(out.schema_string or ""))) == 8
    plain = meta(NESTED)
    assert CM.mapped_metadata(None, plain, FEATURES) is plain


def test_adding_columns_keeps_max_column_id_monotonic() -> None:
    first = CM.mapped_metadata(None, meta(struct(field("a"), field("b")), **{CM.MODE: "name"}), MAPPED)
    schema = orjson.loads(first.schema_string or "")
    dropped = {**schema, "fields": schema["fields"][:1]}  # drop b (id 2)...
    second = CM.mapped_metadata(
        first,
        A.Metadata(id="t", schema_string=orjson.dumps(dropped).decode(), configuration=first.configuration),
        MAPPED,
    )
    assert second.configuration[CM.MAX_COLUMN_ID] == "2"
    with_c = {**dropped, "fields": [*dropped["fields"], field("c")]}  # ...then add c: never id 2 again
    third = CM.mapped_metadata(
        second,
        A.Metadata(id="t", schema_string=orjson.dumps(with_c).decode(), configuration=second.configuration),
        MAPPED,
    )
    got = mappings(orjson.loads(third.schema_string or ""))
    assert got["c"][0] == 3 and third.configuration[CM.MAX_COLUMN_ID] == "3"
    assert CM.mapped_metadata(third, third, MAPPED) is third  # nothing new: unchanged


def test_enabling_name_mode_on_an_existing_table_keeps_names_as_physical_names() -> None:
    before = meta(struct(field("a"), field("s", struct(field("x")))))
    after = CM.mapped_metadata(
        before, meta(struct(field("a"), field("s", struct(field("x")))), **{CM.MODE: "name"}), MAPPED
    )
    assert mappings(orjson.loads(after.schema_string or "")) == {"a": (1, "a"), "s": (2, "s"), "s.x": (3, "x")}
    assert after.configuration[CM.MAX_COLUMN_ID] == "3"


@pytest.mark.parametrize(
    ("before", "after", "message"),
    [
        ("none", "id", "created"),
        ("name", "none", "rewritten"),
        ("id", "none", "rewritten"),
        ("name", "id", "misread"),
        ("id", "name", "misread"),
    ],
)
def test_mode_changes_spark_refuses(before: str, after: str, message: str) -> None:
    with pytest.raises(UnsupportedFeatureError, match=message) as info:
        CM.check_mode_change(before, after, creating=False)
    assert info.value.feature == "columnMapping"
    CM.check_mode_change(before, after, creating=True)


def test_mapped_metadata_refusals() -> None:
    with pytest.raises(UnsupportedFeatureError, match="needs the columnMapping feature"):
        CM.mapped_metadata(None, meta(NESTED, **{CM.MODE: "name"}), A.Protocol(1, 4))
    with pytest.raises(InvalidCommitError, match="none, name, id"):
        CM.mapped_metadata(None, meta(NESTED, **{CM.MODE: "both"}), MAPPED)
    with pytest.raises(InvalidCommitError, match="maxColumnId"):
        CM.mapped_metadata(None, meta(NESTED, **{CM.MODE: "name", CM.MAX_COLUMN_ID: "lots"}), MAPPED)


def test_new_adds_use_physical_keys() -> None:
    schema = struct(field("p", "string", 1, "col-p"), field("s", struct(field("x", "long", 3, "col-x")), 2, "col-s"))

    def add(partition: dict[str, str | None], stats: dict[str, Any] | None) -> A.Add:
        return A.Add("f", partition, 1, 1, True, stats=orjson.dumps(stats).decode() if stats else None)

    good = {"numRecords": 1, "minValues": {"col-s": {"col-x": 1}}, "nullCount": {"col-p": 0, "col-s": {"col-x": 0}}}
    CM.check_file_keys([add({"col-p": "a"}, good), add({"col-p": None}, None)], schema, "name", ["p"])
    for partition, stats, message in [
        ({"p": "a"}, good, "partition values"),
        ({"col-p": "a"}, {"minValues": {"s": {"col-x": 1}}}, "'s'"),
        ({"col-p": "a"}, {"maxValues": {"col-s": {"x": 1}}}, "col-s.'x'"),
        ({"col-p": "a"}, {"nullCount": {"gone": 3}}, "'gone'"),
    ]:
        with pytest.raises(InvalidCommitError, match=message) as info:
            CM.check_file_keys([add(partition, stats)], schema, "name", ["p"])
        assert info.value.rule == "physical-names"
    CM.check_file_keys([add({"p": "a"}, {"minValues": {"s": {"x": 1}}})], schema, "none", ["p"])


def test_a_data_writers_new_pair_above_the_read_max_is_kept_and_nothing_else() -> None:
    """deltalog.write names a merged column's files before its commit: its pair is accepted when the id is
    above the read version's maxColumnId and the name unused; a reused id or name is still refused."""
    previous = struct(field("a", ident=1, physical="col-a"))
    brought = struct(field("a", ident=1, physical="col-a"), field("x", ident=2, physical="col-x"))
    schema, top = CM.assign(brought, max_id=1, previous=previous, accept_new_above=1)
    assert top == 2 and schema == brought
    for bad in (field("x", ident=1, physical="col-x"), field("x", ident=2, physical="col-a")):
        with pytest.raises(SchemaError):
            CM.assign(
                struct(field("a", ident=1, physical="col-a"), bad), max_id=1, previous=previous, accept_new_above=1
            )
    with pytest.raises(SchemaError, match="its own"):
        CM.assign(brought, max_id=1, previous=previous)
