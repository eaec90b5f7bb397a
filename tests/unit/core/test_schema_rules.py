"""The schema rules a write must meet (types, names, partition columns) and the protocol a schema needs."""

from __future__ import annotations

from typing import Any

import pytest

from deltalog.core.actions import Protocol
from deltalog.core.features.protocol import (
    check_configuration_honoured,
    required_features,
    schema_features,
    supported_features,
    upgrade_protocol,
)
from deltalog.core.schema import check_schema
from deltalog.errors import InvalidCommitError, SchemaError, UnsupportedFeatureError


def col(name: str, t: Any, nullable: bool = True, **metadata: Any) -> dict[str, Any]:
    return {"name": name, "type": t, "nullable": nullable, "metadata": metadata}


def struct(*fields: dict[str, Any]) -> dict[str, Any]:
    return {"type": "struct", "fields": list(fields)}


def refused(schema: dict[str, Any], partition_columns: tuple[str, ...] = (), **kwargs: Any) -> SchemaError:
    with pytest.raises(SchemaError) as info:
        check_schema(schema, partition_columns, **kwargs)
    assert isinstance(info.value, InvalidCommitError)
    return info.value


# ---------------------------------------------------------------------------------------------- types
@pytest.mark.parametrize(
    "t",
    [
        *("string", "long", "integer", "short", "byte", "float", "double", "boolean", "binary", "date"),
        *("timestamp", "timestamp_ntz", "variant", "decimal(1,0)", "decimal(38,38)", "decimal(10, 2)"),
    ],
)
def test_protocol_types_are_accepted(t: str) -> None:
    check_schema(struct(col("id", "long"), col("x", t)))


@pytest.mark.parametrize(
    "t",
    ["decimal(40,2)", "decimal(39,0)", "decimal(0,0)", "decimal(5,6)", "decimal(5,-1)", "decimal", "char(3)", "int"],
)
def test_types_the_protocol_does_not_define_are_refused_naming_the_field(t: str) -> None:
    err = refused(struct(col("id", "long"), col("amount", t)))
    assert err.field == "amount" and "amount" in str(err)


def test_nested_types_are_checked_with_their_path() -> None:
    nested = {"type": "array", "elementType": struct(col("d", "decimal(40,2)")), "containsNull": True}
    err = refused(struct(col("id", "long"), col("items", nested)))
    assert err.field == "items.element.d"
    in_map = {"type": "map", "keyType": "string", "valueType": "interval", "valueContainsNull": True}
    assert refused(struct(col("id", "long"), col("m", in_map))).field == "m.value"


def test_a_new_void_column_is_refused_but_an_existing_one_stays() -> None:
    assert refused(struct(col("id", "long"), col("v", "void"))).field == "v"
    before = struct(col("id", "long"), col("v", "void"))
    check_schema(struct(col("id", "long"), col("v", "void"), col("new", "string")), previous=before)


def test_a_schema_without_columns_is_refused() -> None:
    assert refused(struct()).rule == "valid-schema"
    check_schema(struct(), previous=struct())  # a table another engine created empty stays alterable


def test_a_field_without_nullable_is_refused() -> None:
    assert refused(struct({"name": "id", "type": "long"})).field == "id"


# ---------------------------------------------------------------------------------------------- names
@pytest.mark.parametrize(
    "schema",
    [
        struct(col("Id", "long"), col("ID", "long")),
        struct(col("s", struct(col("a", "long"), col("A", "long")))),
        struct(
            col(
                "arr",
                {"type": "array", "elementType": struct(col("k", "long"), col("K", "long")), "containsNull": True},
            )
        ),
        struct(
            col(
                "m",
                {
                    "type": "map",
                    "keyType": "string",
                    "valueType": struct(col("v", "long"), col("V", "long")),
                    "valueContainsNull": True,
                },
            )
        ),
    ],
)
def test_names_must_be_unique_regardless_of_case_at_every_level(schema: dict[str, Any]) -> None:
    err = refused(schema)
    assert err.rule == "unique-column-names"


@pytest.mark.parametrize("name", ["with space", "a,b", "a;b", "a{b", "a}b", "a(b", "a)b", "a\nb", "a\tb", "a=b"])
def test_spark_forbidden_characters_are_refused_without_column_mapping(name: str) -> None:
    schema = struct(col("id", "long"), col(name, "long"))
    assert refused(schema).field == name
    check_schema(schema, column_mapping=True)


def test_awkward_but_legal_names_pass() -> None:
    check_schema(struct(*(col(n, "long") for n in ["ünï", "日本", "$x", "1a", "a.b", "q'x", "a-b", "a/b"])))


def test_empty_names_are_refused() -> None:
    assert refused(struct(col("id", "long"), col("", "long"))).rule == "column-names"


def test_existing_fields_are_not_checked_again() -> None:
    """A table another engine wrote with a name Spark refuses stays alterable."""
    before = struct(col("with space", "long"))
    check_schema(struct(col("with space", "long"), col("ok", "string")), previous=before)
    with pytest.raises(SchemaError):
        check_schema(struct(col("with space", "long"), col("bad name", "string")), previous=before)


