"""A table's row rules, enforced on every batch before it is written.

What the table says (PROTOCOL "Column Invariants", "CHECK Constraints", "Generated Columns", "Default
Columns", "Identity Columns"):

* CHECK constraints: ``delta.constraints.<name>`` in the configuration; a row passes only when the expression
  is TRUE (false **or null** fails: ``constraints/CheckDeltaInvariant.scala``).
* Invariants: ``delta.invariants`` metadata (``{"expression": {"expression": "<sql>"}}``) on any struct field,
  same rule.
* Generated columns: ``delta.generationExpression`` on a top-level field. Missing from the data, the column is
  computed; present, each row must satisfy ``(value <=> expression) IS TRUE``.
* Default columns: ``CURRENT_DEFAULT``; a column missing from the data takes the default's value.
* Identity columns are no rule of this kind: their values come from a sequence the writer keeps
  (:mod:`deltalog.data.identity_values`).

Every expression is parsed and bound (:mod:`deltalog.expr`) when the rules are built, so text that does not
parse, an unknown column or function, or a type Spark rejects refuses the write by name before anything is
written. Rows are evaluated with Spark 4's ANSI semantics (:mod:`deltalog.compute`) in the session time zone
(UTC unless the writer gives one): a generated column such as ``CAST(ts AS DATE)`` is computed in it, and a
value ANSI refuses (``'a' + 1``, an overflow) raises :class:`~deltalog.errors.ExpressionValueError` naming the
rule and the value, before any commit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from deltalog.compute import Evaluation, evaluate
from deltalog.data.types import FieldPlan
from deltalog.errors import (
    ConstraintViolationError,
    DeltaLogError,
    ExpressionValueError,
    InvalidExpressionError,
    UnsupportedExpressionError,
)
from deltalog.expr import Scope, bind, bind_predicate, parse
from deltalog.expr import tree as X
from deltalog.expr import types as T
from deltalog.expr.coerce import can_cast

CONSTRAINT_PREFIX = "delta.constraints."
INVARIANTS = "delta.invariants"
GENERATION = "delta.generationExpression"
DEFAULT = "CURRENT_DEFAULT"
_FEATURES = {
    "check": "checkConstraints",
    "invariant": "invariants",
    "generated": "generatedColumns",
    "default": "allowColumnDefaults",
}


@dataclass(frozen=True)
class Rule:
    """One bound rule. ``kind``: check, invariant, generated or default; ``column`` (top-level, logical) for
    generated and default columns; ``label`` is how messages name it; ``tree`` the bound expression over the
    file's physical columns; ``matches`` (generated columns) ``column <=> expression``."""

    kind: str
    label: str
    expression: str
    tree: X.Expr
    referenced: tuple[X.Field, ...]
    column: str | None = None
    matches: X.Expr | None = None
    session_time_zone: str = "UTC"


def _struct_field(plan: FieldPlan) -> T.StructField:
    """A writer's field plan as the binder's field: logical name, physical name, type with nested plans'."""
    return T.StructField(plan.name, _plan_type(plan), plan.nullable, plan.physical)


def _plan_type(plan: FieldPlan) -> T.DataType:
    if plan.kind == "struct":
        return T.Struct(tuple(_struct_field(c) for c in plan.children))
    if plan.kind == "array":
        return T.Array(_plan_type(plan.children[0]))
    if plan.kind == "map":
        return T.Map(_plan_type(plan.children[0]), _plan_type(plan.children[1]))
    return T.from_delta(plan.delta_type)


def scope_of(plans: Sequence[FieldPlan]) -> Scope:
    """The scope a table's rules bind in: its fields under the physical names the file batches carry."""
    return Scope.of_fields([_struct_field(p) for p in plans])


def _refused(kind: str, label: str, expression: str, exc: DeltaLogError) -> UnsupportedExpressionError:
    function = getattr(exc, "function", None)
    position = getattr(exc, "position", None)
    return UnsupportedExpressionError(
        f"cannot write: {label} ({expression}) cannot be evaluated: {exc}. It is never checked in another "
        "dialect or skipped, so the write is refused",
        constraint=label,
        expression=expression,
        feature=_FEATURES[kind],
        function=function,
        position=position,
    )


