"""Row rules at the log level: CHECK constraints, invariants and generated columns as the metadata holds them.

PROTOCOL "CHECK Constraints": ``delta.constraints.<name>`` in the configuration holds a boolean SQL expression
every row must satisfy; adding one requires validating the existing rows first, else the table stays
unchanged; every new row must satisfy all of them. "Column Invariants": ``delta.invariants`` column metadata,
``{"expression": {"expression": "<sql>"}}``, same rule for new rows. "Generated Columns":
``delta.generationExpression``; new rows satisfy ``(value <=> expression) IS TRUE``. A row fails when the
result is false **or null** (Delta Spark ``constraints/CheckDeltaInvariant.scala``). Spark stores constraint
names in lower case and refuses a name that exists (``commands/alterDeltaTableCommands.scala``).

Expressions are evaluated by the data plane (:mod:`deltalog.data.constraints`, with Spark SQL on executors);
the log only knows whether that happened. So a commit adding rows to a table with such rules is refused unless
its caller says the rows were validated, and that statement goes into ``commitInfo`` under
:data:`VALIDATION_KEY`, where anyone auditing the table can see who vouched for what.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import orjson

from deltalog.core import actions as A
from deltalog.core.features.configuration import TableConfiguration
from deltalog.core.features.kinds import NEW_ROWS, NONE, Obligation, Rule
from deltalog.core.features.property_rules import CONSTRAINT_PREFIX
from deltalog.core.files.facts import path_key
from deltalog.core.schema import parse_schema, walk_fields
from deltalog.errors import InvalidArgumentError, InvalidCommitError

INVARIANTS = "delta.invariants"
GENERATION = "delta.generationExpression"
#: commitInfo key recording who validated rows: {"newRows"|"existingRows": CHECKED|ATTESTED}
VALIDATION_KEY = "deltalogValidation"
CHECKED = "checked"  # deltalog's writer (or Spark on the executors) evaluated every rule on every row
ATTESTED = "attested"  # the caller stated it validated the rows; deltalog did not evaluate them
_VALIDATIONS = (CHECKED, ATTESTED)
#: the writer feature behind each kind of rule
FEATURES = {"check": "checkConstraints", "invariant": "invariants", "generated": "generatedColumns"}
#: column metadata of a default value: new rows get it where they have none (``allowColumnDefaults``)
DEFAULT_VALUE = "CURRENT_DEFAULT"


@dataclass(frozen=True)
class RowRule:
    """One rule rows must satisfy: ``kind`` check/invariant/generated, its name, SQL text, column path."""

    kind: str
    name: str
    expression: str
    column: str | None = None


def check_constraints(configuration: Mapping[str, str]) -> tuple[RowRule, ...]:
    """The CHECK constraints (name lower-cased, as Spark keys them), sorted by name."""
    out = [
        RowRule("check", str(k)[len(CONSTRAINT_PREFIX) :].lower(), str(v))
        for k, v in configuration.items()
        if str(k).lower().startswith(CONSTRAINT_PREFIX)
    ]
    return tuple(sorted(out, key=lambda r: r.name))


def _invariant(raw: Any) -> str:
    """The SQL of a ``delta.invariants`` value; its raw text when it does not have the protocol's shape."""
    try:
        doc = orjson.loads(raw) if isinstance(raw, (str, bytes)) else raw
        text = doc["expression"]["expression"]
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return str(raw)
    return str(text)


def row_rules(configuration: Mapping[str, str], schema: Any) -> tuple[RowRule, ...]:
    """Every rule new rows must satisfy: CHECK constraints, then invariants and generated columns by path."""
    out = list(check_constraints(configuration))
    for at in walk_fields(schema):
        meta = at.field.get("metadata")
        if not isinstance(meta, Mapping):
            continue
        if INVARIANTS in meta:
            out.append(RowRule("invariant", f"invariant on {at.path}", _invariant(meta[INVARIANTS]), at.path))
        if GENERATION in meta:
            out.append(RowRule("generated", f"generated column {at.path}", str(meta[GENERATION]), at.path))
    return tuple(out)


def validation_record(**kinds: str) -> dict[str, Any]:
    """The commitInfo entry for ``newRows=...``/``existingRows=...`` (values :data:`CHECKED`/:data:`ATTESTED`)."""
    for kind, how in kinds.items():
        if how not in _VALIDATIONS:
            raise InvalidArgumentError(f"{kind} validation must be {CHECKED!r} or {ATTESTED!r}, not {how!r}")
    return {VALIDATION_KEY: dict(sorted(kinds.items()))}


def with_record(info: A.CommitInfo, record: Mapping[str, Any]) -> A.CommitInfo:
    """``info`` with a validation record merged into its other fields."""
    if not record:
        return info
    merged = dict(info.other.get(VALIDATION_KEY) or {})
    merged.update(record[VALIDATION_KEY])
    return replace(info, other={**info.other, VALIDATION_KEY: merged})


def check_commit(
    actions: Sequence[A.Action], configuration: Mapping[str, str], schema: Any, *, rows_validated: str | None
) -> dict[str, Any]:
    """Refuse a commit that adds rows to a table with row rules unless ``rows_validated`` says they were
    (:data:`CHECKED` or :data:`ATTESTED`); returns the commitInfo entry to record (empty when not needed).

    New rows are ``dataChange=true`` adds of paths the commit does not also remove: a DV re-add and a
    ``dataChange=false`` compaction keep rows the table already holds.
    """
    rules = row_rules(configuration, schema)
    removed = {path_key(a.path) for a in actions if isinstance(a, A.Remove)}
    adds = [a for a in actions if isinstance(a, A.Add) and a.data_change and path_key(a.path) not in removed]
    if not rules or not adds:
        return {}
    if rows_validated not in _VALIDATIONS:
        names = ", ".join(r.name for r in rules[:3]) + (", ..." if len(rules) > 3 else "")
        features = ", ".join(sorted({FEATURES[r.kind] for r in rules}))
        raise InvalidCommitError(
            f"the table uses {features} ({names}) and this commit adds rows ({adds[0].path}) nobody validated: "
            "deltalog cannot check rows from the log, so write them with deltalog's data writer, or commit with "
            "data_validated=True after checking them yourself (recorded in commitInfo)",
            rule="validate-rows",
        )
    assert rows_validated is not None
    return validation_record(newRows=rows_validated)


