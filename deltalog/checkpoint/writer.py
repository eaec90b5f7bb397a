"""Writing checkpoints: classic single file, classic multi-part, or V2 (UUID manifest plus sidecars).

Every file is built from Arrow record batches (no Python object per file) and published with
``put_if_absent``, so it appears whole or not at all; a racing writer's identical checkpoint is fine.
``_last_checkpoint`` is written last (see :mod:`deltalog.checkpoint.hint`).
"""

from __future__ import annotations

import io
import logging
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from deltalog.checkpoint import schema as S
from deltalog.checkpoint.hint import update_hint
from deltalog.checkpoint.parsed import partition_values_parsed, stats_parsed
from deltalog.checkpoint.parts import assign_parts
from deltalog.checkpoint.reader import CheckpointReader, FileActions
from deltalog.checkpoint.rows import (
    add_struct,
    live_tombstones,
    nested_array,
    non_file_table,
    null_table,
    streamed_adds,
)
from deltalog.checkpoint.scan import BATCH_ROWS, open_parquet
from deltalog.core import properties
from deltalog.core.paths import LOG_DIR, SIDECAR_DIR, Kind, checkpoint_name, log_files, multipart_name, version_prefix
from deltalog.core.segment import CheckpointRef, complete_checkpoints
from deltalog.core.state import BaseState
from deltalog.core.state.columns import array_of
from deltalog.core.state.files import FileState, key_column
from deltalog.core.version_state import VersionState
from deltalog.errors import CheckpointError, CorruptLogError, FileAlreadyExistsError, InvalidArgumentError
from deltalog.storage.base import LogStore, list_between

log = logging.getLogger(__name__)

Progress = Callable[[str, int, int], None]

SIDECAR_ROWS = 100_000
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


