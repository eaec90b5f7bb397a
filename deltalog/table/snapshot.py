"""Immutable table state at one version.

A snapshot is a value: ``(context, segment, version state, file list)``, all given at construction and
never reassigned. Bulk state (live files, tombstones) is Arrow, held by a :class:`~deltalog.table.file_list.
FileList` that loads it once on first use; everything small (protocol, metadata, txns, domains) is a frozen
:class:`~deltalog.core.version_state.VersionState`. Advancing past commits makes a new snapshot. Everything
that names a column to a user speaks logical names; the log's physical names stay inside.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from functools import cached_property
from typing import TYPE_CHECKING, Any, TypeVar

import pyarrow as pa

from deltalog.arrow.schema import to_arrow_schema
from deltalog.core import actions as A
from deltalog.core.features import check_readable
from deltalog.core.paths import parse
from deltalog.core.reachability import Tip, segment_tip
from deltalog.core.schema import SchemaError
from deltalog.core.segment import LogSegment
from deltalog.core.state import BaseState, CommitData
from deltalog.core.state.files import FileState
from deltalog.core.state.replay import state_only
from deltalog.core.version_state import VersionState, of_replay
from deltalog.errors import CorruptLogError
from deltalog.table import files_view
from deltalog.table.context import TableContext
from deltalog.table.file_list import FileList, Pending

if TYPE_CHECKING:
    import pandas as pd
    import polars as pl
    import pyarrow.dataset as ds

    from deltalog.data.predicate import RowFilter
    from deltalog.data.scan import TableDescription

T = TypeVar("T")


class Snapshot:
    """The state of a table at :attr:`version`."""

    def __init__(
        self,
        context: TableContext,
        segment: LogSegment,
        state: VersionState,
        files: FileList,
        tip: Tip | None = None,
    ) -> None:
        """``tip`` is how the listing showed this version's files when it holds more than the segment (the
        commit at a checkpoint's version, which the segment leaves out and which is never rewritten)."""
        if tip is not None and tip.version != state.version:
            raise ValueError(f"a tip of version {tip.version} does not describe version {state.version}")
        self._context = context
        self._segment = segment
        self._state = state
        self._files = files
        self._tip = tip if tip is not None else segment_tip(segment)
        self._now_ms = context.now_ms()

    # ------------------------------------------------------------------------------------------ identity
    @property
    def context(self) -> TableContext:
        """The table this snapshot was read from: its store, location and clock."""
        return self._context

    @property
    def segment(self) -> LogSegment:
        """The checkpoint and commit files this snapshot was read from."""
        return self._segment

    @property
    def state(self) -> VersionState:
        """Protocol, metadata, txns and domains of this version, as one frozen value."""
        return self._state

    @property
    def version(self) -> int:
        """The table version this snapshot is."""
        return self._state.version

    @property
    def tip(self) -> Tip:
        """This version's log files as the listing it was loaded from showed them (name, size, time).

        What a commit on this snapshot is attempted on top of, and what a :class:`~deltalog.log.DeltaLog`
        compares the log with before it trusts a cached snapshot (:mod:`deltalog.core.reachability`).
        """
        return self._tip

    @property
    def protocol(self) -> A.Protocol:
        """The protocol action in force at this version (reader/writer versions and feature lists)."""
        return self._state.protocol

    @property
    def metadata(self) -> A.Metadata:
        """The metaData action in force at this version (id, schema string, partition columns, properties)."""
        return self._state.metadata

    @property
    def configuration(self) -> Mapping[str, str]:
        """The table properties (``delta.*`` and user keys) as written in the metadata."""
        return self._state.configuration

    @property
    def features(self) -> frozenset[str]:
        """Table features the protocol supports (listed, or implied by legacy versions)."""
        return self._state.features

    @property
    def reader_features(self) -> tuple[str, ...]:
        """The reader features the protocol lists (empty below reader version 3)."""
        return self.protocol.reader_features or ()

    @cached_property
    def schema_json(self) -> dict[str, Any]:
        """The schema as Delta's JSON (a ``struct``), field metadata included; a schema that does not parse
        is a :class:`CorruptLogError` naming the file that holds it."""
        try:
            return self._state.schema_json()
        except SchemaError as exc:
            src = self._state.metadata_source or "the log"
            raise CorruptLogError(f"{src}: {exc}", path=self._state.metadata_source) from None

    @cached_property
    def schema(self) -> pa.Schema:
        """The schema as a ``pyarrow.Schema`` (logical names, Delta types mapped to Arrow's)."""
        return to_arrow_schema(self.schema_json)

    @property
    def partition_columns(self) -> list[str]:
        """The partition columns, by logical name, in the order the metadata gives."""
        return list(self.metadata.partition_columns)

    @property
    def column_mapping_mode(self) -> str:
        """``none``, ``name`` or ``id``: how data files name columns. ``none`` unless the protocol
        supports column mapping, whatever the property says."""
        return self._state.column_mapping_mode

    @cached_property
    def physical_names(self) -> dict[str, str]:
        """Top-level logical column name -> the physical name the log and data files use."""
        return self._state.physical_names(self.schema_json)

    # ------------------------------------------------------------------------------------------ small state
    @cached_property
    def txns(self) -> dict[str, A.Txn]:
        """Application transactions that are live under ``delta.setTransactionRetentionDuration``."""
        return self._state.live_txns(self._now_ms)

    def app_version(self, app_id: str) -> int | None:
        """The last version application ``app_id`` committed (its live txn action), or ``None``: what an
        exactly-once writer checks before writing a batch."""
        txn = self.txns.get(app_id)
        return None if txn is None else txn.version

    @property
    def domain_metadata(self) -> dict[str, A.DomainMetadata]:
        """Live domain metadata by domain name (clustering, row tracking, user domains); removed ones
        are left out."""
        return dict(self._state.domains)

    @property
    def commit_info(self) -> dict[str, Any] | None:
        """The raw commitInfo of this version's commit, when the snapshot replayed that commit."""
        info = self._state.commit_info
        return None if info is None else dict(info)

    # ------------------------------------------------------------------------------------------ files
    @property
    def files_loaded(self) -> bool:
        """Whether the file list is in memory (a deferred one loads on the first call that needs it)."""
        return self._files.is_loaded

    @property
    def pending(self) -> Pending:
        """What loading the file list would replay: commits (and bytes) beyond a checkpoint or loaded list.

        Zero once the files are loaded; an advanced snapshot's pending commits are bounded by
        :func:`deltalog.table.refresh.advance`.
        """
        return self._files.pending

    def file_state(self) -> FileState:
        """The replayed file state (loaded now if deferred): for writers that stream it, e.g. checkpoints.

        Parts of it may still be read from the checkpoint when used: run such a use through :meth:`reading`.
        """
        return self.reading(self._files.get)

    @property
    def num_files(self) -> int:
        """How many data files are live (loads the file list if it is deferred)."""
        return self.reading(lambda: self._files.get().num_files)

    def reading(self, call: Callable[[], T]) -> T:
        """``call()``, a read of this snapshot's files; run once more from a fresh load when it failed because
        a checkpoint file it reads from was deleted.

        Why: a file list and its stats and tombstones are read from the checkpoint lazily, and the snapshot a
        long-lived :class:`~deltalog.log.DeltaLog` keeps (advancing it commit by commit) can outlive that
        checkpoint, which log cleanup deletes once a newer one is old enough. The version itself is
        usually still there to be rebuilt from the newer checkpoint; when it is not, the error says so.
        """
        try:
            return call()
        except CorruptLogError as exc:
            if not self._files.reload(self.version, exc):
                raise
        return call()

    @property
    def distrusted_checkpoints(self) -> tuple[str, ...]:
        """Checkpoints (file names) skipped as unreadable to build this file list; loads the list if deferred.

        Non-empty means the files came from older checkpoints or the commits: right if those are, but a
        log with one damaged checkpoint may be damaged elsewhere, so ``vacuum`` will not act on it.
        """
        return self.reading(lambda: self._files.get().distrusted)

    def files(self, where: Any = None, stats: bool = False) -> pa.Table:
        """Live files as Arrow, one row per add; ``where`` prunes by partition values (logical names).

        ``where`` is any filter (docs/data.md, "Filters"): SQL text (``"day = '2026-11-01'"``), a pyarrow
        Expression, DNF tuples (``[("day", "=", "2026-11-01")]``) or a mapping of a column to a value
        (equality), a list (IN) or ``{op: value}`` (``<``, ``<=``, ``>``, ``>=``, ``!=``, ``in``, ``not in``).
        Its partition conditions prune (those derived through generated partition columns too); a condition on
        a non-partition column cannot and keeps every file; an unknown column is an
        :class:`InvalidArgumentError`.
        """
        table = self.raw_files(stats=stats)
        if where is not None and not (isinstance(where, Mapping) and not where):
            table = table.filter(self.partition_mask(table, where))
        return files_view.present(table, stats, self.physical_names)

    def add_actions(self, where: Any = None, exact: bool = False) -> Iterator[A.Add]:
        """Live files as :class:`~deltalog.actions.Add` values (for building removes); stats included.
        ``exact``: ``where`` is about partition columns only and a value it cannot evaluate is raised, not kept
        (the files are removed whole)."""
        table = self.raw_files(stats=True)
        if where is not None and not (isinstance(where, Mapping) and not where):
            table = table.filter(self.partition_mask(table, where, strict=exact))
        return files_view.add_actions(table)

    def row_filter(self, where: Any, session_time_zone: str | None = None) -> RowFilter:
        """``where`` (any filter form, or a RowFilter already) bound against this version's schema."""
        from deltalog.data.predicate import RowFilter, row_filter

        if isinstance(where, RowFilter):
            return where
        return row_filter(where, self.schema_json, self.partition_columns, session_time_zone)

    def tombstones(self) -> pa.Table:
        """Removes still in the state (not yet filtered by retention), as Arrow in the log's field names."""
        return self.reading(lambda: self._files.get().tombstones())

    def raw_files(self, stats: bool = False) -> pa.Table:
        """Live adds in the log's own field names and physical partition keys (for checkpoints)."""
        return self.reading(lambda: self._files.get().adds(stats=stats))

    def partition_mask(self, table: pa.Table, where: Any, strict: bool = False) -> pa.Array:
        """A boolean mask over ``table`` (rows shaped like :meth:`raw_files`) keeping the files ``where`` (any
        filter form) may match by their partition values; an unknown column or a value of the wrong type is an
        :class:`InvalidArgumentError`."""
        if isinstance(where, Mapping):  # the load path's own form: typed conditions, no evaluator (nor pandas)
            return files_view.partition_mask(
                table, where, self.schema_json, self.partition_columns, self.physical_names
            )
        from deltalog.data.partition_pruning import partition_mask

        chosen = self.row_filter(where)
        if chosen.partition is None:
            return pa.repeat(pa.scalar(True), table.num_rows)
        return partition_mask(
            table, chosen.partition, self.schema_json, self.physical_names, chosen.session_time_zone, strict
        )

    # ------------------------------------------------------------------------------------------ rows
    # The data plane (pyarrow.dataset and friends) loads on the first scan, not with ``import deltalog``.
    def _description(self) -> TableDescription:
        from deltalog.data.scan import TableDescription

        store = self._context.store
        return TableDescription(store, self.schema_json, tuple(self.partition_columns), self.column_mapping_mode)

    def scan(
        self, columns: Sequence[str] | None = None, filter: Any = None, *, session_time_zone: str | None = None
    ) -> pa.RecordBatchReader:
        """The live rows matching ``filter``, streamed. ``filter`` is any filter form on logical names
        (docs/data.md, "Filters"): SQL text evaluated with Spark's semantics (timestamps in
        ``session_time_zone``, UTC by default), a pyarrow Expression evaluated by pyarrow, DNF tuples or a mapping.

        Files are pruned by partition values and skipped by statistics, read in parallel with deletion vectors
        applied and column mapping resolved (:func:`deltalog.data.scan.scan`). An unknown column, in
        ``columns`` or in ``filter``, is an :class:`InvalidArgumentError` naming it.
        """
        from deltalog.data.scan import scan

        chosen = None if filter is None else self.row_filter(filter, session_time_zone)
        return scan(self.raw_files(stats=True), self._description(), columns, chosen)

    def to_arrow(
        self, columns: Sequence[str] | None = None, filter: Any = None, *, session_time_zone: str | None = None
    ) -> pa.Table:
        """:meth:`scan`, read into one table."""
        return self.scan(columns, filter, session_time_zone=session_time_zone).read_all()

    def to_pandas(self, columns: Sequence[str] | None = None, filter: Any = None) -> pd.DataFrame:
        """:meth:`to_arrow` as a pandas DataFrame (pandas must be installed)."""
        from deltalog.data.frames import to_pandas

        return to_pandas(self.to_arrow(columns, filter))

    def to_polars(self, columns: Sequence[str] | None = None, filter: Any = None) -> pl.DataFrame:
        """:meth:`to_arrow` as a polars DataFrame (polars must be installed)."""
        from deltalog.data.frames import to_polars

        frame: pl.DataFrame = to_polars(self.to_arrow(columns, filter))
        return frame

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        """The live rows as an Arrow C stream (the PyCapsule protocol): ``pyarrow.table(snap)``,
        ``polars.DataFrame(snap)``, duckdb (``SELECT ... FROM snap``) and ``deltalog.write`` take a snapshot as
        they take any Arrow data (``polars.from_arrow`` makes a struct Series of any such stream)."""
        return self.scan().__arrow_c_stream__(requested_schema)

    def file_uris(self) -> list[str]:
        """Every live file's absolute location, decoded, for pyarrow, duckdb or polars (local files as paths)."""
        from deltalog.data.scan import file_uris

        return file_uris(self.raw_files(), self._description())

    def to_pyarrow_dataset(self) -> ds.FileSystemDataset:
        """A pyarrow Dataset whose fragments carry partition values and statistics as guarantees; refused
        (:class:`~deltalog.errors.UnsupportedFeatureError`) when live files have deletion vectors or the table
        maps columns."""
        from deltalog.data.scan import to_pyarrow_dataset

        return to_pyarrow_dataset(self.raw_files(stats=True), self._description())

    # ------------------------------------------------------------------------------------------ advancing
    def advance(self, commits: Sequence[CommitData]) -> Snapshot:
        """A new snapshot after ``commits`` (the next versions, in order), replaying only them.

        Only their non-file actions are applied now; the file list is replayed onto this snapshot's when
        first asked for. A writer that keeps appending therefore pays for its commits, not for the table,
        and a chain of such advances replays its commits once, onto the last file list that was loaded.
        How long such a chain may grow is :func:`deltalog.table.refresh.advance`'s concern.
        """
        if not commits:
            return self
        if commits[0].version != self.version + 1:
            raise ValueError(f"commits must start at version {self.version + 1}, not {commits[0].version}")
        before = self._state
        base = BaseState(
            version=before.version,
            source=self._segment.describe(),
            protocol=before.protocol,
            metadata=before.metadata,
            txns=dict(before.txns),
            domains=dict(before.domains),
        )
        result = state_only(base, commits)
        state = of_replay(result, result.version)
        # An action the commits did not replace still names the file it came from, not the segment.
        state = replace(
            state,
            protocol_source=before.protocol_source if state.protocol is before.protocol else state.protocol_source,
            metadata_source=before.metadata_source if state.metadata is before.metadata else state.metadata_source,
        )
        check_readable(state.protocol, f"{self._context.location}/{state.protocol_source}")
        new_paths = []
        for c in commits:
            parsed = parse(c.path.rsplit("/", 1)[-1], len(c.data), c.mtime)
            assert parsed is not None
            new_paths.append(parsed)
        segment = LogSegment(state.version, self._segment.checkpoint, self._segment.commits + tuple(new_paths))
        files = self._files.extend(before, commits, self._context.store.root)
        return Snapshot(self._context, segment, state, files)

    def __repr__(self) -> str:
        files = self.num_files if self.files_loaded else "not loaded"
        return f"Snapshot(table={self._context.location!r}, version={self.version}, files={files})"


__all__ = ["Snapshot"]
