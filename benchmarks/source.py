"""Which deltalog is measured: the working tree, or a commit exported with ``--rev``.

The working tree may change while a run is going (several people edit it), so a run can pin deltalog to a
commit: ``git archive`` exports that commit's ``deltalog/`` package under the work dir, and the children
put it first on ``sys.path`` (:data:`ENV_SRC`). The same mechanism compares two revisions, e.g. before and
after an optimisation. Only read-only git commands are used. Children import this module before timing,
so it imports nothing beyond ``os``/``sys``/``subprocess`` at the top.
"""

from __future__ import annotations

import os
import subprocess
import sys

ENV_SRC = "BENCH_DELTALOG_SRC"  # directory holding the exported ``deltalog`` package
ENV_REV = "BENCH_DELTALOG_REV"  # the commit it was exported from, for the report


def _git(root: str, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", "--no-optional-locks", "-C", root, *args], capture_output=True, check=False)


def export_rev(root: str, rev: str, work_dir: str) -> tuple[str, str]:
    """(full sha, directory) of ``rev``'s deltalog package, exported once per commit under ``work_dir``."""
    import compileall
    import io
    import shutil
    import tarfile

    done = _git(root, "rev-parse", "--verify", f"{rev}^{{commit}}")
    if done.returncode != 0:
        raise SystemExit(f"--rev {rev}: not a commit ({done.stderr.decode().strip()})")
    sha = done.stdout.decode().strip()
    dest = os.path.join(work_dir, f"deltalog-src-{sha[:12]}")
    if os.path.isfile(os.path.join(dest, "deltalog", "__init__.py")):
        return sha, dest
    archive = _git(root, "archive", "--format=tar", sha, "deltalog")
    if archive.returncode != 0:
        raise SystemExit(f"git archive {sha} deltalog failed: {archive.stderr.decode().strip()}")
    tmp = dest + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        if hasattr(tarfile, "data_filter"):
            tar.extractall(tmp, filter="data")
        else:  # Python < 3.10.12 has no extraction filters; the archive is our own repository's
            tar.extractall(tmp)
    os.replace(tmp, dest)
    compileall.compile_dir(dest, quiet=1)  # children then import from .pyc, as from the working tree
    return sha, dest


def use_exported_source() -> str | None:
    """In a child: put the exported deltalog first on ``sys.path``; returns its directory, if any."""
    src = os.environ.get(ENV_SRC)
    if src:
        sys.path.insert(0, src)
    return src


def source_state(root: str) -> str:
    """The commit deltalog was measured at, and whether the working tree's sources differed from it."""
    rev = os.environ.get(ENV_REV)
    if rev:
        return f"commit {rev[:12]} (exported with --rev)"
    head = _git(root, "rev-parse", "--short", "HEAD")
    dirty = _git(root, "status", "--porcelain", "--", "deltalog")
    state = head.stdout.decode().strip() if head.returncode == 0 else "no commit"
    if dirty.returncode == 0 and dirty.stdout.strip():
        state += " + uncommitted changes under deltalog/"
    return f"working tree at {state}"


__all__ = ["ENV_REV", "ENV_SRC", "export_rev", "source_state", "use_exported_source"]
