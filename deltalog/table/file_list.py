"""A version's file list, loaded at most once, by the loader that owns it.

A snapshot is a value, but its file list is the expensive part of a table and most users of a snapshot
never ask for it (a blind append needs protocol, metadata and txns). So a snapshot holds a
:class:`FileList`: a thread-safe once-cell that holds either a way to load the files or the loaded
:class:`~deltalog.core.state.files.FileState`. Nothing else ever writes a snapshot's files.

Three loaders exist: the files of a full load (already loaded), a deferred load of a segment, and a
*chain*: another file list plus commits replayed onto it, which is what advancing a snapshot past a commit
gives (the commit's cost now, the table's never, unless asked). A chain is flattened onto its first list
whose files are not loaded, so ``n`` advances replay their commits once; :attr:`FileList.pending` says how
much work a load would replay, which is what :mod:`deltalog.table.load` bounds.

When a checkpoint a loaded list still reads from lazily (stats, tombstones) is deleted by log cleanup,
:meth:`FileList.reload` asks the loader's reload function for the same version from the log as it is now.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from deltalog.core.state import BaseState, CommitData
from deltalog.core.state.files import FileState
from deltalog.core.state.replay import replay
from deltalog.core.version_state import VersionState
from deltalog.errors import CorruptLogError

#: ``reload(version, error)``: the files of ``version`` loaded from the log again when ``error`` says a file
#: they were read from was deleted; ``None`` when the error is about something else (it is then raised)
Reload = Callable[[int, CorruptLogError], "FileState | None"]


@dataclass(frozen=True)
class Pending:
    """What loading a file list would replay: commits (and their bytes) beyond a checkpoint or loaded list."""

    commits: int = 0
    bytes: int = 0

    def __add__(self, other: Pending) -> Pending:
        return Pending(self.commits + other.commits, self.bytes + other.bytes)


def pending_of(commits: Sequence[CommitData]) -> Pending:
    return Pending(len(commits), sum(len(c.data) for c in commits))


@dataclass(frozen=True)
class _Chain:
    """``commits`` replayed onto ``anchor``'s files, ``anchor`` being at ``anchor_state``."""

    anchor: FileList
    anchor_state: VersionState
    commits: tuple[CommitData, ...]
    root: str | None


class FileList:
    """The file list of one version: a loader, or the loaded :class:`FileState`; loaded once."""

    def __init__(
        self,
        files: FileState | None = None,
        *,
        load: Callable[[], FileState] | None = None,
        pending: Pending = Pending(),
        reload: Reload | None = None,
        chain: _Chain | None = None,
    ) -> None:
        assert files is not None or load is not None or chain is not None
        self._lock = threading.Lock()
        self._files = files
        self._load = load
        self._chain = chain
        self._pending = pending
        self._reload = reload

    @classmethod
    def loaded(cls, files: FileState, reload: Reload | None = None) -> FileList:
        return cls(files, reload=reload)

    @classmethod
    def deferred(cls, load: Callable[[], FileState], pending: Pending, reload: Reload | None = None) -> FileList:
        return cls(load=load, pending=pending, reload=reload)

    # ------------------------------------------------------------------------------------------ state
    @property
    def is_loaded(self) -> bool:
        return self._files is not None

    @property
    def pending(self) -> Pending:
        """The commits a load would replay (nothing once loaded; a chain's own commits and what its anchor,
        if not loaded meanwhile, would replay first)."""
        files, chain = self._files, self._chain  # read without the lock, which a running load holds
        if files is not None:
            return Pending()
        return self._pending if chain is None else chain.anchor.pending + self._pending

    def get(self) -> FileState:
        """The files, loaded now if they are not yet (once, whichever thread asks first)."""
        files = self._files
        if files is not None:
            return files
        with self._lock:
            if self._files is None:
                self._files = self._run_loader()
                self._load = None
                self._chain = None  # the anchor and the commits are no longer needed
            return self._files

    def _run_loader(self) -> FileState:
        if self._chain is not None:
            c = self._chain
            return replay_onto(c.anchor.get(), c.anchor_state, c.commits, c.root)
        assert self._load is not None
        return self._load()

    def reload(self, version: int, error: CorruptLogError) -> bool:
        """Replace the files with a fresh load of ``version`` if ``error`` says a file they are read from was
        deleted; False when it says something else (or no reload is possible), and the caller raises it."""
        if self._reload is None:
            return False
        fresh = self._reload(version, error)
        if fresh is None:
            return False
        with self._lock:
            self._files = fresh
            self._load = None
            self._chain = None
        return True

    # ------------------------------------------------------------------------------------------ chains
    def extend(self, state: VersionState, commits: Sequence[CommitData], root: str | None) -> FileList:
        """The file list after ``commits``, for a list at ``state``: replayed when first asked for.

        Onto this list when its files are loaded (or it is a deferred load of its own); onto this list's
        anchor when it is itself a chain, so the commits of many advances are replayed in one go.
        """
        more = tuple(commits)
        files, chain = self._files, self._chain  # without the lock: a load in progress need not be waited for
        if files is not None:
            chain = None
        if chain is not None:
            joined = _Chain(chain.anchor, chain.anchor_state, chain.commits + more, root)
        else:
            joined = _Chain(self, state, more, root)
        # a chain's own pending: its commits (its anchor's is asked for when needed, as it may load meanwhile)
        return FileList(chain=joined, pending=pending_of(joined.commits), reload=self._reload)


def replay_onto(files: FileState, state: VersionState, commits: Sequence[CommitData], root: str | None) -> FileState:
    """``files`` (of the version ``state`` describes) with ``commits`` replayed onto them."""
    base = BaseState(
        version=state.version,
        source=f"version {state.version}",
        protocol=state.protocol,
        metadata=state.metadata,
        txns=dict(state.txns),
        domains=dict(state.domains),
        adds=files.adds(stats=False),
        adds_stats=lambda: files.adds(stats=True).column("stats"),
        removes=files.tombstones,
    )
    out = replay(base, commits, root).files
    assert out is not None
    return dataclasses.replace(out, distrusted=files.distrusted) if files.distrusted else out


__all__ = ["FileList", "Pending", "Reload", "pending_of", "replay_onto"]
