"""Checkpoints (PROTOCOL.md "Checkpoints", "Checkpoint Specs", "Checkpoint Naming Scheme", "Sidecar Files",
"V2 Checkpoint Table Feature", "Checkpoint Schema").

A checkpoint is checked on its own (spec and naming rules) and, where the checker replayed the commits up
to its version, against that replay: "A checkpoint contains the complete replay of all actions, up to and
including the checkpointed table version".
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from ..context import CheckpointContext
from ..features import Protocol
from ..report import Finding, rule
from ..state import TableState, column_mapping_mode
from ..values import file_key

#: file fields a checkpoint's add must agree on with the replayed add (stats may be re-encoded as stats_parsed)
FILE_FIELDS = ("size", "partitionValues", "baseRowId", "defaultRowCommitVersion")


@rule("ckpt.readable", scope="checkpoint", section="Checkpoints; Sidecar Files")
def ckpt_readable(ctx: CheckpointContext) -> Iterator[Finding]:
    """Every file of a checkpoint, and every sidecar it references, exists and can be read."""
    for p in ctx.problems:
        yield Finding(p.message, p.line, file=p.file)


@rule(
    "ckpt.protocol-and-metadata",
    scope="checkpoint",
    section="Requirements for Writers > Checkpoints; Checkpoint Schema",
)
def ckpt_protocol_and_metadata(ctx: CheckpointContext) -> Iterator[Finding]:
    """A checkpoint holds exactly one protocol and one metaData; its protocol's feature lists are non-null
    exactly at reader version 3 / writer version 7 ("If a table has Reader Version 3, then a writer must
    write checkpoints with a not-null readerFeatures ... their values must be null" otherwise)."""
    for kind in ("protocol", "metaData"):
        found = ctx.of_kind(kind, sidecars=False)
        if len(found) != 1:
            yield Finding(f"{len(found)} {kind} actions (exactly one required)", action=kind)
    for a in ctx.of_kind("protocol", sidecars=False):
        rv, wv = a.body.get("minReaderVersion"), a.body.get("minWriterVersion")
        for name, version, at in (("readerFeatures", rv, 3), ("writerFeatures", wv, 7)):
            if (a.body.get(name) is not None) != (version == at):
                yield Finding(f"{name} is {a.body.get(name)!r} at version {version}", a.line, "protocol", file=a.file)


@rule("ckpt.no-commit-info-or-cdc", scope="checkpoint", section="Requirements for Writers > Checkpoints")
def ckpt_no_commit_info(ctx: CheckpointContext) -> Iterator[Finding]:
    """A checkpoint holds no commitInfo and no cdc action ("Checkpoints must not preserve commit provenance
    information nor change data actions")."""
    for a in ctx.actions + ctx.sidecar_actions:
        if a.kind in ("commitInfo", "cdc"):
            yield Finding(f"a {a.kind} action in a checkpoint", a.line, a.kind, file=a.file)


@rule("ckpt.tombstones-not-live", scope="checkpoint", section="Action Reconciliation")
def ckpt_tombstones_not_live(ctx: CheckpointContext) -> Iterator[Finding]:
    """No (path, DV) is both an add and a remove of a checkpoint ("The intersection of the primary keys in
    the add collection and remove collection must be empty"), and no logical file appears twice."""
    adds: set[Any] = set()
    for a in ctx.of_kind("add"):
        key = file_key(a.body)
        if key in adds:
            yield Finding("the same (path, DV) is added twice", a.line, "add", key[0], file=a.file)
        adds.add(key)
    for a in ctx.of_kind("remove"):
        if file_key(a.body) in adds:
            yield Finding("a tombstone for a live (path, DV)", a.line, "remove", a.body.get("path"), file=a.file)


def _v2_metadata(ctx: CheckpointContext) -> list[Any]:
    return ctx.of_kind("checkpointMetadata", sidecars=False)


@rule("ckpt.v2-spec", scope="checkpoint", section="Checkpoint Specs > V2 Spec; Allowed combinations; Sidecar Files")
def ckpt_v2_spec(ctx: CheckpointContext) -> Iterator[Finding]:
    """V2 spec checkpoints: UUID-named ones have exactly one checkpointMetadata (with their version); a classic
    one may follow V2 only with v2Checkpoint supported; multi-part ones are always V1; sidecar actions only in
    V2 checkpoints; sidecars hold only add/remove; file actions all inline or all in sidecars."""
    meta, kind = _v2_metadata(ctx), ctx.layout.kind
    sidecars = ctx.of_kind("sidecar", sidecars=False)
    if kind == "uuid" and len(meta) != 1:
        yield Finding(f"a UUID-named checkpoint needs one checkpointMetadata action, found {len(meta)}")
    if kind != "uuid" and len(meta) > 1:
        yield Finding(f"{len(meta)} checkpointMetadata actions")
    if kind == "multi-part" and (meta or sidecars):
        yield Finding("a multi-part checkpoint follows the V1 spec: no checkpointMetadata or sidecar actions")
    for a in meta:
        if a.body.get("version") != ctx.version:
            yield Finding(f"checkpointMetadata.version is {a.body.get('version')!r}", a.line, a.kind, file=a.file)
    proto = ctx.loaded.protocol
    if kind == "classic" and meta and (proto is None or not proto.supports("v2Checkpoint")):
        yield Finding("a V2 spec classic checkpoint on a table without v2Checkpoint support")
    if sidecars and not meta:
        yield Finding("sidecar actions in a checkpoint without checkpointMetadata (V1 spec)")
    inline = [a for a in ctx.actions if a.kind in ("add", "remove")]
    if sidecars and inline:
        yield Finding("file actions both inline and in sidecars", inline[0].line, inline[0].kind, file=inline[0].file)
    for a in ctx.sidecar_actions:
        if a.kind not in ("add", "remove"):
            yield Finding(f"a {a.kind} action in a sidecar (only add and remove allowed)", a.line, a.kind, file=a.file)


@rule("ckpt.no-multi-part-on-v2", scope="checkpoint", section="V2 Checkpoint Table Feature; Checkpoints")
def ckpt_no_multi_part_on_v2(ctx: CheckpointContext) -> Iterator[Finding]:
    """No multi-part checkpoint where v2Checkpoint is supported ("A table must not use multi-part checkpoints")."""
    proto = (ctx.reference or ctx.loaded).protocol
    if ctx.layout.kind == "multi-part" and proto is not None and proto.supports("v2Checkpoint"):
        yield Finding("a multi-part checkpoint on a table supporting v2Checkpoint")


@rule("ckpt.multi-part-numbering", scope="checkpoint", section="Checkpoints; Checkpoint Naming Scheme > Multi-part")
def ckpt_multi_part_numbering(ctx: CheckpointContext) -> Iterator[Finding]:
    """A multi-part checkpoint has p > 1 parts numbered 1..p ("part o of p is named n.checkpoint.o.p.parquet",
    "p > 1"): a part outside that range, or a one-part "multi-part" checkpoint, is a misnamed file."""
    if ctx.layout.kind != "multi-part" or ctx.layout.parts is None:
        return
    if ctx.layout.parts < 2:
        yield Finding(f"a multi-part checkpoint declares {ctx.layout.parts} part(s)")
    for number in ctx.layout.part_numbers:
        if not 1 <= number <= ctx.layout.parts:
            yield Finding(f"part {number} of {ctx.layout.parts} is out of range")


@rule("ckpt.multi-part-complete", scope="checkpoint", section="Checkpoints (multi-part)", strict_only=True)
def ckpt_multi_part_complete(ctx: CheckpointContext) -> Iterator[Finding]:
    """Every part 1..p of a multi-part checkpoint exists. Readers must ignore incomplete ones, so a leftover of
    a crashed writer harms nobody: strict only."""
    if not ctx.layout.complete:
        present = sorted(n for n in ctx.layout.part_numbers if 1 <= n <= (ctx.layout.parts or 0))
        yield Finding(f"parts {present} of {ctx.layout.parts} present")


def _protocol_key(p: Protocol | None) -> Any:
    return None if p is None else (p.reader_version, p.writer_version, p.reader_features, p.writer_features)


def _metadata_key(body: Any) -> Any:
    if not isinstance(body, dict):
        return None
    schema = body.get("schemaString")
    try:
        parsed = orjson.loads(schema) if isinstance(schema, str) else schema
    except orjson.JSONDecodeError:
        parsed = schema
    fmt = body.get("format") if isinstance(body.get("format"), dict) else {}
    return (body.get("id"), fmt.get("provider"), parsed, body.get("partitionColumns"), body.get("configuration") or {})


def _dv_cardinality(body: dict[str, Any]) -> Any:
    dv = body.get("deletionVector")
    return dv.get("cardinality") if isinstance(dv, dict) else None


def state_differences(loaded: TableState, reference: TableState) -> Iterator[str]:
    """How a checkpoint's state differs from the replayed one, in words (nothing when they agree)."""
    if _protocol_key(loaded.protocol) != _protocol_key(reference.protocol):
        yield "its protocol differs from the replayed protocol"
    if _metadata_key(loaded.metadata) != _metadata_key(reference.metadata):
        yield "its metaData differs from the replayed metaData"
    retention = "delta.setTransactionRetentionDuration" in reference.configuration
    for app, body in reference.txns.items():
        got = loaded.txns.get(app)
        if got is None and not retention:
            yield f"txn {app!r} is missing"
        elif got is not None and got.get("version") != body.get("version"):
            yield f"txn {app!r} has version {got.get('version')!r}, replay has {body.get('version')!r}"
    for app in sorted(set(loaded.txns) - set(reference.txns)):
        yield f"txn {app!r} is not in the replayed state"
    ref_domains = {k: v.get("configuration") for k, v in reference.domains.items()}
    got_domains = {k: v.get("configuration") for k, v in loaded.domains.items()}
    if ref_domains != got_domains:
        yield f"domains {sorted(got_domains)} differ from the replayed {sorted(ref_domains)}"
    missing, extra = set(reference.live) - set(loaded.live), set(loaded.live) - set(reference.live)
    for key in sorted(missing, key=str)[:5]:
        yield f"live file {key[0]!r} (DV {key[1]!r}) is missing"
    for key in sorted(extra, key=str)[:5]:
        yield f"file {key[0]!r} (DV {key[1]!r}) is not live in the replay"
    for key in set(reference.live) & set(loaded.live):
        ref, got = reference.live[key], loaded.live[key]
        for name in FILE_FIELDS:
            if (got.get(name) or None) != (ref.get(name) or None) and not (
                name == "partitionValues" and not got.get(name) and not ref.get(name)
            ):
                yield f"file {key[0]!r}: {name} is {got.get(name)!r}, replay has {ref.get(name)!r}"
        if _dv_cardinality(got) != _dv_cardinality(ref):
            yield f"file {key[0]!r}: DV cardinality differs from the replay"


@rule("ckpt.matches-replay", scope="checkpoint", section="Checkpoints (a checkpoint is the replay of its version)")
def ckpt_matches_replay(ctx: CheckpointContext) -> Iterator[Finding]:
    """A checkpoint agrees with the commits it summarises: protocol, metadata, txns, domains, live files by
    (path, DV) with their size, partition values, DV and row-tracking fields."""
    if ctx.reference is None:
        return
    for difference in state_differences(ctx.loaded, ctx.reference):
        yield Finding(difference)


def _struct_names(schema: Any, *path: str) -> list[str] | None:
    typ: Any = schema
    for name in path:
        fields = list(typ) if typ is not None else []
        match = next((f for f in fields if f.name == name), None)
        if match is None:
            return None
        typ = match.type
    try:
        return [f.name for f in typ]
    except TypeError:
        return None


@rule("ckpt.parsed-physical-names", scope="checkpoint", section="Checkpoint Schema (column mapping)")
def ckpt_parsed_physical_names(ctx: CheckpointContext) -> Iterator[Finding]:
    """partitionValues_parsed and stats_parsed name columns physically under column mapping, and
    partitionValues_parsed holds exactly the partition columns."""
    state = ctx.loaded
    schema = state.schema
    if schema.error:
        return
    physical = column_mapping_mode(state.protocol, state.configuration) != "none"
    tops = {f.path[0]: f for f in schema.fields if len(f.path) == 1}
    names = {(f.physical_path[0] if physical else f.path[0]) for f in tops.values()}
    partitions = []
    for col in state.partition_columns:
        f = schema.find(col)
        if f is not None:
            partitions.append(f.physical_path[0] if physical else col)
    for file, arrow_schema in ctx.schemas.items():
        if arrow_schema is None or "add" not in arrow_schema.names:
            continue
        add_type = arrow_schema.field("add").type
        parsed = _struct_names(add_type, "partitionValues_parsed")
        if parsed is not None and sorted(parsed) != sorted(partitions):
            yield Finding(f"partitionValues_parsed has {parsed}, expected {partitions}", file=file)
        for section in ("minValues", "maxValues", "nullCount"):
            fields = _struct_names(add_type, "stats_parsed", section)
            bad = sorted(set(fields or ()) - names)
            if bad:
                yield Finding(f"stats_parsed.{section} has non-column names {bad[:3]}", file=file)
