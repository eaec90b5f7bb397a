"""A MERGE bound before any row is read: Delta Spark's clause rules, scopes and names, the equi-join keys and
the residual, what is pruned and recorded as read, the duplicate-rule flags, commitInfo's parameters; and the
join's keys normalised so the engine's equality is Spark's (NULL, NaN, -0.0, ``<=>``)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from deltalog.compute import Evaluation
from deltalog.dml.merge import clauses as C
from deltalog.dml.merge.join import key_arrays, pairs
from deltalog.dml.merge.metrics import merge_parameters
from deltalog.dml.merge.plan import plan_merge, plan_update
from deltalog.errors import InvalidArgumentError, InvalidExpressionError, UnsupportedFeatureError
from deltalog.expr import tree as X

SCHEMA = {
    "type": "struct",
    "fields": [
        {"name": "id", "type": "long", "nullable": True, "metadata": {}},
        {"name": "day", "type": "string", "nullable": True, "metadata": {}},
        {"name": "amount", "type": "double", "nullable": True, "metadata": {}},
        {"name": "twice", "type": "double", "nullable": True, "metadata": {"delta.generationExpression": "amount * 2"}},
    ],
}
SOURCE = pa.schema([("id", pa.int32()), ("day", pa.string()), ("amount", pa.float64()), ("note", pa.string())])


def plan(condition: str, *clauses: C.Clause, **kw: object):  # type: ignore[no-untyped-def]
    return plan_merge(SCHEMA, ["day"], SOURCE, condition, list(clauses), **kw)  # type: ignore[arg-type]


UPDATE_ALL = C.clause(C.MATCHED, C.UPDATE, star=True)
INSERT_ALL = C.clause(C.NOT_MATCHED, C.INSERT, star=True)


def test_keys_residual_and_target_only_conjuncts() -> None:
    p = plan("t.id = s.id AND t.day = '2024-01-01' AND s.amount > t.amount", UPDATE_ALL, INSERT_ALL)
    (key,) = p.keys
    assert X.to_sql(key.target) == "id" and key.source.type == key.target.type and not key.null_safe
    assert p.condition is not None and p.residual is not None and p.target_only is not None
    conjuncts = X.conjuncts(p.condition)
    assert X.conjuncts(p.residual) == conjuncts[1:]  # evaluated on the pairs the key produces
    assert X.conjuncts(p.target_only) == [conjuncts[1]]
    assert p.read_predicate == p.target_only
    assert set(p.target_columns) == {"id", "day", "amount"}
    null_safe = plan("t.id <=> s.id", UPDATE_ALL)
    assert null_safe.keys[0].null_safe and null_safe.residual is None


def test_the_read_predicate_is_delta_sparks() -> None:
    matched_only = plan(
        "t.id = s.id AND t.day = 'x'",
        C.clause(C.MATCHED, C.UPDATE, "t.amount > 1", {"amount": "s.amount"}),
        C.clause(C.MATCHED, C.DELETE, "t.amount < 0 AND s.note = 'gone'"),
    )
    assert X.to_sql(matched_only.read_predicate) == "(day = 'x') AND ((amount > 1.0D) OR (amount < 0.0D))"  # type: ignore[arg-type]
    unconditional = plan("t.id = s.id", C.clause(C.MATCHED, C.UPDATE, "t.amount > 1", {"amount": "1"}), UPDATE_ALL)
    assert unconditional.read_predicate is None  # a clause without a target-only part: the whole table
    with_source_clause = plan(
        "t.id = s.id AND t.day = 'x'", UPDATE_ALL, C.clause(C.NOT_MATCHED_BY_SOURCE, C.DELETE, "t.amount > 0")
    )
    assert with_source_clause.read_predicate is None  # NOT MATCHED BY SOURCE: every target row may change


def test_the_duplicate_rule_flags() -> None:
    assert plan("t.id = s.id", C.clause(C.MATCHED, C.DELETE)).only_unconditional_delete
    assert not plan("t.id = s.id", C.clause(C.MATCHED, C.DELETE, "s.amount > 0")).only_unconditional_delete
    assert plan("t.id = s.id", UPDATE_ALL).matched_only
    assert not plan("t.id = s.id", UPDATE_ALL, INSERT_ALL).matched_only
    assert plan("t.id = s.id", INSERT_ALL).insert_only


def test_star_clauses_take_columns_by_name_and_compute_generated_ones() -> None:
    p = plan("t.id = s.id", UPDATE_ALL)
    (clause,) = p.clauses
    assert [name for name, _ in clause.assignments] == ["id", "day", "amount"]  # twice is computed
    columns = {c.name: c for c in p.columns}
    assert columns["twice"].generated is not None and columns["id"].generated is None


def test_scopes_names_and_shapes_are_refused_by_name() -> None:
    with pytest.raises(InvalidExpressionError, match="ambiguous"):
        plan("id = s.id", UPDATE_ALL)
    with pytest.raises(InvalidExpressionError, match="nope"):
        plan("t.id = s.id", C.clause(C.MATCHED, C.UPDATE, None, {"nope": "1"}))
    with pytest.raises(InvalidExpressionError, match="assigned twice"):
        plan("t.id = s.id", C.clause(C.MATCHED, C.UPDATE, None, {"amount": "1", "t.AMOUNT": "2"}))
    with pytest.raises(InvalidExpressionError, match="nested field"):
        plan("t.id = s.id", C.clause(C.MATCHED, C.UPDATE, None, {"amount.x": "1"}))
    without_day = pa.schema([f for f in SOURCE if f.name != "day"])
    with pytest.raises(InvalidExpressionError, match="no column 'day'"):  # no schema evolution asked for
        plan_merge(SCHEMA, ["day"], without_day, "t.id = s.id", [INSERT_ALL])
    evolving = plan_merge(SCHEMA, ["day"], without_day, "t.id = s.id", [INSERT_ALL], evolving=True)
    assert [name for name, _ in evolving.clauses[0].assignments] == ["id", "amount"]  # day: NULL, twice: computed
    with pytest.raises(InvalidArgumentError, match="same alias"):
        plan("t.id = s.id", UPDATE_ALL, source_alias="T")
    with pytest.raises(InvalidArgumentError, match="only the last one"):
        plan("t.id = s.id", C.clause(C.NOT_MATCHED, C.INSERT, None, {"id": "s.id"}), INSERT_ALL)
    with pytest.raises(InvalidArgumentError, match="cannot update"):
        C.clause(C.NOT_MATCHED, C.UPDATE, None, {"id": "1"})
    identity = {"delta.identity.start": 1, "delta.identity.step": 1}
    schema = {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": identity}]}
    with pytest.raises(UnsupportedFeatureError, match="identity"):
        plan_update(schema, [], {"id": "id + 1"})


def test_operation_parameters_are_delta_sparks_json() -> None:
    p = plan(
        "t.id = s.id",
        C.clause(C.MATCHED, C.UPDATE, "s.amount > 0", {"amount": "s.amount"}),
        C.clause(C.MATCHED, C.DELETE),
        INSERT_ALL,
    )
    assert merge_parameters(p) == {
        "predicate": '["t.id = s.id"]',
        "matchedPredicates": '[{"predicate":"s.amount > 0","actionType":"update"},{"actionType":"delete"}]',
        "notMatchedPredicates": '[{"actionType":"insert"}]',
        "notMatchedBySourcePredicates": "[]",
    }


def test_join_keys_compare_as_spark_compares() -> None:
    """NULL never equals NULL under ``=`` (it does under ``<=>``), NaN equals NaN and -0.0 equals 0.0."""
    schema = {"type": "struct", "fields": [{"name": "x", "type": "double", "nullable": True, "metadata": {}}]}
    source = pa.schema([("x", pa.float64())])
    target = pa.record_batch({"x": pa.array([float("nan"), -0.0, None, 1.0])})
    src = pa.record_batch({"x": pa.array([0.0, float("nan"), None, 2.0])})
    for condition, expected in (("t.x = s.x", {(0, 1), (1, 0)}), ("t.x <=> s.x", {(0, 1), (1, 0), (2, 2)})):
        p = plan_merge(schema, [], source, condition, [UPDATE_ALL])
        left = key_arrays(p.keys, "target", Evaluation.of(target))
        right = key_arrays(p.keys, "source", Evaluation.of(src))
        found = {(int(t), int(s)) for ts, ss in pairs(left, right, 4, 4) for t, s in zip(ts, ss, strict=True)}
        assert found == expected, condition
    everything = list(pairs([], [], 3, 2))
    assert sum(len(t) for t, _ in everything) == 6 and np.all(np.concatenate([s for _, s in everything]) < 2)
