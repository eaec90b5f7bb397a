"""A table about to be created: version 0's protocol and metadata, checked and final, not yet committed.

A create is a transaction on read version -1 (:mod:`deltalog.table.ddl`). A writer that creates the table it
writes (``deltalog.write``, ``deltalog.spark.write`` on a missing table) commits the table and its first files
as that one version 0, as Delta Spark and deltalake do: a failed first write then leaves no table behind, and
a retry with ``mode="error"`` is not refused by an empty table. Its data files are written before the commit,
so it needs what a snapshot would tell it (schema with physical names, partitioning, properties, features)
of a version that does not exist yet: a :class:`NewTable` answers with the snapshot's names.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import Any

import pyarrow as pa

from deltalog.arrow.schema import to_arrow_schema
from deltalog.core import actions as A
from deltalog.core.version_state import VersionState


@dataclass(frozen=True)
class NewTable:
    """Version 0 of the table at ``location`` as its create will commit it (the commit path's rules already
    applied: features the schema and properties need, physical names under column mapping)."""

    location: str
    protocol: A.Protocol
    metadata: A.Metadata
    domains: tuple[A.DomainMetadata, ...] = ()
    #: ``commitInfo.operationParameters`` of a plain ``CREATE TABLE``
    parameters: Mapping[str, Any] = field(default_factory=dict)

    #: the version the create commits
    version = 0

    def __getstate__(self) -> dict[str, Any]:
        """Its fields only: an engine plans a create in one process and commits it in another (Spark's driver
        workers), and the values computed from the fields are computed again there."""
        return {name: getattr(self, name) for name in ("location", "protocol", "metadata", "domains", "parameters")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        for name, value in state.items():
            object.__setattr__(self, name, value)

    @property
    def actions(self) -> list[A.Action]:
        """What the create commits besides the first files: protocol, metadata, the clustering domain."""
        return [self.protocol, self.metadata, *self.domains]

    @cached_property
    def state(self) -> VersionState:
        domains = MappingProxyType({d.domain: d for d in self.domains})
        return VersionState(self.version, self.protocol, self.metadata, MappingProxyType({}), domains)

    @property
    def configuration(self) -> Mapping[str, str]:
        return self.metadata.configuration

    @property
    def features(self) -> frozenset[str]:
        return self.state.features

    @property
    def partition_columns(self) -> list[str]:
        return list(self.metadata.partition_columns)

    @property
    def column_mapping_mode(self) -> str:
        return self.state.column_mapping_mode

    @cached_property
    def schema_json(self) -> dict[str, Any]:
        return self.state.schema_json()

    @cached_property
    def schema(self) -> pa.Schema:
        return to_arrow_schema(self.schema_json)

    @cached_property
    def physical_names(self) -> dict[str, str]:
        return self.state.physical_names(self.schema_json)

    @property
    def domain_metadata(self) -> dict[str, A.DomainMetadata]:
        return dict(self.state.domains)


__all__ = ["NewTable"]
