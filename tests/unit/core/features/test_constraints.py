"""Row rules at the log level (issue 14 Build 8, log side): reading CHECK constraints, invariants and generated
columns from metadata, ADD/DROP CONSTRAINT as metadata changes, and commits of new rows refused unless someone
vouches for them, with the statement recorded in commitInfo."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from deltalog.core import actions as A
from deltalog.core.features import constraints as K
from deltalog.errors import InvalidArgumentError, InvalidCommitError

INVARIANT = orjson.dumps({"expression": {"expression": "x > 0"}}).decode()


def field(name: str, **metadata: Any) -> dict[str, Any]:
    return {"name": name, "type": "long", "nullable": True, "metadata": metadata}


SCHEMA = {
    "type": "struct",
    "fields": [
        field("x", **{"delta.invariants": INVARIANT}),
        field("y", **{"delta.generationExpression": "x + 1"}),
        {
            "name": "s",
            "type": {"type": "struct", "fields": [field("z", **{"delta.invariants": "not json"})]},
            "nullable": True,
            "metadata": {},
        },
    ],
}
CONF = {"delta.constraints.Positive": "x > 0", "delta.constraints.b": "y < 10", "other": "1"}


def meta(schema: Any = SCHEMA, conf: dict[str, str] | None = None) -> A.Metadata:
    return A.Metadata(id="t", schema_string=orjson.dumps(schema).decode(), configuration=CONF if conf is None else conf)


def add(path: str = "new.parquet", dc: bool = True) -> A.Add:
    return A.Add(path, {}, 1, 1, dc)


def test_rules_are_read_from_metadata() -> None:
    assert K.check_constraints(CONF) == (K.RowRule("check", "b", "y < 10"), K.RowRule("check", "positive", "x > 0"))
    rules = K.row_rules(CONF, SCHEMA)
    assert [(r.kind, r.name, r.expression, r.column) for r in rules[2:]] == [
        ("invariant", "invariant on x", "x > 0", "x"),
        ("generated", "generated column y", "x + 1", "y"),
        ("invariant", "invariant on s.z", "not json", "s.z"),  # another engine's odd value: kept, not an error
    ]
    assert K.row_rules({}, {"type": "struct", "fields": [field("a")]}) == ()


def test_new_rows_need_validation_and_it_is_recorded() -> None:
    with pytest.raises(InvalidCommitError, match="positive") as info:
        K.check_commit([add()], CONF, SCHEMA, rows_validated=None)
    assert info.value.rule == "validate-rows" and "new.parquet" in str(info.value)
    record = K.check_commit([add()], CONF, SCHEMA, rows_validated=K.ATTESTED)
    assert record == {K.VALIDATION_KEY: {"newRows": "attested"}}
    info_out = K.with_record(A.CommitInfo(operation="WRITE", other={"x": 1}), record)
    assert info_out.other == {"x": 1, K.VALIDATION_KEY: {"newRows": "attested"}}
    assert K.with_record(info_out, {}) is info_out
    assert K.check_commit([add()], CONF, SCHEMA, rows_validated=K.CHECKED) == {K.VALIDATION_KEY: {"newRows": "checked"}}
    with pytest.raises(InvalidCommitError):
        K.check_commit([add()], CONF, SCHEMA, rows_validated="trust me")


@pytest.mark.parametrize(
    "actions",
    [
        [A.Remove("old.parquet", 1)],  # a delete adds no rows
        [A.Remove("old.parquet", 1, False), add("compacted.parquet", dc=False)],  # compaction keeps rows
        [A.Remove("f.parquet", 1), add("f.parquet")],  # a DV re-add keeps the file's rows
        [A.Metadata(id="t")],
    ],
)
def test_commits_without_new_rows_need_nothing(actions: list[A.Action]) -> None:
    assert K.check_commit(actions, CONF, SCHEMA, rows_validated=None) == {}


def test_tables_without_rules_need_nothing() -> None:
    assert K.check_commit([add()], {}, {"type": "struct", "fields": [field("a")]}, rows_validated=None) == {}


def test_add_constraint_needs_existing_rows_validated() -> None:
    base = meta(conf={})
    new, info = K.add_constraint(base, " Positive ", "x > 0", existing_rows=K.CHECKED)
    assert new.configuration == {"delta.constraints.positive": "x > 0"}
    assert info.operation == "ADD CONSTRAINT" and info.operation_parameters == {"name": "positive", "expr": "x > 0"}
    assert info.other == {K.VALIDATION_KEY: {"existingRows": "checked"}}
    for name, expr, rows, message in [
        ("p", "x > 0", None, "validated first"),
        ("", "x > 0", K.ATTESTED, "needs a name"),
        ("p", "  ", K.ATTESTED, "needs an expression"),
    ]:
        with pytest.raises(InvalidArgumentError, match=message):
            K.add_constraint(base, name, expr, existing_rows=rows)
    with pytest.raises(InvalidArgumentError, match="already exists"):
        K.add_constraint(new, "POSITIVE", "x > 1", existing_rows=K.ATTESTED)


def test_drop_constraint() -> None:
    dropped, info = K.drop_constraint(meta(), "POSITIVE")
    assert dropped.configuration == {"delta.constraints.b": "y < 10", "other": "1"}
    assert info.operation == "DROP CONSTRAINT" and info.operation_parameters == {"name": "positive"}
    with pytest.raises(InvalidArgumentError, match="no constraint 'nope'"):
        K.drop_constraint(meta(), "nope")
    same, _ = K.drop_constraint(meta(), "nope", if_exists=True)
    assert same.configuration == CONF


def test_a_metadata_change_that_adds_a_rule_needs_the_rows_validated() -> None:
    before = meta(conf={})
    with_check = meta(conf={"delta.constraints.c": "x > 1"})
    with pytest.raises(InvalidCommitError, match="check rule 'c'"):
        K.check_metadata_change(before, with_check, existing_rows=None, has_rows=True)
    assert K.check_metadata_change(before, with_check, existing_rows=K.ATTESTED, has_rows=True) == {
        K.VALIDATION_KEY: {"existingRows": "attested"}
    }
    assert K.check_metadata_change(before, with_check, existing_rows=None, has_rows=False) == {}
    assert K.check_metadata_change(None, with_check, existing_rows=None, has_rows=True) == {}
    assert K.check_metadata_change(with_check, before, existing_rows=None, has_rows=True) == {}  # a rule dropped
    changed = meta(conf={"delta.constraints.c": "x > 2"})
    with pytest.raises(InvalidCommitError):
        K.check_metadata_change(with_check, changed, existing_rows=None, has_rows=True)
    plain = {"type": "struct", "fields": [field("x"), field("y")]}
    generated = {"type": "struct", "fields": [field("x"), field("y", **{"delta.generationExpression": "x"})]}
    with pytest.raises(InvalidCommitError, match="generated"):
        K.check_metadata_change(meta(plain, {}), meta(generated, {}), existing_rows=None, has_rows=True)


def test_validation_record_refuses_unknown_kinds() -> None:
    with pytest.raises(InvalidArgumentError, match="checked"):
        K.validation_record(newRows="maybe")
