"""Writing checkpoints: classic single file, classic multi-part, or V2 (UUID manifest plus sidecars).

This module chooses the layout a table asks for, writes the classic and multi-part ones, keeps a complete
checkpoint already at the version rather than writing a second layout beside it, and moves
``_last_checkpoint`` last (see :mod:`deltalog.checkpoint.hint`). The V2 manifest and its sidecars are
:mod:`deltalog.checkpoint.v2`; encoding rows as parquet and publishing each file whole is
:mod:`deltalog.checkpoint.publish`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.checkpoint import schema as S
from deltalog.checkpoint.existing import action_count, checkpoints_at, readable_checkpoint
from deltalog.checkpoint.hint import update_hint
from deltalog.checkpoint.parsed import partition_values_parsed, stats_parsed
from deltalog.checkpoint.parts import assign_parts
from deltalog.checkpoint.publish import CheckpointFiles, Progress, Sections, batches, chain, file_rows
from deltalog.checkpoint.rows import (
    add_struct,
    live_tombstones,
    non_file_table,
    null_table,
    streamed_adds,
)
from deltalog.checkpoint.v2 import write_v2
from deltalog.core import properties
from deltalog.core.paths import LOG_DIR, Kind, checkpoint_name, multipart_name
from deltalog.core.result_repr import result_repr
from deltalog.core.segment import CheckpointRef
from deltalog.core.state import BaseState
from deltalog.core.state.files import FileState, key_column
from deltalog.core.version_state import VersionState
from deltalog.errors import CheckpointError, InvalidArgumentError
from deltalog.storage.base import LogStore

log = logging.getLogger(__name__)

CHECKPOINT_POLICY = "delta.checkpointPolicy"


@dataclass(frozen=True)
class CheckpointResult:
    """A checkpoint written (or found already written): its version, kind, files and size."""

    version: int
    kind: str  # "classic" | "multipart" | "v2"
    files: tuple[str, ...]  # store-relative paths written (or found already written)
    num_actions: int
    num_add_files: int
    size_in_bytes: int
    seconds: float
    already_existed: bool = False

    @property
    def dry_run(self) -> bool:
        """Always False: a checkpoint is written (the field other results share)."""
        return False

    @property
    def paths(self) -> tuple[str, ...]:
        """The checkpoint's files (parts, a V2 manifest and its sidecars), store-relative."""
        return self.files

    @property
    def num_files(self) -> int:
        """How many files the checkpoint is made of."""
        return len(self.files)

    @property
    def bytes(self) -> int:
        """The checkpoint's size on the store."""
        return self.size_in_bytes

    def __repr__(self) -> str:
        """Version, kind and size; the files are on :attr:`files`."""
        return result_repr(
            "CheckpointResult",
            "already_existed" if self.already_existed else "",
            version=self.version,
            kind=self.kind,
            files=self.num_files,
            actions=self.num_actions,
            bytes=self.size_in_bytes,
        )