# ---------------------------------------------------------------------------------------------- partitions
@pytest.mark.parametrize(
    "t",
    [struct(col("a", "long")), {"type": "array", "elementType": "long", "containsNull": True}, "variant", "void"],
)
def test_partition_columns_must_be_primitive(t: Any) -> None:
    schema = struct(col("id", "long"), col("p", t))
    err = refused(schema, ("p",), previous=struct(col("id", "long"), col("p", t)), previous_partition_columns=())
    assert err.field == "p" and err.rule == "partition-columns"


def test_not_every_column_may_be_a_partition_column() -> None:
    assert refused(struct(col("a", "long"), col("b", "string")), ("a", "b")).rule == "partition-columns"
    check_schema(struct(col("a", "long"), col("b", "string")), ("a",))


def test_unknown_and_repeated_partition_columns_are_refused() -> None:
    schema = struct(col("a", "long"), col("b", "string"))
    assert refused(schema, ("c",)).field == "c"
    assert refused(schema, ("a", "a")).rule == "partition-columns"


# ---------------------------------------------------------------------------------------------- features
def test_schema_features() -> None:
    schema = struct(
        col("ts", "timestamp_ntz"),
        col("s", struct(col("v", "variant"))),
        col("w", "long", **{"delta.typeChanges": "[]"}),
        col("g", "long", **{"delta.generationExpression": "1"}),
        col("i", "long", **{"delta.identity.start": 1}),
    )
    assert schema_features(schema) == {
        "timestampNtz": "ts",
        "variantType": "s.v",
        "typeWidening": "w",
        "generatedColumns": "g",
        "identityColumns": "i",
    }
    assert required_features({"delta.appendOnly": "true"}, schema) == {
        "timestampNtz",
        "variantType",
        "typeWidening",
        "generatedColumns",  # deltalog's writer computes them
        "identityColumns",  # deltalog's writer generates their values, the commit advances the mark
        "appendOnly",
    }


def test_features_deltalog_does_not_implement_are_refused_by_name() -> None:
    with pytest.raises(UnsupportedFeatureError, match="'g' uses 'collations'") as info:
        check_configuration_honoured({}, struct(col("g", "string", **{"__COLLATIONS": {"g": "ICU.en"}})), "src")
    assert info.value.feature == "collations"
    # implemented now: the data writer computes generated columns and identity values, change_column_type widens
    check_configuration_honoured({}, struct(col("g", "long", **{"delta.generationExpression": "1"})), "src")
    check_configuration_honoured({}, struct(col("g", "long", **{"delta.identity.start": 1})), "src")
    check_configuration_honoured({"delta.enableTypeWidening": "true"}, struct(), "src")
    check_configuration_honoured({"delta.appendOnly": "true", "delta.checkpointPolicy": "v2"}, struct(), "src")


LEGACY_12 = ("appendOnly", "invariants")


@pytest.mark.parametrize(
    ("base", "features", "versions", "expected"),
    [
        (Protocol(1, 2), {"timestampNtz"}, {}, Protocol(3, 7, ("timestampNtz",), (*LEGACY_12, "timestampNtz"))),
        (Protocol(1, 2), {"variantType"}, {}, Protocol(3, 7, ("variantType",), (*LEGACY_12, "variantType"))),
        (Protocol(1, 2), {"domainMetadata"}, {}, Protocol(1, 7, None, ("appendOnly", "domainMetadata", "invariants"))),
        (Protocol(1, 1), {"appendOnly"}, {}, Protocol(1, 2)),
        (Protocol(1, 2), {"checkConstraints"}, {}, Protocol(1, 3)),
        (Protocol(1, 2), set(), {"writer": 4}, Protocol(1, 4)),
        (Protocol(1, 2), set(), {"writer": 7}, Protocol(1, 7, None, LEGACY_12)),
        (Protocol(1, 2), set(), {"reader": 3, "writer": 7}, Protocol(3, 7, (), LEGACY_12)),
        (Protocol(1, 2), set(), {"reader": 2}, Protocol(2, 5)),
        (
            Protocol(2, 5),
            {"v2Checkpoint"},
            {},
            Protocol(
                3,
                7,
                ("columnMapping", "v2Checkpoint"),
                (
                    *("appendOnly", "changeDataFeed", "checkConstraints", "columnMapping"),
                    *("generatedColumns", "invariants", "v2Checkpoint"),
                ),
            ),
        ),
        (
            Protocol(1, 7, None, ("appendOnly",)),
            set(),
            {"writer": 3},
            Protocol(1, 7, None, ("appendOnly", "checkConstraints", "invariants")),
        ),
    ],
)
def test_upgrade_protocol(base: Protocol, features: set[str], versions: dict[str, int], expected: Protocol) -> None:
    got = upgrade_protocol(base, features, **versions)
    assert got == expected
    assert supported_features(base) <= supported_features(got)  # an upgrade never loses a feature


def test_upgrade_returns_the_base_when_nothing_is_missing() -> None:
    base = Protocol(3, 7, ("timestampNtz", "variantType-preview"), ("timestampNtz", "variantType-preview", "x"))
    assert upgrade_protocol(base, {"timestampNtz", "variantType"}) is base
    assert upgrade_protocol(Protocol(1, 2), {"appendOnly"}, writer=2) == Protocol(1, 2)
