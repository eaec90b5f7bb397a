"""Protocol gating: which protocols this engine will replay.

The accepted reader features change what a *data* reader must do (apply deletion vectors, map column
names, widen types, decode variants), not how the log replays, so the snapshot is correct with them and
exposes them for the data reader to decide. Everything else is refused by name.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from deltalog.core.actions import Protocol
from deltalog.core.features.property_rules import CONSTRAINT_PREFIX, PROPERTY_FEATURES, activated_features
from deltalog.core.schema import walk_fields, walk_types
from deltalog.errors import UnsupportedFeatureError

MAX_READER_VERSION = 3
MAX_WRITER_VERSION = 7

READER_FEATURES_FOR_REPLAY: frozenset[str] = frozenset(
    {
        "deletionVectors",
        "columnMapping",
        "timestampNtz",
        "v2Checkpoint",
        "typeWidening",
        "typeWidening-preview",
        "variantType",
        "variantType-preview",
        "variantShredding",
        "variantShredding-preview",
        "vacuumProtocolCheck",
    }
)

#: Refused even though some engines know them: the file system is not the commit authority for them.
CATALOG_FEATURES = frozenset({"catalogManaged", "catalogOwned", "catalogOwned-preview"})

# Legacy (reader, writer) versions imply features; from writer 7 / reader 3 only the lists count.
_LEGACY_WRITER = [
    (2, ("appendOnly", "invariants")),
    (3, ("checkConstraints",)),
    (4, ("changeDataFeed", "generatedColumns")),
    (5, ("columnMapping",)),
    (6, ("identityColumns",)),
]


def legacy_features(reader: int, writer: int) -> frozenset[str]:
    """The features legacy protocol versions imply (PROTOCOL.md "Table Features for New and Existing
    Tables"); from writer version 7 on, only the lists count."""
    out: set[str] = set()
    if writer < 7:
        for version, names in _LEGACY_WRITER:
            if writer >= version:
                out.update(names)
    if reader == 2:
        out.add("columnMapping")
    return frozenset(out)


def supported_features(protocol: Protocol) -> frozenset[str]:
    """Features the protocol supports: listed ones, or those implied by legacy versions."""
    out: set[str] = set(protocol.reader_features or ()) | set(protocol.writer_features or ())
    if protocol.min_writer_version < 7:
        out.update(legacy_features(1, protocol.min_writer_version))
    return frozenset(out)


def check_readable(protocol: Protocol, source: str) -> None:
    """Refuse a protocol the replay cannot honour; ``source`` names the file the protocol came from."""
    where = f" (protocol in {source})"
    r, w = protocol.min_reader_version, protocol.min_writer_version
    if not isinstance(r, int) or not isinstance(w, int) or r < 1 or w < 1:
        raise UnsupportedFeatureError(f"invalid protocol versions reader={r!r} writer={w!r}{where}", path=source)
    if r > MAX_READER_VERSION:
        raise UnsupportedFeatureError(
            f"table requires reader version {r}; deltalog reads up to {MAX_READER_VERSION}{where}",
            feature=f"readerVersion={r}",
            path=source,
        )
    reader = protocol.reader_features
    writer = protocol.writer_features
    if reader is not None and r != 3:
        raise UnsupportedFeatureError(
            f"invalid protocol: readerFeatures present with reader version {r} (they require version 3){where}",
            feature="readerFeatures",
            path=source,
        )
    if r == 3 and reader is None:
        raise UnsupportedFeatureError(
            f"invalid protocol: reader version 3 without a readerFeatures list{where}", path=source
        )
    if reader is not None and w != 7:
        raise UnsupportedFeatureError(
            f"invalid protocol: readerFeatures require writer version 7, found {w}{where}", path=source
        )
    for name in reader or ():
        if name in CATALOG_FEATURES:
            raise UnsupportedFeatureError(
                f"reader feature {name!r} is not supported: the table's commits are owned by a catalog{where}",
                feature=name,
                path=source,
            )
        if name not in READER_FEATURES_FOR_REPLAY:
            raise UnsupportedFeatureError(f"reader feature {name!r} is not supported{where}", feature=name, path=source)
    missing = [n for n in reader or () if n not in (writer or ())]
    if missing:
        raise UnsupportedFeatureError(
            f"invalid protocol: reader features {missing} are not listed in writerFeatures{where}",
            feature=missing[0],
            path=source,
        )


__all__ = [
    "CATALOG_FEATURES",
    "MAX_READER_VERSION",
    "MAX_WRITER_VERSION",
    "KNOWN_FEATURES",
    "METADATA_ENABLED",
    "PROPERTY_FEATURES_IMPLEMENTED",
    "SCHEMA_FEATURES_IMPLEMENTED",
    "READER_FEATURES_FOR_REPLAY",
    "READER_WRITER_FEATURES",
    "WRITER_FEATURES_HONOURED",
    "WRITER_FEATURES_IF_UNUSED",
    "check_readable",
    "check_configuration_honoured",
    "configuration_features",
    "feature_name",
    "legacy_features",
    "required_features",
    "schema_features",
    "supported_features",
    "upgrade_protocol",
]


# ------------------------------------------------------------------------------------------------ writing

#: Writer features this engine honours whatever the table does with them.
WRITER_FEATURES_HONOURED: frozenset[str] = frozenset(
    {
        "appendOnly",  # enforced when active: removes with dataChange are refused
        "domainMetadata",  # domains are preserved and reconciled
        "v2Checkpoint",  # commits are unaffected; checkpoints follow the table's policy
        "timestampNtz",
        "vacuumProtocolCheck",
        "typeWidening",  # obligations arise only when a type is changed: features.type_widening
        "typeWidening-preview",
        "variantType",
        "variantType-preview",
        "variantShredding",  # writers may shred variants, never must: deltalog writes them unshredded
        "variantShredding-preview",
    }
)

#: Writer features honoured only while the table does not use them (which use needs what, per operation, is
#: :mod:`deltalog.core.features.obligations`'s).
WRITER_FEATURES_IF_UNUSED: frozenset[str] = frozenset(
    {
        "invariants",
        "checkConstraints",
        "generatedColumns",
        "identityColumns",
        "changeDataFeed",
        "columnMapping",
        "deletionVectors",
        "inCommitTimestamp",
    }
)


#: Features whose obligations deltalog meets, so it adds them to the protocol in the commit whose metadata
#: needs them (a property switching them on, a column of their type), as Delta Spark does.
#: Type widening's obligations arise only when a type is changed, which :meth:`deltalog.DeltaLog.change_column_type`
#: does by the protocol's rules (:mod:`deltalog.core.features.type_widening`).
PROPERTY_FEATURES_IMPLEMENTED: frozenset[str] = frozenset(
    {
        "appendOnly",
        "v2Checkpoint",
        "deletionVectors",
        "changeDataFeed",
        "columnMapping",
        "checkConstraints",
        "inCommitTimestamp",
        "rowTracking",
        "typeWidening",
    }
)
#: features that need others in the same protocol (PROTOCOL.md: row tracking and clustering keep their state
#: in domain metadata)
FEATURE_REQUIRES: Mapping[str, frozenset[str]] = {
    "rowTracking": frozenset({"domainMetadata"}),
    "clustering": frozenset({"domainMetadata"}),
}
#: generated columns and defaults: deltalog's data writer computes, fills and checks them on every row; identity
#: columns: it generates their values above the high-water mark and the commit advances the mark
SCHEMA_FEATURES_IMPLEMENTED: frozenset[str] = frozenset(
    {"timestampNtz", "variantType", "typeWidening", "generatedColumns", "allowColumnDefaults", "identityColumns"}
)
#: a feature whose preview name, already supported, does the same job
_SATISFIED_BY = {"variantType": "variantType-preview", "typeWidening": "typeWidening-preview"}
#: features a reader must know, listed in readerFeatures as well (reader version 3)
READER_WRITER_FEATURES: frozenset[str] = READER_FEATURES_FOR_REPLAY | CATALOG_FEATURES | {"variantShredding"}
#: the lowest legacy writer version implying each legacy feature
_LEGACY_MIN_WRITER = {name: version for version, names in _LEGACY_WRITER for name in names}
#: feature names this engine knows, for matching ``delta.feature.<name>`` regardless of case as Spark does
KNOWN_FEATURES: frozenset[str] = (
    READER_WRITER_FEATURES
    | WRITER_FEATURES_HONOURED
    | WRITER_FEATURES_IF_UNUSED
    | frozenset(_LEGACY_MIN_WRITER)
    | {
        "allowColumnDefaults",
        "checkpointProtection",
        "clustering",
        "collations",
        "coordinatedCommits-preview",
        "icebergCompatV1",
        "icebergCompatV2",
        "icebergCompatV3",
        "icebergWriterCompatV1",
        "materializePartitionColumns",
        "rowTracking",
    }
)
_KNOWN_BY_LOWER = {f.lower(): f for f in KNOWN_FEATURES}
#: column metadata keys (or key prefixes, ending in ".") that put a column under a writer feature
_METADATA_FEATURES = {
    "delta.typeChanges": "typeWidening",
    "delta.identity.": "identityColumns",
    "delta.invariants": "invariants",
    "delta.generationExpression": "generatedColumns",
    "CURRENT_DEFAULT": "allowColumnDefaults",
    "__COLLATIONS": "collations",
}
_TYPE_FEATURES = {"timestamp_ntz": "timestampNtz", "variant": "variantType"}
#: features a table switches on through its metadata (a property, a column's type or metadata, a CHECK
#: constraint); every other feature is in use wherever the protocol supports it (PROTOCOL "Enabled Features")
METADATA_ENABLED: frozenset[str] = (
    PROPERTY_FEATURES
    | frozenset(_TYPE_FEATURES.values())
    | frozenset(_METADATA_FEATURES.values())
    | {"checkConstraints"}
)


def feature_name(name: str) -> str:
    """The canonical spelling of a feature name deltalog knows; other names as given."""
    return _KNOWN_BY_LOWER.get(name.lower(), name)


def schema_features(schema: Any) -> dict[str, str]:
    """Table feature -> the first column (path) whose type or metadata needs it (PROTOCOL.md: a
    ``timestamp_ntz`` column needs ``timestampNtz``, a variant ``variantType``, type-change metadata
    ``typeWidening``, identity/generation/invariant/default metadata their writer features)."""
    out: dict[str, str] = {}
    for path, t in walk_types(schema):
        if isinstance(t, str) and t in _TYPE_FEATURES:
            out.setdefault(_TYPE_FEATURES[t], path)
    for at in walk_fields(schema):
        meta = at.field.get("metadata")
        for key in meta if isinstance(meta, Mapping) else ():
            for marker, feature in _METADATA_FEATURES.items():
                if key == marker or (marker.endswith(".") and str(key).startswith(marker)):
                    out.setdefault(feature, at.path)
    return out


def configuration_features(configuration: Mapping[str, str]) -> dict[str, str]:
    """Table feature -> the property that switches it on (CHECK constraints included)."""
    out = activated_features(configuration)
    constraint = next((k for k in configuration if str(k).lower().startswith(CONSTRAINT_PREFIX)), None)
    if constraint is not None:
        out.setdefault("checkConstraints", constraint)
    return out


def required_features(configuration: Mapping[str, str], schema: Any) -> frozenset[str]:
    """The features deltalog adds to the protocol for this metadata (those it implements)."""
    by_properties = set(configuration_features(configuration)) & PROPERTY_FEATURES_IMPLEMENTED
    return frozenset(by_properties | (set(schema_features(schema)) & SCHEMA_FEATURES_IMPLEMENTED))


def upgrade_protocol(
    base: Protocol, features: Iterable[str] = (), reader: int | None = None, writer: int | None = None
) -> Protocol:
    """The smallest protocol at or above ``base`` that supports ``features`` and the requested versions.

    ``base`` itself when it already does. A legacy protocol stays legacy while legacy versions can express
    the result (Delta Spark's choice: (1,2) plus checkConstraints is (1,3)); otherwise the result lists its
    features, and the list includes every feature the legacy versions implied (PROTOCOL.md: writer 7 with
    explicit lists must not lose what (1,2)...(x,6) meant). Reader+writer features make it (3,7).
    """
    have = supported_features(base)
    r = max(base.min_reader_version, reader or 0)
    w = max(base.min_writer_version, writer or 0)
    if r == 2:
        w = max(w, 5)  # reader version 2 means column mapping, which needs writer version 5
    asked = set(features)
    asked |= {dep for f in asked for dep in FEATURE_REQUIRES.get(f, ())}
    wanted = {f for f in asked if f not in have and _SATISFIED_BY.get(f) not in have}
    if reader is not None or writer is not None:
        wanted |= legacy_features(reader or 1, writer or 1) - have
    if not wanted and (r, w) == (base.min_reader_version, base.min_writer_version):
        return base
    if base.writer_features is None and r < 3 and w < 7 and all(f in _LEGACY_MIN_WRITER for f in wanted):
        w = max([w, *(_LEGACY_MIN_WRITER[f] for f in wanted)])
        if "columnMapping" in wanted:
            r = max(r, 2)
        return Protocol(r, w)
    listed = set(have) | wanted
    if base.writer_features is None:
        listed |= legacy_features(r, w)
    reader_side = sorted((listed & READER_WRITER_FEATURES) | set(base.reader_features or ()))
    if reader_side or r >= 3:
        return Protocol(3, 7, tuple(reader_side), tuple(sorted(listed)))
    return Protocol(1, 7, None, tuple(sorted(listed)))


def check_configuration_honoured(
    configuration: Mapping[str, str], schema: Any, source: str, previous_schema: Any = None
) -> None:
    """Refuse table properties (and schema metadata) that would switch on a feature deltalog cannot honour.

    Without this, ``delta.columnMapping.mode=name`` would be stored and silently mean nothing, and other
    engines would later read the table with a mode its files do not follow. Features deltalog implements
    pass (:data:`PROPERTY_FEATURES_IMPLEMENTED`, :data:`SCHEMA_FEATURES_IMPLEMENTED`): the commit adds them
    to the protocol. With ``previous_schema``, only features the schema newly uses are checked.
    """
    for feature, key in sorted(configuration_features(configuration).items()):
        if feature not in PROPERTY_FEATURES_IMPLEMENTED:
            raise UnsupportedFeatureError(
                f"cannot write: {key}={configuration.get(key)!r} turns on {feature!r}, which deltalog does not "
                f"implement ({source})",
                feature=feature,
                path=source,
            )
    before = schema_features(previous_schema) if previous_schema is not None else {}
    for feature, column in sorted(schema_features(schema).items()):
        if feature not in SCHEMA_FEATURES_IMPLEMENTED and feature not in before:
            raise UnsupportedFeatureError(
                f"cannot write: column {column!r} uses {feature!r}, which deltalog does not implement ({source})",
                feature=feature,
                path=source,
            )
