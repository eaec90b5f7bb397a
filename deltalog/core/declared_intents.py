"""Intents of long-running writers: what each declared it will read and replace, and who yields to whom.

A writer that declares an intent writes ``_delta_log/_intents/<txnId>.json`` (see
:mod:`deltalog.table.declared_intents`) and keeps it fresh with a heartbeat. Other declared writers read these
records to stop *early*, before hours of work are thrown away at commit time. This module is the pure part:
the record, its JSON form, overlap, liveness and priority.

The policy, and what it binds
-----------------------------
* **The commit protocol stays the arbiter of what lands.** Intents are advisory. ``Transaction.commit()``
  never reads them and never waits for or refuses to overtake another writer's intent: it is purely
  optimistic, exactly as without intents. An undeclared writer (Delta Spark, delta-rs, an old deltalog) or a
  crashed one can therefore never block anybody, and a declared writer that ignores ``check_early`` loses
  nothing but the chance to stop early.
* **Intents only let declared writers stop early.** ``check_early`` raises when (a) a commit after the read
  version already conflicts with the read set (the commit would certainly fail), or (b) a *live* intent of
  another writer *overlaps* ours and has *priority* over ours (our commit would fail if that writer lands
  first, which priority says it should).
* **Priority** is a strict total order computed from the two records alone, so both writers reach the same
  verdict and exactly one of them yields: a compaction (``is_compaction``) yields to any data write (Hudi's
  "prefer writer"); otherwise the earliest ``declared_at`` wins, ties broken by ``txn_id``. ``declared_at``
  comes from the writer's clock: skew can reorder two nearly simultaneous declarations, which is harmless,
  since either order is safe and the commit still decides what lands.
* **Liveness** is judged by the *store's* modification time of the intent file, never by a clock written
  inside it (writers' clocks differ): an intent is live while ``mtime > store_now - timeout``. A file that
  cannot be parsed (a torn overwrite, a future format) counts as live until it expires, and, since nothing
  can be known of it, as overlapping everything with priority over everybody.
* **Overlap** is conservative: two intents overlap when they name a common file, or when a predicate of one
  and a predicate of the other could both be true of one partition value. A whole-table read overlaps
  everything; disjoint equality/IN sets on a column do not overlap; ranges and other operators are judged
  against the finite value sets of the other side, and are assumed to overlap when there is none.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import orjson

from deltalog.core.conflicts import ReadPredicate
from deltalog.core.partitions import Condition, PartitionValueError, serialize_partition_value, typed_conditions
from deltalog.errors import ConcurrentAppendError, ConcurrentDeleteReadError, ConcurrentModificationError

INTENTS_DIR = "_delta_log/_intents"
FORMAT_VERSION = 1
DEFAULT_HEARTBEAT_S = 10.0
DEFAULT_TIMEOUT_S = 60.0
#: extra age, beyond an intent's own timeout, before ``deltalog cleanup`` deletes it (covers clock skew)
CLEANUP_MARGIN_MS = 5 * 60_000
DELETE_OPERATIONS = frozenset({"DELETE"})

#: (column, op, values as JSON-safe strings or None)
ConditionSpec = tuple[str, str, tuple[str | None, ...]]


def value_text(value: Any) -> str | None:
    """A typed partition literal as a string :func:`~deltalog.core.partitions.parse_value` reads back: the
    partition value serialization for the types it covers (four-digit years for dates and timestamps)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogateescape")
    if isinstance(value, (bool, int, float, Decimal, dt.date)):
        return serialize_partition_value(value)
    return str(value)


def predicate_specs(predicates: Sequence[ReadPredicate]) -> tuple[tuple[ConditionSpec, ...], ...]:
    """The serialisable form of recorded reads (an empty inner tuple is a whole-table read)."""
    return tuple(
        tuple((c.column, c.op, tuple(value_text(v) for v in c.values)) for c in p.conditions) for p in predicates
    )


