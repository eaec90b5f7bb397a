"""Action dicts for hand-made Delta logs in unit tests (owned by the unit-test suite).

Every byte of a ``_delta_log`` a test writes is chosen by the test: each builder here returns one action
as the dict that is written as a JSON line (or a checkpoint row) by :mod:`tests.unit.logwriter`.

The values a builder fills in when not told (the epoch of file and commit times, the table id, the
default columns) come from a :class:`Conventions`. Two are in use, and their bytes are pinned by the
tests written against them:

* :data:`Y2025` (the module-level ``add``, ``remove``, ``metadata``, ``commit_info``, :data:`T0`,
  :data:`TABLE_ID`): the replay, snapshot and bad-input suites; commitInfo carries :data:`T0`.
* :data:`Y2026`: the CLI, vacuum and cleanup suites, whose tables come from
  :func:`tests.unit.logwriter.make_table`; a commitInfo built without a timestamp gets its commit's time
  when written, so what the CLI shows is known in advance.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

#: 2025-01-01T00:00:00Z in ms; version v is committed at T0 + v * STEP unless told otherwise.
T0 = 1_735_689_600_000
STEP = 60_000
TABLE_ID = "11111111-2222-4333-8444-555555555555"


# ---------------------------------------------------------------------------------------------- convention-free


def protocol(
    reader: int = 1,
    writer: int = 2,
    reader_features: Sequence[str] | None = None,
    writer_features: Sequence[str] | None = None,
) -> dict[str, Any]:
    body: dict[str, Any] = {"minReaderVersion": reader, "minWriterVersion": writer}
    if reader_features is not None:
        body["readerFeatures"] = list(reader_features)
    if writer_features is not None:
        body["writerFeatures"] = list(writer_features)
    return {"protocol": body}


def schema_string(
    columns: Mapping[str, Any],
    physical: Mapping[str, str] | None = None,
    *,
    nullable: Mapping[str, bool] | None = None,
    field_metadata: Mapping[str, Mapping[str, Any]] | None = None,
) -> str:
    """A struct schema string for ``{name: type}`` (a type may be a nested type dict).

    ``physical`` adds column-mapping metadata (ids by position, the given physical names);
    ``field_metadata`` gives a column its field metadata as written; ``nullable`` defaults to true.
    """
    fields = []
    for i, (name, t) in enumerate(columns.items(), start=1):
        meta: dict[str, Any] = dict((field_metadata or {}).get(name, {}))
        if physical and name in physical:
            meta = {"delta.columnMapping.id": i, "delta.columnMapping.physicalName": physical[name]}
        fields.append({"name": name, "type": t, "nullable": (nullable or {}).get(name, True), "metadata": meta})
    return orjson.dumps({"type": "struct", "fields": fields}).decode()


def dv(path_or_inline: str, storage_type: str = "u", offset: int | None = 1, cardinality: int = 1) -> dict[str, Any]:
    out: dict[str, Any] = {
        "storageType": storage_type,
        "pathOrInlineDv": path_or_inline,
        "sizeInBytes": 36,
        "cardinality": cardinality,
    }
    if offset is not None:
        out["offset"] = offset
    return out


def inline_dv(cardinality: int = 1) -> dict[str, Any]:
    """A syntactically valid inline deletion-vector descriptor (the log never decodes its bits)."""
    return {
        "storageType": "i",
        "pathOrInlineDv": "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L",
        "sizeInBytes": 40,
        "cardinality": cardinality,
    }


def txn(app_id: str, version: int, last_updated: int | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"appId": app_id, "version": version}
    if last_updated is not None:
        body["lastUpdated"] = last_updated
    return {"txn": body}


def domain(name: str, configuration: str = "{}", removed: bool = False) -> dict[str, Any]:
    return {"domainMetadata": {"domain": name, "configuration": configuration, "removed": removed}}


def stats(num_records: int, **min_max: tuple[Any, Any]) -> str:
    return orjson.dumps(
        {
            "numRecords": num_records,
            "minValues": {k: v[0] for k, v in min_max.items()},
            "maxValues": {k: v[1] for k, v in min_max.items()},
            "nullCount": {k: 0 for k in min_max},
        }
    ).decode()


# ---------------------------------------------------------------------------------------------- conventions


@dataclass(frozen=True)
class Conventions:
    """What the builders fill in when a test does not say: times, table id, default columns.

    ``stamp_commit_info``: a commitInfo built without ``timestamp`` carries ``t0`` (true) or none, for
    the writer to fill with its commit's time (false; see :func:`tests.unit.logwriter.make_table`).
    """

    t0: int
    table_id: str
    columns: Mapping[str, Any] = field(default_factory=dict)
    stamp_commit_info: bool = True
    step: int = STEP

    def commit_time(self, version: int) -> int:
        """The default commit time (epoch ms) of ``version``: ``t0 + version * step``."""
        return self.t0 + version * self.step

    def metadata(
        self,
        columns: Mapping[str, Any] | None = None,
        partition_columns: Sequence[str] = (),
        configuration: Mapping[str, str] | None = None,
        *,
        table_id: str | None = None,
        physical: Mapping[str, str] | None = None,
        name: str | None = None,
        description: str | None = None,
        nullable: Mapping[str, bool] | None = None,
        field_metadata: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """A metaData action; partition columns missing from ``columns`` are added as strings."""
        cols = dict(columns if columns is not None else self.columns)
        for p in partition_columns:
            cols.setdefault(p, "string")
        body: dict[str, Any] = {
            "id": table_id if table_id is not None else self.table_id,
            "format": {"provider": "parquet", "options": {}},
            "schemaString": schema_string(cols, physical, nullable=nullable, field_metadata=field_metadata),
            "partitionColumns": list(partition_columns),
            "configuration": dict(configuration or {}),
            "createdTime": self.t0,
        }
        if name is not None:
            body["name"] = name
        if description is not None:
            body["description"] = description
        return {"metaData": body}

    def add(
        self,
        path: str,
        partition_values: Mapping[str, str | None] | None = None,
        *,
        size: int = 100,
        modification_time: int | None = None,
        data_change: bool = True,
        stats: Mapping[str, Any] | str | None = None,
        tags: Mapping[str, str] | None = None,
        deletion_vector: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """An add action; ``stats`` may be raw text or a dict (encoded to the JSON string Delta stores)."""
        body: dict[str, Any] = {
            "path": path,
            "partitionValues": dict(partition_values or {}),
            "size": size,
            "modificationTime": self.t0 if modification_time is None else modification_time,
            "dataChange": data_change,
        }
        if stats is not None:
            body["stats"] = stats if isinstance(stats, str) else orjson.dumps(stats).decode()
        if tags is not None:
            body["tags"] = dict(tags)
        if deletion_vector is not None:
            body["deletionVector"] = dict(deletion_vector)
        return {"add": body}

    def remove(
        self,
        path: str,
        *,
        deletion_timestamp: int | None = None,
        data_change: bool = True,
        partition_values: Mapping[str, str | None] | None = None,
        size: int | None = None,
        deletion_vector: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        when = self.t0 if deletion_timestamp is None else deletion_timestamp
        body: dict[str, Any] = {"path": path, "deletionTimestamp": when, "dataChange": data_change}
        if partition_values is not None:
            body["extendedFileMetadata"] = True
            body["partitionValues"] = dict(partition_values)
            body["size"] = size if size is not None else 100
        if deletion_vector is not None:
            body["deletionVector"] = dict(deletion_vector)
        return {"remove": body}

    def commit_info(
        self,
        operation: str = "WRITE",
        parameters: Mapping[str, Any] | None = None,
        *,
        timestamp: int | None = None,
        **fields: Any,
    ) -> dict[str, Any]:
        """A commitInfo action; extra keyword fields are written as given (``readVersion=0``, ...)."""
        body: dict[str, Any] = {}
        if timestamp is not None or self.stamp_commit_info:
            body["timestamp"] = self.t0 if timestamp is None else timestamp
        body["operation"] = operation
        body["operationParameters"] = dict(parameters or {})
        body.update(fields)
        return {"commitInfo": body}


#: The replay/snapshot suites' conventions (2025-01-01 epoch); the module-level builders use them.
Y2025 = Conventions(t0=T0, table_id=TABLE_ID, columns={"id": "long", "p": "string"})
#: The CLI/vacuum/cleanup suites' conventions: 2026-01-01T00:00:00Z, a zero table id, commitInfo times
#: filled in by :func:`tests.unit.logwriter.make_table`.
Y2026 = Conventions(
    t0=1_767_225_600_000,
    table_id="00000000-0000-4000-8000-000000000000",
    columns={"id": "long", "value": "string"},
    stamp_commit_info=False,
)

metadata = Y2025.metadata
add = Y2025.add
remove = Y2025.remove
commit_info = Y2025.commit_info
