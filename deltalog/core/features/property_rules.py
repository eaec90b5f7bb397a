"""Which table properties a writer may set, and to what: Delta Spark's configuration validation, plus
deltalog's own refusals for values it could not honour.

Delta Spark (``DeltaConfigs.validateConfigurations``) matches ``delta.*`` keys case-insensitively, stores
them in their canonical spelling and parses each value with the key's syntax and range; an unknown
``delta.*`` key is an error. Keys without the ``delta.`` prefix are the caller's own. Some keys are never
set by hand: the engine maintains them (``delta.columnMapping.maxColumnId``, the in-commit-timestamp
enablement pair, ...), or another operation owns them (``delta.constraints.*`` belong to ADD CONSTRAINT,
clustering columns to CLUSTER BY).

The rules run when a value is *set* (create, set_properties, a metaData committed with changed keys),
never on values a table already holds: a table another engine wrote must stay readable, and repairable
with set_properties/unset_properties. Maintenance that depends on a value reads it through
:mod:`deltalog.core.features.properties`, whose errors name the key and the fix.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from deltalog.core.features.properties import (
    DEFAULT_DELETED_FILE_RETENTION,
    DEFAULT_LOG_RETENTION,
    PARQUET_CODECS,
    PropertyError,
    parse_interval_ms,
)

FEATURE_PREFIX = "delta.feature."
CONSTRAINT_PREFIX = "delta.constraints."
UNIVERSAL_FORMAT_CONFIG_PREFIX = "delta.universalformat.config."
MIN_READER_VERSION = "delta.minReaderVersion"
MIN_WRITER_VERSION = "delta.minWriterVersion"
#: Delta Spark's table property for clustering columns (ClusteredTableUtils.PROP_CLUSTERING_COLUMNS)
CLUSTERING_COLUMNS = "clusteringColumns"
LOG_RETENTION = "delta.logRetentionDuration"
DELETED_FILE_RETENTION = "delta.deletedFileRetentionDuration"

_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)
_SPARK_UNITS = ("microsecond", "millisecond", "second", "minute", "hour", "day", "week")
_INTERVAL_PART = re.compile(r"([+-]?\d+(?:\.\d+)?)\s+([a-z]+)")


@dataclass(frozen=True)
class PropertySpec:
    """One known key: its canonical spelling, how its value is checked (returning the value to store), and
    the table feature a value switches on (``activates(value)`` gives the feature name or None)."""

    key: str
    check: Callable[[str], str]
    activates: Callable[[str], str | None] = lambda value: None


class _Bad(ValueError):
    """A value's reason for refusal; the caller adds the key and the fix."""


def _bool(value: str) -> str:
    # Spark's String.toBoolean: true/false in any case. Stored in lower case, the only spelling every
    # reader parses (kernel-rs reads "TRUE" as unset, i.e. as the default).
    low = value.lower()
    if low not in ("true", "false"):
        raise _Bad("needs to be true or false")
    return low


def _int(low: int, high: int = _INT32[1], what: str = "an integer") -> Callable[[str], str]:
    def check(value: str) -> str:
        if not re.fullmatch(r"[+-]?\d+", value):
            raise _Bad(f"needs to be {what}")
        n = int(value)
        if not low <= n <= high:
            raise _Bad(f"needs to be {what} between {low} and {high}")
        return str(n)

    return check


def _interval(value: str) -> str:
    _spark_interval_ms(value)
    return value


def _choice(*choices: str) -> Callable[[str], str]:
    by_lower = {c.lower(): c for c in choices}

    def check(value: str) -> str:
        got = by_lower.get(value.strip().lower())
        if got is None:
            raise _Bad(f"needs to be one of {', '.join(choices)}")
        return got

    return check


def _text(value: str) -> str:
    return value


def _formats(value: str) -> str:
    names = [v.strip() for v in value.split(",") if v.strip()]
    unknown = [n for n in names if n.lower() not in ("iceberg", "hudi")]
    if unknown or len({n.lower() for n in names}) != len(names):
        raise _Bad("needs to be a comma-separated list of distinct formats from iceberg, hudi")
    return value


