"""Protocol validity (PROTOCOL.md "Protocol Evolution", "Table Features", "Supported Features", each
feature's "To support this feature", "Writer/Reader Version Requirements").
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from ..context import CommitContext
from ..features import READER_WRITER, REQUIRES, WRITER_ONLY, Protocol, is_int, is_true
from ..report import Finding, rule
from ..state import CLUSTERING_DOMAIN, TableState


@dataclass(frozen=True)
class Need:
    """Something in the table that needs one of ``features`` supported; ``strict`` needs are SHOULDs."""

    features: tuple[str, ...]
    reason: str
    strict: bool


#: property (value ``true`` unless given) -> the features one of which must be supported for it to mean anything
PROPERTY_FEATURES = {
    "delta.enableDeletionVectors": ("deletionVectors",),
    "delta.enableChangeDataFeed": ("changeDataFeed",),
    "delta.appendOnly": ("appendOnly",),
    "delta.enableInCommitTimestamps": ("inCommitTimestamp",),
    "delta.enableRowTracking": ("rowTracking",),
    "delta.enableTypeWidening": ("typeWidening", "typeWidening-preview"),
    "delta.enableIcebergCompatV1": ("icebergCompatV1",),
    "delta.enableIcebergCompatV2": ("icebergCompatV2",),
    "delta.enableVariantShredding": ("variantShredding", "variantShredding-preview"),
}


def needs(state: TableState) -> list[Need]:
    """What the snapshot's schema, properties, domains and files need from its protocol."""
    out: list[Need] = []
    schema, conf = state.schema, state.configuration
    if schema.has_type("timestamp_ntz"):
        out.append(Need(("timestampNtz",), "a timestamp_ntz column", False))
    if schema.has_type("variant"):
        out.append(Need(("variantType", "variantType-preview"), "a variant column", False))
    if any(k.startswith("delta.constraints.") for k in conf):
        out.append(Need(("checkConstraints",), "a CHECK constraint (delta.constraints.*)", False))
    if state.domains:
        out.append(Need(("domainMetadata",), f"domain {sorted(state.domains)[0]!r}", False))
    if any(isinstance(a.get("deletionVector"), dict) for a in state.live.values()):
        out.append(Need(("deletionVectors",), "a live file with a deletion vector", False))
    for key, features in PROPERTY_FEATURES.items():
        if is_true(conf, key):
            out.append(Need(features, f"{key}=true", True))
    if conf.get("delta.columnMapping.mode") in ("name", "id"):
        out.append(Need(("columnMapping",), f"delta.columnMapping.mode={conf['delta.columnMapping.mode']}", True))
    if str(conf.get("delta.checkpointPolicy", "")).lower() == "v2":
        out.append(Need(("v2Checkpoint",), "delta.checkpointPolicy=v2", True))
    if CLUSTERING_DOMAIN in state.domains:
        out.append(Need(("clustering",), "the delta.clustering domain", True))
    column_needs = (
        ("delta.invariants", ("invariants",), "a column invariant"),
        ("delta.generationExpression", ("generatedColumns",), "a generated column"),
        ("delta.identity.start", ("identityColumns",), "an identity column"),
        ("CURRENT_DEFAULT", ("allowColumnDefaults",), "a column default"),
    )
    for key, features, reason in column_needs:
        if any(key in f.metadata for f in schema.fields):
            out.append(Need(features, reason, True))
    return out


def _protocol_actions(ctx: CommitContext) -> Iterator[tuple[int, dict[str, object], Protocol | None]]:
    for a in ctx.of_kind("protocol"):
        yield a.line, a.body, Protocol.of(a.body)


@rule("protocol.versions", scope="commit", section="Protocol Evolution; Table Features; Reader Version Requirements")
def protocol_versions(ctx: CommitContext) -> Iterator[Finding]:
    """Reader version 1-3, writer version 1-7; feature lists exactly at reader 3 / writer 7; reader 3 needs writer 7.

    "readerFeatures ... exist only when minReaderVersion is set to 3", "When the table's Reader Version is 3,
    readerFeatures must exist", likewise for writers at 7; "Reader Version 3 ... Writer Version must be 7".
    """
    for line, body, _ in _protocol_actions(ctx):
        rv, wv = body.get("minReaderVersion"), body.get("minWriterVersion")
        if not is_int(rv) or not is_int(wv):
            continue  # shape.protocol says so
        if not 1 <= rv <= 3:
            yield Finding(f"minReaderVersion {rv} is not a protocol version (1-3)", line, "protocol")
        if not 1 <= wv <= 7:
            yield Finding(f"minWriterVersion {wv} is not a protocol version (1-7)", line, "protocol")
        if rv == 3 and wv != 7:
            yield Finding(f"reader version 3 requires writer version 7, not {wv}", line, "protocol")
        for name, version, at in (("readerFeatures", rv, 3), ("writerFeatures", wv, 7)):
            present = body.get(name) is not None
            if present and version != at:
                yield Finding(f"{name} present at version {version} (only allowed at {at})", line, "protocol")
            if not present and version == at:
                yield Finding(f"{name} missing at version {at}", line, "protocol")