def _compile(
    kind: str, label: str, text: Any, plans: Sequence[FieldPlan], column: str | None = None, tz: str = "UTC"
) -> Rule:
    expression = str(text)
    scope = scope_of(plans)
    matches = None
    try:
        node = parse(expression)
        tree = (
            bind_predicate(node, scope, expression) if kind in ("check", "invariant") else bind(node, scope, expression)
        )
        if kind == "generated" and column is not None:
            matches = bind(X.Call("<=>", (X.Column((column,)), node)), scope, expression)
    except (InvalidExpressionError, UnsupportedExpressionError) as exc:
        raise _refused(kind, label, expression, exc) from None
    referenced = X.references(tree)
    if column is not None:
        own = bind(X.Column((column,)), scope)
        assert isinstance(own, X.Field)
        if own not in referenced:
            referenced = [own, *referenced]
        if tree.type != own.type:  # Spark stores the expression's value as the column's type (ANSI cast)
            assert tree.type is not None
            if not can_cast(tree.type, own.type):
                raise _refused(
                    kind,
                    label,
                    expression,
                    InvalidExpressionError(
                        f"{tree.type.sql()} cannot be stored in {own.type.sql()}", expression=expression
                    ),
                )
            tree = X.Cast(tree, own.type, False, True)
    return Rule(kind, label, expression, tree, tuple(referenced), column, matches, tz)


def _invariant_text(raw: Any, label: str) -> str:
    try:
        doc = orjson.loads(raw) if isinstance(raw, (str, bytes)) else raw
        text = doc["expression"]["expression"]
    except (orjson.JSONDecodeError, KeyError, TypeError):
        raise UnsupportedExpressionError(
            f'cannot write: {label} is not the protocol\'s {{"expression": {{"expression": ...}}}} form: {raw!r}',
            constraint=label,
            expression=str(raw),
            feature="invariants",
        ) from None
    return str(text)


def _nested(t: Any) -> list[tuple[Sequence[Mapping[str, Any]], bool]]:
    """The struct field lists directly inside type ``t``, each with whether it sits in an array or map."""
    if not isinstance(t, dict):
        return []
    if t.get("type") == "struct":
        return [(t.get("fields") or [], False)]
    inner = [t.get(k) for k in ("elementType", "keyType", "valueType") if k in t]
    return [(fields, True) for x in inner for fields, _ in _nested(x)]


def _all_fields(
    fields: Sequence[Mapping[str, Any]], prefix: str = "", place: str = "top"
) -> list[tuple[str, Mapping[str, Any], str]]:
    """(dotted path, field, place) of every field at any depth; place is top, struct or collection (inside an
    array or map, where a row-level rule cannot be evaluated per row)."""
    out: list[tuple[str, Mapping[str, Any], str]] = []
    for f in fields:
        path = f"{prefix}{f['name']}"
        out.append((path, f, place))
        for children, in_collection in _nested(f.get("type")):
            inner = "collection" if in_collection or place == "collection" else "struct"
            out.extend(_all_fields(children, f"{path}.", inner))
    return out


def _refuse_nested(kind: str, path: str, expression: Any) -> UnsupportedExpressionError:
    return UnsupportedExpressionError(
        f"cannot write: {kind} on {path}, which is not a top-level column (or sits in an array or map), is "
        "outside what deltalog evaluates; it is never skipped, so the write is refused",
        constraint=f"{kind} on {path}",
        expression=str(expression),
        feature=_FEATURES["invariant" if kind == "invariant" else "generated"],
    )


def table_rules(
    schema: Mapping[str, Any],
    configuration: Mapping[str, str],
    plans: Sequence[FieldPlan],
    session_time_zone: str | None = None,
) -> tuple[Rule, ...]:
    """Every rule of the table, bound; refuses expressions deltalog does not evaluate."""
    tz = session_time_zone or "UTC"
    rules: list[Rule] = []
    for path, field, place in _all_fields(schema.get("fields") or []):
        meta = field.get("metadata") or {}
        if INVARIANTS in meta:
            if place == "collection":
                raise _refuse_nested("invariant", path, meta[INVARIANTS])
            label = f"invariant on {path}"
            rules.append(_compile("invariant", label, _invariant_text(meta[INVARIANTS], label), plans, tz=tz))
        for key, kind in ((GENERATION, "generated"), (DEFAULT, "default")):
            if key in meta and place != "top":
                raise _refuse_nested("generation expression" if kind == "generated" else "default", path, meta[key])
        if place == "top" and GENERATION in meta:
            rules.append(_compile("generated", f"generated column {path}", meta[GENERATION], plans, path, tz))
        elif place == "top" and DEFAULT in meta:
            rules.append(_compile("default", f"default of column {path}", meta[DEFAULT], plans, path, tz))
    for key in sorted(configuration):
        if key.lower().startswith(CONSTRAINT_PREFIX):
            name = key[len(CONSTRAINT_PREFIX) :]
            rules.append(_compile("check", f"CHECK constraint {name}", configuration[key], plans, tz=tz))
    return tuple(rules)


