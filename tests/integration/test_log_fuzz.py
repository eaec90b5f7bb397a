"""A seeded mutation fuzzer over the log files of corpus tables: damage one file, read, vacuum (dry run).

Each case copies a corpus table, damages one file of its log (a commit, a checkpoint part or manifest, a
sidecar, ``_last_checkpoint``) one way, and reads it with a fresh handle in a thread with a deadline (a hang
fails the case). What must hold:

* semantics-preserving damage (unknown fields and actions, key order, whitespace, a torn newest checkpoint
  with the commits intact, a stale, garbage or missing ``_last_checkpoint``) reads exactly as the original;
* any other damage reads as the original, or raises a :class:`~deltalog.errors.DeltaLogError` whose message
  names the damaged file;
* ``vacuum(dry_run=True)`` with zero retention either refuses with a ``DeltaLogError`` or plans nothing the
  pristine table's own plan would keep (so no file the original state, ``deltalake`` or a deletion vector
  needs).

Damage no reader can tell from a smaller valid log is not generated, and that is a statement about the log
format, not a gap: a commit cut exactly at a line break is a shorter valid commit, a flipped bit in a string
or a digit of a JSON line is another valid value, and a flipped bit in a parquet page without a checksum is
another valid value too (so pages are only flipped in files whose writer checksums them: parquet-mr since
1.12), and a checkpoint file without one of its action columns is a lean file (PROTOCOL.md "Checkpoints"
reads a missing column as null, and writers leave out the columns a part has no rows of). A log file
replaced by a directory, a FIFO or a symbolic-link loop is not a file, and stores list files only: unless
the error names it, the outcome must be the one of the same log with that file deleted (the newest commit
gone reads as the version before it, and vacuum is judged against that version).

Commits, checkpoints and sidecars are damaged on each table as it is and, for tables with a checkpoint, on
a copy whose commits up to the newest checkpoint were cleaned up: there a damaged checkpoint has nothing to
fall back to, so the error naming it is what is checked.
"""

from __future__ import annotations

import logging
import os
import random
import re
import shutil
import struct
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from deltalog.core.paths import Kind, commit_name, parse
from deltalog.errors import DeltaLogError
from tests.peers import try_deltalake

from .logdamage import LOG, copy_table, fresh, replacer, state, within

pytestmark = pytest.mark.corpus  # every case damages a copy of a corpus table: none without a corpus

TABLES = {
    "classic": "delta/basic-with-checkpoint",
    "multipart": "delta/multi-part-checkpoint",
    "v2-json-sidecars": "delta-kernel-rs/v2-checkpoints-json-with-sidecars",
    "v2-parquet-sidecars": "delta/kernel-pagination-v2-checkpoint-parquet",
    "no-checkpoint": "delta/basic-with-inserts-updates",
    "deletion-vectors": "delta/dv-partitioned-with-checkpoint",
    "column-mapping": "delta/table-with-dv-small-cm",
}
CASES = 30  # per table
SEED = 20_240_612
DEADLINE_S = 15.0

Outcome = tuple[str, Any]


# ---------------------------------------------------------------------------------------------- the originals


@dataclass(frozen=True)
class Original:
    state: Any
    keep: frozenset[str]  # files the pristine vacuum (zero retention) keeps: what no damaged log may plan


def _keep(root: Path) -> frozenset[str]:
    """Data files the pristine table needs: every file under the root its own vacuum would not delete,
    and every file ``deltalake`` calls live."""
    everything = {
        str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and p.relative_to(root).parts[0] != LOG
    }
    kind, plan = _vacuum(root)
    planned = plan if kind == "plan" else set()  # a table whose own vacuum refuses keeps everything
    lake = try_deltalake(root, rows=False)
    live = set(lake.files) if not isinstance(lake, str) else set()
    return frozenset((everything - planned) | live)


#: (table key, whether the commits up to the newest checkpoint are cleaned up): without them a damaged
#: checkpoint has nothing to fall back to, and the error must name it
VARIANTS = sorted(
    [(k, False) for k in TABLES] + [(k, True) for k in TABLES if k not in ("no-checkpoint", "column-mapping")]
)


