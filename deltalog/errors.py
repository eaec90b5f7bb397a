"""The error tree.

Every error deltalog raises derives from :class:`DeltaLogError`, so a caller can catch one name. The
subclasses say what a program can do next: a :class:`CorruptLogError` will not go away by retrying, a
:class:`StorageError` with ``retryable=True`` may. Messages name the file (and line) at fault because
the person reading them has to go and look at that file.
"""

from __future__ import annotations

import errno


class DeltaLogError(Exception):
    """Root of every deltalog error."""


class TableNotFoundError(DeltaLogError):
    """The location holds no Delta table (no ``_delta_log`` commits or checkpoints)."""


class TableAlreadyExistsError(DeltaLogError):
    """Version 0 already exists where a new table was to be created."""


class VersionNotFoundError(DeltaLogError):
    """A requested version or timestamp lies outside what the log can reconstruct.

    ``earliest`` and ``latest`` give the reconstructable range so a caller can clamp and retry.
    """

    def __init__(self, message: str, *, earliest: int | None = None, latest: int | None = None) -> None:
        super().__init__(message)
        self.earliest = earliest
        self.latest = latest


class InvalidArgumentError(DeltaLogError, ValueError):
    """A caller passed something that cannot mean anything for this table (an unknown column, a bad value)."""


class InvalidCommitError(DeltaLogError, ValueError):
    """An action list breaks a per-commit rule; nothing was written. ``rule`` names the rule."""

    def __init__(self, message: str, *, rule: str) -> None:
        super().__init__(message)
        self.rule = rule


class SchemaMismatchError(InvalidArgumentError):
    """Data does not fit the table's schema: a missing or unknown column, a type with no safe cast, a value the
    table's type cannot hold (a nanosecond lost, an unsigned value above ``long``). Raised before the data it
    concerns is written; ``column`` names the (dotted, logical) column when there is one."""

    def __init__(self, message: str, *, column: str | None = None) -> None:
        super().__init__(message)
        self.column = column


class ConstraintViolationError(DeltaLogError):
    """Rows break a rule of the table: a CHECK constraint, a column invariant, a generated column's expression
    or a NOT NULL column. Nothing of the write is committed and the files it wrote are deleted.

    ``constraint`` names the rule, ``expression`` is its SQL text, ``row`` a failing row (the referenced
    columns by logical name, values as Python objects).
    """

    def __init__(
        self, message: str, *, constraint: str, expression: str | None = None, row: dict[str, object] | None = None
    ) -> None:
        super().__init__(message)
        self.constraint = constraint
        self.expression = expression
        self.row = row


class NotNullViolationError(ConstraintViolationError):
    """A non-nullable column (top-level or nested) would receive a null; ``column`` names it."""

    def __init__(self, message: str, *, column: str, row: dict[str, object] | None = None) -> None:
        super().__init__(message, constraint=f"NOT NULL {column}", row=row)
        self.column = column


class RestoreFilesMissingError(InvalidArgumentError):
    """Files a RESTORE would make live again are gone from storage (vacuumed, lost); nothing was committed.

    ``paths`` are the missing data and deletion-vector files (store-relative), ``version`` the target.
    """

    def __init__(self, message: str, *, version: int, paths: tuple[str, ...]) -> None:
        super().__init__(message)
        self.version = version
        self.paths = paths


class SchemaError(InvalidCommitError):
    """A schema breaks a rule of the Delta protocol (a type it does not define, a duplicate or unusable name,
    a partition column that cannot be one); nothing was written. ``field`` is the offending field's path
    (``a.b.element.c``) when there is one, so a caller can find it in a schema of hundreds of columns."""

    def __init__(self, message: str, *, field: str | None = None, rule: str = "valid-schema") -> None:
        super().__init__(message, rule=rule)
        self.field = field


class PropertyError(InvalidArgumentError):
    """A table property (``metaData.configuration``) key or value that cannot be set, or that an operation
    cannot honour; ``key`` and ``value`` name it, and the message says how to fix it."""

    def __init__(self, message: str, *, key: str | None = None, value: str | None = None) -> None:
        self.key = key
        self.value = value


class ProtocolError(DeltaLogError):
    """The log breaks, or goes beyond, the Delta protocol as this engine implements it."""


class UnsupportedFeatureError(ProtocolError):
    """The table needs a reader (or writer) feature or protocol version this engine refuses.

    ``version`` is the table version whose protocol asks for it when known, e.g. a commit that won the
    version this transaction wanted: retrying cannot help, so it is not a concurrent-modification error.
    """

    def __init__(
        self, message: str, *, feature: str | None = None, path: str | None = None, version: int | None = None
    ) -> None:
        super().__init__(message)
        self.feature = feature
        self.path = path
        self.version = version


