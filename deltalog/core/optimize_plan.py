"""Which files OPTIMIZE rewrites, and in which groups: the plan, decided from the log alone.

Four modes share one planner (Delta Spark's ``OptimizeTableCommand`` and ``OptimizeTableStrategy``, facts only):

* **compact** (bin packing): per partition, files smaller than ``min_file_size`` and files whose deletion
  vectors mark more than ``max_deleted_rows_ratio`` of their rows (or that have a vector but no record count)
  are sorted by size and packed, in that order, into bins of at most ``target_size`` bytes; each bin becomes
  new files of about ``target_size``. A bin of one file is rewritten only when that file has deleted rows to
  drop, so a partition holding a single small clean file is left alone.
* **zorder**: every file of each selected partition (not only the small ones), one bin per partition, so the
  whole partition is range-partitioned on the Z-order key.
* **cluster** (liquid clustering on a clustered table): files no other provider clustered and that are not part
  of a cube already as large as ``cube_size`` (by their ``ZCUBE_ID`` tag) clustered by the same columns; a
  lone cube with nothing unclustered beside it is left alone. Bins of at most ``cube_size``.
* **purge** (``REORG TABLE ... APPLY (PURGE)``): every file with a deletion vector, bins packed as in compact
  and each rewritten even alone.

Pure: no IO, no time. The data plane reads and writes the bins; the operation commits them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import orjson

from deltalog.core import actions as A
from deltalog.core.file_facts import read_stats
from deltalog.errors import InvalidArgumentError

COMPACT = "compact"
ZORDER = "zorder"
CLUSTER = "cluster"
PURGE = "purge"
MODES = (COMPACT, ZORDER, CLUSTER, PURGE)

#: 100 MiB, as ``deltalake``; Delta Spark's OPTIMIZE targets 1 GiB (``optimize.maxFileSize``)
DEFAULT_TARGET_SIZE = 100 * 1024 * 1024
#: Delta Spark's ``optimize.maxDeletedRowsRatio``
MAX_DELETED_ROWS_RATIO = 0.05
#: Delta Spark's ``optimize.clustering.mergeStrategy.minCubeSize.threshold``: a cube this large is done
MIN_CUBE_SIZE = 100 * 1024**3
#: Delta Spark's ``ClusteredTableUtils.clusteringProvider``
CLUSTERING_PROVIDER = "liquid"
#: ``AddFile.Tags``: the cube a clustered file belongs to, its columns (a JSON list) and its curve
ZCUBE_ID = "ZCUBE_ID"
ZCUBE_ZORDER_BY = "ZCUBE_ZORDER_BY"
ZCUBE_ZORDER_CURVE = "ZCUBE_ZORDER_CURVE"


@dataclass(frozen=True)
class Settings:
    """What one OPTIMIZE run asks: the mode, the output size, which files count as small, and the columns a
    Z-order or clustering sorts by (logical names)."""

    mode: str = COMPACT
    target_size: int = DEFAULT_TARGET_SIZE
    min_file_size: int | None = None  # None: ``target_size`` (deltalake's rule; Spark's defaults are equal too)
    max_deleted_rows_ratio: float = MAX_DELETED_ROWS_RATIO
    columns: tuple[str, ...] = ()
    cube_size: int = MIN_CUBE_SIZE

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise InvalidArgumentError(f"optimize mode {self.mode!r} is not one of {MODES}")
        for name in ("target_size", "cube_size"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise InvalidArgumentError(f"{name} must be a positive number of bytes, not {value!r}")
        if self.min_file_size is not None and (
            not isinstance(self.min_file_size, int) or isinstance(self.min_file_size, bool) or self.min_file_size < 0
        ):
            raise InvalidArgumentError(f"min_file_size must be a number of bytes >= 0, not {self.min_file_size!r}")
        if not 0 <= self.max_deleted_rows_ratio <= 1:
            raise InvalidArgumentError(f"max_deleted_rows_ratio must be in [0, 1], not {self.max_deleted_rows_ratio}")

    @property
    def small(self) -> int:
        return self.target_size if self.min_file_size is None else self.min_file_size


@dataclass(frozen=True)
class Bin:
    """Files of one partition rewritten together (their rows go into the same new files)."""

    partition: Mapping[str, str | None]
    files: tuple[A.Add, ...]

    @property
    def size(self) -> int:
        return sum(a.size for a in self.files)


@dataclass(frozen=True)
class Plan:
    """The bins of one run and what Delta Spark's ``OptimizeMetrics`` counts of the choice."""

    bins: tuple[Bin, ...]
    files_considered: int
    partitions: int

    @property
    def files(self) -> tuple[A.Add, ...]:
        return tuple(a for b in self.bins for a in b.files)

    @property
    def files_skipped(self) -> int:
        return self.files_considered - len(self.files)


def partition_key(add: A.Add) -> tuple[tuple[str, str | None], ...]:
    return tuple(sorted(add.partition_values.items()))


def deleted_rows(add: A.Add) -> int:
    return add.deletion_vector.cardinality if add.deletion_vector is not None else 0


def too_many_deleted(add: A.Add, ratio: float) -> bool:
    """Delta Spark's ``shouldCompactBecauseOfDeletedRows``: a vector without a record count to judge it by, or
    more than ``ratio`` of the file's rows deleted."""
    if add.deletion_vector is None:
        return False
    stats = read_stats(add.stats)
    total = stats.num_records if stats is not None else None
    if not total:
        return True
    return add.deletion_vector.cardinality / total > ratio