@dataclass(frozen=True)
class IntentRecord:
    """One declared intent. ``files`` are canonical path keys; ``declared_at`` is epoch ms on the writer's clock."""

    txn_id: str
    read_version: int
    predicates: tuple[tuple[ConditionSpec, ...], ...]
    files: tuple[str, ...]
    operation: str
    owner: str
    declared_at: int
    is_compaction: bool = False
    timeout_ms: int = int(DEFAULT_TIMEOUT_S * 1000)
    heartbeat_ms: int = int(DEFAULT_HEARTBEAT_S * 1000)

    @property
    def reads_whole_table(self) -> bool:
        return any(not p for p in self.predicates)

    def typed_predicates(self, types: Mapping[str, Any]) -> tuple[ReadPredicate, ...]:
        """The predicates with literals parsed by column type; one that cannot be judged reads the whole table."""
        out = []
        for spec in self.predicates:
            try:
                conds = tuple(typed_conditions((Condition(c, op, vals) for c, op, vals in spec), types))
            except (KeyError, PartitionValueError):
                conds = ()
            out.append(ReadPredicate(conds))
        return tuple(out)

    def predicate_text(self) -> str:
        """For people: ``day = '2026-01-01' OR ...``; ``<whole table>``; ``<nothing>``."""
        if not self.predicates:
            return "<nothing>"
        if self.reads_whole_table:
            return "<whole table>"
        parts = []
        for spec in self.predicates:
            conds = [f"{col} {op} {list(vals) if op in ('in', 'not in') else repr(vals[0])}" for col, op, vals in spec]
            parts.append(" AND ".join(conds))
        return " OR ".join(parts)


def encode(record: IntentRecord) -> bytes:
    body = {
        "formatVersion": FORMAT_VERSION,
        "txnId": record.txn_id,
        "readVersion": record.read_version,
        "predicates": [
            [{"column": col, "op": op, "values": list(vals)} for col, op, vals in spec] for spec in record.predicates
        ],
        "files": list(record.files),
        "operation": record.operation,
        "owner": record.owner,
        "declaredAt": record.declared_at,
        "isCompaction": record.is_compaction,
        "timeoutMs": record.timeout_ms,
        "heartbeatMs": record.heartbeat_ms,
    }
    return orjson.dumps(body)


class IntentDecodeError(ValueError):
    pass


def _str(obj: Mapping[str, Any], key: str) -> str:
    v = obj.get(key)
    if not isinstance(v, str):
        raise IntentDecodeError(f"{key} is not a string")
    return v


def _int(obj: Mapping[str, Any], key: str) -> int:
    v = obj.get(key)
    if not isinstance(v, int) or isinstance(v, bool):
        raise IntentDecodeError(f"{key} is not an integer")
    return v


def _spec(raw: Any) -> ConditionSpec:
    if not isinstance(raw, dict):
        raise IntentDecodeError("a condition is not an object")
    values = raw.get("values")
    if not isinstance(values, list) or not all(v is None or isinstance(v, str) for v in values) or not values:
        raise IntentDecodeError("condition values are not a non-empty list of strings")
    return (_str(raw, "column"), _str(raw, "op"), tuple(values))


