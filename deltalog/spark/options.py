"""The options of ``format("deltalog")``: Delta Spark's names (``DeltaOptions.scala``), each built or refused.

Spark hands a Python data source its options in a case-insensitive map whose keys it has lower-cased, plus
keys of its own: ``path`` (``load(p)``/``save(p)``), ``paths`` (``load(p1, p2)``), ``checkpointLocation`` and
``queryName`` (streaming sinks). Every key is classified here, once, before anything is read or written:

* a name Delta Spark defines (delta-io/delta ``spark/.../DeltaOptions.scala`` at 003c8f4f, ``validOptionKeys``,
  plus ``partitionBy``, which Spark refuses as ``DataFrameWriter.partitionBy`` for Python data sources and
  deltalog takes as an option) either works as in Delta Spark, or is refused by name as "supported by Delta
  Spark, not yet by deltalog" (:class:`~deltalog.errors.UnsupportedFeatureError`); its value is checked as
  Delta checks it (``true``/``false``, a non-negative integer, a size such as ``10g``);
* a Delta name used where it means nothing (``maxFilesPerTrigger`` on a batch read, ``replaceWhere`` on a
  read) is refused, saying where it applies: Delta Spark would pass over it silently;
* ``delta.*`` keys are table properties for a write that creates the table, as in Delta Spark's
  ``DeltaDataSource`` (Delta's spelling restored from Spark's lower case);
* storage options under ``deltalake``'s key names (``aws_access_key_id``, ``azure_storage_account_name``,
  ``google_service_account``, ``deltalog_*``; :func:`deltalog.storage.options.is_storage_option`) are the
  table's ``storage_options``, which travel to the executors;
* anything else is refused by name (with the nearest known names), never ignored.

This module is pure (no pyspark): the data source classes parse through it, and tests call it directly.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from deltalog.core.property_rules import canonical_key
from deltalog.errors import InvalidArgumentError, UnsupportedFeatureError
from deltalog.storage.options import is_storage_option

#: the contexts an option is given in
READ, WRITE, STREAM_READ, STREAM_WRITE = "read", "write", "stream_read", "stream_write"
_ANY_WRITE = frozenset({WRITE, STREAM_WRITE})
_ANY_READ = frozenset({READ, STREAM_READ})
_CONTEXT_TEXT = {
    READ: "a batch read",
    WRITE: "a batch write",
    STREAM_READ: "a streaming read",
    STREAM_WRITE: "a streaming write",
}
#: the name ``format(...)`` knows the source by
NAME = "deltalog"
#: the one option the Python wrappers (``deltalog.spark.write``) use to reach the sink; not for users
CONTROL = "__deltalog_control"


@dataclass(frozen=True)
class Spec:
    """One option name: where it applies, whether deltalog builds it, and the value that means "off" (which is
    accepted for an option not built yet: asking for the default is not asking for the feature)."""

    name: str
    contexts: frozenset[str]
    built: bool = True
    off: str | None = None


def _spec(name: str, contexts: frozenset[str] | set[str], built: bool = True, off: str | None = None) -> Spec:
    return Spec(name, frozenset(contexts), built, off)


#: Delta Spark's option names (DeltaOptions.validOptionKeys), Spark's own keys, and partitionBy
SPECS: tuple[Spec, ...] = (
    # writes
    _spec("replaceWhere", {WRITE}),
    _spec("mergeSchema", _ANY_WRITE),
    _spec("overwriteSchema", {WRITE}),
    _spec("userMetadata", _ANY_WRITE),
    _spec("partitionOverwriteMode", {WRITE}),
    _spec("partitionBy", _ANY_WRITE),
    _spec("txnAppId", _ANY_WRITE),
    _spec("txnVersion", {WRITE}),
    _spec("maxRecordsPerFile", _ANY_WRITE),
    _spec("compression", _ANY_WRITE),
    _spec("dataChange", _ANY_WRITE, built=False, off="true"),
    _spec("optimizeWrite", _ANY_WRITE, built=False, off="false"),
    _spec("replaceOn", {WRITE}, built=False),
    _spec("replaceUsing", {WRITE}, built=False),
    _spec("targetAlias", {WRITE}, built=False),
    _spec("useNullIntolerantEqualityWithDPO", {WRITE}, built=False, off="false"),
    _spec("writePartitionColumns", _ANY_WRITE, built=False, off="false"),
    _spec("__v1_save_as_table_overwrite", {WRITE}, built=False, off="false"),
    # batch reads
    _spec("versionAsOf", {READ}),
    _spec("timestampAsOf", {READ}),
    _spec("readChangeFeed", _ANY_READ),
    _spec("readChangeData", _ANY_READ),
    _spec("startingVersion", _ANY_READ),
    _spec("startingTimestamp", _ANY_READ),
    _spec("endingVersion", {READ}),
    _spec("endingTimestamp", {READ}),
    # streaming reads
    _spec("maxFilesPerTrigger", {STREAM_READ}),
    _spec("maxBytesPerTrigger", {STREAM_READ}),
    _spec("ignoreDeletes", {STREAM_READ}),
    _spec("ignoreChanges", {STREAM_READ}),
    _spec("ignoreFileDeletion", {STREAM_READ}),
    _spec("skipChangeCommits", {STREAM_READ}),
    _spec("excludeRegex", {STREAM_READ}),
    _spec("failOnDataLoss", {STREAM_READ}, built=False, off="true"),
    _spec("schemaTrackingLocation", {STREAM_READ}, built=False),
    _spec("schemaLocation", {STREAM_READ}, built=False),
    _spec("streamingSourceTrackingId", {STREAM_READ}, built=False),
    _spec("allowSourceColumnDrop", {STREAM_READ}, built=False),
    _spec("allowSourceColumnRename", {STREAM_READ}, built=False),
    _spec("allowSourceColumnTypeChange", {STREAM_READ}, built=False),
    # Spark's own keys
    _spec("path", {READ, WRITE, STREAM_READ, STREAM_WRITE}),
    _spec("paths", {READ, STREAM_READ}),
    _spec("checkpointLocation", {STREAM_WRITE}),
    _spec("queryName", {STREAM_WRITE}),
)
BY_LOWER: dict[str, Spec] = {s.name.lower(): s for s in SPECS}

_TRUE, _FALSE = "true", "false"
_SIZE = re.compile(r"^\s*(\d+)\s*([kmgtp]?)(i?b?)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50}
PARTITION_OVERWRITE_MODES = ("static", "dynamic")


def _bad_value(name: str, value: str, expected: str) -> InvalidArgumentError:
    return InvalidArgumentError(f"option {name}={value!r}: {expected}")


def boolean(name: str, value: str) -> bool:
    """``true``/``false`` in any case, as Scala's ``toBoolean`` (Delta's option parser) reads them."""
    text = value.strip().lower()
    if text in (_TRUE, _FALSE):
        return text == _TRUE
    raise _bad_value(name, value, "must be 'true' or 'false'")


def non_negative(name: str, value: str) -> int:
    try:
        number = int(value.strip())
    except ValueError:
        number = -1
    if number < 0:
        raise _bad_value(name, value, "must be a non-negative integer")
    return number


def positive(name: str, value: str) -> int:
    try:
        number = int(value.strip())
    except ValueError:
        number = 0
    if number <= 0:
        raise _bad_value(name, value, "must be a positive integer")
    return number


def byte_size(name: str, value: str) -> int:
    """A size as Spark's ``JavaUtils.byteStringAs`` reads one in bytes: ``1048576``, ``512k``, ``10g``, ``1mb``."""
    found = _SIZE.match(value)
    number = int(found.group(1)) * _UNITS[found.group(2).lower()] if found else 0
    if number <= 0:
        raise _bad_value(name, value, "must be a size such as '10g'")
    return number


