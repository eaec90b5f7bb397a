"""Protocol gating: which protocols this engine will replay.

The accepted reader features change what a *data* reader must do (apply deletion vectors, map column
names, widen types, decode variants), not how the log replays, so the snapshot is correct with them and
exposes them for the data reader to decide. Everything else is refused by name.
"""

from __future__ import annotations

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
            raise UnsupportedFeatureError(
                f"reader feature {name!r} is not supported{where}", feature=name, path=source
            )
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
    "check_readable",
    "supported_features",
]