def decode(data: bytes) -> IntentRecord:
    """The record in ``data``; :class:`IntentDecodeError` for anything torn, malformed or of a newer format."""
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise IntentDecodeError(f"not JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise IntentDecodeError("not a JSON object")
    if _int(obj, "formatVersion") != FORMAT_VERSION:
        raise IntentDecodeError(f"unknown formatVersion {obj.get('formatVersion')!r}")
    preds, files = obj.get("predicates"), obj.get("files")
    if not isinstance(preds, list) or not all(isinstance(p, list) for p in preds):
        raise IntentDecodeError("predicates is not a list of lists")
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        raise IntentDecodeError("files is not a list of strings")
    compaction = obj.get("isCompaction")
    if not isinstance(compaction, bool):
        raise IntentDecodeError("isCompaction is not a boolean")
    return IntentRecord(
        txn_id=_str(obj, "txnId"),
        read_version=_int(obj, "readVersion"),
        predicates=tuple(tuple(_spec(c) for c in p) for p in preds),
        files=tuple(files),
        operation=_str(obj, "operation"),
        owner=_str(obj, "owner"),
        declared_at=_int(obj, "declaredAt"),
        is_compaction=compaction,
        timeout_ms=_int(obj, "timeoutMs"),
        heartbeat_ms=_int(obj, "heartbeatMs"),
    )


# ---------------------------------------------------------------------------------------------- overlap
def _finite(cond: Condition) -> frozenset[Any] | None:
    if cond.op in ("=", "==", "in"):
        return frozenset(cond.values)
    return None


def predicates_overlap(a: ReadPredicate, b: ReadPredicate) -> bool:
    """Could one partition value satisfy both ``a`` and ``b``? True unless some column proves it cannot."""
    if a.whole_table or b.whole_table:
        return True
    conds = [*a.conditions, *b.conditions]
    for column in {c.column for c in conds}:
        on_col = [c for c in conds if c.column == column]
        sets = [s for s in (_finite(c) for c in on_col) if s is not None]
        if not sets:
            continue  # only ranges or negations on this column: assume they can meet
        candidates = frozenset.intersection(*sets)
        try:
            if not any(all(c.matches(v) for c in on_col) for v in candidates):
                return False
        except TypeError:
            continue  # values of different types: cannot judge, assume overlap
    return True


def overlaps(a: IntentRecord, b: IntentRecord, types: Mapping[str, Any]) -> bool:
    """Do ``a`` and ``b`` touch a common file or a common partition value (conservatively)?"""
    if set(a.files) & set(b.files):
        return True
    return any(predicates_overlap(x, y) for x in a.typed_predicates(types) for y in b.typed_predicates(types))


# ---------------------------------------------------------------------------------------------- liveness, priority
def is_live(mtime_ms: int, store_now_ms: int, timeout_ms: int) -> bool:
    """Live while the store's modification time is within ``timeout_ms`` of the store's now."""
    return mtime_ms > store_now_ms - timeout_ms


def has_priority(a: IntentRecord, b: IntentRecord) -> bool:
    """Does ``a`` go before ``b``? Data writes before compactions, then earliest declared, then txn id."""
    if a.is_compaction != b.is_compaction:
        return not a.is_compaction
    return (a.declared_at, a.txn_id) < (b.declared_at, b.txn_id)


@dataclass(frozen=True)
class ObservedIntent:
    """One intent file as listed: ``record`` is None when it cannot be parsed."""

    path: str
    txn_id: str
    mtime_ms: int
    record: IntentRecord | None
    error: str | None = None

    def timeout_ms(self, default_ms: int) -> int:
        return self.record.timeout_ms if self.record is not None else default_ms

    def live(self, store_now_ms: int, default_timeout_ms: int) -> bool:
        return is_live(self.mtime_ms, store_now_ms, self.timeout_ms(default_timeout_ms))


def blocking_intent(
    mine: IntentRecord,
    others: Sequence[ObservedIntent],
    types: Mapping[str, Any],
    store_now_ms: int,
) -> ObservedIntent | None:
    """The first live intent of another writer that overlaps ``mine`` and has priority over it, if any."""
    for other in sorted(others, key=lambda o: o.path):
        if other.txn_id == mine.txn_id or not other.live(store_now_ms, mine.timeout_ms):
            continue
        if other.record is None:
            return other  # unknowable: live, overlapping and first until it expires
        if other.record.txn_id == mine.txn_id:
            continue
        if has_priority(other.record, mine) and overlaps(other.record, mine, types):
            return other
    return None


def early_error(mine: IntentRecord, other: ObservedIntent) -> ConcurrentModificationError:
    """The error a commit would most likely raise once ``other`` lands: its write hits what we read.

    A data write into what we read is :class:`ConcurrentAppendError` (the first check the commit makes that
    it would fail); an intent that only deletes is :class:`ConcurrentDeleteReadError`; an unreadable intent
    is the base :class:`ConcurrentModificationError`, since nothing is known of it. ``winning_version`` is
    None: nothing has been committed yet.
    """
    rec = other.record
    if rec is None:
        return ConcurrentModificationError(
            f"stopping early: intent file {other.path} cannot be read ({other.error}); until it expires it "
            "counts as a live, overlapping intent of higher priority"
        )
    what = f"{rec.operation} of {rec.predicate_text()}"
    msg = (
        f"stopping early: live intent of transaction {rec.txn_id} (owner {rec.owner}, {what}) overlaps what "
        f"transaction {mine.txn_id} read and has priority; this commit would conflict once it lands"
    )
    if rec.operation.upper() in DELETE_OPERATIONS:
        return ConcurrentDeleteReadError(msg)
    return ConcurrentAppendError(msg)


__all__ = [
    "CLEANUP_MARGIN_MS",
    "DEFAULT_HEARTBEAT_S",
    "DEFAULT_TIMEOUT_S",
    "INTENTS_DIR",
    "IntentDecodeError",
    "IntentRecord",
    "ObservedIntent",
    "blocking_intent",
    "decode",
    "early_error",
    "encode",
    "has_priority",
    "is_live",
    "overlaps",
    "predicate_specs",
    "predicates_overlap",
]