def _when(feature: str, *values: str) -> Callable[[str], str | None]:
    return lambda value: feature if value.strip().lower() in values else None


def _spark_interval_ms(text: str) -> int:
    """Milliseconds of an interval in Delta Spark's syntax (``interval 2 weeks``, ``1 day 12 hours``);
    :class:`_Bad` for anything Spark refuses: months or years (no fixed length), a fraction of a unit other
    than seconds, an unknown unit, a negative total."""
    s = text.strip().lower()
    body = s[len("interval") :].strip() if s.startswith("interval ") or s == "interval" else s
    if not body:
        raise _Bad("needs to be an interval such as 'interval 2 weeks'")
    pos = 0
    for m in _INTERVAL_PART.finditer(body):
        if body[pos : m.start()].strip():
            break
        pos = m.end()
        unit = m[2][:-1] if m[2].endswith("s") else m[2]
        if unit in ("month", "year"):
            raise _Bad("uses months or years, which have no fixed length: write days instead (e.g. '365 days')")
        if unit not in _SPARK_UNITS:
            raise _Bad(f"has an unknown unit {m[2]!r} (use {', '.join(u + 's' for u in _SPARK_UNITS)})")
        if "." in m[1] and unit != "second":
            raise _Bad(f"has a fraction of a {unit}: only seconds may have one")
    if pos == 0 or body[pos:].strip():
        raise _Bad("needs to be an interval such as 'interval 2 weeks'")
    try:
        ms = parse_interval_ms(body)
    except PropertyError as exc:
        raise _Bad(str(exc)) from None
    if ms < 0:
        raise _Bad("must not be negative")
    return ms


_BOOLEAN_KEYS = (
    "delta.autoOptimize",
    "delta.autoOptimize.optimizeWrite",
    "delta.checkpoint.writeStatsAsJson",
    "delta.checkpoint.writeStatsAsStruct",
    "delta.compatibility.symlinkFormatManifest.enabled",
    "delta.enableExpiredLogCleanup",
    "delta.enableFullRetentionRollback",
    "delta.ignoreProtocolDefaults",
    "delta.randomizeFilePrefixes",
    "delta.rowTrackingSuspended",
)
_INTERVAL_KEYS = (
    "delta.checkpointRetentionDuration",
    DELETED_FILE_RETENTION,
    LOG_RETENTION,
    "delta.sampleRetentionDuration",
    "delta.setTransactionRetentionDuration",
)
#: boolean keys whose ``true`` switches a table feature on (TableFeature.scala, FeatureAutomaticallyEnabledByMetadata)
_ENABLING_KEYS = {
    "delta.appendOnly": "appendOnly",
    "delta.enableChangeDataFeed": "changeDataFeed",
    "delta.enableChangeDataCapture": "changeDataFeed",  # the legacy spelling Spark still honours
    "delta.enableDeletionVectors": "deletionVectors",
    "delta.enableIcebergCompatV1": "icebergCompatV1",
    "delta.enableIcebergCompatV2": "icebergCompatV2",
    "delta.enableIcebergCompatV3": "icebergCompatV3",
    "delta.enableIcebergWriterCompatV1": "icebergWriterCompatV1",
    "delta.enableInCommitTimestamps": "inCommitTimestamp",
    "delta.enableRowTracking": "rowTracking",
    "delta.enableTypeWidening": "typeWidening",
    "delta.enableVariantShredding": "variantShredding",
}
_COORDINATED_COMMITS = (
    "delta.coordinatedCommits.commitCoordinator-preview",
    "delta.coordinatedCommits.commitCoordinatorConf-preview",
    "delta.coordinatedCommits.tableConf-preview",
)

