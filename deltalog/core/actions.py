"""Delta log actions as immutable values.

Field names are the protocol's names in snake_case; every field the protocol makes optional defaults to
``None`` so that a call names only what it means. The JSON spelling lives in :mod:`deltalog.core.codec`;
these classes know nothing about bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import Field, dataclass, field, fields
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar


class _Value:
    """Equality, hash and repr shared by every action class, written once instead of generated per class.

    Why: ``@dataclass(frozen=True)`` compiles six methods per class with ``exec``; for the twelve action
    classes that was most of this module's import time (16 of ~24 ms), paid by every ``import deltalog``.
    These behave as the generated ones do: equal when the class and every field are equal, hashed on the
    fields, shown as ``Name(field=value, ...)``.
    """

    __slots__ = ()
    _names: tuple[str, ...] = ()
    __dataclass_fields__: ClassVar[dict[str, Field[Any]]]  # set by ``_value``; lets ``fields`` accept the classes

    def _values(self) -> tuple[Any, ...]:
        return tuple([getattr(self, n) for n in self._names])

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == tuple([getattr(other, n) for n in self._names])

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in self._names)
        return f"{self.__class__.__qualname__}({inner})"


_V = TypeVar("_V", bound=_Value)
_F = TypeVar("_F")


if TYPE_CHECKING:
    # typeshed's typing_extensions: nothing is imported at run time (typing_extensions is not a dependency)
    from typing_extensions import dataclass_transform
else:

    def dataclass_transform(**_: object) -> Callable[[_F], _F]:
        """Run time: the marker only informs type checkers, so leave the decorated function as it is."""
        return lambda f: f


@dataclass_transform(frozen_default=True, field_specifiers=(field,))
def _value(cls: type[_V]) -> type[_V]:
    """A frozen dataclass whose ``__eq__``/``__hash__``/``__repr__`` come from :class:`_Value`.

    ``dataclass_transform`` tells a type checker these are frozen dataclasses (fields, ``__init__``,
    ``dataclasses.replace``) without the per-class code generation ``@dataclass(frozen=True)`` pays at import.
    """
    cls = dataclass(frozen=True, eq=False, repr=False)(cls)
    cls._names = tuple(f.name for f in fields(cls))
    return cls


@_value
class DeletionVector(_Value):
    """A deletion-vector descriptor; its :attr:`unique_id` is the second half of a file's replay key."""

    storage_type: str
    path_or_inline_dv: str
    size_in_bytes: int
    cardinality: int
    offset: int | None = None

    @property
    def unique_id(self) -> str:
        return dv_unique_id(self.storage_type, self.path_or_inline_dv, self.offset)


def dv_unique_id(storage_type: str, path_or_inline_dv: str, offset: int | None) -> str:
    """The protocol's DV identity: storage type and path, plus ``@offset`` when an offset is present."""
    base = f"{storage_type}{path_or_inline_dv}"
    return base if offset is None else f"{base}@{offset}"


@_value
class Add(_Value):
    """A live data file (``add``); its path, with its deletion vector, is its identity in replay."""

    path: str
    partition_values: Mapping[str, str | None]
    size: int
    modification_time: int
    data_change: bool
    stats: str | None = None
    tags: Mapping[str, str | None] | None = None
    deletion_vector: DeletionVector | None = None
    base_row_id: int | None = None
    default_row_commit_version: int | None = None
    clustering_provider: str | None = None

    def remove(self, deletion_timestamp: int | None = None, data_change: bool = True) -> Remove:
        """The remove Delta Spark writes for this live file (see :func:`remove_for`)."""
        return remove_for(self, deletion_timestamp=deletion_timestamp, data_change=data_change)


@_value
class Remove(_Value):
    """A logically deleted file (``remove``), kept as a tombstone until VACUUM's retention passes."""

    path: str
    deletion_timestamp: int | None = None
    data_change: bool = True
    extended_file_metadata: bool | None = None
    partition_values: Mapping[str, str | None] | None = None
    size: int | None = None
    stats: str | None = None
    tags: Mapping[str, str | None] | None = None
    deletion_vector: DeletionVector | None = None
    base_row_id: int | None = None
    default_row_commit_version: int | None = None