class UnsupportedExpressionError(UnsupportedFeatureError):
    """A SQL expression uses something deltalog does not evaluate (a function, a syntax, a type combination
    whose Spark meaning it does not reproduce): refused by name, never evaluated with another meaning. For a
    table's rule (CHECK constraint, invariant, generation or default expression) ``constraint`` names it, and
    a write refuses rather than check it in another dialect or not at all. ``expression`` is the text,
    ``function`` the function or syntax refused and ``position`` where it starts in the text (0-based)."""

    def __init__(
        self,
        message: str,
        *,
        expression: str,
        constraint: str | None = None,
        feature: str | None = None,
        function: str | None = None,
        position: int | None = None,
    ) -> None:
        super().__init__(message, feature=feature)
        self.constraint = constraint
        self.expression = expression
        self.function = function
        self.position = position


class InvalidExpressionError(InvalidArgumentError):
    """An expression that cannot mean anything here, found when it is parsed or bound, before any row is read
    or written: text that does not parse, an unknown or ambiguous column, a type Spark's analyzer rejects.
    ``expression`` is the text, ``position`` where the fault starts (0-based), ``column`` the column named."""

    def __init__(
        self, message: str, *, expression: str, position: int | None = None, column: str | None = None
    ) -> None:
        super().__init__(message)
        self.expression = expression
        self.position = position
        self.column = column


class DuplicateMatchError(InvalidArgumentError):
    """A MERGE in which one target row matches more than one source row where Delta Spark refuses it
    (``DELTA_MULTIPLE_SOURCE_ROW_MATCHING_TARGET_ROW_IN_MERGE``): the update or delete it asks for is ambiguous.
    Raised before any file is written. ``key`` is the target row's join key (column -> value), ``path`` the
    data file holding it, ``matches`` how many source rows matched it."""

    def __init__(self, message: str, *, key: dict[str, object], path: str, matches: int) -> None:
        super().__init__(message)
        self.key = key
        self.path = path
        self.matches = matches


class ExpressionValueError(InvalidArgumentError):
    """A value an expression cannot take under Spark's ANSI rules, found while rows are evaluated and before
    anything is committed: a malformed string cast (``'a' + 1``), an overflow, a division by zero, an index
    out of range. ``error_class`` is Spark's name for it (``CAST_INVALID_INPUT``, ``DIVIDE_BY_ZERO``,
    ``ARITHMETIC_OVERFLOW``...), ``value`` the offending value when there is one."""

    def __init__(self, message: str, *, error_class: str, expression: str | None = None, value: object = None) -> None:
        super().__init__(message)
        self.error_class = error_class
        self.expression = expression
        self.value = value


class CorruptLogError(ProtocolError):
    """The log cannot be replayed: malformed JSON, a gap, a truncated checkpoint, missing protocol/metadata."""

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.line = line


class CorruptDataError(CorruptLogError):
    """A data or deletion-vector file the log names is missing, unreadable, or disagrees with the log.

    A deletion vector whose checksum, magic number or cardinality is wrong, a DV file that is gone, a parquet
    file that cannot be decoded or lacks what the table's schema needs: reading on would return rows the
    table does not hold, and retrying cannot help. ``path`` names that file: a data file as the log spells
    it, a DV file by its store key (or absolute path), an inline DV by its descriptor.
    """


class StorageError(DeltaLogError):
    """The store failed; ``retryable`` says whether the same call may succeed later."""

    def __init__(self, message: str, *, path: str | None = None, retryable: bool = False) -> None:
        super().__init__(message)
        self.path = path
        self.retryable = retryable


class NotFoundError(StorageError, FileNotFoundError):
    """The store has no file by that name (``path``, store-relative): the storage contract's "absent".

    Every store raises this, never the builtin, so what crosses the storage boundary is a
    :class:`DeltaLogError` like every other failure. It is also a :class:`FileNotFoundError` (``errno`` ENOENT,
    ``filename`` the path): code written against the builtin, a caller's or pyarrow's file-system glue, keeps
    working.
    """

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(message, path=path, retryable=False)
        self.errno, self.strerror, self.filename = errno.ENOENT, message, path

    def __str__(self) -> str:
        return str(self.args[0])  # the message, not OSError's "[Errno 2] ...: 'path'"


class AccessDeniedError(StorageError):
    """The store refused the credentials (or their rights) for a call: retrying cannot help, fixing the
    credentials (storage options, the environment) can. The message names where to give them."""


class BulkDeleteError(StorageError):
    """A bulk delete answered, but some of its keys were not deleted; ``failed`` names them (store-relative),
    with the store's reason in the message. Every other key of the request is gone (a key already absent
    counts as deleted), so running the same delete again is safe."""

    def __init__(self, message: str, *, failed: tuple[str, ...], retryable: bool = False) -> None:
        super().__init__(message, path=failed[0] if failed else None, retryable=retryable)
        self.failed = failed


class PathOutsideRootError(InvalidArgumentError):
    """A path would reach outside the table root (``..`` segments, an absolute name) where only the table's own
    files may be read, probed or deleted. ``path`` is the offending path as given."""

    def __init__(self, message: str, *, path: str) -> None:
        super().__init__(message)
        self.path = path


class FileAlreadyExistsError(StorageError):
    """``put_if_absent`` found the name taken: another writer won it."""

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(message, path=path, retryable=False)


class CommitStateUnknownError(DeltaLogError):
    """A commit attempt failed in a way that leaves open whether it landed."""