@rule("protocol.feature-listing", scope="commit", section="Table Features > Supported Features; Valid Feature Names")
def feature_listing(ctx: CommitContext) -> Iterator[Finding]:
    """Reader features are also writer features; a reader-writer feature is supported for readers too.

    "It is not allowed to list a feature only in readerFeatures but not in writerFeatures"; "reader features
    should be listed in both readerFeatures and writerFeatures" (a reader-writer feature listed only for
    writers would let readers ignore it; reader version 2 implies columnMapping for readers).
    """
    for line, _, proto in _protocol_actions(ctx):
        if proto is None:
            continue
        if proto.reader_version == 3 and proto.writer_version == 7:
            for f in sorted(proto.reader_features - proto.writer_features):
                yield Finding(f"reader feature {f!r} is not listed in writerFeatures", line, "protocol")
        if proto.writer_version == 7:
            for f in sorted((proto.writer_features & READER_WRITER) - proto.reader_features):
                yield Finding(f"reader-writer feature {f!r} is not supported for readers", line, "protocol")


@rule(
    "protocol.writer-feature-in-reader-list",
    scope="commit",
    section="Table Features > Supported Features",
    strict_only=True,
)
def writer_feature_in_reader_list(ctx: CommitContext) -> Iterator[Finding]:
    """A writer-only feature is listed in writerFeatures only ("writer features should be listed only in
    writerFeatures": a SHOULD, so strict only)."""
    for line, _, proto in _protocol_actions(ctx):
        if proto is not None and proto.reader_version == 3:
            for f in sorted(proto.reader_features & WRITER_ONLY):
                yield Finding(f"writer-only feature {f!r} listed in readerFeatures", line, "protocol")


@rule(
    "protocol.feature-dependency", scope="commit", section="Row Tracking; Clustered Table; Variant Shredding; Iceberg"
)
def feature_dependency(ctx: CommitContext) -> Iterator[Finding]:
    """A feature that requires another is listed with it (rowTracking and clustering need domainMetadata,
    variantShredding needs variantType, icebergCompatV1/V2 need columnMapping)."""
    for line, _, proto in _protocol_actions(ctx):
        if proto is None:
            continue
        for feature, required in REQUIRES.items():
            if feature in proto.all_features and not proto.supports_any(*required):
                yield Finding(f"{feature!r} requires {' or '.join(map(repr, required))}", line, "protocol")


def _unmet(ctx: CommitContext, strict: bool) -> Iterator[Finding]:
    proto = ctx.protocol
    if proto is None or not (ctx.changes_protocol_or_metadata or not ctx.before.protocol_body):
        return
    for need in needs(ctx.after):
        if need.strict == strict and not proto.supports_any(*need.features):
            names = " or ".join(map(repr, need.features))
            yield Finding(f"{need.reason} needs {names} supported by the protocol")


@rule(
    "protocol.schema-needs-feature",
    scope="commit",
    section="Timestamp without timezone; Variant Data Type; CHECK Constraints; Domain Metadata; Deletion Vectors",
)
def schema_needs_feature(ctx: CommitContext) -> Iterator[Finding]:
    """What the schema and state use is supported: timestamp_ntz -> timestampNtz, variant -> variantType,
    delta.constraints.* -> checkConstraints, domains -> domainMetadata, live DVs -> deletionVectors.

    "To have a column of TimestampNtz type in a table, the table must have Reader Version 3 and Writer
    Version 7 [and] timestampNtz"; likewise each feature's "To support this feature". Checked at every
    commit that changes the protocol or the metadata.
    """
    yield from _unmet(ctx, strict=False)


@rule(
    "protocol.property-needs-feature",
    scope="commit",
    section="Column Mapping; Deletion Vectors; In-Commit Timestamps; Row Tracking; ... (feature properties)",
    strict_only=True,
)
def property_needs_feature(ctx: CommitContext) -> Iterator[Finding]:
    """A property that switches a feature on comes with the feature (delta.enableDeletionVectors ->
    deletionVectors, delta.columnMapping.mode -> columnMapping, ...), as do column invariants, generated,
    identity and default columns.

    PROTOCOL.md makes such a property meaningless without the feature ("should only be honored if the
    table's protocol ... support[s] the columnMapping table feature"), so an unbacked property misleads
    rather than corrupts: strict only. Delta Spark refuses to store one.
    """
    yield from _unmet(ctx, strict=True)


@rule(
    "protocol.feature-removal", scope="commit", section="Table Features > Supported Features; RFC checkpoint-protection"
)
def feature_removal(ctx: CommitContext) -> Iterator[Finding]:
    """No protocol change drops a supported feature except through the feature-removal procedure.

    "Clients must not remove the feature from the protocol action." Dropping one is accepted only as Delta's
    DROP FEATURE does it: the feature is no longer used by the new snapshot (a use left behind is reported
    by protocol.schema-needs-feature or property-needs-feature), and a reader-writer feature is dropped
    together with adding ``checkpointProtection``
    (protocol_rfcs/checkpoint-protection.md), which may itself only go once history is truncated to
    ``delta.requireCheckpointProtectionBeforeVersion``. Legacy versions are compared as the features they imply.
    """
    old, new = ctx.before.protocol, ctx.after.protocol
    if old is None or new is None or not ctx.of_kind("protocol"):
        return
    still_needed = {f for need in needs(ctx.after) for f in need.features}
    for feature in sorted(old.all_features - new.all_features):
        if feature in still_needed:
            continue  # protocol.schema-needs-feature / property-needs-feature report what still uses it
        if feature in READER_WRITER and not new.writer_supports("checkpointProtection"):
            yield Finding(f"drops reader-writer feature {feature!r} without adding checkpointProtection")
        elif feature == "checkpointProtection":
            bound = ctx.before.configuration.get("delta.requireCheckpointProtectionBeforeVersion")
            first = min(ctx.listing.commits) if ctx.listing.commits else 0
            if isinstance(bound, str) and bound.isdigit() and first < int(bound):
                yield Finding(f"drops checkpointProtection while history before version {bound} remains")
