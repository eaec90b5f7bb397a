"""V2 checkpoints: a UUID-named manifest, with the file rows in sidecars once there are many of them.

PROTOCOL "V2 Spec": the manifest holds a ``checkpointMetadata`` row and every non-file action; file actions are
either inline or in sidecar files under ``_delta_log/_sidecars`` that the manifest names. Sidecars keep the
manifest small for engines that read only the non-file actions, and are written first, so a manifest never
names a sidecar that is not there. The manifest's name carries a fresh UUID: two writers of one version never
collide, and readers take any complete one.

The same content under the classic name (every row inline) is the compatibility checkpoint log cleanup writes
before deleting commits on a V2 table, so that an engine knowing only classic names finds a checkpoint whose
protocol tells it to refuse the table, rather than missing commits.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.checkpoint import schema as S
from deltalog.checkpoint.publish import CheckpointFiles, Sections, chain, file_rows
from deltalog.checkpoint.rows import nested_array, null_table
from deltalog.core.log.paths import LOG_DIR, SIDECAR_DIR
from deltalog.core.state.columns import array_of
from deltalog.errors import CheckpointError

#: file rows per sidecar; a checkpoint with no more file rows than this keeps them inline in the manifest
SIDECAR_ROWS = 100_000


def _sidecars(
    out: CheckpointFiles, sec: Sections, add_t: pa.StructType, version: int, now_ms: int
) -> tuple[list[str], list[int], list[dict[str, Any]]]:
    """Write the sidecars of ``sec``'s file rows: their paths, sizes and the manifest's sidecar rows."""
    n_file = len(sec.adds) + len(sec.removes)
    side_schema = S.checkpoint_schema(add_t, sidecar_file=True)
    chunks = list(range(0, n_file, SIDECAR_ROWS))
    files, sizes, rows = [], [], []
    for i, start in enumerate(chunks):
        idx = array_of(list(range(start, min(start + SIDECAR_ROWS, n_file))), pa.int64())
        a_idx = pc.filter(idx, pc.less(idx, len(sec.adds)))
        r_idx = pc.subtract(pc.filter(idx, pc.greater_equal(idx, len(sec.adds))), len(sec.adds))
        data = out.encode(
            side_schema, file_rows(side_schema, sec, a_idx, r_idx), n_file, f"sidecar {i + 1}/{len(chunks)}"
        )
        name = f"{version:020d}.checkpoint.{i + 1:010d}.{len(chunks):010d}.{uuid.uuid4()}.parquet"
        path = f"{LOG_DIR}/{SIDECAR_DIR}/{name}"
        out.publish(path, data)
        files.append(path)
        sizes.append(len(data))
        rows.append({"path": name, "sizeInBytes": len(data), "modificationTime": now_ms, "tags": None})
    return files, sizes, rows


def write_v2(
    out: CheckpointFiles,
    sec: Sections,
    add_t: pa.StructType,
    version: int,
    now_ms: int,
    single: str | None = None,
) -> tuple[list[str], list[int], bool]:
    """A V2 checkpoint of ``version``: a UUID-named manifest (sidecars past :data:`SIDECAR_ROWS` file rows,
    stamped ``now_ms``), or, given ``single``, one file under that name with every row inline. Returns the
    files (manifest first), their sizes, and whether we wrote them."""
    schema = S.checkpoint_schema(add_t, v2=True)
    n_file = len(sec.adds) + len(sec.removes)
    files: list[str] = []
    sizes: list[int] = []
    sidecar_rows: list[dict[str, Any]] = []
    if n_file > SIDECAR_ROWS and single is None:
        files, sizes, sidecar_rows = _sidecars(out, sec, add_t, version, now_ms)
    meta = nested_array([{"version": version, "tags": [("numOfAddFiles", str(len(sec.adds)))]}], S.CHECKPOINT_METADATA)
    head = [
        null_table(schema, "checkpointMetadata", meta),
        sec.non_file.cast(schema) if sec.non_file.schema != schema else sec.non_file,
    ]
    if sidecar_rows:
        head.append(null_table(schema, "sidecar", nested_array(sidecar_rows, S.SIDECAR)))
        body: Iterator[pa.Table] = iter(())
    else:
        body = file_rows(schema, sec, None, None)
    data = out.encode(schema, chain(head, body), sec.non_file.num_rows + n_file + 1, "manifest")
    if single is not None:
        return [single], [len(data)], out.publish(single, data)
    path = f"{LOG_DIR}/{version:020d}.checkpoint.{uuid.uuid4()}.parquet"
    if not out.publish(path, data):  # pragma: no cover - a fresh UUID cannot collide
        raise CheckpointError(f"{path} already exists")
    return [path, *files], [len(data), *sizes], True


__all__ = ["SIDECAR_ROWS", "write_v2"]
