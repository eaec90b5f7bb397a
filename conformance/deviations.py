"""Where deltalog deliberately disagrees with the reference reader (deltalake 1.6.6), and why.

Each deviation is decided, documented here, and tested in ``tests/integration/test_conformance_deviations.py``.

1. ``metadata-without-schemaString``: the reference refuses a ``metaData`` action that lacks
   ``schemaString``. Delta Spark reads such tables (its own golden tables have them) and treats the schema
   as an empty struct; so does deltalog. Refusing them would make tables Delta Spark wrote unreadable for
   no gain: the log replays correctly without knowing the data schema. Tables that also lack protocol or
   metadata entirely are still refused with :class:`~deltalog.errors.CorruptLogError`. The expected states
   below were derived by hand from the commit files of each table.

2. ``txn-expiration``: with ``delta.setTransactionRetentionDuration`` set, Delta Spark drops every txn
   whose ``lastUpdated`` is missing or older than the retention; the reference kept a txn without
   ``lastUpdated``. deltalog follows Delta Spark: a txn that cannot show it is recent does not survive the
   retention, otherwise a retention could never expire it. Judged against today's clock every txn of the
   corpus table has expired, so the expected map is empty.
"""

from __future__ import annotations

from typing import Any

from deltalog.errors import CorruptLogError, DeltaLogError

METADATA_WITHOUT_SCHEMA = "metadata-without-schemaString"
TXN_EXPIRATION = "txn-expiration"

EMPTY_SCHEMA: dict[str, Any] = {"type": "struct", "fields": []}


def _numbered(first: int, last: int) -> list[str]:
    return [str(i) for i in range(first, last + 1)]


#: table name -> version -> expected (``paths`` sorted as written, or ``error`` class)
STATES: dict[str, dict[int, dict[str, Any]]] = {
    # adds named "0".."v" at version v; a checkpoint at 10 that carries the same state
    "delta/corrupted-last-checkpoint": {v: {"paths": sorted(_numbered(0, v))} for v in range(11)},
    # the checkpoint at 10 lacks metaData: versions 0-9 replay from commits, version 10 is refused
    "delta/deltalog-state-reconstruction-from-checkpoint-missing-metadata": {
        **{v: {"paths": sorted(_numbered(0, v))} for v in range(10)},
        10: {"error": CorruptLogError},
    },
    # v0 adds an absolute path, v1 removes it spelled as a file: URI; canonicalised, the remove cancels it
    "delta/canonicalized-paths-normal-a": {
        0: {"paths": ["/some/unqualified/absolute/path"]},
        1: {"paths": []},
    },
    "delta/canonicalized-paths-special-a": {
        0: {"paths": ["/some/unqualified/with%20space/p@%23h"]},
        1: {"paths": []},
    },
    # one commit: metaData (no schemaString), protocol, a commitInfo with many optional fields, one add
    "delta/deltalog-commit-info": {0: {"paths": ["abc"]}},
    # ten adds "1".."10" in version 0, checkpointed at 0
    "delta/update-deleted-directory": {0: {"paths": sorted(_numbered(1, 10))}},
}

#: table name -> expected live txns at every version (judged with today's clock)
TXN_STATES: dict[str, dict[str, int]] = {"delta-kernel-rs/app-txn-with-last-updated": {}}


def applies(entry: dict[str, Any]) -> bool:
    return entry["name"] in STATES


def error_for(entry: dict[str, Any], version: int) -> type[DeltaLogError] | None:
    state = STATES[entry["name"]].get(version)
    return None if state is None else state.get("error")


__all__ = [
    "EMPTY_SCHEMA",
    "METADATA_WITHOUT_SCHEMA",
    "STATES",
    "TXN_EXPIRATION",
    "TXN_STATES",
    "applies",
    "error_for",
]
