"""What a transaction read: the predicates, files and application ids other writers' commits are checked
against, and the summary of a commit that the conflict checker judges.

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

from deltalog.core import actions as A
from deltalog.core.conflicts import PartitionSchema, ReadPredicate, ReadSet, TxnSummary, is_blind_append
from deltalog.core.partitions import Condition
from deltalog.core.pathkeys import file_key
from deltalog.core.schema import top_level_fields
from deltalog.table.snapshot import Snapshot


def partition_schema(snap: Snapshot | None) -> PartitionSchema:
    """The partition columns' types and physical names (none for the commit that creates the table)."""
    if snap is None:
        return PartitionSchema(types={}, physical={})
    cols = {f["name"]: f["type"] for f in top_level_fields(snap.schema_json)}
    return PartitionSchema(
        types={c: cols[c] for c in snap.partition_columns if c in cols},
        physical={c: snap.physical_names.get(c, c) for c in snap.partition_columns},
    )


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

    def add_predicate(self, conditions: Sequence[Condition] | None, snap: Snapshot | None) -> None:
        """Record a read of the partitions ``conditions`` select (ANDed; typed values, as the predicate's tree
        gives them); None or none: the whole table. Conditions on other than partition columns are dropped."""
        if not conditions:
            self.predicates.append(ReadPredicate())
            return
        schema = partition_schema(snap)
        self.predicates.append(ReadPredicate(tuple(c for c in conditions if c.column in schema.types)))

    def read_set(self) -> ReadSet:
        return ReadSet(tuple(self.predicates), frozenset(self.files), frozenset(self.app_ids))

    def summary(self, actions: Sequence[A.Action], isolation: str, snap: Snapshot | None, txn_id: str) -> TxnSummary:
        """What the conflict checker needs of a commit of ``actions`` by a transaction that read ``snap``."""
        read_set = self.read_set()
        return TxnSummary(
            read_set=read_set,
            isolation=isolation,
            partition_schema=partition_schema(snap),
            root=self.root,
            changes_metadata=any(isinstance(a, A.Metadata) for a in actions),
            changes_protocol=any(isinstance(a, A.Protocol) for a in actions),
            removed=frozenset(self.key(a.path) for a in actions if isinstance(a, A.Remove)),
            domains=frozenset(a.domain for a in actions if isinstance(a, A.DomainMetadata)),
            is_blind_append=is_blind_append(actions, read_set),
            txn_id=txn_id,
            read_protocol=snap.protocol if snap is not None else None,
            table_id=snap.metadata.id if snap is not None else None,
        )


__all__ = ["ReadRecord", "partition_schema"]