def prepare(variant: tuple[str, bool], dst: Path) -> Path:
    """A copy of the variant's table at ``dst``: the corpus table, cleaned up to its newest checkpoint if asked."""
    key, cleaned = variant
    root = copy_table(TABLES[key], dst)
    if cleaned:
        log = root / LOG
        newest = max(p.version for p in map(parse, os.listdir(log)) if p is not None and p.is_checkpoint)
        for name in os.listdir(log):
            p = parse(name)
            if p is not None and p.kind is Kind.COMMIT and p.version <= newest:
                (log / name).unlink()
    return root


def _label(variant: tuple[str, bool]) -> str:
    return f"{variant[0]}{'-cleaned' if variant[1] else ''}"


@cache
def original(variant: tuple[str, bool], base: Path) -> Original:
    root = prepare(variant, base / f"{_label(variant)}-pristine")
    return Original(state=state(fresh(root).snapshot()), keep=_keep(root))


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


# ---------------------------------------------------------------------------------------------- damage


@dataclass(frozen=True)
class Case:
    target: str  # path relative to _delta_log
    kind: str
    preserving: bool  # must read exactly as the original
    apply: Callable[[Path], None]

    def __str__(self) -> str:
        return f"{self.kind} on {self.target}"


_STRUCTURAL = set(b'{}[]:,"')


def _json_structure(data: bytes) -> list[int]:
    """Offsets of JSON structural bytes outside strings: a flipped bit there can never parse."""
    out, in_string, escaped = [], False, False
    for i, b in enumerate(data):
        if in_string:
            if escaped:
                escaped = False
            elif b == 0x5C:
                escaped = True
            elif b == 0x22:
                in_string = False
                out.append(i)
        elif b in _STRUCTURAL:
            out.append(i)
            in_string = b == 0x22
    return out


def _mid_line_cut(data: bytes, rng: random.Random) -> int:
    """A length that leaves a partial (unparsable) last line; a cut at a line break is a valid shorter file."""
    for _ in range(100):
        n = rng.randrange(1, len(data))
        tail = data[:n].rsplit(b"\n", 1)[-1]
        if tail.strip():
            try:
                orjson.loads(tail)
            except orjson.JSONDecodeError:
                return n
    return 1


def _page_checksums(path: Path) -> bool:
    created = pq.ParquetFile(path).metadata.created_by or ""
    m = re.match(r"parquet-mr version 1\.(\d+)", created)
    return bool(m and int(m.group(1)) >= 12)


