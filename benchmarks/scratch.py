"""Scratch copies of a table's log for the cases that write, and the checks that each run really wrote.

A checkpoint or an append changes the table, and both engines skip a checkpoint that already exists
(deltalake silently, deltalog with ``already_existed=True``), so every timed run gets its own copy of the
log in the state the case starts from, and the copy is checked after the run:

- the copy is made of hard links (a 1M-file log is ~500 MB; linking takes milliseconds and shares the page
  cache). Safe because neither engine writes into an existing file: both write a new file and link or
  rename it into place. ``_last_checkpoint`` is always a fresh copy, never a link;
- for a checkpoint case, the checkpoint files at the target version are left out and ``_last_checkpoint``
  is put back to the newest older checkpoint (as deltalake wrote it at build time, kept under
  :data:`benchmarks.cases.HINTS_DIR`), or left out when there is none;
- after a checkpoint run: a checkpoint of the target version exists, is not empty, holds exactly the
  table's live files as ``add`` rows, and ``_last_checkpoint`` names the target version;
- after an append run (one-shot, or on the loaded table): the next version exists and holds exactly one
  ``add`` whose data file exists.

Stdlib only at import; pyarrow is imported for the checkpoint check.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
from typing import Any

from benchmarks.cases import APPEND_OPS, HINTS_DIR, BuiltTable, Case
from benchmarks.synth import LOG_DIR

LAST_CHECKPOINT = "_last_checkpoint"


class ScratchError(RuntimeError):
    """A write case's run did not do what it was timed for (no checkpoint, wrong contents, no commit)."""


def target_version(case: Case, built: BuiltTable) -> int:
    return built.latest if case.version is None else case.version


def scratch_dir(root: str, case: Case, engine: str) -> str:
    return os.path.join(root, "scratch", f"{case.name}-{engine}")


def prepare(case: Case, built: BuiltTable, dest: str) -> str:
    """A fresh hard-linked copy of ``built``'s log at ``dest`` in the state ``case`` starts from."""
    shutil.rmtree(dest, ignore_errors=True)
    src_log = os.path.join(built.path, LOG_DIR)
    dst_log = os.path.join(dest, LOG_DIR)
    os.makedirs(dst_log)
    target = target_version(case, built)
    drop = f"{target:020d}.checkpoint" if case.op in ("checkpoint", "checkpoint_call") else None
    for name in os.listdir(src_log):
        if name == LAST_CHECKPOINT or (drop and name.startswith(drop)):
            continue
        os.link(os.path.join(src_log, name), os.path.join(dst_log, name))
    if drop is None:
        hint = os.path.join(src_log, LAST_CHECKPOINT)
    else:
        older = [v for v in case.table.spec.checkpoints if v < target]
        hint = os.path.join(built.path, HINTS_DIR, f"{max(older)}.json") if older else ""
        if older and not os.path.isfile(hint):
            raise ScratchError(f"{hint} is missing: rebuild {built.path} (delete its {HINTS_DIR} marker)")
    if hint and os.path.isfile(hint):
        shutil.copyfile(hint, os.path.join(dst_log, LAST_CHECKPOINT))
    return dest


def _adds_in_checkpoint(files: list[str]) -> int:
    """``add`` rows in a checkpoint: from the parquet footer's null counts when present, else by reading."""
    import pyarrow.parquet as pq

    total = 0
    for path in files:
        meta = pq.ParquetFile(path).metadata
        names = [meta.schema.column(i).path for i in range(meta.num_columns)]
        if "add.path" not in names:
            continue
        col = names.index("add.path")
        counted = 0
        for rg in range(meta.num_row_groups):
            chunk = meta.row_group(rg)
            stats = chunk.column(col).statistics
            if stats is None or not stats.has_null_count:
                counted = -1
                break
            counted += chunk.num_rows - stats.null_count
        if counted < 0:  # no null counts in the footer: read the one column
            paths = pq.read_table(path, columns=["add"]).column("add")
            counted = len(paths) - paths.null_count
        total += counted
    return total


def verify_checkpoint(case: Case, built: BuiltTable, dest: str) -> dict[str, Any]:
    target = target_version(case, built)
    log_dir = os.path.join(dest, LOG_DIR)
    files = sorted(glob.glob(os.path.join(log_dir, f"{target:020d}.checkpoint*.parquet")))
    if not files:
        raise ScratchError(f"no checkpoint of version {target} was written in {log_dir}")
    size = sum(os.path.getsize(f) for f in files)
    if size <= 0:
        raise ScratchError(f"the checkpoint of version {target} in {log_dir} is empty")
    try:
        with open(os.path.join(log_dir, LAST_CHECKPOINT)) as f:
            hint = json.load(f)
    except (OSError, ValueError) as exc:
        raise ScratchError(f"no readable {LAST_CHECKPOINT} after the checkpoint in {log_dir}: {exc}") from None
    if hint.get("version") != target:
        raise ScratchError(f"{LAST_CHECKPOINT} names version {hint.get('version')}, expected {target}")
    adds = _adds_in_checkpoint(files)
    expected = built.expected_files(target)
    if adds != expected:
        raise ScratchError(f"the checkpoint of version {target} holds {adds} add rows, the table has {expected}")
    return {"checkpoint_bytes": size, "checkpoint_files": len(files), "files": adds}


def verify_append(case: Case, built: BuiltTable, dest: str) -> dict[str, Any]:
    import orjson

    target = target_version(case, built) + 1
    log_dir = os.path.join(dest, LOG_DIR)
    commit = os.path.join(log_dir, f"{target:020d}.json")
    if not os.path.isfile(commit):
        raise ScratchError(f"no commit {commit} after the append")
    if os.path.exists(os.path.join(log_dir, f"{target + 1:020d}.json")):
        raise ScratchError(f"more than one commit after the append in {log_dir}")
    with open(commit, "rb") as f:
        actions = [orjson.loads(line) for line in f.read().splitlines() if line.strip()]
    adds = [a["add"] for a in actions if "add" in a]
    if len(adds) != 1 or any("remove" in a for a in actions):
        raise ScratchError(f"{commit} holds {len(adds)} adds (and removes: {any('remove' in a for a in actions)})")
    from urllib.parse import unquote

    data = os.path.join(dest, unquote(adds[0]["path"]))
    if not os.path.isfile(data) or os.path.getsize(data) <= 0:
        raise ScratchError(f"the appended data file {data} is missing or empty")
    checkpoints = glob.glob(os.path.join(log_dir, f"{target:020d}.checkpoint*"))
    return {"appended_version": target, "checkpoint_written": bool(checkpoints), "verified": True}


def verify(case: Case, built: BuiltTable, dest: str) -> dict[str, Any]:
    if case.op in ("checkpoint", "checkpoint_call"):
        return verify_checkpoint(case, built, dest)
    if case.op in APPEND_OPS:
        return verify_append(case, built, dest)
    raise ValueError(f"nothing to verify for op {case.op!r}")


def discard(dest: str) -> None:
    shutil.rmtree(dest, ignore_errors=True)


__all__ = ["ScratchError", "discard", "prepare", "scratch_dir", "target_version", "verify"]
