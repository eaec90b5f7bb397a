"""What one OPTIMIZE (or REORG PURGE) run does on one snapshot, checked before anything is read or written.

From the caller's request and the table as read, :func:`job_for` decides the mode (compaction, Z-order,
clustering on a clustered table, purge), the planner's settings (:mod:`deltalog.core.optimize_plan`), how the
rewritten rows are laid out (:mod:`deltalog.data.rearrange`), what the reader adds and the writer stores (the
materialized row-tracking columns when row tracking is enabled), the commit's kind (what table features ask of
it), and what the commit records (Delta Spark's ``operationParameters``). Every refusal is typed and names
what is wrong, as Delta Spark refuses the same requests: Z-order on a partition column, on a column that does
not exist or has no statistics, or on a clustered table; a ``where`` on a clustered table; a table feature
deltalog cannot honour for a rewrite.

Target size: ``target_size`` when given, else ``delta.targetFileSize``, else 100 MiB as ``deltalake`` (Delta
Spark's OPTIMIZE aims at 1 GiB; 100 MiB keeps one rewrite's working set and the files a reader opens small on
the machines deltalog runs on, and matches what deltalog's writer and ``deltalake`` produce).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from deltalog.core import optimize_plan
from deltalog.core.features import clustering
from deltalog.core.features.obligations import REARRANGE, REARRANGE_KEEPING_IDS
from deltalog.data.curve import HILBERT, ZORDER
from deltalog.data.files import WriteTarget
from deltalog.data.prepare import BatchPreparer
from deltalog.data.read import ReadSchema, with_row_tracking
from deltalog.data.rearrange import KEEP_ORDER, Layout
from deltalog.data.row_ids import kept_columns
from deltalog.data.target import positive, target_file_size
from deltalog.dml import rules
from deltalog.dml.delete import describe, target_of
from deltalog.errors import InvalidArgumentError

if TYPE_CHECKING:
    from deltalog.table.snapshot import Snapshot

OPTIMIZE = "OPTIMIZE"
REORG = "REORG"


@dataclass(frozen=True)
class Request:
    """What the caller asks of one run (see :meth:`deltalog.DeltaLog.optimize`)."""

    where: Any = None
    target_size: int | None = None
    z_order_by: tuple[str, ...] = ()
    min_file_size: int | None = None
    max_concurrent_tasks: int | None = None
    dry_run: bool = False
    min_commit_interval: float | None = None  # seconds between batch commits; None: one commit
    purge: bool = False
    auto: bool = False
    #: auto compaction: only these partitions (``optimize_plan.partition_key``), None for every one
    partitions: frozenset[tuple[tuple[str, str | None], ...]] | None = None


@dataclass(frozen=True)
class Shape:
    """What the rewritten files depend on: a concurrent change to any of it makes them wrong for the table."""

    schema: str | None
    partition_columns: tuple[str, ...]
    column_mapping_mode: str
    row_tracking: tuple[str, str] | None
    clustering_columns: tuple[tuple[str, ...], ...]

    @classmethod
    def of(cls, snap: Snapshot) -> Shape:
        return cls(
            snap.metadata.schema_string,
            tuple(snap.partition_columns),
            snap.column_mapping_mode,
            kept_columns(snap.protocol, snap.configuration),
            _clustering(snap),
        )


@dataclass(frozen=True)
class Job:
    """One run, decided: plan settings, layout, reading and writing, the commit's kind and record."""

    operation: str
    settings: optimize_plan.Settings
    layout: Layout
    spec: ReadSchema
    target: WriteTarget
    kind: str
    shape: Shape
    zorder: tuple[str, ...] = ()
    clustered_by: tuple[str, ...] = ()  # logical clustering columns when clustering (tags, provider)
    clustered_table: bool = False
    auto: bool = False
    predicate: str | None = None  # the partition predicate's text, as the commit records it

    @property
    def parameters(self) -> dict[str, str]:
        """Delta Spark's ``DeltaOperations.Optimize`` / ``Reorg`` parameters, each JSON-encoded as it writes
        them (``predicate`` a JSON list of texts)."""
        params = {"predicate": orjson.dumps([self.predicate] if self.predicate else []).decode()}
        if self.operation == REORG:
            params["applyPurge"] = "true"
            return params
        params["zOrderBy"] = orjson.dumps(list(self.zorder)).decode()
        params["auto"] = "true" if self.auto else "false"
        if self.clustered_table:
            params["clusterBy"] = orjson.dumps(list(self.clustered_by)).decode()
            params["isFull"] = "false"
        return params


