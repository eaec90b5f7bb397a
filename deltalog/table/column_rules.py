"""Generated columns, column defaults and identity columns given when a table is created
(``create(generated=..., defaults=..., identity=...)``).

They become the field metadata PROTOCOL.md defines (``delta.generationExpression``, ``CURRENT_DEFAULT``) and are
checked as Delta Spark checks them (``DeltaColumnBuilder.scala``, ``GeneratedColumn.scala``) before anything is
written, each refusal naming the column: the column exists and is top-level; a generation expression is
deterministic (``rand()``, ``current_timestamp()``: Spark refuses) and reads no generated column; every
expression parses, binds on the schema and fits the column's type, as the data writer will evaluate it on every
row (:mod:`deltalog.data.constraints`). Identity columns (``{"id": {"start": 1, "step": 1}}``) become
``delta.identity.*`` metadata, checked by :mod:`deltalog.core.features.identity`. The commit adds ``generatedColumns``
(legacy writer 4), ``identityColumns`` (legacy writer 6) or ``allowColumnDefaults`` (table features) to the
protocol.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from deltalog.core.features import identity as identities
from deltalog.core.schema import top_level_fields, walk_fields
from deltalog.data.constraints import table_rules
from deltalog.data.types import plan_schema
from deltalog.errors import DeltaLogError, InvalidArgumentError, SchemaError
from deltalog.expr import tree as X
from deltalog.expr.parse import parse

GENERATION = "delta.generationExpression"
DEFAULT = "CURRENT_DEFAULT"
#: functions whose value is not a function of the row: Spark refuses them in generation expressions
NONDETERMINISTIC = frozenset(
    {
        "rand",
        "random",
        "randn",
        "uuid",
        "shuffle",
        "now",
        "current_timestamp",
        "current_date",
        "localtimestamp",
        "current_timezone",
        "current_user",
        "user",
        "monotonically_increasing_id",
        "spark_partition_id",
        "input_file_name",
    }
)


def _expressions(given: Mapping[str, str] | None, what: str) -> dict[str, str]:
    if given is None:
        return {}
    if not isinstance(given, Mapping):
        raise InvalidArgumentError(f"{what} maps column names to SQL expressions, not {given!r}")
    out = {}
    for column, text in given.items():
        if not isinstance(text, str) or not text.strip():
            raise SchemaError(f"{what} of column {column!r} must be SQL text, not {text!r}", field=str(column))
        out[str(column)] = text
    return out


def _calls(text: str) -> list[str]:
    try:
        node = parse(text)
    except DeltaLogError:
        return []  # the binder below refuses it with the parser's own words
    return [n.name.lower() for n in X.walk(node) if isinstance(n, X.Call)]


def _refs(text: str) -> list[str]:
    try:
        return [".".join(c.parts).lower() for c in X.column_refs(parse(text))]
    except DeltaLogError:
        return []


def declared(schema: Mapping[str, Any]) -> bool:
    """Whether the schema's own field metadata declares a generated column, a default or an identity column."""
    return any(
        GENERATION in (f.get("metadata") or {}) or DEFAULT in (f.get("metadata") or {}) or identities.is_identity(f)
        for f in walk_fields_of(schema)
    )


def with_column_rules(
    schema: Mapping[str, Any],
    generated: Mapping[str, str] | None = None,
    defaults: Mapping[str, str] | None = None,
    identity: Mapping[str, Mapping[str, Any]] | None = None,
    partition_columns: Sequence[str] = (),
) -> dict[str, Any]:
    """``schema`` (Delta JSON) with the generation expressions, defaults and identity columns in its fields'
    metadata, checked (identity columns by :func:`~deltalog.core.features.identity.check_definitions`)."""
    gen, dflt = _expressions(generated, "generation expression"), _expressions(defaults, "default")
    out: dict[str, Any] = identities.with_definitions(schema, identity)
    fields = {f["name"].lower(): f for f in top_level_fields(out)}
    for key, given in ((GENERATION, gen), (DEFAULT, dflt)):
        for column, text in given.items():
            field = fields.get(column.lower())
            if field is None:
                raise SchemaError(f"no column {column!r} in the schema (a top-level column is needed)", field=column)
            field["metadata"] = {**(field.get("metadata") or {}), key: text}
    generated_names = {f["name"].lower() for f in fields.values() if GENERATION in (f.get("metadata") or {})}
    for f in fields.values():
        meta = f.get("metadata") or {}
        if GENERATION in meta and DEFAULT in meta:
            raise SchemaError(f"column {f['name']!r} is generated, so it cannot also have a default", field=f["name"])
        if GENERATION not in meta:
            continue
        text = str(meta[GENERATION])
        odd = sorted(set(_calls(text)) & NONDETERMINISTIC)
        if odd:
            raise SchemaError(
                f"generated column {f['name']!r}: {odd[0]}() is not deterministic, so its values could not be "
                f"checked against the expression ({text})",
                field=f["name"],
            )
        other = [r for r in _refs(text) if r.split(".")[0] in generated_names]
        if other:
            raise SchemaError(
                f"generated column {f['name']!r} reads generated column {other[0]!r} ({text}): a generation "
                "expression may read only ordinary columns",
                field=f["name"],
            )
    identities.check_definitions(out, partition_columns)
    table_rules(out, {}, plan_schema(out, False))  # parses, binds and types every column rule now
    return out


def walk_fields_of(schema: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Every field of ``schema`` at any depth (a nested identity column is refused by name, not overlooked)."""
    return [at.field for at in walk_fields(schema)]


__all__ = ["DEFAULT", "GENERATION", "NONDETERMINISTIC", "declared", "with_column_rules"]