def _frame(rule: Rule, batch: pa.RecordBatch) -> Evaluation:
    return Evaluation.of(batch, session_time_zone=rule.session_time_zone)


def _row(rule: Rule, batch: pa.RecordBatch, index: int) -> dict[str, object]:
    row: dict[str, object] = {}
    one = batch.slice(index, 1)
    for f in rule.referenced:
        value = evaluate(f, _frame(rule, one))[0].as_py()
        row[".".join(f.path)] = scalar_value(value)
    return row


def scalar_value(value: Any) -> Any:
    """A row value for an error message: Python objects, bytes shortened."""
    if isinstance(value, bytes) and len(value) > 32:
        return value[:32] + b"..."
    return value


def _first_failure(passed: pa.Array) -> int | None:
    failed = pc.invert(pc.fill_null(passed, False))
    if not pc.any(failed).as_py():
        return None
    return int(pc.index(failed, True).as_py())


def _violation(rule: Rule, batch: pa.RecordBatch, index: int, why: str) -> ConstraintViolationError:
    row = _row(rule, batch, index)
    shown = ", ".join(f"{k} => {v!r}" for k, v in row.items()) or "(no columns)"
    return ConstraintViolationError(
        f"{rule.label} ({rule.expression}) {why} by row {index} with values: {shown}; nothing was committed",
        constraint=rule.label,
        expression=rule.expression,
        row=row,
    )


def _value(rule: Rule, batch: pa.RecordBatch, tree: X.Expr | None = None) -> pa.Array:
    try:
        return evaluate(tree or rule.tree, _frame(rule, batch), rule.expression)
    except ExpressionValueError as exc:  # ANSI refuses a value: no row may pass unchecked
        raise ExpressionValueError(
            f"{rule.label} ({rule.expression}) cannot be evaluated on the data: {exc}; nothing was committed",
            error_class=exc.error_class,
            expression=rule.expression,
            value=exc.value,
        ) from None


def check_rows(rules: Sequence[Rule], batch: pa.RecordBatch, plans: Sequence[FieldPlan]) -> None:
    """Raise :class:`ConstraintViolationError` for the first rule a row of ``batch`` breaks."""
    for rule in rules:
        if rule.kind not in ("check", "invariant"):
            continue
        index = _first_failure(_value(rule, batch))
        if index is not None:
            raise _violation(rule, batch, index, "is violated (false or null)")


def fill_columns(
    rules: Sequence[Rule], batch: pa.RecordBatch, plans: Sequence[FieldPlan], missing: set[str]
) -> pa.RecordBatch:
    """Generated and default columns: compute the ones the data lacked, check the generated ones it had."""
    for rule in rules:
        if rule.kind not in ("generated", "default") or rule.column is None:
            continue
        plan = next(p for p in plans if p.name == rule.column)
        if plan.kind == "void" or (rule.kind == "default" and rule.column not in missing):
            continue
        index = batch.schema.get_field_index(plan.physical)
        if rule.column not in missing:
            failure = _first_failure(_value(rule, batch, rule.matches))
            if failure is not None:
                raise _violation(rule, batch, failure, f"does not match the given {rule.column} (<=>)")
            continue
        target = plan.file_field.type  # type: ignore[union-attr]
        value = _value(rule, batch)
        try:
            value = value.cast(target, safe=True)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise ConstraintViolationError(
                f"{rule.label} ({rule.expression}) gives values that do not fit the column's type {target}: {exc}",
                constraint=rule.label,
                expression=rule.expression,
            ) from None
        batch = batch.set_column(index, batch.schema.field(index), value)
    return batch


__all__ = ["Rule", "check_rows", "fill_columns", "scalar_value", "scope_of", "table_rules"]
