"""Mutation fuzzer, path half: log paths rewritten into other spellings, and adds that lead out of the root.

Seeded and bounded. Each case takes a copy of a corpus table (written by Delta Spark, delta-rs, kernel) or a
table deltalog builds here with real parquet files, then:

1. rewrites some ``add``/``remove`` paths of its JSON commits into other spellings of the same file:
   absolute ``file:`` URIs (``file:/``, ``file:///``, ``//`` inside, ``./`` and ``x/../`` segments),
   unnormalised relative paths, extra percent-encoding of characters that need none, a trailing slash.
   That preserves the table: deltalog must replay the same files, and VACUUM's plans (default retention,
   and retention forced to 0) must not change;
2. adds files that live outside the root (a sibling directory, named by an absolute URI or by a relative
   path that climbs out with ``..``), with a decoy of the same name inside the root;
3. asserts that no VACUUM plan holds a file outside the root or a file ``deltalake`` considers live (its
   add paths, resolved here with ``posixpath`` independently of deltalog), then either runs VACUUM for real
   or RESTOREs an earlier version through a recording store (no call may leave the root).

After a real VACUUM the outside files are untouched, and with the pristine log put back both peers read every
row they read before: every live file survived. After a RESTORE, deltalake replays the same live files as
deltalog. (The peers cannot read the data of most respellings themselves: deltalake 1.6.6 and duckdb resolve
a ``file:`` URI in an add against the table root, and the operating system only resolves ``x/..`` when ``x``
exists: their limitations, which is why rows are compared on the pristine log.)
"""

from __future__ import annotations

import json
import os
import posixpath
import random
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlsplit

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

from deltalog import DeltaLog
from deltalog import actions as A
from deltalog.core.plans.cleanup import check_maintainable
from deltalog.errors import DeltaLogError, UnsupportedFeatureError
from deltalog.storage.faults import FaultyStore
from deltalog.storage.local import LocalLogStore
from tests.corpus import corpus_entries, table_path
from tests.peers import PeerView, duckdb_connection
from tests.peers import try_duckdb as _try_duckdb

SEED = 1_224_312
CORPUS_CASES = 40
BUILT_CASES = 20
DAY_S = 86_400
LOG = "_delta_log"
ORPHAN = "fuzz-orphan.parquet"


# ---------------------------------------------------------------------------------------------- sources
def eligible_corpus() -> list[str]:
    """Corpus tables whose data files are all present, that both peers read and that deltalog may vacuum."""
    out = []
    for e in corpus_entries():
        if "expected_error" in e or "expected_data_read_error" in e:
            continue
        if e.get("data_files_missing") != 0 or not e.get("data_files_present"):
            continue
        if not e["log_layout"]["action_counts_in_commits"].get("add"):
            continue
        try:
            snap = DeltaLog.for_table(table_path(e["name"])).snapshot()
            check_maintainable(snap.protocol, e["name"], "vacuum", snap.configuration, snap.schema_json)
        except UnsupportedFeatureError:
            continue  # a writer feature deltalog does not know, or UniForm: VACUUM refuses the table, rightly
        out.append(str(e["name"]))
    return sorted(out)


def copy_corpus(name: str, dest: Path) -> Path:
    shutil.copytree(table_path(name), dest)
    for p in [dest, *dest.rglob("*")]:
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    return dest


def build_table(rng: random.Random, dest: Path) -> Path:
    """A table written by deltalog: appends of real parquet files, some removed, maybe a checkpoint."""
    partitioned = rng.random() < 0.6
    schema = pa.schema([("id", pa.int64()), ("p", pa.string())])
    log = DeltaLog.for_table(dest, auto_checkpoint=False)
    log.create(schema, partition_columns=["p"] if partitioned else [])
    next_id = 0
    for n in range(rng.randint(2, 5)):
        adds = []
        for k in range(rng.randint(1, 3)):
            p = rng.choice(["a", "b b", "c=d", "e%f"])
            rows = rng.randint(1, 4)
            folder = f"p={quote(p, safe='')}/" if partitioned else ""
            rel_on_disk = f"{'p=' + p + '/' if partitioned else ''}part-{n}-{k}.parquet"
            (dest / rel_on_disk).parent.mkdir(parents=True, exist_ok=True)
            data = {"id": pa.array(range(next_id, next_id + rows), pa.int64())}
            if not partitioned:
                data["p"] = pa.array([p] * rows, pa.string())
            pq.write_table(pa.table(data), dest / rel_on_disk)
            next_id += rows
            stats = json.dumps({"numRecords": rows})
            size = (dest / rel_on_disk).stat().st_size
            pv = {"p": p} if partitioned else {}
            adds.append(A.Add(f"{folder}part-{n}-{k}.parquet", pv, size, 0, True, stats=stats))
        log.start_transaction().commit(adds)
    live = [a.path for a in log.snapshot().add_actions()]
    if len(live) > 1:
        txn = log.start_transaction()
        txn.remove_files(rng.sample(live, rng.randint(1, len(live) - 1)))
        txn.commit()
    if rng.random() < 0.5:
        log.checkpoint()
    expected = sum(pq.read_metadata(dest / unquote(a.path)).num_rows for a in log.snapshot().add_actions())
    assert read_rows(dest) == expected  # deltalake reads what deltalog wrote
    duck = try_duckdb(dest)
    assert isinstance(duck, PeerView) and duck.rows == expected, duck
    return dest