class CheckpointWriter:
    """Writes the checkpoint of one version from its state and files (never from a snapshot or a log).

    ``now_ms`` is the clock that decides which tombstones and txns are still within their retention, and
    the time sidecars are stamped with.
    """

    def __init__(
        self,
        store: LogStore,
        state: VersionState,
        files: FileState,
        now_ms: int,
        progress: Progress | None = None,
    ) -> None:
        self.store = store
        self.state = state
        self.files = files
        self.now_ms = now_ms
        self.progress = progress
        conf = state.configuration
        # a value that is not a string (another engine's log, a hand edit) is named before any file is written
        where = state.metadata_source or f"{store.root}/{LOG_DIR} (version {state.version})"
        properties.check_string_values(conf, where)
        self.stats_json = properties.checkpoint_stats_json(conf)
        self.stats_struct = properties.checkpoint_stats_struct(conf)
        self.compression = properties.parquet_codec(conf)
        # PROTOCOL "V2 Checkpoint Table Feature": with v2Checkpoint supported a checkpoint is never multi-part,
        # and it is classic (V1 spec, classic name) or V2 (UUID-named manifest) as delta.checkpointPolicy says
        self.v2_supported = "v2Checkpoint" in state.features
        self.v2 = self.v2_supported and str(conf.get(CHECKPOINT_POLICY, "classic")).strip().lower() == "v2"
        self.out = CheckpointFiles(store, self.compression, progress)

    # ------------------------------------------------------------------------------------------ assembly
    def _add_type(self, adds: pa.Table) -> tuple[pa.StructType, pa.Array | None, pa.Array | None]:
        state = self.state
        mode = state.column_mapping_mode
        sp = pvp = None
        sp_type = pv_type = None
        if self.stats_struct:
            schema = state.schema_json()
            columns = list(state.metadata.partition_columns)
            sp_type = S.stats_parsed_type(schema, mode, columns)
            sp = stats_parsed(adds.column("stats"), sp_type)
            pv_type = S.partition_values_parsed_type(schema, mode, columns)
            if pv_type is not None:
                pvp = partition_values_parsed(
                    adds.column("partitionValues"), schema, state.physical_names(schema), columns, pv_type
                )
        t = S.add_type(self.stats_json, sp_type if sp is not None else None, pv_type if pvp is not None else None)
        return t, sp, pvp

    def sections(self, keys: bool = False) -> tuple[Sections, pa.StructType]:
        """Every row in memory: for multi-part and V2 checkpoints and the parsed stats columns."""
        adds = self.files.adds(stats=self.stats_json or self.stats_struct)
        add_t, sp, pvp = self._add_type(adds)
        tomb, remove_array = live_tombstones(self.state, self.files, self.now_ms)
        schema = S.checkpoint_schema(add_t, v2=self.v2)
        root = self.store.root
        sections = Sections(
            non_file=non_file_table(self.state, self.now_ms, schema),
            adds=add_struct(adds, add_t, sp, pvp),
            removes=remove_array,
            add_keys=key_column(adds, root) if keys and adds.num_rows else None,
            remove_keys=key_column(tomb, root) if keys and tomb.num_rows else None,
        )
        return sections, add_t

    # ------------------------------------------------------------------------------------------ kinds
    def write(self, parts: int | None = None) -> CheckpointResult:
        started = time.monotonic()
        if parts is not None and parts > 1 and self.v2_supported:
            raise InvalidArgumentError("multi-part checkpoints are forbidden on tables with the v2Checkpoint feature")
        multipart = parts is not None and parts > 1
        kept = self._keep_existing(started, classic=not (multipart or self.v2))
        if kept is not None:
            return kept
        streamed = None if self.stats_struct or self.v2 or multipart else streamed_adds(self.files, self.stats_json)
        if streamed is not None:
            files, sizes, wrote, num_actions, num_adds = self._write_streamed(streamed)
            return self._finish("classic", files, sizes, wrote, num_actions, num_adds, started)
        sec, add_t = self.sections(keys=multipart)
        num_actions = sec.non_file.num_rows + len(sec.adds) + len(sec.removes)
        if self.v2:
            files, sizes, wrote = write_v2(self.out, sec, add_t, self.state.version, self.now_ms)
            kind = "v2"
            # The manifest's own rows count as actions too: checkpointMetadata and one sidecar row per sidecar.
            num_actions += 1 + (len(files) - 1)
        elif parts is not None and parts > 1:
            files, sizes, wrote = self._write_multipart(sec, add_t, parts)
            kind = "multipart"
        else:
            files, sizes, wrote = self._write_classic(sec, add_t)
            kind = "classic"
        return self._finish(kind, files, sizes, wrote, num_actions, len(sec.adds), started)

    def _finish(
        self,
        kind: str,
        files: list[str],
        sizes: list[int],
        wrote: bool,
        num_actions: int,
        num_adds: int,
        started: float,
    ) -> CheckpointResult:
        """Move ``_last_checkpoint`` forward to the files just written (or found)."""
        version = self.state.version
        hint: dict[str, Any] = {"version": version, "size": num_actions}
        if kind == "multipart":
            hint["parts"] = len(files)
        hint["sizeInBytes"] = sum(sizes)
        hint["numOfAddFiles"] = num_adds
        update_hint(self.store, hint)
        return CheckpointResult(
            version=version,
            kind=kind,
            files=tuple(files),
            num_actions=num_actions,
            num_add_files=num_adds,
            size_in_bytes=sum(sizes),
            seconds=time.monotonic() - started,
            already_existed=not wrote,
        )

    def _write_streamed(self, adds: Iterator[pa.Table]) -> tuple[list[str], list[int], bool, int, int]:
        """A classic checkpoint encoded batch by batch from :func:`streamed_adds`: same rows, same order.

        Only one batch of adds with stats is in memory at a time, besides the encoded file.
        """
        add_t = S.add_type(self.stats_json, None, None)
        schema = S.checkpoint_schema(add_t)
        non_file = non_file_table(self.state, self.now_ms, schema)
        _, removes = live_tombstones(self.state, self.files, self.now_ms)
        num_adds = 0

        def tables() -> Iterator[pa.Table]:
            nonlocal num_adds
            yield non_file
            for table in adds:
                num_adds += table.num_rows
                yield null_table(schema, "add", add_struct(table, add_t))
            yield from batches(schema, "remove", removes)

        total = non_file.num_rows + self.files.num_files + len(removes)
        data = self.out.encode(schema, tables(), total, "write")
        path = f"{LOG_DIR}/{checkpoint_name(self.state.version)}"
        wrote = self.out.publish(path, data)
        return [path], [len(data)], wrote, non_file.num_rows + num_adds + len(removes), num_adds

    def _write_classic(self, sec: Sections, add_t: pa.StructType) -> tuple[list[str], list[int], bool]:
        schema = S.checkpoint_schema(add_t)
        total = sec.non_file.num_rows + len(sec.adds) + len(sec.removes)
        data = self.out.encode(schema, chain([sec.non_file], file_rows(schema, sec, None, None)), total, "write")
        path = f"{LOG_DIR}/{checkpoint_name(self.state.version)}"
        wrote = self.out.publish(path, data)
        return [path], [len(data)], wrote

    def _write_multipart(self, sec: Sections, add_t: pa.StructType, parts: int) -> tuple[list[str], list[int], bool]:
        """Parts by a stable hash of (path, DV id), so racing writers produce byte-identical assignments."""
        schema = S.checkpoint_schema(add_t)
        add_part = assign_parts(sec.add_keys, parts)
        rm_part = assign_parts(sec.remove_keys, parts)
        files, sizes, wrote_any = [], [], False
        total = sec.non_file.num_rows + len(sec.adds) + len(sec.removes)
        for i in range(parts):
            add_idx = pc.indices_nonzero(pc.equal(add_part, i)) if add_part is not None else None
            rm_idx = pc.indices_nonzero(pc.equal(rm_part, i)) if rm_part is not None else None
            first = [sec.non_file] if i == 0 else []
            rows = file_rows(
                schema,
                sec,
                add_idx if add_idx is not None else pa.nulls(0, pa.int64()),
                rm_idx if rm_idx is not None else pa.nulls(0, pa.int64()),
            )
            data = self.out.encode(schema, chain(first, rows), total, f"part {i + 1}/{parts}")
            path = f"{LOG_DIR}/{multipart_name(self.state.version, i + 1, parts)}"
            wrote_any |= self.out.publish(path, data)
            files.append(path)
            sizes.append(len(data))
        return files, sizes, wrote_any

    def write_compat(self) -> CheckpointResult | None:
        """A classic-named checkpoint with V2 content (every row inline) beside this version's UUID-named one.

        Log cleanup writes it before deleting anything on a V2 table (as Delta Spark's metadata cleanup does):
        an engine that knows only classic names then still finds a checkpoint, reads its protocol and refuses
        the table by name, where without one it would look for commits cleanup deleted. ``None`` when a
        complete classic or multi-part checkpoint of this version already exists; ``_last_checkpoint`` is
        left pointing at the UUID-named one.
        """
        started = time.monotonic()
        version = self.state.version
        if any(c.kind is not Kind.UUID_CHECKPOINT for c in checkpoints_at(self.store, version)):
            return None
        sec, add_t = self.sections()
        path = f"{LOG_DIR}/{checkpoint_name(version)}"
        files, sizes, wrote = write_v2(self.out, sec, add_t, version, self.now_ms, single=path)
        num_actions = sec.non_file.num_rows + len(sec.adds) + len(sec.removes) + 1
        return CheckpointResult(
            version, "v2", tuple(files), num_actions, len(sec.adds), sum(sizes), time.monotonic() - started, not wrote
        )

    # ------------------------------------------------------------------------------------------ existing
    def _keep_existing(self, started: float, classic: bool) -> CheckpointResult | None:
        """The checkpoint already complete at this version, whatever its layout and whatever layout was asked
        for, left as it is (see :mod:`deltalog.checkpoint.existing`); None if there is none to keep."""
        found = readable_checkpoint(self.store, self.state.version, classic)
        return None if found is None else self._kept(*found, started)

    def _kept(self, ref: CheckpointRef, base: BaseState, started: float) -> CheckpointResult:
        """The result for a complete checkpoint found at this version, with the hint moved to it if behind."""
        files = [f"{LOG_DIR}/{p.name}" for p in ref.files]
        num_adds = base.adds.num_rows
        live = self.files.num_files
        if num_adds != live:
            raise CheckpointError(
                f"{files[0]} already checkpoints version {ref.version} but holds {num_adds} live files where the "
                f"log has {live}: it was written wrong and readers that trust it see a different table"
            )
        kind = {Kind.MULTIPART: "multipart", Kind.UUID_CHECKPOINT: "v2"}.get(ref.kind, "classic")
        size = action_count(self.store, files, base)
        hint: dict[str, Any] = {"version": ref.version, "size": size}
        if ref.kind is Kind.MULTIPART:
            hint["parts"] = len(files)
        hint["sizeInBytes"] = sum(p.size for p in ref.files)
        hint["numOfAddFiles"] = num_adds
        update_hint(self.store, hint)
        log.info("version %d already has a complete %s checkpoint (%s); leaving it", ref.version, kind, files[0])
        return CheckpointResult(
            version=ref.version,
            kind=kind,
            files=tuple(files),
            num_actions=size,
            num_add_files=num_adds,
            size_in_bytes=hint["sizeInBytes"],
            seconds=time.monotonic() - started,
            already_existed=True,
        )


def write_checkpoint(
    store: LogStore,
    state: VersionState,
    files: FileState,
    now_ms: int,
    parts: int | None = None,
    progress: Progress | None = None,
) -> CheckpointResult:
    """Checkpoint the version ``state`` and ``files`` describe (it must be committed) and move
    ``_last_checkpoint`` forward; ``now_ms`` judges tombstone and txn retention."""
    return CheckpointWriter(store, state, files, now_ms, progress).write(parts)


__all__ = ["CheckpointResult", "CheckpointWriter", "Progress", "write_checkpoint"]