_SPECS: list[PropertySpec] = [
    *(PropertySpec(k, _bool) for k in _BOOLEAN_KEYS),
    *(PropertySpec(k, _interval) for k in _INTERVAL_KEYS),
    *(PropertySpec(k, _bool, _when(f, "true")) for k, f in _ENABLING_KEYS.items()),
    *(PropertySpec(k, _text, lambda value: "coordinatedCommits-preview") for k in _COORDINATED_COMMITS),
    PropertySpec("delta.autoOptimize.autoCompact", _choice("auto", "legacy", "true", "false")),
    PropertySpec("delta.checkpointInterval", _int(1, what="a positive integer")),
    PropertySpec("delta.checkpoint.partSize", _int(1, _INT64[1], what="a positive integer")),
    PropertySpec("delta.checkpointPolicy", _choice("classic", "v2"), _when("v2Checkpoint", "v2")),
    PropertySpec("delta.columnMapping.mode", _choice("none", "name", "id"), _when("columnMapping", "name", "id")),
    PropertySpec("delta.dataSkippingNumIndexedCols", _int(-1, what="an integer >= -1")),
    PropertySpec("delta.dataSkippingStatsColumns", _text),
    # Delta Spark OSS accepts Serializable only; Databricks also writes WriteSerializable, which deltalog's
    # conflict checker implements. SnapshotIsolation is refused: it would let writes skip conflict checks.
    PropertySpec("delta.isolationLevel", _choice("Serializable", "WriteSerializable")),
    # read by deltalog's checkpoint writer: only codecs it can write (kernel-rs reads the same key)
    PropertySpec("delta.parquet.compression.codec", _choice(*PARQUET_CODECS)),
    PropertySpec("delta.randomPrefixLength", _int(1, what="a positive integer")),
    PropertySpec(
        "delta.universalFormat.enabledFormats", _formats, lambda value: "icebergCompatV2" if value.strip() else None
    ),
]
KNOWN: dict[str, PropertySpec] = {s.key.lower(): s for s in _SPECS}
#: every feature a property can switch on (what :func:`activated_features` may name)
PROPERTY_FEATURES: frozenset[str] = frozenset(
    {*_ENABLING_KEYS.values(), "coordinatedCommits-preview", "v2Checkpoint", "columnMapping", "icebergCompatV2"}
)

#: keys the engine maintains; setting or unsetting them by hand breaks what they record
INTERNAL: dict[str, str] = {
    "delta.columnMapping.maxColumnId": "column mapping maintains it as columns are added (it may only grow)",
    "delta.inCommitTimestampEnablementVersion": "it is written when in-commit timestamps are enabled, and "
    "timestamp time travel depends on it",
    "delta.inCommitTimestampEnablementTimestamp": "it is written when in-commit timestamps are enabled, and "
    "timestamp time travel depends on it",
    "delta.requireCheckpointProtectionBeforeVersion": "DROP FEATURE writes it (checkpointProtection); log cleanup "
    "depends on it",
    "delta.rowTracking.materializedRowIdColumnName": "enabling row tracking assigns it",
    "delta.rowTracking.materializedRowCommitVersionColumnName": "enabling row tracking assigns it",
}
_INTERNAL_LOWER = {k.lower(): k for k in INTERNAL}
_CONSTRAINTS_HINT = (
    "CHECK constraints are added with ALTER TABLE ... ADD CONSTRAINT, which validates the existing rows; "
    "deltalog does not implement it"
)
_CLUSTERING_HINT = (
    "clustering is set with CLUSTER BY (CREATE or ALTER TABLE); deltalog does not implement clustered tables"
)


@dataclass(frozen=True)
class ProtocolRequest:
    """What ``delta.minReaderVersion``, ``delta.minWriterVersion`` and ``delta.feature.<name>`` ask for."""

    reader: int | None = None
    writer: int | None = None
    features: frozenset[str] = frozenset()


def _refuse(key: str, value: str | None, reason: str) -> PropertyError:
    shown = f"{key}={value!r}" if value is not None else key
    return PropertyError(f"table property {shown}: {reason}", key=key, value=value)


def _as_text(key: object, value: object) -> tuple[str, str]:
    if not isinstance(key, str):
        raise PropertyError(f"table property keys are strings, not {key!r}", key=str(key))
    if isinstance(value, bool):
        return key, "true" if value else "false"
    if isinstance(value, int):
        return key, str(value)
    if not isinstance(value, str):
        raise _refuse(key, None, f"the value must be a string, not {value!r}")
    return key, value


