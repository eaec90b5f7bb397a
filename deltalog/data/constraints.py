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
* Identity columns cannot be written by a file writer (values must be unique and above a high-water mark the
  commit has to advance): refused.

Every expression is parsed and compiled (:mod:`deltalog.data.sql`, :mod:`deltalog.data.evaluate`) when the
rules are built, so one outside the supported subset refuses the write by name before anything is written.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from deltalog.data import sql
from deltalog.data.evaluate import Compiled, Frame, compile_expression, evaluate, scalar_value
from deltalog.data.sql import SqlSubsetError
from deltalog.data.types import FieldPlan
from deltalog.errors import ConstraintViolationError, UnsupportedExpressionError, UnsupportedFeatureError

CONSTRAINT_PREFIX = "delta.constraints."
INVARIANTS = "delta.invariants"
GENERATION = "delta.generationExpression"
DEFAULT = "CURRENT_DEFAULT"
IDENTITY_PREFIX = "delta.identity."
_FEATURES = {
    "check": "checkConstraints",
    "invariant": "invariants",
    "generated": "generatedColumns",
    "default": "allowColumnDefaults",
}


@dataclass(frozen=True)
class Rule:
    """One compiled rule. ``kind``: check, invariant, generated or default; ``column`` (top-level, logical) for
    generated and default columns; ``label`` is how messages name it."""

    kind: str
    label: str
    expression: str
    compiled: Compiled
    referenced: tuple[tuple[str, ...], ...]
    column: str | None = None
    matches: Compiled | None = None  # generated columns: ``column <=> expression``


def _compile(kind: str, label: str, text: Any, plans: Sequence[FieldPlan], column: str | None = None) -> Rule:
    expression = str(text)
    matches = None
    try:
        node = sql.parse(expression)
        compiled = compile_expression(node, plans)
        if kind in ("check", "invariant") and not (
            pa.types.is_boolean(compiled.type) or pa.types.is_null(compiled.type)
        ):
            raise SqlSubsetError(f"the expression is of type {compiled.type}, not boolean")
        if kind == "generated" and column is not None:
            matches = compile_expression(sql.Binary("<=>", sql.Column((column,)), node), plans)
    except SqlSubsetError as exc:
        raise UnsupportedExpressionError(
            f"cannot write: {label} ({expression}) is outside the SQL subset deltalog evaluates: {exc}. "
            "It is never checked in another dialect or skipped, so the write is refused",
            constraint=label,
            expression=expression,
            feature=_FEATURES[kind],
        ) from None
    referenced = tuple(sql.columns(node))
    if column is not None and (column,) not in referenced:
        referenced = ((column,), *referenced)
    return Rule(kind, label, expression, compiled, referenced, column, matches)


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
    schema: Mapping[str, Any], configuration: Mapping[str, str], plans: Sequence[FieldPlan]
) -> tuple[Rule, ...]:
    """Every rule of the table, compiled; refuses identity columns and expressions outside the subset."""
    rules: list[Rule] = []
    for path, field, place in _all_fields(schema.get("fields") or []):
        meta = field.get("metadata") or {}
        if any(str(k).startswith(IDENTITY_PREFIX) for k in meta):
            raise UnsupportedFeatureError(
                f"cannot write: column {path} is an identity column; deltalog does not generate identity values",
                feature="identityColumns",
            )
        if INVARIANTS in meta:
            if place == "collection":
                raise _refuse_nested("invariant", path, meta[INVARIANTS])
            label = f"invariant on {path}"
            rules.append(_compile("invariant", label, _invariant_text(meta[INVARIANTS], label), plans))
        for key, kind in ((GENERATION, "generated"), (DEFAULT, "default")):
            if key in meta and place != "top":
                raise _refuse_nested("generation expression" if kind == "generated" else "default", path, meta[key])
        if place == "top" and GENERATION in meta:
            rules.append(_compile("generated", f"generated column {path}", meta[GENERATION], plans, path))
        elif place == "top" and DEFAULT in meta:
            rules.append(_compile("default", f"default of column {path}", meta[DEFAULT], plans, path))
    for key in sorted(configuration):
        if key.lower().startswith(CONSTRAINT_PREFIX):
            name = key[len(CONSTRAINT_PREFIX) :]
            rules.append(_compile("check", f"CHECK constraint {name}", configuration[key], plans))
    return tuple(rules)


def _row(rule: Rule, frame: Frame, index: int, plans: Sequence[FieldPlan]) -> dict[str, object]:
    row: dict[str, object] = {}
    for path in rule.referenced:
        value = evaluate(compile_expression(sql.Column(path), plans), frame)[index].as_py()
        row[".".join(path)] = scalar_value(value)
    return row


def _first_failure(passed: pa.Array) -> int | None:
    failed = pc.invert(pc.fill_null(passed, False))
    if not pc.any(failed).as_py():
        return None
    return int(pc.index(failed, True).as_py())


def _violation(rule: Rule, frame: Frame, index: int, plans: Sequence[FieldPlan], why: str) -> ConstraintViolationError:
    row = _row(rule, frame, index, plans)
    shown = ", ".join(f"{k} => {v!r}" for k, v in row.items()) or "(no columns)"
    return ConstraintViolationError(
        f"{rule.label} ({rule.expression}) {why} by row {index} with values: {shown}; nothing was committed",
        constraint=rule.label,
        expression=rule.expression,
        row=row,
    )


def _value(rule: Rule, frame: Frame, compiled: Compiled | None = None) -> pa.Array:
    try:
        return evaluate(compiled or rule.compiled, frame)
    except pa.ArrowInvalid as exc:  # an overflow, as Spark's ANSI mode raises: no row may pass unchecked
        raise ConstraintViolationError(
            f"{rule.label} ({rule.expression}) could not be evaluated on the data: {exc}; nothing was committed",
            constraint=rule.label,
            expression=rule.expression,
        ) from None
    except (pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:  # pyarrow cannot do what was compiled
        raise UnsupportedExpressionError(
            f"cannot write: {rule.label} ({rule.expression}) cannot be evaluated here: {exc}",
            constraint=rule.label,
            expression=rule.expression,
            feature=_FEATURES[rule.kind],
        ) from None


def check_rows(rules: Sequence[Rule], batch: pa.RecordBatch, plans: Sequence[FieldPlan]) -> None:
    """Raise :class:`ConstraintViolationError` for the first rule a row of ``batch`` breaks."""
    frame = Frame(batch)
    for rule in rules:
        if rule.kind not in ("check", "invariant"):
            continue
        index = _first_failure(_value(rule, frame))
        if index is not None:
            raise _violation(rule, frame, index, plans, "is violated (false or null)")


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
        frame = Frame(batch)
        index = batch.schema.get_field_index(plan.physical)
        if rule.column not in missing:
            failure = _first_failure(_value(rule, frame, rule.matches))
            if failure is not None:
                raise _violation(rule, frame, failure, plans, f"does not match the given {rule.column} (<=>)")
            continue
        target = plan.file_field.type  # type: ignore[union-attr]
        value = _value(rule, frame)
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


__all__ = ["Rule", "check_rows", "fill_columns", "table_rules"]
