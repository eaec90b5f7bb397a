"""Version checksum files (PROTOCOL.md "Version Checksum File", "State Validation")."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..context import CommitContext
from ..features import Protocol, is_int
from ..reading import read_json_object
from ..report import Finding, rule
from ..state import ict_enabled


def _protocol_key(body: Any) -> tuple[Any, ...] | None:
    p = Protocol.of(body)
    return None if p is None else (p.reader_version, p.writer_version, p.reader_features, p.writer_features)


@rule("crc.matches-state", scope="commit", section="Version Checksum File; State Validation")
def crc_matches_state(ctx: CommitContext) -> Iterator[Finding]:
    """A <version>.crc file describes that version: numFiles, tableSizeBytes, numMetadata = numProtocol = 1,
    its protocol and metadata id, and the ICT when enabled ("Writers MUST ensure all metrics in the Version
    Checksum accurately reflect table state after Action Reconciliation")."""
    name = ctx.listing.crcs.get(ctx.version)
    if name is None:
        return
    crc, problem = read_json_object(ctx.listing.path(name))
    if problem or not isinstance(crc, dict):
        yield Finding(problem or "not a JSON object", file=name)
        return
    live = ctx.after.live.values()
    expected = {
        "numFiles": len(ctx.after.live),
        "tableSizeBytes": sum(a.get("size", 0) for a in live if is_int(a.get("size"))),
        "numMetadata": 1,
        "numProtocol": 1,
    }
    for key, want in expected.items():
        if crc.get(key) != want:
            yield Finding(f"{key} is {crc.get(key)!r}, the replayed state has {want}", file=name)
    # early checksum files (Delta 1.x) carry neither protocol nor metadata: compare them where present
    if "protocol" in crc and _protocol_key(crc["protocol"]) != _protocol_key(ctx.after.protocol_body):
        yield Finding("its protocol differs from the replayed one", file=name)
    meta = crc.get("metadata")
    replayed = ctx.after.metadata if isinstance(ctx.after.metadata, dict) else {}
    if "metadata" in crc and (not isinstance(meta, dict) or meta.get("id") != replayed.get("id")):
        yield Finding("its metadata id differs from the replayed one", file=name)
    enabled = ict_enabled(ctx.after.protocol, ctx.after.configuration)
    if enabled and "inCommitTimestampOpt" in crc and crc["inCommitTimestampOpt"] != ctx.after.ict:
        yield Finding(f"inCommitTimestampOpt {crc['inCommitTimestampOpt']!r} is not {ctx.after.ict}", file=name)