def canonical_key(key: str) -> str:
    """Delta Spark's spelling of a known ``delta.*`` key; other keys as given."""
    low = key.lower()
    spec = KNOWN.get(low)
    if spec is not None:
        return spec.key
    return _INTERNAL_LOWER.get(low, key)


def split_protocol_requests(configuration: Mapping[str, object]) -> tuple[ProtocolRequest, dict[str, object]]:
    """The protocol requests in a configuration (checked), and the rest of it."""
    reader = writer = None
    features: set[str] = set()
    rest: dict[str, object] = {}
    for raw_key, raw_value in configuration.items():
        key, value = _as_text(raw_key, raw_value)
        low = key.lower()
        if low in (MIN_READER_VERSION.lower(), MIN_WRITER_VERSION.lower()):
            reader_key = low == MIN_READER_VERSION.lower()
            high = 3 if reader_key else 7
            try:
                version = int(_int(1, high, what="a protocol version")(value.strip()))
            except _Bad as exc:
                raise _refuse(MIN_READER_VERSION if reader_key else MIN_WRITER_VERSION, value, str(exc)) from None
            if reader_key:
                reader = version
            else:
                writer = version
        elif low.startswith(FEATURE_PREFIX):
            name = key[len(FEATURE_PREFIX) :]
            if value.strip().lower() not in ("supported", "enabled"):
                raise _refuse(key, value, "a feature can only be added: the value must be 'supported'")
            if name.lower() == "clustering":
                raise _refuse(key, value, _CLUSTERING_HINT)
            features.add(name)
        else:
            rest[key] = raw_value
    return ProtocolRequest(reader, writer, frozenset(features)), rest


def validate_updates(updates: Mapping[str, object], *, allow_unknown: bool = False) -> dict[str, str]:
    """The properties a caller sets (protocol requests already split off), keyed by canonical spelling with
    the values to store; :class:`PropertyError` names the first key that cannot be set and why.

    ``allow_unknown`` lets ``delta.*`` keys this engine does not know through unchanged (Databricks and
    Fabric set some, e.g. ``delta.targetFileSize``), as Spark's ``allowArbitraryProperties`` does.
    """
    out: dict[str, str] = {}
    for raw_key, raw_value in updates.items():
        key, value = _as_text(raw_key, raw_value)
        low = key.lower()
        if low.startswith(CONSTRAINT_PREFIX):
            raise _refuse(key, value, _CONSTRAINTS_HINT)
        if key == CLUSTERING_COLUMNS:
            raise _refuse(key, value, _CLUSTERING_HINT)
        if low in _INTERNAL_LOWER:
            internal = _INTERNAL_LOWER[low]
            raise _refuse(internal, value, f"cannot be set by hand: {INTERNAL[internal]}")
        if low.startswith(FEATURE_PREFIX) or low in (MIN_READER_VERSION.lower(), MIN_WRITER_VERSION.lower()):
            raise _refuse(key, value, "is a protocol request, not a property")
        spec = KNOWN.get(low)
        if spec is not None:
            try:
                stored = spec.check(value)
            except _Bad as exc:
                raise _refuse(spec.key, value, str(exc)) from None
            key = spec.key
        elif low.startswith("delta.") and not low.startswith(UNIVERSAL_FORMAT_CONFIG_PREFIX) and not allow_unknown:
            raise _refuse(
                key,
                value,
                "is not a Delta table property deltalog knows; pass allow_unknown_properties=True to store it "
                "anyway (for keys another engine defines)",
            )
        else:
            stored = value
        if key in out and out[key] != stored:
            raise _refuse(key, value, "is given twice with different values (keys are case-insensitive)")
        out[key] = stored
    return out