def _by_partition(adds: Iterable[A.Add]) -> dict[tuple[tuple[str, str | None], ...], list[A.Add]]:
    out: dict[tuple[tuple[str, str | None], ...], list[A.Add]] = {}
    for a in adds:
        out.setdefault(partition_key(a), []).append(a)
    return out


def pack(files: Sequence[A.Add], limit: int) -> list[list[A.Add]]:
    """Files in the given order into consecutive bins of at most ``limit`` bytes (a file larger than
    ``limit`` gets a bin of its own), as Delta Spark's ``groupFilesIntoBins``."""
    bins: list[list[A.Add]] = []
    current: list[A.Add] = []
    size = 0
    for f in files:
        if current and size + f.size > limit:
            bins.append(current)
            current, size = [], 0
        current.append(f)
        size += f.size
    if current:
        bins.append(current)
    return bins


def _cube_of(add: A.Add) -> str | None:
    return (add.tags or {}).get(ZCUBE_ID)


def cube_columns(columns: Sequence[str]) -> str:
    """The ``ZCUBE_ZORDER_BY`` tag of files clustered by ``columns``."""
    return orjson.dumps(list(columns)).decode()


def _cluster_candidates(files: Sequence[A.Add], settings: Settings) -> list[A.Add]:
    """Delta Spark's ``applyMinZCube``, in its order: unclustered files first, then by cube."""
    wanted = cube_columns(settings.columns)
    mine = [
        a
        for a in files
        if a.clustering_provider in (None, CLUSTERING_PROVIDER)
        and (a.tags or {}).get(ZCUBE_ZORDER_BY) in (None, wanted)
    ]
    cubes: dict[str, int] = {}
    for a in mine:
        cube = _cube_of(a)
        if cube is not None:
            cubes[cube] = cubes.get(cube, 0) + a.size
    kept = [a for a in mine if _cube_of(a) is None or cubes[_cube_of(a) or ""] < settings.cube_size]
    kept_cubes = {_cube_of(a) for a in kept}
    if None not in kept_cubes and len(kept_cubes) <= 1:
        return []  # one clustered cube and nothing to merge into it
    return sorted(kept, key=lambda a: (_cube_of(a) is not None, _cube_of(a) or ""))


def plan(adds: Iterable[A.Add], settings: Settings) -> Plan:
    """The bins of an OPTIMIZE run over ``adds`` (the live files the partition predicate selected)."""
    groups = _by_partition(adds)
    considered = sum(len(files) for files in groups.values())
    bins: list[Bin] = []
    for key, files in groups.items():
        partition = dict(key)
        if settings.mode == ZORDER:
            chosen = [sorted(files, key=lambda a: a.size)]
        elif settings.mode == CLUSTER:
            chosen = pack(_cluster_candidates(files, settings), settings.cube_size)
        elif settings.mode == PURGE:
            dv = sorted((a for a in files if a.deletion_vector is not None), key=lambda a: a.size)
            chosen = pack(dv, settings.target_size)
        else:
            small = [
                a for a in files if a.size < settings.small or too_many_deleted(a, settings.max_deleted_rows_ratio)
            ]
            packed = pack(sorted(small, key=lambda a: a.size), settings.target_size)
            chosen = [b for b in packed if len(b) > 1 or any(deleted_rows(a) for a in b)]
        bins += [Bin(partition, tuple(b)) for b in chosen if b]
    partitions = len({partition_key(b.files[0]) for b in bins})
    return Plan(tuple(bins), considered, partitions)


# ------------------------------------------------------------------------------------------------ metrics
def percentile(sorted_sizes: Sequence[int], fraction: float) -> int:
    """The nearest-rank percentile of ascending ``sorted_sizes`` (0 for none)."""
    if not sorted_sizes:
        return 0
    rank = max(1, -(-int(fraction * 100) * len(sorted_sizes) // 100))
    return int(sorted_sizes[min(rank, len(sorted_sizes)) - 1])


def size_metrics(sizes: Iterable[int]) -> dict[str, int]:
    """Delta Spark's file-size metrics of OPTIMIZE (``minFileSize``, ``p25FileSize`` .. ``maxFileSize``)."""
    ordered = sorted(sizes)
    return {
        "minFileSize": ordered[0] if ordered else 0,
        "p25FileSize": percentile(ordered, 0.25),
        "p50FileSize": percentile(ordered, 0.5),
        "p75FileSize": percentile(ordered, 0.75),
        "maxFileSize": ordered[-1] if ordered else 0,
    }


__all__ = [
    "CLUSTER",
    "CLUSTERING_PROVIDER",
    "COMPACT",
    "DEFAULT_TARGET_SIZE",
    "MAX_DELETED_ROWS_RATIO",
    "MIN_CUBE_SIZE",
    "MODES",
    "PURGE",
    "ZCUBE_ID",
    "ZCUBE_ZORDER_BY",
    "ZCUBE_ZORDER_CURVE",
    "ZORDER",
    "Bin",
    "Plan",
    "Settings",
    "cube_columns",
    "deleted_rows",
    "pack",
    "partition_key",
    "percentile",
    "plan",
    "size_metrics",
    "too_many_deleted",
]
