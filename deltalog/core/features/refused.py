"""Features whose obligations deltalog does not meet: operations they concern are refused by name.

* ``icebergCompatV1``/``V2`` (UniForm, when on): commits must keep Iceberg's metadata, partition values inside
  data files and field ids; Iceberg's metadata files live in the table directory, so VACUUM is refused too.
* ``materializePartitionColumns``: partition columns inside every data file.
* ``catalogManaged``, ``catalogOwned`` (and preview), ``coordinatedCommits-preview``: commits are owned by a catalog
  or a commit coordinator, not by the file system.
* ``collations``, ``icebergCompatV3``, ``icebergWriterCompatV1``/``V3``: proposals (``protocol_rfcs/``) whose
  obligations deltalog does not implement.

A feature deltalog does not know at all is refused too (:func:`~deltalog.core.features.obligations.obligation`).
"""

from __future__ import annotations

from collections.abc import Mapping

from deltalog.core.features.configuration import TableConfiguration
from deltalog.core.features.kinds import COMMITS, NEW_ROWS, NONE, VACUUM, Obligation, Rule, always_refused, on, refuse
from deltalog.core.features.protocol import CATALOG_FEATURES

MATERIALIZE_PARTITION_COLUMNS = "materializePartitionColumns"
COORDINATED_COMMITS = "coordinatedCommits-preview"
ICEBERG_COMPAT = ("icebergCompatV1", "icebergCompatV2")
PROPOSALS = ("collations", "icebergCompatV3", "icebergWriterCompatV1", "icebergWriterCompatV3")


def _iceberg(kind: str, table: TableConfiguration) -> Obligation:
    if table.properties.iceberg_compat and (kind in COMMITS or kind == VACUUM):
        return refuse(
            "Iceberg compatibility (UniForm) is on: commits must keep Iceberg's metadata, partition "
            "values inside data files and field ids, and its metadata files live in the table "
            "directory; deltalog does none of that"
        )
    return NONE


_CATALOG = always_refused("the table's commits are owned by a catalog, not by the file system")
_PROPOSAL = "is a proposal (protocol_rfcs/) whose obligations deltalog does not implement"

OBLIGATIONS: Mapping[str, Rule] = {
    **{name: _iceberg for name in ICEBERG_COMPAT},
    MATERIALIZE_PARTITION_COLUMNS: on(
        NEW_ROWS, refuse("materializePartitionColumns needs partition columns inside every data file")
    ),
    **{name: _CATALOG for name in CATALOG_FEATURES},
    COORDINATED_COMMITS: always_refused("commits go through a commit coordinator"),
    **{name: always_refused(_PROPOSAL) for name in PROPOSALS},
}

__all__ = [
    "COORDINATED_COMMITS",
    "ICEBERG_COMPAT",
    "MATERIALIZE_PARTITION_COLUMNS",
    "OBLIGATIONS",
    "PROPOSALS",
]