def _clustering(snap: Snapshot) -> tuple[tuple[str, ...], ...]:
    if not clustering.clustered(snap.protocol):
        return ()
    return clustering.columns_of(snap.domain_metadata.values())


def _check_zorder(snap: Snapshot, target: WriteTarget, columns: Sequence[str]) -> tuple[str, ...]:
    """Delta Spark's ``validateZorderByColumns``: each column exists, is not a partition column and has
    statistics (the leaves the writer collects them for); the table's spelling of each name."""
    preparer = BatchPreparer(target, rules_checked=True)
    by_name = {p.name.lower(): p for p in preparer.plans}
    partitions = {c.lower() for c in snap.partition_columns}
    out: list[str] = []
    for raw in columns:
        name = str(raw).strip()
        if name.lower() in partitions:
            raise InvalidArgumentError(f"cannot Z-order by {name!r}: it is a partition column")
        plan = by_name.get(name.lower())
        if plan is None:
            raise InvalidArgumentError(
                f"cannot Z-order by {name!r}: not a column of the table ({sorted(p.name for p in preparer.plans)})"
            )
        if plan.kind != "leaf" or (plan.physical,) not in preparer.stats_leaves:
            raise InvalidArgumentError(
                f"cannot Z-order by {name!r}: the table collects no statistics on it (delta.dataSkippingNumIndexedCols"
                " / delta.dataSkippingStatsColumns), so Z-ordering would not help skipping"
            )
        if plan.name in out:
            raise InvalidArgumentError(f"Z-order column {name!r} is listed twice")
        out.append(plan.name)
    return tuple(out)


def job_for(snap: Snapshot, request: Request) -> Job:
    """The run ``request`` asks for on ``snap``; refused (typed, naming why) before anything is written."""
    location = snap.context.location
    columns = _clustering(snap)
    clustered_by = clustering.logical_columns(snap.schema_json, columns, snap.column_mapping_mode) if columns else ()
    if request.purge and request.z_order_by:
        raise InvalidArgumentError("REORG ... APPLY (PURGE) rewrites files as they are: it takes no z_order_by")
    if clustered_by and request.z_order_by:
        raise InvalidArgumentError(
            f"{location} is a clustered table (clustering columns {list(clustered_by)}): OPTIMIZE clusters it by "
            "those; Z-order is not allowed on a clustered table"
        )
    if clustered_by and request.where is not None and not request.purge:
        raise InvalidArgumentError(
            f"{location} is a clustered table: OPTIMIZE on it takes no partition predicate (it has no partitions)"
        )
    tracked = kept_columns(snap.protocol, snap.configuration)
    zorder: tuple[str, ...] = ()
    kind = REARRANGE_KEEPING_IDS if tracked is not None else REARRANGE
    rules.check_up_front(snap, location, (kind,))
    target = dataclasses.replace(target_of(snap), row_tracking=tracked)
    spec = describe(snap).read_schema()
    if tracked is not None:
        spec = with_row_tracking(spec, *tracked)
    given = None if request.target_size is None else positive(request.target_size, "target_size")
    size = target_file_size(snap.configuration, given)
    if request.purge:
        mode, layout = optimize_plan.PURGE, KEEP_ORDER
    elif clustered_by:
        mode, layout = optimize_plan.CLUSTER, Layout(HILBERT, clustered_by)
    elif request.z_order_by:
        zorder = _check_zorder(snap, target, request.z_order_by)
        mode, layout = optimize_plan.ZORDER, Layout(ZORDER, zorder)
    else:
        mode, layout = optimize_plan.COMPACT, KEEP_ORDER
    settings = optimize_plan.Settings(
        mode=mode,
        target_size=size,
        min_file_size=request.min_file_size,
        columns=clustered_by,
    )
    operation = REORG if request.purge else OPTIMIZE
    return Job(
        operation,
        settings,
        layout,
        spec,
        target,
        kind,
        Shape.of(snap),
        zorder=zorder,
        clustered_by=clustered_by if mode == optimize_plan.CLUSTER else (),
        clustered_table=bool(columns),
        auto=request.auto,
    )


__all__ = ["OPTIMIZE", "REORG", "Job", "Request", "Shape", "job_for"]
