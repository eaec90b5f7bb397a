"""A table's configuration at one version: its protocol and metadata read once, as every feature rule asks them.

kernel-rs keeps this as ``TableConfiguration``; deltalog did the same work in many places (a rule asked the
protocol which features it supports, another parsed ``delta.enableDeletionVectors``, a third walked the schema
for column metadata). Here it is one value, exposed by the version state
(:attr:`deltalog.core.version_state.VersionState.table_configuration`) and by a snapshot: which features the
protocol supports (:attr:`~TableConfiguration.supported`), which of them the table uses
(:attr:`~TableConfiguration.enabled`), the column mapping mode in force, and the properties features read, parsed
once (:attr:`~TableConfiguration.properties`). Every feature's obligations (:mod:`~deltalog.core.features.kinds`)
are functions of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from deltalog.core import actions as A
from deltalog.core.features.properties import TableProperties
from deltalog.core.features.protocol import (
    METADATA_ENABLED,
    configuration_features,
    schema_features,
    supported_features,
)
from deltalog.core.schema import parse_schema, walk_fields

#: the schema of a configuration built without one (maintenance that has only the protocol and properties)
NO_COLUMNS: Mapping[str, Any] = {"type": "struct", "fields": []}


@dataclass(frozen=True)
class TableConfiguration:
    """``protocol`` and ``configuration`` of one version, and its schema (``schema_string``, parsed on first use,
    or already parsed). Built with :meth:`of` from a version's actions, or :meth:`of_parts`."""

    protocol: A.Protocol
    configuration: Mapping[str, str]
    schema_string: str | None = None
    parsed_schema: Mapping[str, Any] | None = None

    @classmethod
    def of(cls, protocol: A.Protocol, metadata: A.Metadata) -> TableConfiguration:
        """The configuration of a version with ``protocol`` and ``metadata``."""
        return cls(protocol, metadata.configuration, metadata.schema_string)

    @classmethod
    def of_parts(
        cls, protocol: A.Protocol, configuration: Mapping[str, str], schema: Mapping[str, Any] | None = None
    ) -> TableConfiguration:
        """A configuration from its parts: a winner's protocol on the properties and schema read, say."""
        return cls(protocol, configuration, None, schema if schema is not None else NO_COLUMNS)

    @cached_property
    def schema(self) -> Mapping[str, Any]:
        """The schema JSON (a :class:`~deltalog.core.schema.SchemaError` when it does not parse)."""
        if self.parsed_schema is not None:
            return self.parsed_schema
        return parse_schema(self.schema_string) if self.schema_string is not None else NO_COLUMNS

    @cached_property
    def supported(self) -> frozenset[str]:
        """The features the protocol supports: listed, or implied by legacy versions."""
        return supported_features(self.protocol)

    @cached_property
    def enabled(self) -> frozenset[str]:
        """The supported features the table uses: those its properties or schema switch on, and those that are in
        use whenever supported (a clustered table, domain metadata). Parses the schema."""
        switched = set(configuration_features(self.configuration)) | set(schema_features(self.schema))
        return frozenset(f for f in self.supported if f in switched or f not in METADATA_ENABLED)

    def is_supported(self, feature: str) -> bool:
        return feature in self.supported

    def is_enabled(self, feature: str) -> bool:
        return feature in self.enabled

    @cached_property
    def properties(self) -> TableProperties:
        """The properties features read, parsed once."""
        return TableProperties.of(self.configuration)

    @cached_property
    def column_mapping_mode(self) -> str:
        """``none`` unless the protocol supports column mapping, whatever the property says."""
        return self.properties.column_mapping_mode if "columnMapping" in self.supported else "none"

    def column_metadata(self, marker: str) -> bool:
        """Whether any column's metadata has key ``marker`` (or a key starting with it, when it ends in '.')."""
        for at in walk_fields(self.schema):
            meta = at.field.get("metadata")
            for key in meta if isinstance(meta, Mapping) else ():
                if key == marker or (marker.endswith(".") and str(key).startswith(marker)):
                    return True
        return False


__all__ = ["NO_COLUMNS", "TableConfiguration"]