def check_unset(keys: Iterable[str]) -> None:
    """Refuse unsetting keys the engine maintains (see :data:`INTERNAL`) or clustering owns."""
    for key in keys:
        if not isinstance(key, str):
            raise PropertyError(f"table property keys are strings, not {key!r}", key=str(key))
        low = key.lower()
        if low in _INTERNAL_LOWER:
            internal = _INTERNAL_LOWER[low]
            raise _refuse(internal, None, f"cannot be unset by hand: {INTERNAL[internal]}")
        if key == CLUSTERING_COLUMNS:
            raise _refuse(key, None, _CLUSTERING_HINT)


def keys_matching(configuration: Mapping[str, str], key: str) -> list[str]:
    """The keys of ``configuration`` that ``key`` names: ``delta.*`` keys regardless of case (so a key stored
    in another spelling can be removed), other keys exactly."""
    if not key.lower().startswith("delta."):
        return [key] if key in configuration else []
    return [k for k in configuration if k.lower() == key.lower()]


def check_changed(before: Mapping[str, str], after: Mapping[str, str]) -> None:
    """The rules for a metaData committed directly: every key whose value changes is checked as
    :func:`validate_updates` checks it, except that keys it does not know (or maintains) pass, since a
    writer may carry them over from another version of the table (restore does)."""
    changed = {k: v for k, v in after.items() if before.get(k) != v}
    for key, value in changed.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise PropertyError(f"table property {key!r}={value!r}: keys and values must be strings", key=str(key))
        low = key.lower()
        if low.startswith(FEATURE_PREFIX) or low in (MIN_READER_VERSION.lower(), MIN_WRITER_VERSION.lower()):
            raise _refuse(key, value, "is a protocol request: commit a protocol action (or use set_properties)")
        spec = KNOWN.get(low)
        if spec is None:
            continue
        if key != spec.key:
            raise _refuse(key, value, f"write it as {spec.key!r}: readers look the key up in that spelling")
        try:
            spec.check(value)
        except _Bad as exc:
            raise _refuse(spec.key, value, str(exc)) from None
    check_retention_pair(after, changed)


def check_retention_pair(configuration: Mapping[str, str], changed: Iterable[str]) -> None:
    """``delta.logRetentionDuration`` >= ``delta.deletedFileRetentionDuration`` (defaults standing in for
    unset keys), checked when either changes; a partner value that cannot be parsed is another engine's
    and is left for the caller to repair."""
    if not {LOG_RETENTION, DELETED_FILE_RETENTION} & set(changed):
        return
    try:
        log_ms = _spark_interval_ms(configuration.get(LOG_RETENTION, DEFAULT_LOG_RETENTION))
        deleted_ms = _spark_interval_ms(configuration.get(DELETED_FILE_RETENTION, DEFAULT_DELETED_FILE_RETENTION))
    except _Bad:
        return
    if log_ms < deleted_ms:
        log_value = configuration.get(LOG_RETENTION, DEFAULT_LOG_RETENTION)
        deleted_value = configuration.get(DELETED_FILE_RETENTION, DEFAULT_DELETED_FILE_RETENTION)
        raise PropertyError(
            f"table property {LOG_RETENTION}={log_value!r} is shorter than {DELETED_FILE_RETENTION}="
            f"{deleted_value!r}: the log must keep the versions whose removed files VACUUM still protects",
            key=LOG_RETENTION,
            value=log_value,
        )


def activated_features(configuration: Mapping[str, str]) -> dict[str, str]:
    """Table feature -> the key whose value switches it on, for the known keys in ``configuration``."""
    out: dict[str, str] = {}
    for key, value in configuration.items():
        spec = KNOWN.get(key.lower()) if isinstance(key, str) else None
        if spec is not None and isinstance(value, str):
            feature = spec.activates(value)
            if feature is not None:
                out.setdefault(feature, spec.key)
    return out


__all__ = [
    "CLUSTERING_COLUMNS",
    "FEATURE_PREFIX",
    "INTERNAL",
    "KNOWN",
    "PROPERTY_FEATURES",
    "PropertySpec",
    "ProtocolRequest",
    "activated_features",
    "canonical_key",
    "check_changed",
    "check_retention_pair",
    "check_unset",
    "keys_matching",
    "split_protocol_requests",
    "validate_updates",
]