# ---------------------------------------------------------------------------------------------- spellings
def encode_some(rng: random.Random, segment: str) -> str:
    """Percent-encode a few characters that need no encoding: decoded once, the name is the same.

    The two characters after a ``%`` belong to an escape already there and are kept as they are.
    """
    out = []
    i = 0
    while i < len(segment):
        c = segment[i]
        if c == "%":
            out.append(segment[i : i + 3])
            i += 3
            continue
        out.append(f"%{ord(c):02X}" if (c.isalnum() or c in "-_") and rng.random() < 0.15 else c)
        i += 1
    return "".join(out)


def respell_relative(rng: random.Random, rel: str) -> str:
    """Another spelling of a relative URI reference (``rel`` as the log has it, already encoded)."""
    segments = rel.split("/")
    out: list[str] = []
    for i, seg in enumerate(segments):
        roll = rng.random()
        if roll < 0.15:
            out.append(".")
        elif roll < 0.25:
            out += [rng.choice(["zz", "sub", "p=9"]), ".."]
        elif roll < 0.35 and out:
            out.append("")  # a double slash (never first: a leading slash would make the path absolute)
        out.append(encode_some(rng, seg) if i == len(segments) - 1 or "=" not in seg else seg)
    text = "/".join(out)
    if rng.random() < 0.2:
        text = "./" + text
    if rng.random() < 0.1:
        text += "/"
    return text


def respell(rng: random.Random, root: Path, log_path: str) -> str:
    """Another spelling of the same file: relative and unnormalised, or an absolute ``file:`` URI."""
    if log_path.startswith("file:") or log_path.startswith("/"):
        return log_path  # already absolute: left as it is
    rel = respell_relative(rng, log_path)
    if rng.random() < 0.5:
        return rel
    base = quote(str(root), safe="/")
    form = rng.choice(["file://{b}/{r}", "file:{b}/{r}", "file://{b}//{r}", "{b}/./{r}", "file://{b}/zz/../{r}"])
    return form.format(b=base, r=rel.removeprefix("./"))


def on_disk(root: Path, log_path: str) -> Path:
    """Where a log path points, resolved with the standard library: decode once, join, ``posixpath.normpath``."""
    if log_path.startswith("file:"):
        raw = unquote(urlsplit(log_path).path)
    else:
        raw = unquote(log_path)
        if not raw.startswith("/"):
            raw = f"{root}/{raw}"
    return Path(posixpath.normpath(raw))


def inside(root: Path, path: Path) -> str | None:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return None


# ---------------------------------------------------------------------------------------------- oracles
_DUCK: list[duckdb.DuckDBPyConnection] = []


@pytest.fixture(scope="module", autouse=True)
def shared_duckdb() -> Iterator[None]:
    """One duckdb connection for the whole module: loading the delta extension is most of a query's cost."""
    _DUCK.append(duckdb_connection())
    yield
    _DUCK.pop().close()


def try_duckdb(root: Path) -> PeerView | str:
    return _try_duckdb(root, _DUCK[0])


def deltalake_live(root: Path) -> tuple[set[str], set[Path]]:
    """deltalake's live adds as files: (names under the root, absolute paths outside it)."""
    raw = DeltaTable(str(root)).get_add_actions(flatten=True).column("path").to_pylist()
    names, outside = set(), set()
    for p in raw:
        where = on_disk(root, p)
        rel = inside(root, where)
        if rel is None:
            outside.add(where)
        else:
            names.add(rel)
    return names, outside


def read_rows(root: Path) -> int:
    """Rows deltalake reads from the data files (every live file is opened)."""
    return DeltaTable(str(root)).to_pyarrow_table().num_rows


