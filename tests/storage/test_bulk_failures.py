"""Per-key failures inside a successful bulk delete: the batch answered, some keys stayed.

Azure: a blob under an active lease cannot be deleted without its lease id, and Azurite answers that
sub-request 412 inside a 202 batch, so the failure comes from the real server. S3 (moto) never fails a key of
an unversioned delete, so the parsing of ``DeleteObjects``'s ``Errors`` is checked on the answer as botocore
parses it.
"""

from __future__ import annotations

import pytest
from azure.storage.blob import BlobServiceClient

from deltalog.errors import BulkDeleteError, StorageError
from deltalog.maintenance.deletion import delete_in_order
from deltalog.storage import bulk
from deltalog.storage.azure import AzureLogStore
from deltalog.storage.s3 import batch_failures
from deltalog.storage.uri import store_for
from tests.storage.servers import CONTAINER, FSSPEC, Server, azure_options, unique


def test_a_leased_blob_inside_an_azure_batch_is_named_and_the_rest_is_deleted(azurite_server: Server) -> None:
    prefix = unique()
    options = {**azure_options(azurite_server.endpoint), **FSSPEC}  # the SDK store, which the obstore one uses too
    store = store_for(f"abfs://{CONTAINER}/{prefix}", options)
    assert isinstance(store, AzureLogStore)
    paths = [f"p=1/part-{i}.parquet" for i in range(5)]
    for p in paths:
        store.put(p, b"data")
    service = BlobServiceClient.from_connection_string(options["connection_string"])
    lease = service.get_blob_client(CONTAINER, f"{prefix}/{paths[2]}").acquire_lease()
    try:
        with pytest.raises(BulkDeleteError) as info:
            bulk.delete_many(store, paths)
        assert info.value.failed == (paths[2],) and info.value.path == paths[2]
        assert paths[2] in str(info.value) and "412" in str(info.value)
        assert [f.name for f in store.walk()] == [paths[2]]  # every other key of the batch is gone

        for p in paths:
            if p != paths[2]:  # still there, and leased
                store.put(p, b"data")
        with pytest.raises(StorageError) as stopped:
            delete_in_order(store, [*paths, "p=2/part-9.parquet"], "vacuum")
        assert f"stopped at {paths[2]} after deleting 5 of 6 files" in str(stopped.value)  # the missing one counts
    finally:
        lease.release()
        service.close()
    bulk.delete_many(store, paths)  # released: the same call now succeeds
    assert list(store.walk()) == []


def test_s3_delete_objects_errors_are_failures_except_no_such_key() -> None:
    answer = {
        "Deleted": [{"Key": "t/a"}],
        "Errors": [
            {"Key": "t/b", "Code": "AccessDenied", "Message": "Access Denied"},
            {"Key": "t/c", "Code": "NoSuchKey", "Message": "gone already"},
            {"Key": "t/d", "Code": "InternalError", "Message": "try again"},
        ],
        "ResponseMetadata": {"HTTPStatusCode": 200},
    }
    assert batch_failures(answer) == [("t/b", "AccessDenied", "Access Denied"), ("t/d", "InternalError", "try again")]
    assert batch_failures({"ResponseMetadata": {"HTTPStatusCode": 200}}) == []
