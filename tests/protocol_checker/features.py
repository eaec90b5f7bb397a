"""Table features as PROTOCOL.md defines them: names, kinds, legacy versions and dependencies.

Sources: "Valid Feature Names in Table Features" (appendix), "Writer Version Requirements", "Reader
Version Requirements", each feature's "To support this feature" paragraph, and the accepted RFCs under
``protocol_rfcs/`` (checkpointProtection, collations, materializePartitionColumns). Preview names that
Delta Spark and Databricks wrote before a feature was accepted are listed with their final name's kind.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: Features listed in both readerFeatures and writerFeatures ("Readers and writers" in the appendix).
READER_WRITER = frozenset(
    {
        "columnMapping",
        "deletionVectors",
        "timestampNtz",
        "v2Checkpoint",
        "vacuumProtocolCheck",
        "typeWidening",
        "typeWidening-preview",
        "variantType",
        "variantType-preview",
        "variantShredding",
        "variantShredding-preview",
        "catalogManaged",
        "catalogOwned-preview",
    }
)
#: Features listed in writerFeatures only.
WRITER_ONLY = frozenset(
    {
        "appendOnly",
        "invariants",
        "checkConstraints",
        "generatedColumns",
        "allowColumnDefaults",
        "changeDataFeed",
        "identityColumns",
        "rowTracking",
        "domainMetadata",
        "icebergCompatV1",
        "icebergCompatV2",
        "icebergWriterCompatV1",
        "clustering",
        "inCommitTimestamp",
        "checkpointProtection",
        "collations",
        "materializePartitionColumns",
        "coordinatedCommits-preview",
    }
)

#: What a legacy writer version implies ("Writer Version Requirements": each row inherits the previous).
LEGACY_WRITER = {
    1: frozenset(),
    2: frozenset({"appendOnly", "invariants"}),
    3: frozenset({"appendOnly", "invariants", "checkConstraints"}),
    4: frozenset({"appendOnly", "invariants", "checkConstraints", "changeDataFeed", "generatedColumns"}),
    5: frozenset(
        {"appendOnly", "invariants", "checkConstraints", "changeDataFeed", "generatedColumns", "columnMapping"}
    ),
    6: frozenset(
        {
            "appendOnly",
            "invariants",
            "checkConstraints",
            "changeDataFeed",
            "generatedColumns",
            "columnMapping",
            "identityColumns",
        }
    ),
}
#: What a legacy reader version implies ("Reader Version Requirements").
LEGACY_READER = {1: frozenset(), 2: frozenset({"columnMapping"})}

#: A feature that can only be supported with another one (feature sections' "To support this feature").
REQUIRES = {
    "rowTracking": ("domainMetadata",),
    "clustering": ("domainMetadata",),
    "variantShredding": ("variantType",),
    "variantShredding-preview": ("variantType-preview", "variantType"),
    "icebergCompatV1": ("columnMapping",),
    "icebergCompatV2": ("columnMapping",),
}


@dataclass(frozen=True)
class Protocol:
    """A protocol action's versions and its *effective* feature sets (legacy versions expanded)."""

    reader_version: int
    writer_version: int
    reader_features: frozenset[str]
    writer_features: frozenset[str]

    @classmethod
    def of(cls, body: Any) -> Protocol | None:
        """``None`` when the body is not a usable protocol (the shape rule reports why)."""
        if not isinstance(body, dict):
            return None
        rv, wv = body.get("minReaderVersion"), body.get("minWriterVersion")
        if not _is_int(rv) or not _is_int(wv):
            return None
        rf, wf = body.get("readerFeatures"), body.get("writerFeatures")
        readers = _names(rf) if rv == 3 else LEGACY_READER.get(rv, frozenset())
        writers = _names(wf) if wv == 7 else LEGACY_WRITER.get(min(max(wv, 1), 6), frozenset())
        return cls(rv, wv, readers, writers)

    def writer_supports(self, feature: str) -> bool:
        return feature in self.writer_features

    def supports(self, feature: str) -> bool:
        """Supported for both readers and writers where the feature is a reader-writer one."""
        if feature in READER_WRITER:
            return feature in self.writer_features and (feature in self.reader_features)
        return feature in self.writer_features

    def supports_any(self, *features: str) -> bool:
        return any(self.supports(f) for f in features)

    @property
    def all_features(self) -> frozenset[str]:
        return self.reader_features | self.writer_features


def _names(v: Any) -> frozenset[str]:
    return frozenset(x for x in v if isinstance(x, str)) if isinstance(v, list) else frozenset()


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def is_int(v: Any) -> bool:
    """An integral JSON number (booleans are not numbers here, though Python says they are)."""
    return _is_int(v)


def is_true(configuration: Any, key: str) -> bool:
    """A boolean table property: only the string ``true`` (case-insensitively, as Delta Spark parses it)."""
    if not isinstance(configuration, dict):
        return False
    value = configuration.get(key)
    return isinstance(value, str) and value.strip().lower() == "true"
