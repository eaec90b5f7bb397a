"""Protocol gating: which protocols this engine will replay.

The accepted reader features change what a *data* reader must do (apply deletion vectors, map column
names, widen types, decode variants), not how the log replays, so the snapshot is correct with them and
exposes them for the data reader to decide. Everything else is refused by name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from deltalog.core.actions import Protocol
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


def supported_features(protocol: Protocol) -> frozenset[str]:
    """Features the protocol supports: listed ones, or those implied by legacy versions."""
    out: set[str] = set(protocol.reader_features or ()) | set(protocol.writer_features or ())
    if protocol.min_writer_version < 7:
        for version, names in _LEGACY_WRITER:
            if protocol.min_writer_version >= version:
                out.update(names)
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
    "READER_FEATURES_FOR_REPLAY",
    "WRITER_FEATURES_HONOURED",
    "WRITER_FEATURES_IF_UNUSED",
    "check_readable",
    "check_configuration_honoured",
    "check_writable",
    "nested_fields",
    "supported_features",
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
        "typeWidening",  # obligations arise only when a type is changed, which deltalog never does
        "typeWidening-preview",
        "variantType",
        "variantType-preview",
    }
)

#: Writer features honoured only while the table does not use them (the "use" test is in :func:`_uses`).
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


def _walk_fields(schema: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    stack = [schema]
    while stack:
        t = stack.pop()
        if not isinstance(t, dict):
            continue
        kind = t.get("type")
        if kind == "struct":
            for f in t.get("fields", []):
                out.append(f)
                stack.append(f.get("type"))
        elif kind == "array":
            stack.append(t.get("elementType"))
        elif kind == "map":
            stack.extend((t.get("keyType"), t.get("valueType")))
    return out


def _uses(feature: str, configuration: Mapping[str, str], schema: Any) -> bool:
    """Whether the table actively uses a feature whose writer obligations deltalog does not implement."""
    conf = {k.lower(): str(v).strip().lower() for k, v in configuration.items()}
    meta_keys = [k for f in _walk_fields(schema) for k in (f.get("metadata") or {})]
    if feature == "invariants":
        return "delta.invariants" in meta_keys
    if feature == "checkConstraints":
        return any(k.startswith("delta.constraints.") for k in configuration)
    if feature == "generatedColumns":
        return "delta.generationExpression" in meta_keys
    if feature == "identityColumns":
        return any(k.startswith("delta.identity.") for k in meta_keys)
    if feature == "changeDataFeed":
        return "true" in (conf.get("delta.enablechangedatafeed"), conf.get("delta.enablechangedatacapture"))
    if feature == "columnMapping":
        return conf.get("delta.columnmapping.mode", "none") != "none"
    if feature == "deletionVectors":
        return conf.get("delta.enabledeletionvectors") == "true"
    if feature == "inCommitTimestamp":
        return conf.get("delta.enableincommittimestamps") == "true"
    return True


def check_configuration_honoured(configuration: Mapping[str, str], schema: Any, source: str) -> None:
    """Refuse table properties (and schema metadata) that would switch on a feature deltalog cannot honour.

    Without this, ``delta.columnMapping.mode=name`` on a legacy protocol would be stored and silently mean
    nothing, and other engines would later read the table with a mode its files do not follow.
    """
    conf = {k.lower(): str(v).strip().lower() for k, v in configuration.items()}
    for name in sorted(WRITER_FEATURES_IF_UNUSED):
        if _uses(name, configuration, schema):
            raise UnsupportedFeatureError(
                f"cannot write: the configuration turns on {name!r}, which deltalog does not implement ({source})",
                feature=name,
                path=source,
            )
    if conf.get("delta.enablerowtracking") == "true":
        raise UnsupportedFeatureError(
            f"cannot write: delta.enableRowTracking needs row tracking, which deltalog does not implement ({source})",
            feature="rowTracking",
            path=source,
        )


def check_writable(protocol: Protocol, configuration: Mapping[str, str], schema: Any, source: str) -> None:
    """Refuse to write a table whose protocol asks for writer behaviour this engine does not implement.

    Reading stays allowed: the refusal is about obligations on new commits (e.g. computing generated
    columns, writing change data files, assigning row ids).
    """
    check_readable(protocol, source)
    where = f" (protocol in {source})"
    w = protocol.min_writer_version
    if w > MAX_WRITER_VERSION:
        raise UnsupportedFeatureError(
            f"table requires writer version {w}; deltalog writes up to {MAX_WRITER_VERSION}{where}",
            feature=f"writerVersion={w}",
            path=source,
        )
    for name in sorted(supported_features(protocol)):
        if name in WRITER_FEATURES_HONOURED:
            continue
        if name in WRITER_FEATURES_IF_UNUSED and not _uses(name, configuration, schema):
            continue
        raise UnsupportedFeatureError(
            f"cannot write: the table uses writer feature {name!r}, which deltalog does not implement{where}",
            feature=name,
            path=source,
        )


def nested_fields(schema: Any) -> list[dict[str, Any]]:
    """Every struct field of ``schema`` at any depth (inside structs, arrays and maps)."""
    return _walk_fields(schema)
