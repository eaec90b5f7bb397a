"""Where a new data file goes and how the log names it.

* Partition directories are Hive-style, ``a=1/b=x%3Ay``, escaped with Spark's set (apache/spark
  ``ExternalCatalogUtils.charToEscape``, non-Windows): 0x01-0x1F, ``"#%'*/:=?\\`` 0x7F ``{[]^`` become ``%XX``;
  a null value is ``__HIVE_DEFAULT_PARTITION__``. The directory is a convention only: readers take partition
  values from the log (PROTOCOL "Data Files").
* Column-mapped tables get no partition directories: their names would be logical column names, which a
  rename makes stale, or physical ``col-<uuid>`` names, which mean nothing to a person. As Delta Spark does
  ("column mapped mode forces to use random file prefix", and ``delta.randomizeFilePrefixes``), files go under a
  random alphanumeric prefix of ``delta.randomPrefixLength`` characters (default 2); delta-rs does the same.
* File names are ``part-<uuid4>.<codec>.parquet``: unique without coordination (PROTOCOL: data files must
  never be overwritten). Spark's ``part-<task>-<uuid>.c000`` carries a task number deltalog does not have.
* The log path is the store key percent-encoded once (``urllib.parse.quote`` keeping ``/`` and ``=``), so
  decoding it once, as every reader does, gives the key back (notes 2.14: the doubled ``%253A`` is correct).
"""

from __future__ import annotations

import secrets
import string
import uuid
from collections.abc import Mapping, Sequence
from urllib.parse import quote

from deltalog.core.partitions import HIVE_NULL
from deltalog.errors import InvalidArgumentError

# apache/spark ExternalCatalogUtils.charToEscape (non-Windows)
_ESCAPED = frozenset([chr(c) for c in range(0x01, 0x20)] + list("\"#%'*/:=?\\\x7f{[]^"))
_ALPHANUMERIC = string.ascii_letters + string.digits
RANDOMIZE_PREFIXES = "delta.randomizeFilePrefixes"
PREFIX_LENGTH = "delta.randomPrefixLength"
DEFAULT_PREFIX_LENGTH = 2


def escape_path_name(text: str) -> str:
    """Hive-style escaping of a partition column name or value (``%XX``, uppercase hex)."""
    return "".join(f"%{ord(c):02X}" if c in _ESCAPED else c for c in text)


def partition_dir(columns: Sequence[str], values: Sequence[str | None]) -> str:
    """``a=1/b=x%3Ay``: one directory per partition column; null is ``__HIVE_DEFAULT_PARTITION__``."""
    return "/".join(
        f"{escape_path_name(c)}={HIVE_NULL if v is None else escape_path_name(v)}"
        for c, v in zip(columns, values, strict=True)
    )


def random_prefix_length(configuration: Mapping[str, str], column_mapped: bool) -> int:
    """How many random characters lead a new file's path: 0 for Hive directories, else the table's length."""
    randomize = str(configuration.get(RANDOMIZE_PREFIXES, "false")).strip().lower() == "true"
    if not (column_mapped or randomize):
        return 0
    raw = str(configuration.get(PREFIX_LENGTH, DEFAULT_PREFIX_LENGTH)).strip()
    if not raw.isdigit() or int(raw) <= 0:
        raise InvalidArgumentError(f"{PREFIX_LENGTH} must be a positive integer, not {raw!r}")
    return int(raw)


def data_file_name(codec: str) -> str:
    """``part-<uuid4>.snappy.parquet`` (the codec's name, none for uncompressed files)."""
    suffix = "" if codec in ("none", "uncompressed") else f".{codec}"
    return f"part-{uuid.uuid4()}{suffix}.parquet"


def change_file_name(codec: str) -> str:
    """``cdc-<uuid4>.snappy.parquet``: a change data file, named as Delta Spark names them (without its task
    number, as :func:`data_file_name`)."""
    return "cdc-" + data_file_name(codec).removeprefix("part-")


def data_file_key(
    name: str, partition_columns: Sequence[str], values: Sequence[str | None], prefix_length: int = 0
) -> str:
    """The store key of a new data file: under a random prefix, its partition directory, or the root."""
    if prefix_length:
        return "".join(secrets.choice(_ALPHANUMERIC) for _ in range(prefix_length)) + "/" + name
    if partition_columns:
        return f"{partition_dir(partition_columns, values)}/{name}"
    return name


def log_path(key: str) -> str:
    """The ``path`` of an add for a store key: URI-encoded once, relative to the table root."""
    return quote(key, safe="/=")


__all__ = [
    "DEFAULT_PREFIX_LENGTH",
    "change_file_name",
    "data_file_key",
    "data_file_name",
    "escape_path_name",
    "log_path",
    "partition_dir",
    "random_prefix_length",
]