# ------------------------------------------------------------------------------------------------ changes


def constraint_key(name: str) -> str:
    return f"{CONSTRAINT_PREFIX}{name.lower()}"


def add_constraint(
    metadata: A.Metadata, name: str, expression: str, *, existing_rows: str | None
) -> tuple[A.Metadata, A.CommitInfo]:
    """The metaData and commitInfo of ``ADD CONSTRAINT name CHECK (expression)``.

    PROTOCOL: existing rows must satisfy the constraint before it is committed; ``existing_rows`` says how
    (:data:`CHECKED` by a scan, or :data:`ATTESTED` by the caller); anything else refuses the change.
    """
    clean = name.strip() if isinstance(name, str) else ""
    if not clean:
        raise InvalidArgumentError("a CHECK constraint needs a name")
    if not isinstance(expression, str) or not expression.strip():
        raise InvalidArgumentError(f"constraint {clean!r} needs an expression")
    key = constraint_key(clean)
    if any(str(k).lower() == key for k in metadata.configuration):
        raise InvalidArgumentError(f"constraint {clean.lower()!r} already exists; drop it first")
    if existing_rows not in _VALIDATIONS:
        raise InvalidArgumentError(
            f"cannot add constraint {clean.lower()!r}: the table's existing rows must be validated first (scan them, "
            "or pass existing_rows='attested' when you know they satisfy it)"
        )
    assert existing_rows is not None
    new = replace(metadata, configuration={**metadata.configuration, key: expression})
    info = A.CommitInfo(
        operation="ADD CONSTRAINT",
        operation_parameters={"name": clean.lower(), "expr": expression},
        other=validation_record(existingRows=existing_rows),
    )
    return new, info


def drop_constraint(metadata: A.Metadata, name: str, *, if_exists: bool = False) -> tuple[A.Metadata, A.CommitInfo]:
    """The metaData and commitInfo of ``DROP CONSTRAINT``; a missing name is an error unless ``if_exists``."""
    key = constraint_key(str(name).strip())
    conf = {k: v for k, v in metadata.configuration.items() if str(k).lower() != key}
    if len(conf) == len(metadata.configuration) and not if_exists:
        raise InvalidArgumentError(f"the table has no constraint {str(name).strip().lower()!r}")
    info = A.CommitInfo(operation="DROP CONSTRAINT", operation_parameters={"name": str(name).strip().lower()})
    return replace(metadata, configuration=conf), info


def check_metadata_change(
    before: A.Metadata | None,
    after: A.Metadata,
    *,
    existing_rows: str | None,
    has_rows: bool | Callable[[], bool],
) -> dict[str, Any]:
    """A metaData that adds or changes a rule (a constraint key, an invariant, a generation expression) on a
    table that already has rows needs those rows validated, as ADD CONSTRAINT does; returns the commitInfo
    entry to record. A rule that was dropped or kept as it was needs nothing. ``has_rows`` may be a callable,
    asked only when a rule is new (finding out may mean loading the table's file list)."""
    if before is None:
        return {}
    old = set(row_rules(before.configuration, parse_schema(before.schema_string)))
    new = [r for r in row_rules(after.configuration, parse_schema(after.schema_string)) if r not in old]
    if not new or not (has_rows() if callable(has_rows) else has_rows):
        return {}
    if existing_rows not in _VALIDATIONS:
        raise InvalidCommitError(
            f"this change adds {new[0].kind} rule {new[0].name!r} ({new[0].expression}) to a table with rows: they "
            "must be validated first (scan them, or attest with existing_data_validated=True)",
            rule="validate-rows",
        )
    assert existing_rows is not None
    return validation_record(existingRows=existing_rows)


# ------------------------------------------------------------------------------------------------ obligations


def _new_rows_must_satisfy(active: Callable[[TableConfiguration], bool], what: str) -> Rule:
    def rule(kind: str, table: TableConfiguration) -> Obligation:
        if kind in NEW_ROWS and active(table):
            return Obligation(
                f"new rows must satisfy the table's {what}: a data writer checks them and the commit "
                "records that it did",
                "constraints",
            )
        return NONE

    return rule


OBLIGATIONS: Mapping[str, Rule] = {
    FEATURES["invariant"]: _new_rows_must_satisfy(lambda t: t.column_metadata(INVARIANTS), "column invariants"),
    FEATURES["check"]: _new_rows_must_satisfy(lambda t: bool(t.properties.constraints), "CHECK constraints"),
    FEATURES["generated"]: _new_rows_must_satisfy(lambda t: t.column_metadata(GENERATION), "generated columns"),
    "allowColumnDefaults": _new_rows_must_satisfy(lambda t: t.column_metadata(DEFAULT_VALUE), "column defaults"),
}


__all__ = [
    "ATTESTED",
    "DEFAULT_VALUE",
    "OBLIGATIONS",
    "CHECKED",
    "FEATURES",
    "GENERATION",
    "INVARIANTS",
    "VALIDATION_KEY",
    "RowRule",
    "add_constraint",
    "check_commit",
    "check_constraints",
    "check_metadata_change",
    "constraint_key",
    "drop_constraint",
    "row_rules",
    "validation_record",
    "with_record",
]
