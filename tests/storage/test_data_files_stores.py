"""The data-file writer on every store (local disk, S3 on a moto server, Azure Blob on Azurite): files stream
through the store's ``open_write`` under their partition directories and read back as written."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import unquote

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from deltalog.data.files import WriteTarget, write_files
from deltalog.errors import NotNullViolationError
from deltalog.storage.base import LogStore

SCHEMA = {
    "type": "struct",
    "fields": [
        {"name": "id", "type": "long", "nullable": False, "metadata": {}},
        {"name": "p", "type": "string", "nullable": True, "metadata": {}},
    ],
}


def test_partitioned_files_stream_into_every_store(new_store: Callable[[], LogStore]) -> None:
    store = new_store()
    data = pa.table({"id": list(range(3000)), "p": ["a:b", "c d", None] * 1000})
    adds = write_files(store, data.to_batches(max_chunksize=500), WriteTarget(SCHEMA, ("p",)), target_file_size=4096)
    assert sum(orjson.loads(a.stats or "")["numRecords"] for a in adds) == 3000
    ids = []
    for add in adds:
        key = unquote(add.path)
        assert key.startswith(("p=a%3Ab/", "p=c d/", "p=__HIVE_DEFAULT_PARTITION__/"))
        with store.open(key) as f:
            table = pq.read_table(f)
        assert table.num_rows == orjson.loads(add.stats or "")["numRecords"] and len(store.read(key)) == add.size
        ids.extend(table.column("id").to_pylist())
    assert sorted(ids) == list(range(3000))


def test_a_failed_write_leaves_no_file_in_the_store(new_store: Callable[[], LogStore]) -> None:
    store = new_store()
    good = pa.record_batch({"id": list(range(100)), "p": ["x"] * 100})
    bad = pa.record_batch({"id": [None], "p": ["x"]}, schema=good.schema)
    try:
        write_files(store, [good, good, bad], WriteTarget(SCHEMA, ("p",)), target_file_size=1)
    except NotNullViolationError:
        pass
    else:
        raise AssertionError("the null id was written")
    assert list(store.walk()) == []
