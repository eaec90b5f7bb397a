"""Which peers can no longer write a table after a protocol upgrade: what a schema change shows before it
upgrades (``../shared/docs/table-features.md`` section 4, measured with deltalake 1.6.6 and duckdb 1.5.5).

An upgrade is often the price of an operation (a rename needs column mapping: writer version 5 on a legacy
table; widening a type needs ``typeWidening``), and the price is paid by every other writer of the table. The
table is facts about released peers; it says who refuses, not who is right.
"""

from __future__ import annotations

from collections.abc import Mapping

from deltalog.core.actions import Protocol

DELTALAKE = "deltalake 1.6.6"
DUCKDB = "duckdb 1.5.5"
#: writer features each peer refuses to write (when the protocol lists them)
_REFUSED: Mapping[str, frozenset[str]] = {
    DELTALAKE: frozenset(
        {
            "allowColumnDefaults",
            "checkpointProtection",
            "clustering",
            "collations",
            "domainMetadata",
            "identityColumns",
            "inCommitTimestamp",
            "materializePartitionColumns",
            "rowTracking",
            "typeWidening",
            "typeWidening-preview",
            "vacuumProtocolCheck",
        }
    ),
    DUCKDB: frozenset(
        {
            "allowColumnDefaults",
            "checkConstraints",
            "checkpointProtection",
            "collations",
            "generatedColumns",
            "identityColumns",
            "typeWidening",
            "typeWidening-preview",
        }
    ),
}


def cannot_write(protocol: Protocol) -> dict[str, str]:
    """Peer -> why it refuses to write a table of ``protocol``; peers that write it are absent."""
    out: dict[str, str] = {}
    writer = protocol.min_writer_version
    if 3 <= writer <= 6:  # kernel 0.21 cannot write checkConstraints, which writer versions 3-6 imply
        out[DUCKDB] = f"refuses inserts into writer version {writer} tables"
    for peer, refused in _REFUSED.items():
        named = sorted(set(protocol.writer_features or ()) & refused) if writer >= 7 else []
        if named and peer not in out:
            out[peer] = f"does not write tables with writer feature {named[0]!r}"
    return out


def writers_lost(before: Protocol, after: Protocol) -> dict[str, str]:
    """The peers that write a table of ``before`` but not of ``after``, with why."""
    old = cannot_write(before)
    return {peer: why for peer, why in cannot_write(after).items() if peer not in old}


__all__ = ["DELTALAKE", "DUCKDB", "cannot_write", "writers_lost"]
