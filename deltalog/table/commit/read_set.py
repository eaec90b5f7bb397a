"""What a transaction read: the predicates, files and application ids other writers' commits are checked
against (the conflict checker's :class:`~deltalog.core.commit.conflicts.ReadSet`).

Only reads made through the transaction are recorded (reading the snapshot directly is a caller's choice not
to be protected). A condition on a data column cannot be judged from the log, so it is left out of the
recorded predicate and the partition conditions kept, as Delta Spark's ``trackReadPredicates`` does: a read by
data columns only is a read of every partition. The conditions come from the predicate's expression tree
(:meth:`deltalog.data.predicate.RowFilter.conditions`), so SQL text, a pyarrow Expression, DNF tuples and a
mapping that say the same thing record the same read. Files are recorded by their canonical key, the one identity
replay and the conflict checker share.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from deltalog.core.commit.conflicts import PartitionSchema, ReadPredicate, ReadSet
from deltalog.core.files.partitions import Condition
from deltalog.core.files.pathkeys import file_key


class ReadRecord:
    """The read set a transaction builds as it reads, keyed under the table's ``root``."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.predicates: list[ReadPredicate] = []
        self.files: set[str] = set()
        self.app_ids: set[str] = set()

    def key(self, path: str) -> str:
        """A file's identity as the log and the conflict checker know it (path canonicalised, no DV)."""
        return file_key(path, None, self.root)

    def add_files(self, paths: Iterable[str]) -> None:
        self.files.update(self.key(p) for p in paths)

    def add_predicate(self, conditions: Sequence[Condition] | None, schema: PartitionSchema) -> None:
        """Record a read of the partitions ``conditions`` select (ANDed; typed values, as the predicate's tree
        gives them); None or none: the whole table. Conditions on other than the partition columns of
        ``schema`` are dropped."""
        if not conditions:
            self.predicates.append(ReadPredicate())
            return
        self.predicates.append(ReadPredicate(tuple(c for c in conditions if c.column in schema.types)))

    def read_set(self) -> ReadSet:
        return ReadSet(tuple(self.predicates), frozenset(self.files), frozenset(self.app_ids))


__all__ = ["ReadRecord"]
