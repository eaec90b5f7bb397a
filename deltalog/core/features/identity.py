"""Identity columns (PROTOCOL.md "Identity Columns"): their definition, the values a write takes and the
high-water mark its commit advances.

A column is an identity column when its field metadata holds ``delta.identity.start`` and ``.step`` (longs;
the step is never 0), optionally ``.highWaterMark`` (the furthest value generated so far, in the step's
direction) and ``.allowExplicitInsert`` (whether writers may give their own values). Generated values are
``start + k * step`` beyond the mark; a write that generates values commits a ``metaData`` whose only change is
the advanced mark, tagged ``delta.identity.schemaUpdate`` in ``commitInfo`` as Delta Spark tags it
(``OptimisticTransaction.scala``), which is how another writer's conflict check tells it apart from a real
metadata change.

Definitions are checked as Delta Spark checks them (``DeltaColumnBuilder.scala``, the
``DELTA_IDENTITY_COLUMNS_*`` error classes): BIGINT only, a non-zero step, not also generated, not a partition
column, top-level. Explicit values (allowed only with ``allowExplicitInsert``) move the mark to the first
value of the sequence at or beyond them, as Spark's ``SYNC IDENTITY`` computes it, so later generated values
never meet them; Spark's own writes leave the mark where generated values put it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from deltalog.core import actions as A
from deltalog.core.features.configuration import TableConfiguration
from deltalog.core.features.kinds import NEW_ROWS, NONE, REWRITE, Obligation, Rule
from deltalog.core.schema import PHYSICAL_NAME, top_level_fields, walk_fields
from deltalog.errors import InvalidArgumentError, SchemaError, UnsupportedFeatureError

START = "delta.identity.start"
STEP = "delta.identity.step"
HIGH_WATER_MARK = "delta.identity.highWaterMark"
ALLOW_EXPLICIT_INSERT = "delta.identity.allowExplicitInsert"
PREFIX = "delta.identity."
GENERATION = "delta.generationExpression"
#: the commitInfo tag of a commit whose metaData only advances identity high-water marks (Delta Spark's)
SCHEMA_UPDATE_TAG = "delta.identity.schemaUpdate"
FEATURE = "identityColumns"
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1


@dataclass(frozen=True)
class IdentityColumn:
    """One identity column: logical and physical name, the sequence and its mark (None: nothing generated)."""

    name: str
    physical: str
    start: int
    step: int
    mark: int | None
    allow_explicit_insert: bool

    def first(self) -> int:
        """The next value to generate: one step beyond the mark, or ``start`` when nothing was generated."""
        return self.start if self.mark is None else self.mark + self.step

    def values(self, count: int, first: int | None = None) -> tuple[int, int]:
        """(first, last) of ``count`` values from ``first`` (default :meth:`first`); an overflow of BIGINT is
        refused by name, as the protocol asks."""
        lo = self.first() if first is None else first
        last = lo + (count - 1) * self.step
        if not (LONG_MIN <= lo <= LONG_MAX and LONG_MIN <= last <= LONG_MAX):
            raise InvalidArgumentError(
                f"identity column {self.name!r}: {count} more values from {lo} by {self.step} overflow BIGINT "
                "(DELTA_IDENTITY_COLUMNS_VALUE_OUT_OF_RANGE); nothing was committed"
            )
        return lo, last

    def further(self, a: int, b: int) -> int:
        """The value further along the step's direction."""
        return max(a, b) if self.step > 0 else min(a, b)

    def synced(self, lo: int, hi: int) -> int | None:
        """The mark explicit values ``lo..hi`` leave: the first sequence value at or beyond the furthest of them
        (Spark's ``SYNC IDENTITY`` rounding), never behind the current mark; None when they stay behind it."""
        value = hi if self.step > 0 else lo
        if (value - self.start) * self.step < 0:
            return self.mark  # before start: the sequence never reaches it
        k = -(-(value - self.start) // self.step) if self.step > 0 else -(-(self.start - value) // -self.step)
        rounded = self.start + k * self.step
        if not LONG_MIN <= rounded <= LONG_MAX:
            rounded = value
        return rounded if self.mark is None else self.further(self.mark, rounded)


@dataclass(frozen=True)
class Run:
    """The values one write generated for identity column ``column`` (logical name): ``first`` to ``last`` by
    its step, in the files it wrote."""

    column: str
    first: int
    last: int


def next_after(col: IdentityColumn, mark: int) -> int:
    """The first sequence value strictly beyond ``mark`` (a mark off the sequence, set by another engine,
    rounds forward)."""
    fresh = IdentityColumn(col.name, col.physical, col.start, col.step, None, col.allow_explicit_insert)
    rounded = fresh.synced(mark, mark)
    if rounded is None or (rounded - col.start) * col.step < 0:
        return col.start
    return rounded + col.step if rounded == mark else rounded


def _long(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def is_identity(field: Mapping[str, Any]) -> bool:
    meta = field.get("metadata") or {}
    return isinstance(meta, Mapping) and any(str(k).startswith(PREFIX) for k in meta)


def columns(schema: Mapping[str, Any]) -> tuple[IdentityColumn, ...]:
    """The schema's identity columns (top-level fields with ``delta.identity.start`` and ``.step``)."""
    out = []
    for f in top_level_fields(schema):
        meta = f.get("metadata") or {}
        start, step = _long(meta.get(START)), _long(meta.get(STEP))
        if start is None or step is None:
            continue
        out.append(
            IdentityColumn(
                f["name"],
                str(meta.get(PHYSICAL_NAME, f["name"])),
                start,
                step,
                _long(meta.get(HIGH_WATER_MARK)),
                meta.get(ALLOW_EXPLICIT_INSERT) is True,
            )
        )
    return tuple(out)


def check_definitions(schema: Mapping[str, Any], partition_columns: Sequence[str] = ()) -> None:
    """Refuse, by column, identity definitions Delta Spark refuses (nothing is written)."""
    top = {id(f) for f in top_level_fields(schema)}
    partitions = {c.lower() for c in partition_columns}
    for at in walk_fields(schema):
        f = at.field
        if not is_identity(f):
            continue
        name = at.path
        meta = f.get("metadata") or {}
        if id(f) not in top:
            raise SchemaError(f"identity column {name!r} is nested: only top-level columns can be", field=name)
        if f.get("type") != "long":
            raise SchemaError(
                f"identity column {name!r} is {f.get('type')!r}: only BIGINT (long) columns can be identity "
                "columns (DELTA_IDENTITY_COLUMNS_UNSUPPORTED_DATA_TYPE)",
                field=name,
            )
        start, step = _long(meta.get(START)), _long(meta.get(STEP))
        if start is None or step is None:
            raise SchemaError(
                f"identity column {name!r}: {START} and {STEP} must both be longs, not {meta.get(START)!r} and "
                f"{meta.get(STEP)!r}",
                field=name,
            )
        if step == 0:
            raise SchemaError(
                f"identity column {name!r}: the step cannot be 0 (DELTA_IDENTITY_COLUMNS_ILLEGAL_STEP)", field=name
            )
        if HIGH_WATER_MARK in meta and _long(meta[HIGH_WATER_MARK]) is None:
            raise SchemaError(f"identity column {name!r}: {HIGH_WATER_MARK} must be a long", field=name)
        if ALLOW_EXPLICIT_INSERT in meta and not isinstance(meta[ALLOW_EXPLICIT_INSERT], bool):
            raise SchemaError(f"identity column {name!r}: {ALLOW_EXPLICIT_INSERT} must be a boolean", field=name)
        if GENERATION in meta:
            raise SchemaError(
                f"identity column {name!r} cannot also be a generated column "
                "(DELTA_IDENTITY_COLUMNS_WITH_GENERATED_EXPRESSION)",
                field=name,
            )
        if name.lower() in partitions:
            raise SchemaError(
                f"identity column {name!r} cannot be a partition column "
                "(DELTA_IDENTITY_COLUMNS_PARTITION_NOT_SUPPORTED)",
                field=name,
            )


def with_definitions(schema: Mapping[str, Any], given: Mapping[str, Mapping[str, Any]] | None) -> dict[str, Any]:
    """``schema`` with ``{"id": {"start": 1, "step": 1, "allowExplicitInsert": False}}`` as field metadata
    (start and step default to 1, as Spark's); checked by :func:`check_definitions` by the caller."""
    out: dict[str, Any] = orjson.loads(orjson.dumps(schema))
    if not given:
        return out
    if not isinstance(given, Mapping):
        raise InvalidArgumentError(f"identity maps column names to {{'start', 'step'}}, not {given!r}")
    fields = {f["name"].lower(): f for f in top_level_fields(out)}
    for column, spec in given.items():
        field = fields.get(str(column).lower())
        if field is None:
            raise SchemaError(f"no column {column!r} in the schema (a top-level column is needed)", field=str(column))
        spec = {} if spec is None else spec
        unknown = sorted(set(spec) - {"start", "step", "allowExplicitInsert"}) if isinstance(spec, Mapping) else None
        if unknown is None or unknown:
            raise SchemaError(
                f"identity of column {column!r} takes start, step and allowExplicitInsert, not {unknown or spec!r}",
                field=str(column),
            )
        meta = {
            START: spec.get("start", 1),
            STEP: spec.get("step", 1),
            ALLOW_EXPLICIT_INSERT: spec.get("allowExplicitInsert", False),
        }
        field["metadata"] = {**(field.get("metadata") or {}), **meta}
    return out


def with_marks(schema: Mapping[str, Any], marks: Mapping[str, int]) -> dict[str, Any]:
    """``schema`` with the identity columns named in ``marks`` (logical names) moved to those marks, never
    back (a mark already further stays)."""
    out: dict[str, Any] = orjson.loads(orjson.dumps(schema))
    by_name = {c.name: c for c in columns(out)}
    for f in top_level_fields(out):
        col = by_name.get(f["name"])
        if col is None or f["name"] not in marks:
            continue
        mark = marks[f["name"]] if col.mark is None else col.further(col.mark, marks[f["name"]])
        f["metadata"] = {**f["metadata"], HIGH_WATER_MARK: mark}
    return out


def metadata_with_marks(metadata: A.Metadata | None, marks: Mapping[str, int]) -> A.Metadata | None:
    """``metadata`` with the identity high-water marks a write's values reached (itself without any)."""
    if metadata is None or not marks:
        return metadata
    schema = with_marks(orjson.loads(metadata.schema_string or "{}"), marks)
    return dataclasses.replace(metadata, schema_string=orjson.dumps(schema).decode())


def _without_marks(schema: Mapping[str, Any]) -> Any:
    out: dict[str, Any] = orjson.loads(orjson.dumps(schema))
    for f in top_level_fields(out):
        if isinstance(f.get("metadata"), dict):
            f["metadata"].pop(HIGH_WATER_MARK, None)
    return out


def only_marks_changed(before: Mapping[str, Any], after: Mapping[str, Any]) -> bool:
    """Whether schema ``after`` differs from ``before`` in identity high-water marks only (and does)."""
    return before != after and _without_marks(before) == _without_marks(after)


def marks_of(schema: Mapping[str, Any]) -> dict[str, int | None]:
    return {c.name: c.mark for c in columns(schema)}


def marks_only_update(actions: Sequence[A.Action], read: A.Metadata | None) -> bool:
    """Whether the commit's only change of the table is a metaData advancing identity high-water marks
    (what Delta Spark tags :data:`SCHEMA_UPDATE_TAG`): no protocol, one metaData equal to the read one but for
    the marks."""
    if read is None or any(isinstance(a, A.Protocol) for a in actions):
        return False
    metas = [a for a in actions if isinstance(a, A.Metadata)]
    if len(metas) != 1:
        return False
    ours = metas[0]
    if dataclasses.replace(ours, schema_string=read.schema_string) != read:
        return False
    if ours.schema_string is None or read.schema_string is None:
        return False
    return only_marks_changed(orjson.loads(read.schema_string), orjson.loads(ours.schema_string))


def tagged(tags: Iterable[tuple[str, Any]]) -> bool:
    """Whether commitInfo ``tags`` say the commit's metaData only advanced identity marks."""
    return any(k == SCHEMA_UPDATE_TAG and str(v).lower() == "true" for k, v in tags)


#: the check a rewrite owes a table with identity columns: rows copied into new files keep their identity values as
#: they are (neither generated again nor taken as explicit inserts), new rows get values generated above the mark,
#: and only those advance it. Met only by a commit whose writer declares it (``identity_preserved``: deltalog's
#: DELETE, UPDATE, MERGE and ``replace_where`` write their copies so), never by default: a commit of files it did
#: not write cannot say what they hold
PRESERVATION = "identity_preservation"


def obligation(kind: str, table: TableConfiguration) -> Obligation:
    """New rows need values generated above the mark and the mark advanced: the check of deltalog's data writer
    and commit (:func:`~deltalog.core.features.commit_checks.check_commit` refuses new rows it did not write).
    Rows a rewrite copies must also keep their values (:data:`PRESERVATION`, met where the writer declares it).
    A rearrangement (OPTIMIZE) moves the same rows, values and all: it owes nothing."""
    if kind not in NEW_ROWS or not table.column_metadata(PREFIX):
        return NONE
    if kind == REWRITE:
        return Obligation(
            "identity columns: rows copied by a rewrite keep their identity values and new rows get values above "
            "delta.identity.highWaterMark, which deltalog's DELETE, UPDATE, MERGE and replace_where write",
            PRESERVATION,
        )
    return Obligation(
        "identity columns: deltalog's data writer generates values above delta.identity.highWaterMark and the "
        "commit advances the mark",
        "identity",
    )


def check_assignment(col: IdentityColumn, *, update: bool, where: str) -> None:
    """Refuse giving identity column ``col`` a value in ``where`` (a clause of a MERGE, an UPDATE), as Delta
    Spark refuses it (``IdentityColumn.blockIdentityColumnUpdate`` / ``blockExplicitIdentityColumnInsert``):
    an update never; an insert unless the column allows explicit inserts."""
    if update:
        raise UnsupportedFeatureError(
            f"{where}: column {col.name!r} is an identity column, whose values are never updated "
            "(DELTA_IDENTITY_COLUMNS_UPDATE_NOT_SUPPORTED); leave it out of the assignments",
            feature=FEATURE,
        )
    if not col.allow_explicit_insert:
        raise UnsupportedFeatureError(
            f"{where}: column {col.name!r} is an identity column, which generates its own values "
            f"({ALLOW_EXPLICIT_INSERT} is false: DELTA_IDENTITY_COLUMNS_EXPLICIT_INSERT_NOT_SUPPORTED); leave it "
            "out of the insert",
            feature=FEATURE,
        )


OBLIGATIONS: Mapping[str, Rule] = {FEATURE: obligation}


__all__ = [
    "ALLOW_EXPLICIT_INSERT",
    "FEATURE",
    "HIGH_WATER_MARK",
    "OBLIGATIONS",
    "PREFIX",
    "PRESERVATION",
    "SCHEMA_UPDATE_TAG",
    "START",
    "STEP",
    "IdentityColumn",
    "Run",
    "next_after",
    "obligation",
    "check_assignment",
    "check_definitions",
    "columns",
    "is_identity",
    "marks_only_update",
    "marks_of",
    "metadata_with_marks",
    "only_marks_changed",
    "tagged",
    "with_definitions",
    "with_marks",
]
