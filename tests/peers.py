"""The two live peers as test oracles: ``deltalake`` (delta-rs) and duckdb's ``delta`` extension (kernel-rs).

Every test that writes a table asks both what the table is. Each answer is a :class:`PeerView` (version when
the peer reports one, live file paths relative to the root as the log spells them decoded, row count) or the
peer's refusal as a string, so a test can compare outcomes without either peer's exception classes.

Peer limitations (what they cannot read, see ``../shared/docs/delta-write-rules.md`` section 16) are the
peer's, not deltalog's: callers keep those cases in one allowlist that cites the limitation.
"""

from __future__ import annotations

import importlib.util
import urllib.parse
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import duckdb
from deltalake import DeltaTable, QueryBuilder


@dataclass(frozen=True)
class PeerView:
    """What one peer says the table is."""

    version: int | None
    files: frozenset[str]  # live data files: their paths on disk relative to the root (the log's, URI-decoded)
    rows: int | None  # None when not asked for (a log-only table with no real data files)


@cache
def duckdb_extension() -> Path:
    """The delta extension file inside the ``duckdb-extension-delta`` wheel (``INSTALL delta`` needs the network)."""
    spec = importlib.util.find_spec("duckdb_extension_delta")
    assert spec is not None and spec.origin is not None
    found = sorted(Path(spec.origin).parent.rglob("delta.duckdb_extension"))
    assert found, "duckdb_extension_delta ships no delta.duckdb_extension"
    return found[-1]


def duckdb_database() -> duckdb.DuckDBPyConnection:
    """A new in-memory duckdb database with the delta extension loaded (0.2 s of CPU each)."""
    con = duckdb.connect()
    con.execute(f"INSTALL '{duckdb_extension()}'; LOAD delta;")
    return con


@cache
def _shared_database() -> duckdb.DuckDBPyConnection:
    return duckdb_database()


def duckdb_connection() -> duckdb.DuckDBPyConnection:
    """A new connection to this process's one duckdb database, whose delta extension is loaded once.

    Loading the extension into a fresh database costs about 0.2 s of CPU, which a thousand peer checks made the
    largest single cost of the fast tier. Connections share only the database's catalog of attached databases;
    each has its own registrations and temporary objects, and ``delta_scan`` reads the log anew on every query,
    so one test's connection sees nothing of another's. A test that attaches a table uses
    :func:`duckdb_database`.
    """
    return _shared_database().cursor()


def _relative(name: str, root: Path) -> str:
    prefix = str(root.resolve()) + "/"
    return str(Path(name.removeprefix("file://")).resolve()).removeprefix(prefix)


def duckdb_view(root: Path, con: duckdb.DuckDBPyConnection | None = None) -> PeerView:
    """duckdb's ``delta_scan`` of the latest version: row count and the files rows came from.

    duckdb reads data, so a file it lists is one that held rows; tables for it need real parquet files.
    """
    own = con is None
    con = con or duckdb_connection()
    try:
        (count,) = con.execute(f"SELECT count(*) FROM delta_scan('{root}')").fetchone() or (0,)
        names = con.execute(f"SELECT DISTINCT filename FROM delta_scan('{root}', filename=true)").fetchall()
    finally:
        if own:
            con.close()
    return PeerView(None, frozenset(_relative(n, root) for (n,) in names), int(count))


def deltalake_view(root: Path, version: int | None = None, rows: bool = True) -> PeerView:
    """deltalake's live adds (log only) and, with ``rows``, its SQL count (which applies deletion vectors)."""
    dt = DeltaTable(str(root), version=version)
    paths = dt.get_add_actions(flatten=True).column("path").to_pylist()
    count = None
    if rows:
        batches = QueryBuilder().register("t", dt).execute("select count(*) as n from t").read_all()
        count = int(batches.column("n")[0].as_py())
    # get_add_actions gives the log's path, a URI reference: decode it once to get the path on disk
    return PeerView(dt.version(), frozenset(urllib.parse.unquote(p) for p in paths), count)


def outcome(view: PeerView | BaseException) -> PeerView | str:
    return view if isinstance(view, PeerView) else f"{type(view).__name__}: {view}"


def try_deltalake(root: Path, version: int | None = None, rows: bool = True) -> PeerView | str:
    """deltalake's view, or its refusal as ``"ErrorClass: message"``."""
    try:
        return deltalake_view(root, version, rows)
    except Exception as exc:  # the peer's own error classes; the caller compares outcomes
        return outcome(exc)


def try_duckdb(root: Path, con: duckdb.DuckDBPyConnection | None = None) -> PeerView | str:
    """duckdb's view, or its refusal as ``"ErrorClass: message"``."""
    try:
        return duckdb_view(root, con)
    except duckdb.Error as exc:
        return outcome(exc)


def try_duckdb_insert(root: Path, values: str) -> str | None:
    """duckdb's ``INSERT INTO`` the table (``values``: the SQL after ``VALUES``): None when it wrote, else its
    refusal as ``"ErrorClass: message"`` (kernel 0.21 refuses writer versions 3-6 and features it cannot write)."""
    con = duckdb_database()  # ATTACH names a database of the instance: not the shared one
    try:
        con.execute(f"ATTACH '{root}' AS t (TYPE delta)")
        con.execute(f"INSERT INTO t VALUES {values}")
    except duckdb.Error as exc:
        return outcome(exc)
    finally:
        con.close()
    return None


__all__ = [
    "PeerView",
    "deltalake_view",
    "duckdb_connection",
    "duckdb_database",
    "duckdb_extension",
    "duckdb_view",
    "try_deltalake",
    "try_duckdb",
    "try_duckdb_insert",
]