def remove_for(add: Add, deletion_timestamp: int | None = None, data_change: bool = True) -> Remove:
    """Build the remove for a live file the way Delta Spark does.

    Copying partition values, size, stats, tags, DV and row-tracking fields (with
    ``extendedFileMetadata=true``) matters: conflict messages, change data feed and VACUUM read them from
    the remove, not from the long-gone add.
    """
    import time

    return Remove(
        path=add.path,
        deletion_timestamp=int(time.time() * 1000) if deletion_timestamp is None else deletion_timestamp,
        data_change=data_change,
        extended_file_metadata=True,
        partition_values=add.partition_values,
        size=add.size,
        stats=add.stats,
        tags=add.tags,
        deletion_vector=add.deletion_vector,
        base_row_id=add.base_row_id,
        default_row_commit_version=add.default_row_commit_version,
    )


def _new_id() -> str:
    import uuid  # only a new table needs one: not a cost of ``import deltalog``

    return str(uuid.uuid4())


@_value
class Format(_Value):
    """``metaData.format``: the data file format, always parquet in practice."""

    provider: str = "parquet"
    options: Mapping[str, str] = field(default_factory=dict)


@_value
class Metadata(_Value):
    """``metaData``: table id, schema, partition columns and configuration."""

    id: str = field(default_factory=_new_id)
    name: str | None = None
    description: str | None = None
    format: Format = field(default_factory=Format)
    schema_string: str | None = None
    partition_columns: tuple[str, ...] = ()
    configuration: Mapping[str, str] = field(default_factory=dict)
    created_time: int | None = None


@_value
class Protocol(_Value):
    """``protocol``: the reader/writer versions and table features an engine must support."""

    min_reader_version: int
    min_writer_version: int
    reader_features: tuple[str, ...] | None = None
    writer_features: tuple[str, ...] | None = None


@_value
class Txn(_Value):
    """``txn``: the last version an application committed, for exactly-once writes."""

    app_id: str
    version: int
    last_updated: int | None = None


@_value
class CommitInfo(_Value):
    """Free-form commit provenance; known fields are typed, everything else is kept in ``other``."""

    timestamp: int | None = None
    in_commit_timestamp: int | None = None
    operation: str | None = None
    operation_parameters: Mapping[str, Any] | None = None
    read_version: int | None = None
    isolation_level: str | None = None
    is_blind_append: bool | None = None
    operation_metrics: Mapping[str, Any] | None = None
    engine_info: str | None = None
    txn_id: str | None = None
    user_metadata: str | None = None
    other: Mapping[str, Any] = field(default_factory=dict)


@_value
class Cdc(_Value):
    """``cdc``: a change-data file written beside the data files of a commit."""

    path: str
    partition_values: Mapping[str, str | None]
    size: int
    data_change: bool = False
    tags: Mapping[str, str | None] | None = None


@_value
class DomainMetadata(_Value):
    """``domainMetadata``: named configuration owned by a feature (clustering, row tracking)."""

    domain: str
    configuration: str
    removed: bool = False


@_value
class CheckpointMetadata(_Value):
    """Only valid inside V2 checkpoints; read, never committed."""

    version: int
    tags: Mapping[str, str] | None = None


@_value
class Sidecar(_Value):
    """Only valid inside V2 checkpoints; read, never committed."""

    path: str
    size_in_bytes: int
    modification_time: int
    tags: Mapping[str, str] | None = None


Action = Add | Remove | Metadata | Protocol | Txn | CommitInfo | Cdc | DomainMetadata | CheckpointMetadata | Sidecar

__all__ = [
    "Action",
    "Add",
    "Cdc",
    "CheckpointMetadata",
    "CommitInfo",
    "DeletionVector",
    "DomainMetadata",
    "Format",
    "Metadata",
    "Protocol",
    "Remove",
    "Sidecar",
    "Txn",
    "dv_unique_id",
    "remove_for",
]
