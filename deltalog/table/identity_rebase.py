"""Identity values taken first by another writer: the attempt's files get ids beyond that writer's mark.

Delta Spark fails the later of two identity writers with a metadata-changed conflict
(``ConflictChecker.scala``: a winner's identity-only metaData passes only a transaction that changes no
metadata, and a write that generates ids changes the mark). deltalog commits both: the conflict checker lets an
identity-only winner pass an identity-only commit (:func:`deltalog.core.commit.conflicts.check_winner`), and before
the next attempt this module moves the commit's generated values beyond the winner's marks by rewriting the
files that hold them (:func:`deltalog.data.identity_rewrite.shifted_file`), and records the marks after its
own values in a metaData built on the winner's schema. Every attempt starts again from the files the writer
wrote, so several winners cost one rewrite per attempt, never a chain.

Only a commit whose files hold nothing but new rows can be moved so: one that also removes files or writes change
files (a MERGE that inserts and updates, a ``replace_where`` that copies rows) holds rows whose values must stay
as they are, beside the new ones, and change files that repeat them; it fails with
:class:`~deltalog.errors.MetadataChangedError` naming the identity column, as Delta Spark's would, its files
deleted. A rewrite reads and writes every file of the attempt, so it is bounded: past :data:`REBASE_LIMIT_BYTES` of
files the commit fails with :class:`~deltalog.errors.MetadataChangedError` naming the identity column, as
Delta Spark's would, and nothing stays written.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from deltalog.core import actions as A
from deltalog.core.features import identity
from deltalog.core.schema import parse_schema
from deltalog.data.identity_rewrite import shifted_file
from deltalog.data.locate import resolve
from deltalog.data.output import delete_files
from deltalog.errors import MetadataChangedError
from deltalog.storage.base import LogStore

log = logging.getLogger(__name__)

#: the most bytes of data files an attempt rewrites to take new identity values (1 GiB)
REBASE_LIMIT_BYTES = 1024 * 1024 * 1024


class IdentityRebase:
    """The identity values of one commit's files (``runs``), moved beyond a winner's marks on demand."""

    def __init__(
        self,
        store: LogStore,
        runs: Sequence[identity.Run],
        parquet_options: Mapping[str, Any],
        limit_bytes: int | None = None,
    ) -> None:
        self.store = store
        self.runs = tuple(runs)
        self.parquet_options = dict(parquet_options)
        self.limit_bytes = REBASE_LIMIT_BYTES if limit_bytes is None else limit_bytes
        self._made: list[str] = []  # keys of files this rebase wrote
        self._originals: list[str] = []  # keys of the writer's own files
        self._kept: set[str] = set()  # keys of the files the last attempt commits
        self._last: tuple[str | None, list[A.Action]] | None = None

    def attempt(self, actions: Sequence[A.Action], theirs: A.Metadata) -> list[A.Action]:
        """``actions`` (the commit as prepared, on the version read) after winner metadata ``theirs``: the
        metaData on the winner's schema with the marks after this commit's values, its new files rewritten when
        their values would meet the winner's."""
        ours = next((a for a in actions if isinstance(a, A.Metadata)), None)
        if ours is None:
            return list(actions)
        if self._last is not None and self._last[0] == theirs.schema_string:
            return list(self._last[1])  # the same winner schema as the last attempt: the same files
        their_schema = parse_schema(theirs.schema_string)
        columns = {c.name: c for c in identity.columns(their_schema)}
        shifts: dict[str, int] = {}  # physical name -> offset
        marks: dict[str, int] = {
            k: v for k, v in identity.marks_of(parse_schema(ours.schema_string)).items() if v is not None
        }
        for run in self.runs:
            col = columns.get(run.column)
            if col is None or col.mark is None or col.further(col.mark, run.first - col.step) == run.first - col.step:
                continue  # the winner's values stay behind ours
            first = identity.next_after(col, col.mark)
            count = (run.last - run.first) // col.step + 1
            _, last = col.values(count, first)
            shifts[col.physical] = first - run.first
            marks[run.column] = last
        adds = [a for a in actions if isinstance(a, A.Add)]
        self._originals = [resolve(self.store, a.path) for a in adds]
        if shifts and any(isinstance(a, (A.Remove, A.Cdc)) for a in actions):
            column = next(r.column for r in self.runs if columns[r.column].physical in shifts)
            raise MetadataChangedError(
                f"identity column {column!r}: another writer committed values this write also generated, and its "
                "files also hold rows it kept or change files, whose values cannot move with the new ones; nothing "
                "was committed: run it again"
            )
        if shifts:
            size = sum(a.size for a in adds)
            if size > self.limit_bytes:
                column = next(r.column for r in self.runs if columns[r.column].physical in shifts)
                raise MetadataChangedError(
                    f"identity column {column!r}: another writer committed values this write also generated, and "
                    f"taking new ones means rewriting {size} bytes of data files, more than the "
                    f"{self.limit_bytes} bytes deltalog rewrites for it (identity_rebase.REBASE_LIMIT_BYTES); "
                    "nothing was committed: write again, or in smaller batches"
                )
            log.info("identity values taken by another writer: rewriting %d file(s) by %s", len(adds), shifts)
        moved: dict[int, A.Add] = {}
        for a in adds:
            if shifts:
                new = shifted_file(self.store, a, shifts, self.parquet_options)
                self._made.append(resolve(self.store, new.path))
                moved[id(a)] = new
        self._kept = {resolve(self.store, moved.get(id(a), a).path) for a in adds}
        schema = identity.with_marks(their_schema, marks)
        metadata = dataclasses.replace(ours, schema_string=orjson.dumps(schema).decode())
        out = [metadata if a is ours else moved.get(id(a), a) if isinstance(a, A.Add) else a for a in actions]
        self._last = (theirs.schema_string, out)
        return list(out)

    def landed(self) -> None:
        """The commit landed: delete the files it no longer references (the writer's, when rewritten, and the
        rewrites of earlier attempts)."""
        if self._made:
            delete_files(self.store, [k for k in [*self._originals, *self._made] if k not in self._kept])

    def refused(self) -> None:
        """The commit certainly did not land: delete every file this rebase wrote (the writer deletes its own)."""
        delete_files(self.store, self._made)


__all__ = ["REBASE_LIMIT_BYTES", "IdentityRebase"]
