"""Immutable table state at one version.

Bulk state (live files, tombstones) is Arrow; everything small (protocol, metadata, txns, domains) is
plain values. Everything that names a column to a user speaks logical names; the log's physical names stay
inside.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any, TypeVar

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.arrow_schema import to_arrow_schema
from deltalog.core import actions as A
from deltalog.core import properties
from deltalog.core.codec import decode_dv
from deltalog.core.features import check_readable, supported_features
from deltalog.core.partitions import PartitionValueError, conditions_from_where, parse_value, typed_conditions
from deltalog.core.paths import LOG_DIR, SIDECAR_DIR, parse
from deltalog.core.reachability import Tip, segment_tip
from deltalog.core.schema import SchemaError, parse_schema, physical_names, top_level_fields
from deltalog.core.segment import LogSegment
from deltalog.core.state import BaseState, CommitData, ReplayResult
from deltalog.core.state.columns import array_of, scalar_of
from deltalog.core.state.files import FileState
from deltalog.core.state.replay import replay, state_only
from deltalog.core.state.small import live_txns
from deltalog.errors import CorruptLogError, DeltaLogError, InvalidArgumentError, VersionNotFoundError

if TYPE_CHECKING:
    import pyarrow.dataset as ds

    from deltalog.data.scan import TableDescription
    from deltalog.log import DeltaLog

log = logging.getLogger(__name__)
T = TypeVar("T")

_DV_RENAMES = ["storage_type", "path_or_inline_dv", "offset", "size_in_bytes", "cardinality"]
_OUTPUT = [
    ("path", "path"),
    ("partitionValues", "partition_values"),
    ("size", "size"),
    ("modificationTime", "modification_time"),
    ("dataChange", "data_change"),
    ("deletionVector", "deletion_vector"),
    ("tags", "tags"),
    ("baseRowId", "base_row_id"),
    ("defaultRowCommitVersion", "default_row_commit_version"),
    ("clusteringProvider", "clustering_provider"),
]


class Snapshot:
    """The state of a table at :attr:`version`."""

    def __init__(
        self,
        log: DeltaLog,
        segment: LogSegment,
        result: ReplayResult,
        now_ms: int | None = None,
        files: Callable[[], FileState] | None = None,
    ) -> None:
        """``files`` loads the file state when ``result`` has none: a snapshot made for a blind append, or
        advanced past commits, holds protocol, metadata and txns at once and its file list on demand."""
        assert result.protocol is not None and result.metadata is not None
        assert result.files is not None or files is not None
        self._log = log
        self.segment = segment
        self._result = result
        self._now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        self._load_files = files
        self._files_lock = threading.Lock()
        #: for a snapshot advanced from another without loading files: that one, and the commits since
        self._anchor: tuple[Snapshot, tuple[CommitData, ...]] | None = None
        self._tip: Tip | None = None

    # ------------------------------------------------------------------------------------------ identity
    @property
    def log(self) -> DeltaLog:
        """The :class:`DeltaLog` this snapshot was read from."""
        return self._log

    @property
    def version(self) -> int:
        """The table version this snapshot is."""
        return self._result.version

    @property
    def tip(self) -> Tip:
        """This version's log files as the listing it was loaded from showed them (name, size, time).

        What a commit on this snapshot is attempted on top of, and what a :class:`~deltalog.log.DeltaLog`
        compares the log with before it trusts a cached snapshot (:mod:`deltalog.core.reachability`).
        """
        return self._tip if self._tip is not None else segment_tip(self.segment)

    def listed_as(self, tip: Tip) -> None:
        """Record how the log listed this version's files when that listing holds more than the segment
        (the commit at a checkpoint's version, which the segment leaves out and which is never rewritten)."""
        if tip.version != self.version:
            raise ValueError(f"a tip of version {tip.version} does not describe version {self.version}")
        self._tip = tip

    @property
    def protocol(self) -> A.Protocol:
        """The protocol action in force at this version (reader/writer versions and feature lists)."""
        assert self._result.protocol is not None
        return self._result.protocol

    @property
    def metadata(self) -> A.Metadata:
        """The metaData action in force at this version (id, schema string, partition columns, properties)."""
        assert self._result.metadata is not None
        return self._result.metadata

    @property
    def configuration(self) -> Mapping[str, str]:
        """The table properties (``delta.*`` and user keys) as written in the metadata."""
        return self.metadata.configuration

    @property
    def features(self) -> frozenset[str]:
        """Table features the protocol supports (listed, or implied by legacy versions)."""
        return supported_features(self.protocol)

    @property
    def reader_features(self) -> tuple[str, ...]:
        """The reader features the protocol lists (empty below reader version 3)."""
        return self.protocol.reader_features or ()

    @cached_property
    def schema_json(self) -> dict[str, Any]:
        """The schema as Delta's JSON (a ``struct``), field metadata included; a schema that does not parse
        is a :class:`CorruptLogError` naming the file that holds it."""
        try:
            return parse_schema(self.metadata.schema_string)
        except SchemaError as exc:
            src = self._result.metadata_source or "the log"
            raise CorruptLogError(f"{src}: {exc}", path=self._result.metadata_source) from None

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
        if "columnMapping" not in self.features:
            return "none"  # the property means nothing unless the protocol supports the feature
        return properties.column_mapping_mode(self.configuration)

    @cached_property
    def physical_names(self) -> dict[str, str]:
        """Top-level logical column name -> the physical name the log and data files use."""
        return physical_names(self.schema_json, self.column_mapping_mode)

    # ------------------------------------------------------------------------------------------ small state
    @cached_property
    def txns(self) -> dict[str, A.Txn]:
        """Application transactions that are live under ``delta.setTransactionRetentionDuration``."""
        return live_txns(self._result.txns, properties.txn_retention_ms(self.configuration), self._now_ms)

    def app_version(self, app_id: str) -> int | None:
        """The last version application ``app_id`` committed (its live txn action), or ``None``: what an
        exactly-once writer checks before writing a batch."""
        txn = self.txns.get(app_id)
        return None if txn is None else txn.version

    @property
    def domain_metadata(self) -> dict[str, A.DomainMetadata]:
        """Live domain metadata by domain name (clustering, row tracking, user domains); removed ones
        are left out."""
        return dict(self._result.domains)

    @property
    def commit_info(self) -> dict[str, Any] | None:
        """The raw commitInfo of this version's commit, when the snapshot replayed that commit."""
        return self._result.commit_info

    # ------------------------------------------------------------------------------------------ files
    @property
    def files_loaded(self) -> bool:
        """Whether the file list is in memory (a deferred one loads on the first call that needs it)."""
        return self._result.files is not None

    @property
    def _files(self) -> FileState:
        files = self._result.files
        if files is None:
            with self._files_lock:
                if self._result.files is None:
                    assert self._load_files is not None
                    self._result = dataclasses.replace(self._result, files=self._load_files())
                    self._load_files = None
                    self._anchor = None
                files = self._result.files
                assert files is not None
        return files

    def file_state(self) -> FileState:
        """The replayed file state (loaded now if deferred): for writers that stream it, e.g. checkpoints.

        Parts of it may still be read from the checkpoint when used: run such a use through :meth:`reading`.
        """
        return self.reading(lambda: self._files)

    @property
    def num_files(self) -> int:
        """How many data files are live (loads the file list if it is deferred)."""
        return self.reading(lambda: self._files.num_files)

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
            if not self._source_deleted(exc):
                raise
            self._reload_files(exc)
        return call()

    def _source_deleted(self, exc: CorruptLogError) -> bool:
        path = exc.path or ""
        name = path.rsplit("/", 1)[-1]
        parsed = parse(name)
        is_source = path.startswith(f"{LOG_DIR}/{SIDECAR_DIR}/") or (
            path == f"{LOG_DIR}/{name}" and parsed is not None and parsed.is_checkpoint
        )
        if not is_source:
            return False
        try:
            return not self._log.store.exists(path)
        except (DeltaLogError, OSError):
            return False

    def _reload_files(self, exc: CorruptLogError) -> None:
        log.info(
            "%s: %s, which the file list of version %d is read from, was deleted (log cleanup); "
            "loading version %d again from the log",
            self._log.location,
            exc.path,
            self.version,
            self.version,
        )
        try:
            fresh = self._log.fresh_snapshot(self.version)
            files = fresh.file_state()
        except (VersionNotFoundError, CorruptLogError) as err:
            raise VersionNotFoundError(
                f"version {self.version} of {self._log.location} can no longer be read: {exc.path}, which its "
                f"file list is read from, was deleted by log cleanup, and the log cannot rebuild it ({err})",
                earliest=getattr(err, "earliest", None),
                latest=getattr(err, "latest", None),
            ) from None
        with self._files_lock:
            self._result = dataclasses.replace(self._result, files=files)
            self._load_files = None
            self._anchor = None
            self.segment = fresh.segment

    @property
    def distrusted_checkpoints(self) -> tuple[str, ...]:
        """Checkpoints (file names) skipped as unreadable to build this file list; loads the list if deferred.

        Non-empty means the files came from older checkpoints or the commits: right if those are, but a
        log with one damaged checkpoint may be damaged elsewhere, so ``vacuum`` will not act on it.
        """
        return self._files.distrusted

    def files(self, where: Mapping[str, Any] | None = None, stats: bool = False) -> pa.Table:
        """Live files as Arrow, one row per add; ``where`` prunes by partition values (logical names).

        ``where`` maps a column to a value (equality), a list (IN) or ``{op: value}`` (``<``, ``<=``, ``>``,
        ``>=``, ``!=``, ``in``, ``not in``). A condition on a non-partition column cannot prune and keeps
        every file; an unknown column is an :class:`InvalidArgumentError`.
        """
        table = self.reading(lambda: self._files.adds(stats=stats))
        if where:
            table = table.filter(self.partition_mask(table, where))
        return self._present(table, stats)

    def add_actions(self, where: Mapping[str, Any] | None = None) -> Iterator[A.Add]:
        """Live files as :class:`~deltalog.actions.Add` values (for building removes); stats included."""
        table = self.reading(lambda: self._files.adds(stats=True))
        if where:
            table = table.filter(self.partition_mask(table, where))
        for row in table.to_pylist():
            yield A.Add(
                path=row["path"],
                partition_values=dict(row["partitionValues"] or []),
                size=row["size"],
                modification_time=row["modificationTime"],
                data_change=bool(row["dataChange"]),
                stats=row["stats"],
                tags=dict(row["tags"]) if row["tags"] is not None else None,
                deletion_vector=decode_dv(row["deletionVector"]),
                base_row_id=row["baseRowId"],
                default_row_commit_version=row["defaultRowCommitVersion"],
                clustering_provider=row["clusteringProvider"],
            )

    def tombstones(self) -> pa.Table:
        """Removes still in the state (not yet filtered by retention), as Arrow in the log's field names."""
        return self.reading(lambda: self._files.tombstones())

    def raw_files(self, stats: bool = False) -> pa.Table:
        """Live adds in the log's own field names and physical partition keys (for checkpoints)."""
        return self.reading(lambda: self._files.adds(stats=stats))

    def partition_mask(self, table: pa.Table, where: Mapping[str, Any]) -> pa.Array:
        """A boolean mask over ``table`` (rows shaped like :meth:`files`) for the partition filter ``where``
        (:meth:`files` grammar); an unknown column or a value of the wrong type is an
        :class:`InvalidArgumentError`."""
        try:
            conds = conditions_from_where(where)
        except PartitionValueError as exc:
            raise InvalidArgumentError(str(exc)) from None
        columns = {f["name"]: f for f in top_level_fields(self.schema_json)}
        mask = pa.repeat(scalar_of(True, pa.bool_()), table.num_rows)
        partition = set(self.partition_columns)
        for column in {c.column for c in conds}:
            if column not in columns:
                raise InvalidArgumentError(
                    f"unknown column {column!r}; the table has {sorted(columns) or 'no columns'}"
                )
            if column not in partition or table.num_rows == 0:
                continue  # data columns cannot prune by partition values
            col_conds = [c for c in conds if c.column == column]
            ctype = columns[column]["type"]
            try:
                typed = typed_conditions(col_conds, {column: ctype})
            except PartitionValueError as exc:
                raise InvalidArgumentError(f"column {column!r}: {exc}") from None
            key = scalar_of(self.physical_names[column], pa.string())
            raw = pc.map_lookup(table.column("partitionValues"), key, "first")
            encoded = (
                raw.combine_chunks().dictionary_encode()
                if isinstance(raw, pa.ChunkedArray)
                else raw.dictionary_encode()
            )
            uniques = encoded.dictionary.to_pylist()
            keep_unique = []
            for u in uniques:
                try:
                    value = parse_value(ctype, u)
                except PartitionValueError:
                    keep_unique.append(True)  # unparsable value: never prune what we cannot judge
                    continue
                keep_unique.append(all(c.matches(value) for c in typed))
            null_keep = all(c.matches(None) for c in typed)
            indices = encoded.indices
            col_mask = (
                pc.take(array_of(keep_unique, pa.bool_()), indices) if uniques else pa.nulls(len(indices), pa.bool_())
            )
            col_mask = pc.fill_null(col_mask, scalar_of(null_keep, pa.bool_()))
            mask = pc.and_(mask, col_mask)
        return mask

    def _present(self, table: pa.Table, stats: bool) -> pa.Table:
        arrays = []
        names = []
        for src, dst in _OUTPUT:
            col = table.column(src)
            if src == "partitionValues":
                col = self._logical_partition_keys(col)
            elif src == "deletionVector":
                col = _rename_struct(col, _DV_RENAMES)
            arrays.append(col)
            names.append(dst)
        if stats:
            arrays.append(table.column("stats"))
            names.append("stats")
        return pa.Table.from_arrays(arrays, names=names)

    def _logical_partition_keys(self, col: pa.ChunkedArray) -> pa.ChunkedArray:
        """Partition values keyed by logical names, with the protocol's nulls made plain.

        The log may spell null as an empty string; a user must not see ``""`` and ``None`` as two values.
        """
        renames = {p: logical for logical, p in self.physical_names.items() if p != logical}
        chunks = []
        for chunk in col.chunks:
            items = chunk.items
            empty = pc.equal(items, scalar_of("", pa.string()))
            has_empty = bool(pc.any(empty).as_py())
            if not renames and not has_empty:
                chunks.append(chunk)
                continue
            keys = chunk.keys
            if renames:
                keys = array_of([renames.get(k, k) for k in keys.to_pylist()], pa.string())
            if has_empty:
                items = pc.if_else(empty, scalar_of(None, pa.string()), items)
            chunks.append(pa.MapArray.from_arrays(chunk.offsets, keys, items, type=chunk.type, mask=chunk.is_null()))
        return pa.chunked_array(chunks, type=col.type)

    # ------------------------------------------------------------------------------------------ rows
    # The data plane (pyarrow.dataset and friends) loads on the first scan, not with ``import deltalog``.
    def _description(self) -> TableDescription:
        from deltalog.data.scan import TableDescription

        return TableDescription(
            self._log.store, self.schema_json, tuple(self.partition_columns), self.column_mapping_mode
        )

    def scan(self, columns: Sequence[str] | None = None, filter: pc.Expression | None = None) -> pa.RecordBatchReader:
        """The live rows matching ``filter`` (a pyarrow compute expression on logical names), streamed.

        Files are pruned by partition values and skipped by statistics, read in parallel with deletion vectors
        applied and column mapping resolved (:func:`deltalog.data.scan.scan`). An unknown column, in
        ``columns`` or in ``filter``, is an :class:`InvalidArgumentError` naming it.
        """
        from deltalog.data.scan import scan

        return scan(self.raw_files(stats=True), self._description(), columns, filter)

    def to_arrow(self, columns: Sequence[str] | None = None, filter: pc.Expression | None = None) -> pa.Table:
        """:meth:`scan`, read into one table."""
        return self.scan(columns, filter).read_all()

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

    def advance(self, commits: Sequence[CommitData]) -> Snapshot:
        """The snapshot after ``commits`` (the next versions, in order), replaying only them.

        Only their non-file actions are applied now; the file list is replayed onto this snapshot's when
        first asked for. A writer that keeps appending therefore pays for its commits, not for the table,
        and a chain of such advances replays its commits once, onto the last snapshot that had files.
        """
        if not commits:
            return self
        if commits[0].version != self.version + 1:
            raise ValueError(f"commits must start at version {self.version + 1}, not {commits[0].version}")
        result = state_only(self._state_base(), commits)
        assert result.protocol is not None and result.protocol_source is not None
        check_readable(result.protocol, f"{self._log.location}/{result.protocol_source}")
        new_paths = []
        for c in commits:
            parsed = parse(c.path.rsplit("/", 1)[-1], len(c.data), c.mtime)
            assert parsed is not None
            new_paths.append(parsed)
        segment = LogSegment(result.version, self.segment.checkpoint, self.segment.commits + tuple(new_paths))
        anchor, pending = (self, tuple(commits))
        if self._anchor is not None and not self.files_loaded:
            anchor, pending = self._anchor[0], self._anchor[1] + tuple(commits)
        snap = Snapshot(
            self._log, segment, result, now_ms=self._log.now_ms(), files=lambda: anchor._replay_files(pending)
        )
        snap._anchor = (anchor, pending)
        return snap

    def _state_base(self, with_files: bool = False) -> BaseState:
        r = self._result
        base = BaseState(
            version=self.version,
            source=self.segment.describe(),
            protocol=r.protocol,
            metadata=r.metadata,
            txns=dict(r.txns),
            domains=dict(r.domains),
        )
        if with_files:
            files = self._files
            base.adds = files.adds(stats=False)
            base.adds_stats = lambda: files.adds(stats=True).column("stats")
            base.removes = files.tombstones
        return base

    def _replay_files(self, commits: Sequence[CommitData]) -> FileState:
        """This snapshot's files with ``commits`` replayed onto them (a deferred advance, resolved)."""
        files = replay(self._state_base(with_files=True), commits, self._log.store.root).files
        assert files is not None
        distrusted = self._files.distrusted
        return dataclasses.replace(files, distrusted=distrusted) if distrusted else files

    def __repr__(self) -> str:
        files = self.num_files if self.files_loaded else "not loaded"
        return f"Snapshot(table={self._log.location!r}, version={self.version}, files={files})"


def _rename_struct(col: pa.ChunkedArray, names: list[str]) -> pa.ChunkedArray:
    chunks = []
    for chunk in col.chunks:
        fields = [pa.field(n, chunk.type.field(i).type) for i, n in enumerate(names)]
        chunks.append(
            pa.StructArray.from_arrays([chunk.field(i) for i in range(len(names))], fields=fields, mask=chunk.is_null())
        )
    target = pa.struct([pa.field(n, col.type.field(i).type) for i, n in enumerate(names)])
    return pa.chunked_array(chunks, type=target)


__all__ = ["Snapshot"]
