"""The streaming sink's identity: which application's ``txn`` each micro-batch commits under.

Delta Spark's sink commits batch ``N`` of a query once: with a ``txn`` action (the query's id as ``appId``, ``N``
as ``version``) in the batch's commit, and a batch the table already holds is skipped, so a query restarted from
its checkpoint never commits a batch twice. A Python stream writer is not told the query's id, so it is taken
from where Spark keeps it: the ``metadata`` file of the query's checkpoint location (``{"id": "<uuid>"}``, written
when the query first starts and read back on every restart), or given as the ``txnAppId`` option. A checkpoint
location whose metadata deltalog cannot read (a Hadoop file system deltalog has no store for) gives an id
derived from the location itself, stable across restarts; a new query in a fresh checkpoint at the same place
would then share it, which the log line says. With neither option the sink refuses to start: a random id
would commit a replayed batch twice.
"""

from __future__ import annotations

import logging
import uuid

import orjson

from deltalog.errors import DeltaLogError, InvalidArgumentError
from deltalog.spark.options import Parsed
from deltalog.storage.uri import store_for

logger = logging.getLogger(__name__)

#: the file Spark keeps the query's id in, under the checkpoint location
QUERY_METADATA = "metadata"
_NAMESPACE = uuid.UUID("6f1e7a52-3c5d-4d0e-9a8b-30d1e0a5c7f2")


def query_id(checkpoint_location: str) -> str | None:
    """The id of the query whose checkpoint is at ``checkpoint_location``, or None when it cannot be read."""
    try:
        data = store_for(checkpoint_location).read(QUERY_METADATA)
        found = orjson.loads(data).get("id")
    except (DeltaLogError, OSError, ValueError, AttributeError):
        return None
    return found if isinstance(found, str) and found else None


def app_id(parsed: Parsed) -> str:
    """The ``appId`` of the streaming sink's ``txn`` actions: ``txnAppId``, else the query's id from its checkpoint
    location; an :class:`~deltalog.errors.InvalidArgumentError` asking for one when there is neither."""
    given = parsed.get("txnAppId")
    if given is not None:
        if not given.strip():
            raise InvalidArgumentError("option txnAppId is empty")
        return given
    location = parsed.get("checkpointLocation")
    if not location:
        raise InvalidArgumentError(
            "the deltalog streaming sink commits each micro-batch exactly once under an application id: set "
            "writeStream.option('checkpointLocation', ...) (the query's id is read from it) or option txnAppId; "
            "with spark.sql.streaming.checkpointLocation alone the sink is not told where the checkpoint is"
        )
    found = query_id(location)
    if found is not None:
        return found
    derived = str(uuid.uuid5(_NAMESPACE, location.rstrip("/")))
    logger.warning(
        "cannot read the query id from %s/%s; the sink's application id %s is derived from the location: a new "
        "query in a fresh checkpoint at the same place would skip batches this one committed (set txnAppId)",
        location,
        QUERY_METADATA,
        derived,
    )
    return derived


__all__ = ["QUERY_METADATA", "app_id", "query_id"]
