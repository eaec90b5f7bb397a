"""The small state of one version, frozen: protocol, metadata, txns, domains and the last commitInfo.

What a snapshot is besides its file list, and all a checkpoint writer needs of it besides the files: a
value, so a snapshot made from it, advanced from it or checkpointed from it can never see it change. The
replay produces it (:func:`of_replay`); the derived facts below are computed from it alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from types import MappingProxyType
from typing import Any

from deltalog.core import actions as A
from deltalog.core.features import properties
from deltalog.core.features.configuration import TableConfiguration
from deltalog.core.schema import parse_schema, physical_names
from deltalog.core.state import ReplayResult
from deltalog.core.state.small import live_txns


@dataclass(frozen=True)
class VersionState:
    """Everything of version :attr:`version` except its files."""

    version: int
    protocol: A.Protocol
    metadata: A.Metadata
    txns: Mapping[str, A.Txn]
    domains: Mapping[str, A.DomainMetadata]
    #: the log file each of protocol and metadata came from (for errors that name it)
    protocol_source: str | None = None
    metadata_source: str | None = None
    #: the raw commitInfo of the version's commit, when that commit was replayed
    commit_info: Mapping[str, Any] | None = None

    @property
    def configuration(self) -> Mapping[str, str]:
        return self.metadata.configuration

    @cached_property
    def table_configuration(self) -> TableConfiguration:
        """Protocol and metadata read once: supported and enabled features, parsed properties
        (:mod:`deltalog.core.features.configuration`)."""
        return TableConfiguration.of(self.protocol, self.metadata)

    @property
    def features(self) -> frozenset[str]:
        """Table features the protocol supports (listed, or implied by legacy versions)."""
        return self.table_configuration.supported

    @property
    def column_mapping_mode(self) -> str:
        """``none`` unless the protocol supports column mapping, whatever the property says."""
        return self.table_configuration.column_mapping_mode

    def schema_json(self) -> dict[str, Any]:
        """The schema parsed (a :class:`~deltalog.core.schema.SchemaError` when it does not parse)."""
        return parse_schema(self.metadata.schema_string)

    def physical_names(self, schema: Mapping[str, Any] | None = None) -> dict[str, str]:
        """Top-level logical column name -> physical name (``schema`` saves parsing it again)."""
        return physical_names(dict(schema) if schema is not None else self.schema_json(), self.column_mapping_mode)

    def live_txns(self, now_ms: int) -> dict[str, A.Txn]:
        """Txns that survive ``delta.setTransactionRetentionDuration`` at ``now_ms``."""
        return live_txns(self.txns, properties.txn_retention_ms(self.configuration), now_ms)


def of_replay(result: ReplayResult, version: int) -> VersionState:
    """The state a replay produced, as ``version`` (the segment's: a replay of no commits reports its base's).

    The caller has checked that protocol and metadata are there (a version without them is unreadable).
    """
    assert result.protocol is not None and result.metadata is not None
    return VersionState(
        version=version,
        protocol=result.protocol,
        metadata=result.metadata,
        txns=MappingProxyType(dict(result.txns)),
        domains=MappingProxyType(dict(result.domains)),
        protocol_source=result.protocol_source,
        metadata_source=result.metadata_source,
        commit_info=result.commit_info,
    )


__all__ = ["VersionState", "of_replay"]