@dataclass
class _Sections:
    """The checkpoint's rows, by kind, as Arrow arrays in checkpoint types."""

    non_file: pa.Table
    adds: pa.Array
    removes: pa.Array
    add_keys: pa.Array | None
    remove_keys: pa.Array | None


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
        self.stats_json = properties.get_bool(conf, "delta.checkpoint.writeStatsAsJson", True)
        # The spec's default is false (Delta Spark's is true); unset means the spec's default here.
        self.stats_struct = properties.get_bool(conf, "delta.checkpoint.writeStatsAsStruct", False)
        self.compression = conf.get("delta.parquet.compression.codec", "snappy").lower()
        # PROTOCOL "V2 Checkpoint Table Feature": with v2Checkpoint supported a checkpoint is never multi-part,
        # and it is classic (V1 spec, classic name) or V2 (UUID-named manifest) as delta.checkpointPolicy says
        self.v2_supported = "v2Checkpoint" in state.features
        self.v2 = self.v2_supported and str(conf.get(CHECKPOINT_POLICY, "classic")).strip().lower() == "v2"

    # ------------------------------------------------------------------------------------------ assembly
    def _tick(self, stage: str, done: int, total: int) -> None:
        if self.progress is not None:
            self.progress(stage, done, total)

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

    def sections(self, keys: bool = False) -> tuple[_Sections, pa.StructType]:
        """Every row in memory: for multi-part and V2 checkpoints and the parsed stats columns."""
        adds = self.files.adds(stats=self.stats_json or self.stats_struct)
        add_t, sp, pvp = self._add_type(adds)
        tomb, remove_array = live_tombstones(self.state, self.files, self.now_ms)
        schema = S.checkpoint_schema(add_t, v2=self.v2)
        root = self.store.root
        sections = _Sections(
            non_file=non_file_table(self.state, self.now_ms, schema),
            adds=add_struct(adds, add_t, sp, pvp),
            removes=remove_array,
            add_keys=key_column(adds, root) if keys and adds.num_rows else None,
            remove_keys=key_column(tomb, root) if keys and tomb.num_rows else None,
        )
        return sections, add_t

    # ------------------------------------------------------------------------------------------ encoding
    def _encode(self, schema: pa.Schema, tables: Iterator[pa.Table], total: int, stage: str) -> bytes:
        """The parquet file of ``tables``; bytes, or a zero-copy view of Arrow's buffer for a local store."""
        sink = pa.BufferOutputStream()
        options = S.encoding_options(schema)
        with pq.ParquetWriter(
            sink,
            schema,
            compression=self.compression,
            use_compliant_nested_type=True,
            write_page_checksum=True,  # readers that verify (deltalog, parquet-mr) catch a damaged page
            **options,
        ) as writer:
            done = 0
            for t in tables:
                if t.num_rows:
                    writer.write_table(t, row_group_size=BATCH_ROWS)
                    done += t.num_rows
                    self._tick(stage, done, total)
        buf = sink.getvalue()
        if self.store.capabilities.local:
            return memoryview(buf)  # type: ignore[return-value]  # written with os.write: no copy of the file
        return buf.to_pybytes()

    def _file_rows(
        self, schema: pa.Schema, sec: _Sections, add_idx: pa.Array | None, rm_idx: pa.Array | None
    ) -> Iterator[pa.Table]:
        adds = sec.adds if add_idx is None else sec.adds.take(add_idx)
        removes = sec.removes if rm_idx is None else sec.removes.take(rm_idx)
        for start in range(0, len(adds), BATCH_ROWS):
            yield null_table(schema, "add", adds.slice(start, BATCH_ROWS))
        for start in range(0, len(removes), BATCH_ROWS):
            yield null_table(schema, "remove", removes.slice(start, BATCH_ROWS))

    def _publish(self, path: str, data: bytes) -> bool:
        """True if we wrote it; False if an equivalent file was already there (a racing writer).

        A file already under the name is trusted only if it is a readable parquet file with as many rows as
        ours: a torn checkpoint left by a crashed writer on a store without atomic puts is replaced, or every
        later run would report success over it while readers keep skipping it.
        """
        try:
            self.store.put_if_absent(path, data)
            return True
        except FileAlreadyExistsError:
            pass
        if _same_rows(self.store, path, pq.ParquetFile(pa.BufferReader(data)).metadata.num_rows):
            log.info("%s already exists: another writer checkpointed this version", path)
            return False
        log.warning("%s exists but is unreadable or incomplete; replacing it", path)
        self.store.put(path, data)
        return True

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
            files, sizes, wrote = self._write_v2(sec, add_t)
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
            for start in range(0, len(removes), BATCH_ROWS):
                yield null_table(schema, "remove", removes.slice(start, BATCH_ROWS))

        total = non_file.num_rows + self.files.num_files + len(removes)
        data = self._encode(schema, tables(), total, "write")
        path = f"{LOG_DIR}/{checkpoint_name(self.state.version)}"
        wrote = self._publish(path, data)
        return [path], [len(data)], wrote, non_file.num_rows + num_adds + len(removes), num_adds

    def _write_classic(self, sec: _Sections, add_t: pa.StructType) -> tuple[list[str], list[int], bool]:
        schema = S.checkpoint_schema(add_t)
        total = sec.non_file.num_rows + len(sec.adds) + len(sec.removes)
        data = self._encode(schema, _chain([sec.non_file], self._file_rows(schema, sec, None, None)), total, "write")
        path = f"{LOG_DIR}/{checkpoint_name(self.state.version)}"
        wrote = self._publish(path, data)
        return [path], [len(data)], wrote

    def _write_multipart(self, sec: _Sections, add_t: pa.StructType, parts: int) -> tuple[list[str], list[int], bool]:
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
            rows = self._file_rows(
                schema,
                sec,
                add_idx if add_idx is not None else pa.nulls(0, pa.int64()),
                rm_idx if rm_idx is not None else pa.nulls(0, pa.int64()),
            )
            data = self._encode(schema, _chain(first, rows), total, f"part {i + 1}/{parts}")
            path = f"{LOG_DIR}/{multipart_name(self.state.version, i + 1, parts)}"
            wrote_any |= self._publish(path, data)
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
        listed = log_files(
            list_between(self.store, f"{LOG_DIR}/{version_prefix(version)}", version_prefix(version + 1))
        )
        if any(c.version == version and c.kind is not Kind.UUID_CHECKPOINT for c in complete_checkpoints(listed)):
            return None
        sec, add_t = self.sections()
        path = f"{LOG_DIR}/{checkpoint_name(version)}"
        files, sizes, wrote = self._write_v2(sec, add_t, single=path)
        num_actions = sec.non_file.num_rows + len(sec.adds) + len(sec.removes) + 1
        return CheckpointResult(
            version, "v2", tuple(files), num_actions, len(sec.adds), sum(sizes), time.monotonic() - started, not wrote
        )

    def _write_v2(
        self, sec: _Sections, add_t: pa.StructType, single: str | None = None
    ) -> tuple[list[str], list[int], bool]:
        """A V2 checkpoint: a UUID-named manifest (sidecars past :data:`SIDECAR_ROWS` file rows), or, given
        ``single``, one file under that name with every row inline."""
        version = self.state.version
        schema = S.checkpoint_schema(add_t, v2=True)
        n_file = len(sec.adds) + len(sec.removes)
        sidecar_rows: list[dict[str, Any]] = []
        files, sizes = [], []
        if n_file > SIDECAR_ROWS and single is None:
            side_schema = S.checkpoint_schema(add_t, sidecar_file=True)
            chunks = list(range(0, n_file, SIDECAR_ROWS))
            for i, start in enumerate(chunks):
                idx = array_of(list(range(start, min(start + SIDECAR_ROWS, n_file))), pa.int64())
                a_idx = pc.filter(idx, pc.less(idx, len(sec.adds)))
                r_idx = pc.subtract(pc.filter(idx, pc.greater_equal(idx, len(sec.adds))), len(sec.adds))
                data = self._encode(
                    side_schema,
                    self._file_rows(side_schema, sec, a_idx, r_idx),
                    n_file,
                    f"sidecar {i + 1}/{len(chunks)}",
                )
                name = f"{version:020d}.checkpoint.{i + 1:010d}.{len(chunks):010d}.{uuid.uuid4()}.parquet"
                path = f"{LOG_DIR}/{SIDECAR_DIR}/{name}"
                self._publish(path, data)
                files.append(path)
                sizes.append(len(data))
                sidecar_rows.append(
                    {
                        "path": name,
                        "sizeInBytes": len(data),
                        "modificationTime": self.now_ms,
                        "tags": None,
                    }
                )
        meta = nested_array(
            [{"version": version, "tags": [("numOfAddFiles", str(len(sec.adds)))]}], S.CHECKPOINT_METADATA
        )
        head = [
            null_table(schema, "checkpointMetadata", meta),
            sec.non_file.cast(schema) if sec.non_file.schema != schema else sec.non_file,
        ]
        if sidecar_rows:
            head.append(null_table(schema, "sidecar", nested_array(sidecar_rows, S.SIDECAR)))
            body: Iterator[pa.Table] = iter(())
        else:
            body = self._file_rows(schema, sec, None, None)
        data = self._encode(schema, _chain(head, body), sec.non_file.num_rows + n_file + 1, "manifest")
        if single is not None:
            return [single], [len(data)], self._publish(single, data)
        path = f"{LOG_DIR}/{version:020d}.checkpoint.{uuid.uuid4()}.parquet"
        if not self._publish(path, data):  # pragma: no cover - a fresh UUID cannot collide
            raise CheckpointError(f"{path} already exists")
        return [path, *files], [len(data), *sizes], True

    # ------------------------------------------------------------------------------------------ existing
    def _keep_existing(self, started: float, classic: bool) -> CheckpointResult | None:
        """The checkpoint already complete at this version, left as it is; None if there is none to keep.

        Whatever its layout (classic, multi-part, V2) and whatever layout was asked for: a second layout
        next to it would leave two checkpoints of one version, with a hint describing only one, and engines
        that pick the other get a different file set or fail. One that cannot be read is only replaced
        when it is a single classic file under the very name about to be written (a torn copy); any other
        damaged one is a :class:`CheckpointError` naming it, since writing beside it is what must not happen.
        """
        version = self.state.version
        listed = log_files(
            list_between(self.store, f"{LOG_DIR}/{version_prefix(version)}", version_prefix(version + 1))
        )
        refs = [c for c in complete_checkpoints(listed) if c.version == version]
        damaged: list[tuple[CheckpointRef, CorruptLogError]] = []
        for ref in reversed(refs):  # the layout readers prefer first
            try:
                base = CheckpointReader(self.store).read_base(ref)
            except CorruptLogError as exc:
                damaged.append((ref, exc))
                continue
            return self._kept(ref, base, started)
        if not damaged:
            return None
        ours = checkpoint_name(version)
        if classic and all(len(ref.files) == 1 and ref.files[0].name == ours for ref, _ in damaged):
            return None  # _publish replaces the torn file under our own name
        names = ", ".join(ref.files[0].name + (" (+ parts)" if len(ref.files) > 1 else "") for ref, _ in damaged)
        raise CheckpointError(
            f"version {version} already has a checkpoint that cannot be read ({names}: {damaged[0][1]}); "
            "writing another layout beside it would leave two checkpoints of one version: delete the damaged "
            "files, or checkpoint a later version"
        )

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
        size = _action_count(self.store, files, base)
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


def _action_count(store: LogStore, files: list[str], base: BaseState) -> int:
    """How many actions a checkpoint holds: its parquet files' rows (sidecars included), its JSON lines."""
    total = 0
    actions = base.adds_stats
    parquet = actions.files if isinstance(actions, FileActions) else [f for f in files if f.endswith(".parquet")]
    for path in parquet:
        with open_parquet(store, path) as pf:
            total += pf.metadata.num_rows
    for path in files:
        if path.endswith(".json"):
            total += sum(1 for line in store.read(path).split(b"\n") if line.strip())
    return total


def _same_rows(store: LogStore, path: str, rows: int) -> bool:
    try:
        existing = pq.ParquetFile(io.BytesIO(store.read(path)))
    except (OSError, pa.ArrowInvalid):
        return False
    return bool(existing.metadata.num_rows == rows)


def _chain(first: list[pa.Table], rest: Iterator[pa.Table]) -> Iterator[pa.Table]:
    yield from first
    yield from rest


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


__all__ = ["CheckpointResult", "CheckpointWriter", "write_checkpoint"]