def later(root: Path, store: Any = None) -> DeltaLog:
    now = DeltaLog.for_table(root).now_ms() / 1000
    if store is not None:
        return DeltaLog(store, str(root), clock=lambda: now + DAY_S)
    return DeltaLog.for_table(root, clock=lambda: now + DAY_S)


@dataclass(frozen=True)
class Plans:
    default: tuple[str, ...]
    forced: tuple[str, ...]


def plans(root: Path) -> Plans:
    log = later(root)
    return Plans(log.vacuum().paths, log.vacuum(retention=0, force=True).paths)


def live_keys(root: Path) -> frozenset[tuple[str, str | None]]:
    """deltalog's live files, each as the file it names (resolved here) and its deletion vector."""
    out = set()
    for a in DeltaLog.for_table(root).snapshot().add_actions():
        dv = a.deletion_vector.unique_id if a.deletion_vector else None
        out.add((str(on_disk(root, a.path)), dv))
    return frozenset(out)


# ---------------------------------------------------------------------------------------------- mutations
def commit_files(root: Path) -> list[Path]:
    return sorted((root / LOG).glob("*.json"))


def rewrite_paths(rng: random.Random, root: Path, rate: float) -> int:
    """Respell ``rate`` of the files named in JSON commits; the number of actions rewritten.

    One spelling per file, used by every add and remove of it: Delta Spark writes a remove with its add's
    path, and deltalake reconciles an add with its remove by the string (a file respelled in one action
    only would be a different table for it). Files also named at or below the newest checkpoint keep their
    spelling: the checkpoint holds the original.
    """
    newest_checkpoint = max((int(p.name[:20]) for p in (root / LOG).glob("*.checkpoint*.parquet")), default=-1)
    commits = {int(c.name[:20]): c for c in commit_files(root) if c.name[:20].isdigit() and len(c.name) == 25}
    parsed = {v: [json.loads(x) if x.strip() else None for x in c.read_text().splitlines()] for v, c in commits.items()}
    versions: dict[Path, set[int]] = {}
    for v, objs in parsed.items():
        for body in file_actions(objs):
            versions.setdefault(on_disk(root, body["path"]), set()).add(v)
    chosen: dict[Path, str] = {}
    for f, vs in sorted(versions.items()):
        if min(vs) > newest_checkpoint and rng.random() < rate:
            chosen[f] = ""
    changed = 0
    for v, objs in parsed.items():
        touched = False
        for body in file_actions(objs):
            f = on_disk(root, body["path"])
            if f in chosen:
                chosen[f] = chosen[f] or respell(rng, root, body["path"])
                if chosen[f] != body["path"]:
                    body["path"] = chosen[f]
                    changed += 1
                    touched = True
        if touched:
            commits[v].write_text("".join(("" if o is None else json.dumps(o)) + "\n" for o in objs))
    return changed


def file_actions(objs: list[Any]) -> list[dict[str, Any]]:
    """The add and remove bodies with a string path among parsed log lines."""
    out = []
    for obj in objs:
        for kind in ("add", "remove"):
            body = obj.get(kind) if isinstance(obj, dict) else None
            if isinstance(body, dict) and isinstance(body.get("path"), str):
                out.append(body)
    return out


def add_outside(rng: random.Random, root: Path, outside_dir: Path) -> list[Path]:
    """A new commit adding copies of live files that live in ``outside_dir``; a same-named decoy inside."""
    snap = DeltaLog.for_table(root).snapshot()
    live = [a for a in snap.add_actions() if a.deletion_vector is None and inside(root, on_disk(root, a.path))]
    if not live:
        return []
    outside_dir.mkdir(exist_ok=True)
    added, lines = [], []
    for i, src in enumerate(rng.sample(live, min(len(live), rng.randint(1, 2)))):
        name = f"outside-{i}.parquet"
        shutil.copy(on_disk(root, src.path), outside_dir / name)
        (root / name).write_bytes(b"a decoy: the log's file of this name is outside the root")
        if rng.random() < 0.5:
            spelled = f"file://{quote(str(outside_dir), safe='/')}/{name}"
        else:
            spelled = f"../{outside_dir.name}/{name}"
            if rng.random() < 0.5:
                spelled = f"zz/../{spelled}"
        add = {
            "path": spelled,
            "partitionValues": src.partition_values,
            "size": (outside_dir / name).stat().st_size,
            "modificationTime": 0,
            "dataChange": True,
        }
        lines.append(json.dumps({"add": add}))
        added.append(outside_dir / name)
    version = snap.version + 1
    (root / LOG / f"{version:020d}.json").write_text("\n".join(lines) + "\n")
    return added


