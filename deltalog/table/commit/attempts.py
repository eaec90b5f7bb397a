"""Stage 3, attempts: the bytes of each version a prepared commit attempts.

In-commit timestamps (:mod:`deltalog.core.features.ict`) must exceed the previous version's timestamp and name the
enablement version; row ids (:mod:`deltalog.core.features.row_tracking`) are numbered above the previous high-water
mark and carry the version as ``defaultRowCommitVersion``; identity values another writer took first are moved
beyond its marks (:mod:`deltalog.table.identity_rebase`, for a commit whose only metadata change is the marks: the
files it rewrites are deleted by :meth:`Attempts.landed` or :meth:`Attempts.refused`, whichever the commit came
to). A retry comes after winners the first attempt never saw, possibly on a protocol a winner changed (one that
added row tracking), so an attempt is never patched from the last one: :meth:`Attempts.encode` computes it from the
prepared actions, the read version and every winner so far, with the features' own ``attempt`` functions. What this
stage adds is only what those need from the log: the read version's time and a winner's, the live adds of the paths
the commit re-commits. The loop (:mod:`deltalog.table.commit.loop`) calls :meth:`Attempts.encode` before every
retry and knows nothing of the features behind it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from deltalog.core import actions as A
from deltalog.core.features import ict, row_tracking
from deltalog.core.files.facts import NO_FILES, KnownFiles, known_files, path_key
from deltalog.core.log.codec import encode_actions
from deltalog.core.log.reachability import UNLISTED
from deltalog.data.target import parquet_options
from deltalog.table.commit.loop import Won
from deltalog.table.commit.prepare import Prepared
from deltalog.table.commit.read_state import ReadState, listed_mtime
from deltalog.table.context import TableContext
from deltalog.table.identity_rebase import IdentityRebase

log = logging.getLogger(__name__)


def known_for(read: ReadState, actions: Sequence[A.Action], operation: str, root: str) -> KnownFiles:
    """The last committed add of each path the commit re-commits or removes (only those paths, and only when
    there is one: a blind append of new files loads no file list). A restore's adds come from the version it
    restores, so those carrying row ids are their own last add."""
    touched = [a for a in actions if isinstance(a, (A.Add, A.Remove))]
    if not any(
        isinstance(a, A.Remove) or a.base_row_id is not None or a.default_row_commit_version is not None
        for a in touched
    ):
        return NO_FILES
    wanted = {path_key(a.path, root) for a in touched}
    live = read.live_adds(wanted, root)
    if operation == "RESTORE":
        have = {path_key(a.path, root) for a in live}
        live += [
            a
            for a in touched
            if isinstance(a, A.Add) and a.base_row_id is not None and path_key(a.path, root) not in have
        ]
    return known_files(live, root)


class Attempts:
    """The attempts of one prepared commit on ``ctx``'s table: every version's bytes, computed anew.

    The read version's time and the live adds the row ids copy are read at most once, and only when a
    feature needs them; ``actions`` are the last attempt's, commitInfo first.
    """

    def __init__(self, ctx: TableContext, prepared: Prepared) -> None:
        self._ctx = ctx
        self._prepared = prepared
        self._read = prepared.read
        self._mark = (
            row_tracking.high_water_mark({k: d.configuration for k, d in self._read.domains.items()})
            if self._read.version >= 0
            else row_tracking.NO_MARK
        )
        self._known: KnownFiles | None = None
        self._read_time: ict.CommitTime | None = None
        self._read_time_known = False
        self._rebase = (
            IdentityRebase(
                ctx.store, prepared.request.declared.identity_runs, parquet_options(self._read.configuration)
            )
            if prepared.summary.identity_marks_only
            else None
        )
        #: the actions of the last attempt made, commitInfo first
        self.actions: tuple[A.Action, ...] = ()

    def encode(self, version: int, won: Sequence[Won] = ()) -> bytes:
        """The bytes of the attempt at ``version`` after the winners ``won``."""
        self.actions = tuple(self.attempt(version, won))
        return encode_actions(self.actions)

    def attempt(self, version: int, won: Sequence[Won] = ()) -> list[A.Action]:
        """The actions of the attempt at ``version`` after the winners ``won``, commitInfo first."""
        protocol, configuration = self._in_force(won)
        actions: list[A.Action] = list(self._prepared.actions)
        theirs = next((a for w in reversed(won) for a in w.winner.actions if isinstance(a, A.Metadata)), None)
        if theirs is not None and self._rebase is not None:  # only an identity-only winner got past the checker
            actions = self._rebase.attempt(actions, theirs)
        info = self._prepared.commit_info
        if row_tracking.assigns(protocol, configuration):
            mark = row_tracking.mark_after(self._mark, ((w.winner.version, w.winner.actions) for w in won))
            if self._known is None:
                self._known = known_for(self._read, actions, self._prepared.request.operation, self._ctx.store.root)
            actions, info = row_tracking.attempt(
                actions,
                info,
                protocol=protocol,
                configuration=configuration,
                mark=mark,
                version=version,
                known=self._known,
            )
        out: list[A.Action] = [info, *actions]
        if not ict.enabled(protocol, configuration):
            return out
        return ict.attempt(
            out,
            version=version,
            now_ms=self._ctx.now_ms(),
            read=self._time_of_read(),
            winners=[self._winner_time(w) for w in won],
            protocol=protocol,
            configuration=configuration,
            prior_configuration=self._read.configuration if self._read.version >= 0 else None,
        )

    def landed(self) -> None:
        """The commit landed: the files an identity rebase no longer references go."""
        if self._rebase is not None:
            self._rebase.landed()

    def refused(self) -> None:
        """The commit certainly did not land: the files an identity rebase wrote go (the writer deletes its own)."""
        if self._rebase is not None:
            self._rebase.refused()

    def _in_force(self, won: Sequence[Won]) -> tuple[A.Protocol, Mapping[str, str]]:
        """The protocol and configuration after this commit: its own, else the last winner's protocol (a
        winner may add features; a winner's metaData conflicts) and the read version's."""
        actions = self._prepared.actions
        protocol = next((a for a in reversed(actions) if isinstance(a, A.Protocol)), None)
        if protocol is None:
            for w in won:
                protocol = next((a for a in w.winner.actions if isinstance(a, A.Protocol)), protocol)
        protocol = protocol or self._read.protocol
        metadata = next((a for a in reversed(actions) if isinstance(a, A.Metadata)), None)
        configuration = metadata.configuration if metadata is not None else self._read.configuration
        assert protocol is not None, "prepare_commit ensured a protocol"
        return protocol, configuration

    def _time_of_read(self) -> ict.CommitTime | None:
        if not self._read_time_known:
            self._read_time = self._read.commit_time(self._ctx)
            self._read_time_known = True
        return self._read_time

    def _winner_time(self, w: Won) -> ict.CommitTime:
        stamped = ict.stamp_of(w.winner.commit_info)
        mtime = w.mtime
        if stamped is None and mtime == UNLISTED:
            mtime = listed_mtime(self._ctx, w.winner.version)
        return ict.CommitTime(w.winner.version, stamped, mtime)


__all__ = ["Attempts", "known_for"]