def column_list(name: str, value: str) -> tuple[str, ...]:
    """Column names as a JSON array (``["day", "hour"]``) or comma-separated (``day,hour``)."""
    text = value.strip()
    if text.startswith("["):
        try:
            parsed = orjson.loads(text)
        except orjson.JSONDecodeError:
            parsed = None
        if not (isinstance(parsed, list) and all(isinstance(c, str) and c for c in parsed)):
            raise _bad_value(name, value, "must be a JSON array of column names or a comma-separated list")
        return tuple(parsed)
    names = tuple(part.strip() for part in text.split(",")) if text else ()
    if any(not n for n in names):
        raise _bad_value(name, value, "has an empty column name")
    return names


@dataclass(frozen=True)
class Parsed:
    """The options of one read or write, classified: Delta's names (canonical spelling -> value), the
    storage options, the table properties (``delta.*``), the wrappers' control value."""

    context: str
    values: Mapping[str, str] = field(default_factory=dict)
    storage: Mapping[str, str] = field(default_factory=dict)
    properties: Mapping[str, str] = field(default_factory=dict)
    control: str | None = None

    def get(self, name: str) -> str | None:
        return self.values.get(name)

    def flag(self, name: str, default: bool = False) -> bool:
        value = self.values.get(name)
        return default if value is None else boolean(name, value)

    @property
    def path(self) -> str:
        paths = self.values.get("paths")
        if paths is not None and paths.strip() not in ("", "[]"):
            raise InvalidArgumentError(
                f"format('deltalog') reads one table; load() was given several paths ({paths}): read each, union them"
            )
        path = self.values.get("path")
        if not path:
            raise InvalidArgumentError("format('deltalog') needs the table's location: load(uri) or save(uri)")
        return path

    @property
    def storage_options(self) -> dict[str, Any] | None:
        return dict(self.storage) or None


