"""Which rows of which live files a predicate matches, by physical row position: what a delete (or a
``replace_where`` on data columns) must remove.

Files are first chosen as a scan chooses them (partition pruning and statistics skipping,
:mod:`deltalog.data.skipping`), then each candidate is read, only the columns the predicate needs, *without*
its deletion vector: a deletion vector names rows by their position in the data file, so positions must count
every physical row. Rows the file's current vector already deletes are then set aside: they are gone, and
deleting them again changes nothing. Candidates are read in parallel (:mod:`deltalog.data.parallel`); what
is kept per file is the matched positions, never the rows.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from deltalog.actions import Add
from deltalog.core.schema import top_level_fields
from deltalog.data.dv import read_deletion_vector
from deltalog.data.parallel import ordered
from deltalog.data.predicate import RowFilter
from deltalog.data.read import DataFile, ReadSchema, read_batches
from deltalog.data.scan import TableDescription, live_files
from deltalog.data.skipping import FilterPlan
from deltalog.errors import CorruptDataError
from deltalog.storage.base import LogStore

_EMPTY = np.empty(0, dtype=np.int64)


@dataclass(frozen=True)
class FileMatch:
    """One live file the predicate touches: its add, its physical row count, the rows its current deletion
    vector deletes (``deleted``) and the live rows the predicate matches (``matched``, none of ``deleted``)."""

    add: Add
    num_rows: int
    deleted: np.ndarray
    matched: np.ndarray

    @property
    def all_gone(self) -> bool:
        """Whether no live row would remain: the file goes whole."""
        return len(self.deleted) + len(self.matched) >= self.num_rows

    @property
    def live_rows(self) -> int:
        return self.num_rows - len(self.deleted)


@dataclass(frozen=True)
class Matches:
    """What a predicate touches in one table version: the files with matched rows, and how many were read."""

    files: tuple[FileMatch, ...]
    candidates: int
    live_files: int

    @property
    def num_matched(self) -> int:
        return sum(len(f.matched) for f in self.files)


def candidates(adds: Sequence[Add], description: TableDescription, row_filter: RowFilter | None) -> list[Add]:
    """The live files that may hold a matching row (all of them without a predicate that prunes)."""
    if row_filter is None or row_filter.pruning is None:
        return list(adds)
    live = live_files(adds, description)
    chooser = FilterPlan(
        description.schema, description.partition_columns, description.column_mapping, row_filter.pruning
    )
    return [adds[i] for i in chooser.surviving([f.candidate for f in live])]


def _read_spec(description: TableDescription, row_filter: RowFilter) -> ReadSchema:
    """The columns to read: the predicate's, or one column to count rows by when it reads none (a partition
    column costs nothing to read)."""
    columns = list(row_filter.columns)
    if not columns:
        names = [f["name"] for f in top_level_fields(description.schema)]
        columns = [next((n for n in names if n in description.partition_columns), names[0])]
    return description.read_schema(columns)


def _match_file(store: LogStore, spec: ReadSchema, row_filter: RowFilter, add: Add) -> Iterator[FileMatch | None]:
    physical = DataFile(add.path, dict(add.partition_values))  # every physical row, positions as in the DV
    found, start = [], 0
    for batch in read_batches(store, spec, physical):
        hits = row_filter.positions(batch)
        if len(hits):
            found.append(hits + start)
        start += batch.num_rows
    deleted = _EMPTY
    if add.deletion_vector is not None:
        deleted = read_deletion_vector(store, add.deletion_vector, start)
    matched = np.concatenate(found) if found else _EMPTY
    if len(deleted) and len(matched):
        matched = np.setdiff1d(matched, deleted, assume_unique=True)
    yield FileMatch(add, start, deleted, matched) if len(matched) else None


def find_matches(
    store: LogStore,
    adds: Sequence[Add],
    description: TableDescription,
    row_filter: RowFilter,
    workers: int | None = None,
) -> Matches:
    """The files of ``adds`` (a version's live files) holding live rows ``row_filter`` matches, in the order
    of ``adds``. A data or DV file that is missing or corrupt is a :class:`~deltalog.errors.CorruptDataError`
    naming it (nothing can be deleted safely from a file that cannot be read)."""
    chosen = candidates(adds, description, row_filter)
    spec = _read_spec(description, row_filter)
    producers = [functools.partial(_match_file, store, spec, row_filter, a) for a in chosen]
    found = tuple(m for m in ordered(producers, workers) if m is not None)
    for m in found:
        _check_count(m)
    return Matches(found, len(chosen), len(adds))


def _check_count(match: FileMatch) -> None:
    """A file's stats must count the rows it holds: a deletion vector is only as good as that count."""
    stated = DataFile.of(match.add).num_records
    if stated is not None and stated != match.num_rows:
        raise CorruptDataError(
            f"{match.add.path}: the file holds {match.num_rows} rows, its numRecords says {stated}",
            path=match.add.path,
        )


__all__ = ["FileMatch", "Matches", "candidates", "find_matches"]
