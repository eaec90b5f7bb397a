"""Features deltalog honours by what it already does, so they oblige no operation to do more.

* ``domainMetadata``: domains are replayed, preserved by every commit and checkpoint, and reconciled.
* ``timestampNtz``: a column type; readers and writers handle it as any other.
* ``vacuumProtocolCheck``: asks VACUUM to check the *write* protocol, which every maintenance job here does
  (:func:`~deltalog.core.features.obligations.check_operation` for cleanup and vacuum).
* ``variantType``, ``variantShredding`` (and previews): writers may shred variants, never must; deltalog writes
  none (its data writer refuses variant columns by name).
"""

from __future__ import annotations

from collections.abc import Mapping

from deltalog.core.features.kinds import Rule, nothing

DOMAIN_METADATA = "domainMetadata"
TIMESTAMP_NTZ = "timestampNtz"
VACUUM_PROTOCOL_CHECK = "vacuumProtocolCheck"
VARIANT_TYPE = "variantType"
VARIANT_SHREDDING = "variantShredding"

OBLIGATIONS: Mapping[str, Rule] = {
    name: nothing
    for name in (
        DOMAIN_METADATA,
        TIMESTAMP_NTZ,
        VACUUM_PROTOCOL_CHECK,
        VARIANT_TYPE,
        f"{VARIANT_TYPE}-preview",
        VARIANT_SHREDDING,
        f"{VARIANT_SHREDDING}-preview",
    )
}

__all__ = [
    "DOMAIN_METADATA",
    "OBLIGATIONS",
    "TIMESTAMP_NTZ",
    "VACUUM_PROTOCOL_CHECK",
    "VARIANT_SHREDDING",
    "VARIANT_TYPE",
]