def _unknown(key: str, context: str) -> InvalidArgumentError:
    names = sorted({s.name for s in SPECS if context in s.contexts and s.built and not s.name.startswith("_")})
    near = difflib.get_close_matches(key, [n.lower() for n in names], n=3, cutoff=0.6)
    by_lower = {n.lower(): n for n in names}
    hint = f"; did you mean {', '.join(by_lower[n] for n in near)}?" if near else ""
    return InvalidArgumentError(
        f"unknown option {key!r} for {_CONTEXT_TEXT[context]} of format('deltalog'): neither Delta Spark's "
        f"(DeltaOptions) nor a storage option in deltalake's names{hint}"
    )


def _not_yet(spec: Spec, key: str, value: str) -> UnsupportedFeatureError:
    return UnsupportedFeatureError(
        f"option {spec.name}={value!r} is supported by Delta Spark, not yet by deltalog's format('deltalog')",
        feature=spec.name,
    )


def parse(options: Mapping[str, Any], context: str) -> Parsed:
    """Classify ``options`` (Spark's case-insensitive map, or any mapping) for ``context``; refuse unknown names,
    names that do not apply there, and Delta names deltalog does not build yet, each by name."""
    values: dict[str, str] = {}
    storage: dict[str, str] = {}
    properties: dict[str, str] = {}
    control: str | None = None
    for raw_key, raw_value in options.items():
        key = str(raw_key)
        value = "" if raw_value is None else str(raw_value)
        low = key.lower()
        if low == CONTROL:
            control = value
            continue
        spec = BY_LOWER.get(low)
        if spec is not None:
            if context not in spec.contexts:
                where = " or ".join(_CONTEXT_TEXT[c] for c in sorted(spec.contexts))
                raise InvalidArgumentError(
                    f"option {spec.name} does not apply to {_CONTEXT_TEXT[context]}: it is for {where}"
                )
            if not spec.built and (spec.off is None or value.strip().lower() != spec.off):
                raise _not_yet(spec, key, value)
            values[spec.name] = value
        elif low.startswith("delta."):
            if context not in _ANY_WRITE:
                raise InvalidArgumentError(
                    f"option {key!r} is a table property: it applies to a write that creates the table, not to "
                    f"{_CONTEXT_TEXT[context]}"
                )
            properties[canonical_key(key)] = value
        elif is_storage_option(key):
            storage[low] = value
        else:
            raise _unknown(key, context)
    return Parsed(context, values, storage, properties, control)


__all__ = [
    "BY_LOWER",
    "CONTROL",
    "NAME",
    "PARTITION_OVERWRITE_MODES",
    "READ",
    "SPECS",
    "STREAM_READ",
    "STREAM_WRITE",
    "WRITE",
    "Parsed",
    "Spec",
    "boolean",
    "byte_size",
    "column_list",
    "non_negative",
    "parse",
    "positive",
]