class CommitNotReachableError(DeltaLogError):
    """A commit would not be part of the table that readers of the latest snapshot see; nothing of it stays.

    Raised when the version a transaction read is gone from the log (log cleanup removed it, or the table
    was deleted or recreated) or when the file just written turned out to sit where no reader looks (below
    a newer checkpoint, or after a gap); such a file is removed again. Retrying the same transaction cannot
    help: start a new one on the latest snapshot. ``version`` is the version that was refused.
    """

    def __init__(self, message: str, *, version: int | None = None, path: str | None = None) -> None:
        super().__init__(message)
        self.version = version
        self.path = path


class ConcurrentModificationError(DeltaLogError):
    """Another writer's commit conflicts logically with this transaction."""

    def __init__(
        self,
        message: str,
        *,
        winning_version: int | None = None,
        winning_commit_info: dict[str, object] | None = None,
        conflicting_file: str | None = None,
        conflicting_partition: dict[str, str | None] | None = None,
    ) -> None:
        super().__init__(message)
        self.winning_version = winning_version
        self.winning_commit_info = winning_commit_info
        self.conflicting_file = conflicting_file
        self.conflicting_partition = conflicting_partition


class ConcurrentAppendError(ConcurrentModificationError):
    """A winner added files into what this transaction read."""


class ConcurrentDeleteReadError(ConcurrentModificationError):
    """A winner removed a file this transaction read."""


class ConcurrentDeleteDeleteError(ConcurrentModificationError):
    """A winner removed a file this transaction also removes."""


class MetadataChangedError(ConcurrentModificationError):
    """A winner changed the table metadata."""


class ProtocolChangedError(ConcurrentModificationError):
    """A winner changed the protocol in a way this transaction cannot follow."""


class ConcurrentTransactionError(ConcurrentModificationError):
    """A winner updated an application transaction id (or domain) this transaction depends on."""


class MaxCommitAttemptsError(DeltaLogError):
    """The commit gave up after its configured number of attempts."""


class CheckpointError(DeltaLogError):
    """A checkpoint could not be written or validated."""


class ChangeReadError(DeltaLogError):
    """What changed in a range of versions cannot be read as asked, because of what ``version`` holds."""

    def __init__(self, message: str, *, version: int) -> None:
        super().__init__(message)
        self.version = version


class ChangeDataNotRecordedError(ChangeReadError):
    """Change data feed (``delta.enableChangeDataFeed``) was off at ``version``, the first such version of the
    range: that version recorded no change data, so the range's changes cannot be read."""


class IncompatibleSchemaChangeError(ChangeReadError):
    """The schema at ``version`` cannot be read in the schema the changes are read in: a column renamed or
    dropped under column mapping, a column's type changed, or made NOT NULL (Delta Spark refuses these too)."""


class DataChangedError(ChangeReadError):
    """``version`` removed or changed rows where only appended rows were asked for (``new_files``); its changes
    are read with ``changes()``, or such versions skipped with ``skip_change_commits=True``."""


class SourceTableChangedError(DeltaLogError):
    """A streaming query's checkpoint holds offsets of another table than the one now at its source's location
    (``table_id``): the table was deleted and created again, or the checkpoint belongs to a query that read
    another table (Delta Spark's ``differentDeltaTableReadByStreamingSource``). Start the query with a new
    checkpoint location."""

    def __init__(self, message: str, *, table_id: str | None = None, checkpoint_table_id: str | None = None) -> None:
        super().__init__(message)
        self.table_id = table_id
        self.checkpoint_table_id = checkpoint_table_id


class SetupError(DeltaLogError):
    """This machine lacks what the call needs: an optional package, Java for Spark, deltalog on Spark's
    executors. Nothing is wrong with the table; the message says what to install or configure."""


__all__ = [
    "AccessDeniedError",
    "BulkDeleteError",
    "ChangeDataNotRecordedError",
    "ChangeReadError",
    "CheckpointError",
    "CommitNotReachableError",
    "CommitStateUnknownError",
    "ConcurrentAppendError",
    "ConcurrentDeleteDeleteError",
    "ConcurrentDeleteReadError",
    "ConcurrentModificationError",
    "ConcurrentTransactionError",
    "ConstraintViolationError",
    "CorruptDataError",
    "CorruptLogError",
    "DataChangedError",
    "DeltaLogError",
    "DuplicateMatchError",
    "ExpressionValueError",
    "FileAlreadyExistsError",
    "IncompatibleSchemaChangeError",
    "InvalidArgumentError",
    "InvalidCommitError",
    "InvalidExpressionError",
    "MaxCommitAttemptsError",
    "MetadataChangedError",
    "NotFoundError",
    "NotNullViolationError",
    "PathOutsideRootError",
    "PropertyError",
    "ProtocolChangedError",
    "ProtocolError",
    "RestoreFilesMissingError",
    "SchemaError",
    "SchemaMismatchError",
    "SetupError",
    "SourceTableChangedError",
    "StorageError",
    "TableAlreadyExistsError",
    "TableNotFoundError",
    "UnsupportedExpressionError",
    "UnsupportedFeatureError",
    "VersionNotFoundError",
]