# ---------------------------------------------------------------------------------------------- checks
def assert_safe(root: Path, outside_files: list[Path]) -> None:
    """No plan holds a file outside the root, a file deltalake considers live, or one deltalog replays as live."""
    names, lake_outside = deltalake_live(root)
    assert set(outside_files) <= lake_outside  # deltalake does see the outside adds as live
    ours = {inside(root, Path(p)) for p, _ in live_keys(root)}
    got = plans(root)
    for plan in (got.default, got.forced):
        for p in plan:
            assert inside(root, Path(posixpath.normpath(f"{root}/{p}"))) == p, f"{p} is not a name under the root"
            assert p not in names, f"{p} is live for deltalake"
            assert p not in ours, f"{p} is live for deltalog"
    assert ORPHAN in got.forced  # the plans are not vacuous


def snapshot_of_log(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in (root / LOG).iterdir() if p.is_file()}


def put_back(root: Path, log_files: dict[str, bytes]) -> None:
    for p in (root / LOG).iterdir():
        if p.is_file() and p.name not in log_files:
            p.unlink()
    for name, data in log_files.items():
        (root / LOG / name).write_bytes(data)


def vacuum_for_real(root: Path, outside_files: list[Path]) -> None:
    outside_bytes = {p: p.read_bytes() for p in outside_files}
    names, _ = deltalake_live(root)
    result = later(root).vacuum(retention=0, force=True, dry_run=False)
    assert ORPHAN in result.deleted
    assert all((root / n).exists() for n in names), "a file deltalake reads as live was deleted"
    assert {p: p.read_bytes() for p in outside_files} == outside_bytes


def restore_within_root(rng: random.Random, root: Path) -> None:
    """RESTORE an earlier version through a recording store: it ends in a commit or a typed error, and no
    call it made named anything outside the root."""
    store = FaultyStore(LocalLogStore(str(root)))
    log = DeltaLog(store, str(root))
    latest = log.snapshot().version
    if latest == 0:
        return
    target = rng.randrange(latest)
    try:
        log.restore(version=target)
        restored = True
    except DeltaLogError:  # e.g. a feature deltalog does not write, a file the target needs is gone
        restored = False
    for call in store.calls:
        assert inside(root, Path(posixpath.normpath(f"{root}/{call.path}"))) is not None or call.path == "", call
    if restored:  # deltalake replays the RESTORE commit to the same live files as deltalog
        names, outside = deltalake_live(root)
        assert {Path(p) for p, _ in live_keys(root)} == {root / n for n in names} | outside


# ---------------------------------------------------------------------------------------------- the fuzzer
CORPUS = eligible_corpus()


def source_of(i: int) -> tuple[str, Callable[[random.Random, Path], Path]]:
    if i < CORPUS_CASES and CORPUS:
        name = random.Random(SEED + i).choice(CORPUS)
        return name, lambda rng, dest: copy_corpus(name, dest)
    return "built", build_table


CASES = [source_of(i) for i in range(CORPUS_CASES + BUILT_CASES)]


@pytest.mark.parametrize("case", range(len(CASES)), ids=[f"{i}-{n}" for i, (n, _) in enumerate(CASES)])
def test_respelled_and_outside_paths_never_put_a_live_or_outside_file_in_a_plan(tmp_path: Path, case: int) -> None:
    rng = random.Random(SEED * 31 + case)
    _, make = CASES[case]
    root = make(rng, tmp_path / "t")
    partition_dir = next((d for d in root.iterdir() if d.is_dir() and "=" in d.name), None)
    (root / ORPHAN).write_bytes(b"orphan")
    if partition_dir is not None:
        (partition_dir / ORPHAN).write_bytes(b"orphan")
    before = plans(root)
    keys_before = live_keys(root)
    rows_before = read_rows(root)
    duck_before = try_duckdb(root)
    pristine_log = snapshot_of_log(root)

    rewrite_paths(rng, root, rate=rng.choice([0.3, 0.6, 1.0]))
    assert live_keys(root) == keys_before, "a respelling changed what deltalog replays"
    assert plans(root) == before, "a respelling changed a VACUUM plan"
    assert_safe(root, [])

    outside_files = add_outside(rng, root, tmp_path / "outside")
    assert_safe(root, outside_files)

    if rng.random() < 0.6:
        vacuum_for_real(root, outside_files)
        put_back(root, pristine_log)
        assert read_rows(root) == rows_before  # every live file is still there: deltalake opens them all
        if isinstance(duck_before, PeerView):
            after = try_duckdb(root)
            assert isinstance(after, PeerView) and after.rows == duck_before.rows, after
    else:
        restore_within_root(rng, root)
        assert all(p.exists() for p in outside_files)
