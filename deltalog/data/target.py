"""The table a data-file writer writes for, and the file-format choices its properties make.

:class:`WriteTarget` is a value: the schema, partitioning, properties, clustering columns and column-mapping
mode a writer needs, read once from a snapshot (or built by hand for tests and Spark executors, which get it
pickled). The table properties that shape files (``delta.targetFileSize``, the parquet codec and page version)
are parsed here, where a bad value is refused by name before any file is opened.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from deltalog.data.types import FieldPlan
from deltalog.errors import InvalidArgumentError

DEFAULT_TARGET_FILE_SIZE = 100 * 1024 * 1024
#: a column whose dictionary outgrows this falls back to plain encoding: unique ids, random floats and
#: instants stop paying for a dictionary sooner (a quarter less encoding CPU, files no larger)
DICTIONARY_PAGE_BYTES = 256 * 1024
TARGET_FILE_SIZE = "delta.targetFileSize"
CODEC = "delta.parquet.compression.codec"
PAGE_VERSION = "delta.parquet.format.version"
_CODECS = {"none": "none", "uncompressed": "none", "snappy": "snappy", "gzip": "gzip", "zstd": "zstd", "lz4_raw": "lz4"}


class TableLike(Protocol):
    """What :meth:`WriteTarget.of` reads from a snapshot (duck-typed: the data plane sits below snapshots)."""

    @property
    def schema_json(self) -> Mapping[str, Any]: ...
    @property
    def partition_columns(self) -> Sequence[str]: ...
    @property
    def configuration(self) -> Mapping[str, str]: ...
    @property
    def column_mapping_mode(self) -> str: ...


@dataclass(frozen=True)
class WriteTarget:
    """The table a writer writes for: its schema (Delta JSON, logical names with column-mapping metadata),
    partition columns (logical), configuration, the clustering columns (physical paths, as the
    ``delta.clustering`` domain lists them), which always get statistics, and the column-mapping mode in
    force (``None``: ``delta.columnMapping.mode``; a snapshot knows better: the property means nothing
    unless the protocol supports the feature). ``row_tracking`` names the materialized row-id and
    row-commit-version columns a rewrite fills (each an int64 column the data files hold besides the table's
    columns, taken from the input by that name); None for writes of new rows, whose ids are fresh."""

    schema: Mapping[str, Any]
    partition_columns: tuple[str, ...] = ()
    configuration: Mapping[str, str] = field(default_factory=dict)
    clustering_columns: tuple[tuple[str, ...], ...] = ()
    column_mapping_mode: str | None = None
    #: the zone the row rules' timestamp functions use (generated columns like CAST(ts AS DATE)); None: UTC
    session_time_zone: str | None = None
    row_tracking: tuple[str, str] | None = None

    @classmethod
    def of(
        cls, table: TableLike, clustering_columns: Sequence[Sequence[str]] = (), session_time_zone: str | None = None
    ) -> WriteTarget:
        return cls(
            table.schema_json,
            tuple(table.partition_columns),
            dict(table.configuration),
            tuple(tuple(c) for c in clustering_columns),
            table.column_mapping_mode,
            session_time_zone,
        )

    @property
    def column_mapped(self) -> bool:
        mode = self.column_mapping_mode or self.configuration.get("delta.columnMapping.mode", "none")
        return str(mode).lower() in ("name", "id")


def positive(raw: Any, what: str) -> int:
    """``raw`` as a positive integer; anything else is refused naming ``what``."""
    try:
        value = int(str(raw).strip())
    except ValueError:
        value = 0
    if value <= 0:
        raise InvalidArgumentError(f"{what} must be a positive integer, not {raw!r}")
    return value


def target_file_size(configuration: Mapping[str, str], given: int | None) -> int:
    """The size at which a file is finished: ``given``, else ``delta.targetFileSize``, else 100 MiB (as
    ``deltalake``)."""
    return positive(
        given if given is not None else configuration.get(TARGET_FILE_SIZE, DEFAULT_TARGET_FILE_SIZE),
        "target_file_size",
    )


def parquet_options(configuration: Mapping[str, str]) -> dict[str, Any]:
    """``pyarrow.parquet.ParquetWriter`` options from the table's codec and page-version properties."""
    codec = str(configuration.get(CODEC, "snappy")).strip().lower()
    if codec not in _CODECS:
        raise InvalidArgumentError(f"{CODEC}={codec!r}: deltalog writes {sorted(_CODECS)}")
    version = str(configuration.get(PAGE_VERSION, "1.0.0")).strip()
    if version != "1.0.0" and not (version.startswith("2.") and version.count(".") == 2):
        raise InvalidArgumentError(f"{PAGE_VERSION}={version!r}: expected 1.0.0 or 2.MINOR.PATCH")
    return {
        "compression": _CODECS[codec],
        "data_page_version": "1.0" if version == "1.0.0" else "2.0",
        "dictionary_pagesize_limit": DICTIONARY_PAGE_BYTES,
    }


def physical_path(plans: Sequence[FieldPlan], path: Sequence[str]) -> tuple[str, ...] | None:
    """The physical names along a logical column path (matched case-insensitively), or None if it is not one."""
    out: list[str] = []
    level = list(plans)
    for name in path:
        found = [p for p in level if p.name.lower() == name.lower()]
        if not found:
            return None
        out.append(found[0].physical)
        level = list(found[0].children)
    return tuple(out)


__all__ = [
    "DEFAULT_TARGET_FILE_SIZE",
    "TableLike",
    "WriteTarget",
    "parquet_options",
    "physical_path",
    "positive",
    "target_file_size",
]