def _retype_json(v: Any) -> Any:
    """The same value in another JSON type."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, str):
        return [v]
    if isinstance(v, dict):
        return [[k, x] for k, x in v.items()]
    if isinstance(v, list):
        return ",".join(str(x) for x in v)
    return v


def _lines(path: Path) -> list[bytes]:
    return [line for line in path.read_bytes().split(b"\n") if line.strip()]


def _write_lines(path: Path, lines: list[bytes]) -> None:
    path.write_bytes(b"\n".join(lines) + b"\n")


def _json_cases(rel: str, path: Path, rng: random.Random, newest_checkpoint: bool) -> list[Case]:
    data = path.read_bytes()
    lines = _lines(path)
    cut = _mid_line_cut(data, rng)
    flip_at = rng.choice(_json_structure(data))
    flip_bit = rng.randrange(8)
    line_no = rng.randrange(len(lines))
    obj = orjson.loads(lines[line_no])
    (action, body), *_ = obj.items()
    fields = sorted(body) if isinstance(body, dict) else []
    field = rng.choice(fields) if fields else None

    def truncate(p: Path) -> None:
        p.write_bytes(data[:cut])

    def flip(p: Path) -> None:
        b = bytearray(data)
        b[flip_at] ^= 1 << flip_bit
        p.write_bytes(bytes(b))

    def retype(p: Path) -> None:
        new = dict(obj)
        new[action] = {**body, field: _retype_json(body[field])} if field else _retype_json(body)
        _write_lines(p, [*lines[:line_no], orjson.dumps(new), *lines[line_no + 1 :]])

    def unknown(p: Path) -> None:
        extra = [orjson.dumps({"fancyNewAction": {"x": [1, {"y": None}]}})]
        new = {k: ({**v, "zzUnknownField": {"a": 1}} if isinstance(v, dict) else v) for k, v in obj.items()}
        _write_lines(p, [*lines[:line_no], orjson.dumps(new), *extra, *lines[line_no + 1 :]])

    def reorder(p: Path) -> None:
        def rev(v: Any) -> Any:
            return {k: rev(v[k]) for k in reversed(list(v))} if isinstance(v, dict) else v

        _write_lines(p, [orjson.dumps(rev(orjson.loads(line))) for line in lines])

    def whitespace(p: Path) -> None:
        import json

        spaced = [b"  " + json.dumps(orjson.loads(line), separators=(" , ", " : ")).encode() + b" \t" for line in lines]
        p.write_bytes(b"\r\n".join(spaced) + b"\r\n")

    cases = [
        Case(rel, f"truncate to {cut} of {len(data)} bytes", False, truncate),
        Case(rel, f"flip bit {flip_bit} at byte {flip_at}", False, flip),
        Case(rel, f"retype {action}.{field or ''} on line {line_no + 1}", False, retype),
        Case(rel, f"unknown fields and actions at line {line_no + 1}", True, unknown),
        Case(rel, "reversed key order", True, reorder),
        Case(rel, "extra whitespace and CRLF", True, whitespace),
    ]
    if newest_checkpoint:
        cases.append(Case(rel, "torn newest checkpoint, commits intact", True, truncate))
    return cases


# Column changes a reader must refuse or read as before: (column, field or None for the column, new type).
_PARQUET_RETYPES: list[tuple[str, str | None, pa.DataType]] = [
    ("add", "size", pa.string()),
    ("add", "size", pa.float64()),
    ("add", "path", pa.int64()),
    ("add", "partitionValues", pa.string()),
    ("add", "modificationTime", pa.string()),
    ("add", "dataChange", pa.int8()),
    ("add", "deletionVector", pa.string()),
    ("add", None, pa.string()),
    ("remove", "path", pa.int64()),
    ("metaData", "partitionColumns", pa.string()),
    ("metaData", "configuration", pa.string()),
    ("protocol", "minReaderVersion", pa.string()),
    ("sidecar", "path", pa.int64()),
]


def _cast_or_render(arr: pa.Array, t: pa.DataType) -> pa.Array:
    try:
        return arr.cast(t)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        values = arr.to_pylist()
        if pa.types.is_string(t):
            return pa.array([None if v is None else orjson.dumps(v, default=str).decode() for v in values], t)
        return pa.array([None if v is None else i for i, v in enumerate(values)], t)


def _retype_parquet(path: Path, column: str, field: str | None, t: pa.DataType) -> None:
    table = pq.read_table(path)
    idx = table.schema.get_field_index(column)
    col = table.column(idx).combine_chunks()
    if field is None:
        new = _cast_or_render(col, t)
    else:
        children = [col.field(i) for i in range(col.type.num_fields)]
        fields = list(col.type)
        j = col.type.get_field_index(field)
        children[j] = _cast_or_render(children[j], t)
        fields[j] = pa.field(field, t)
        new = pa.StructArray.from_arrays(children, fields=fields, mask=col.is_null())
    pq.write_table(table.set_column(idx, column, new), path)


def _parquet_cases(rel: str, path: Path, rng: random.Random, newest_checkpoint: bool) -> list[Case]:
    data = path.read_bytes()
    footer = struct.unpack("<I", data[-8:-4])[0]
    footer_start = len(data) - 8 - footer
    cut = rng.randrange(0, len(data))
    flip_bit = rng.randrange(8)
    flip_footer = rng.randrange(footer_start, len(data))
    flip_page = rng.randrange(4, footer_start) if _page_checksums(path) else None
    schema = pq.read_schema(path)
    options = [
        (c, f, t)
        for c, f, t in _PARQUET_RETYPES
        if schema.get_field_index(c) >= 0
        and (f is None or schema.field(c).type.get_field_index(f) >= 0)
        and pq.read_table(path, columns=[c]).column(c).null_count < pq.ParquetFile(path).metadata.num_rows
    ]
    column, field, new_type = rng.choice(options) if options else ("add", None, pa.string())

    def truncate(p: Path) -> None:
        p.write_bytes(data[:cut])

    def flip_at(at: int) -> Callable[[Path], None]:
        def flip(p: Path) -> None:
            b = bytearray(data)
            b[at] ^= 1 << flip_bit
            p.write_bytes(bytes(b))

        return flip

    def retype(p: Path) -> None:
        _retype_parquet(p, column, field, new_type)

    def drop_field(p: Path) -> None:
        table = pq.read_table(p)
        col = table.column(column).combine_chunks()
        keep = [i for i, f in enumerate(col.type) if f.name != field]
        new = pa.StructArray.from_arrays(
            [col.field(i) for i in keep], fields=[col.type.field(i) for i in keep], mask=col.is_null()
        )
        _write_table(p, table.set_column(table.schema.get_field_index(column), column, new))

    def unknown_column(p: Path) -> None:
        table = pq.read_table(p)
        _write_table(
            p, table.append_column("zzUnknownAction", pa.array([None] * table.num_rows, pa.struct([("x", pa.int64())])))
        )

    cases = [
        Case(rel, f"truncate to {cut} of {len(data)} bytes", False, truncate),
        Case(rel, f"flip bit {flip_bit} at footer byte {flip_footer}", False, flip_at(flip_footer)),
        Case(rel, f"retype {column}.{field or '*'} to {new_type}", False, retype),
        Case(rel, "an unknown action column", True, unknown_column),
    ]
    if field is not None:  # a whole action column left out is a lean file, no damage (see the docstring)
        cases.append(Case(rel, f"drop {column}.{field}", False, drop_field))
    if flip_page is not None:
        cases.append(Case(rel, f"flip bit {flip_bit} at page byte {flip_page}", False, flip_at(flip_page)))
    if newest_checkpoint:
        cases.append(Case(rel, "torn newest checkpoint, commits intact", True, truncate))
    return cases


def _write_table(path: Path, table: pa.Table) -> None:
    pq.write_table(table, path)


def _hint_cases(rng: random.Random, latest: int, checkpoints: list[int]) -> list[Case]:
    rel = "_last_checkpoint"
    stale = min(checkpoints) if checkpoints else 0

    def write(obj: Any) -> Callable[[Path], None]:
        def put(p: Path) -> None:
            p.write_bytes(obj if isinstance(obj, bytes) else orjson.dumps(obj))

        return put

    def flip(p: Path) -> None:
        if p.exists():
            b = bytearray(p.read_bytes())
            b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
            p.write_bytes(bytes(b))

    return [
        Case(rel, f"stale hint (version {stale})", True, write({"version": stale, "size": 1})),
        Case(rel, "hint beyond the latest version", True, write({"version": latest + 7, "size": 1, "parts": 3})),
        Case(rel, "garbage hint", True, write(bytes(rng.randrange(256) for _ in range(40)))),
        Case(rel, "hint with a wrong checksum", True, write({"version": stale, "checksum": "0" * 32})),
        Case(rel, "hint with a flipped bit", True, flip),
        Case(rel, "hint replaced by a directory", True, replacer("directory")),
        Case(rel, "hint replaced by a FIFO", True, replacer("FIFO")),
        Case(rel, "hint replaced by a symbolic-link loop", True, replacer("symlink loop")),
    ]


def _is_log_file(name: str) -> bool:
    p = parse(name)
    return p is not None and (p.kind is Kind.COMMIT or p.is_checkpoint)


def cases_for(pristine: Path, rng: random.Random) -> list[Case]:
    log = pristine / LOG
    files = sorted(
        str(p.relative_to(log))
        for p in log.rglob("*")
        if p.is_file() and not p.name.startswith(".") and (_is_log_file(p.name) or p.parent.name == "_sidecars")
    )
    parsed = {f: parse(f) for f in files if "/" not in f}  # every top-level file here is a log file
    checkpoints = sorted({p.version for p in parsed.values() if p is not None and p.is_checkpoint})
    newest = checkpoints[-1] if checkpoints else None
    out: list[Case] = []
    for rel in files:
        p = parsed.get(rel)
        # torn, the newest checkpoint must change nothing when the commits from version 0 are all there
        is_newest = p is not None and p.is_checkpoint and p.version == newest and (log / commit_name(0)).exists()
        if rel.endswith(".json"):
            out.extend(_json_cases(rel, log / rel, rng, is_newest))
        else:
            out.extend(_parquet_cases(rel, log / rel, rng, is_newest))
        for kind in ("directory", "FIFO", "symlink loop"):
            out.append(Case(rel, f"replaced by a {kind}", False, replacer(kind)))
    if (log / "_last_checkpoint").exists():
        out.extend(_hint_cases(rng, max(p.version for p in parsed.values() if p is not None), checkpoints))
    rng.shuffle(out)
    preserving = [c for c in out if c.preserving][: CASES // 3]
    # Most damage goes to the files a reader of the latest version opens; the rest lands anywhere.
    hot = _read_by_latest(pristine)
    damaging = [c for c in out if not c.preserving]
    wanted = CASES - len(preserving)
    hits = [c for c in damaging if c.target in hot][: wanted * 2 // 3]
    rest = [c for c in damaging if c not in hits][: wanted - len(hits)]
    return preserving + hits + rest


def _read_by_latest(pristine: Path) -> set[str]:
    """The log files (relative to ``_delta_log``) that rebuilding the latest version reads."""
    segment = fresh(pristine).snapshot().segment
    names = {p.name for p in segment.files}
    if segment.checkpoint is not None:
        prefix = f"{segment.checkpoint.version:020d}."
        sidecars = pristine / LOG / "_sidecars"
        if sidecars.is_dir():
            names |= {f"_sidecars/{p.name}" for p in sidecars.iterdir() if p.name.startswith(prefix)}
    return names


# ---------------------------------------------------------------------------------------------- running


def _read(root: Path) -> Outcome:
    try:
        return ("state", state(fresh(root).snapshot()))
    except DeltaLogError as exc:
        return ("error", exc)


def _vacuum(root: Path) -> Outcome:
    try:
        return ("plan", set(fresh(root).vacuum(dry_run=True, retention=0, force=True).paths))
    except DeltaLogError as exc:
        return ("error", exc)


def _named(value: Any, name: str) -> bool:
    return name in str(value) or unquote(name) in str(value)


def _same_error(a: Any, a_root: Path, b: Any, b_root: Path) -> bool:
    return type(a) is type(b) and str(a).replace(str(a_root), "<root>") == str(b).replace(str(b_root), "<root>")


def check(case: Case, variant: tuple[str, bool], root: Path, orig: Original) -> None:
    """Damage ``root`` as ``case`` says, read it and plan a vacuum, and judge both (see the module docstring).

    A file replaced by something that is not a file is, to a store that lists files, a deleted file: its
    outcome is judged against a copy where the file really is deleted (the same state, or the same error),
    unless the error names the file itself.
    """
    name = case.target.rsplit("/", 1)[-1]
    expected, keep, absent_root, absent = orig.state, orig.keep, None, None
    if "replaced by" in case.kind:
        absent_root = prepare(variant, root.parent / f"{root.name}-absent")
        (absent_root / LOG / case.target).unlink()
        absent = within(DEADLINE_S, lambda: _read(absent_root))
        expected = absent[1] if absent[0] == "state" else None
        keep = _keep(absent_root) if absent[0] == "state" else orig.keep
    try:
        case.apply(root / LOG / case.target)
        kind, value = within(DEADLINE_S, lambda: _read(root))
        if case.preserving:
            assert (kind, value) == ("state", orig.state), f"{case}: must read as the original, got {kind} {value}"
        elif kind == "state":
            assert value == expected, f"{case}: read a different table, silently"
        elif not _named(value, name):
            assert absent is not None and absent[0] == "error", f"{case}: error does not name {name}: {value}"
            assert _same_error(value, root, absent[1], absent_root), f"{case}: {value} is not {absent[1]}"
        kind, plan = within(DEADLINE_S, lambda: _vacuum(root))
        if kind == "plan":
            assert not plan & keep, f"{case}: vacuum would delete needed files {sorted(plan & keep)}"
    finally:
        if absent_root is not None:
            shutil.rmtree(absent_root, ignore_errors=True)


@pytest.mark.parametrize("variant", VARIANTS, ids=_label)
def test_damaged_log_reads_right_or_names_the_file(
    variant: tuple[str, bool], workdir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    label = _label(variant)
    orig = original(variant, workdir)
    cases = cases_for(workdir / f"{label}-pristine", random.Random(f"{SEED}-{label}"))
    assert len(cases) >= CASES // 2 and any(c.preserving for c in cases)
    caplog.set_level(logging.ERROR, logger="deltalog")  # the fallbacks' warnings are expected by the hundred
    failures = []
    for i, case in enumerate(cases):
        root = prepare(variant, workdir / f"{label}-{i}")
        try:
            check(case, variant, root, orig)
        except Exception as exc:  # every case runs; the report lists each that failed, raw errors included
            failures.append(f"{case}: {type(exc).__name__}: {exc}".splitlines()[0])
        finally:
            shutil.rmtree(root, ignore_errors=True)
    assert not failures, f"{len(failures)} of {len(cases)} cases failed:\n" + "\n".join(failures)
