"""The object-store servers of the store benchmarks (moto S3, Azurite), each engine's options, and uploads.

The servers are started by the same code as the storage tests' fixtures (:mod:`tests.storage.servers`), so
the benchmark and the tests run the same moto and Azurite the same way. Both keep objects in memory, so the
tables are uploaded by every run: built locally once (:func:`benchmarks.cases.build`, as the local bench
does) and put through a plain client straight to the server, never through the proxy, so nothing of the
upload is counted. That client (:class:`DirectClient`) also lists commits afterwards: their modification
times for time travel by timestamp, and the versions the writers left, checked without either engine.

Each engine gets the options it would get from a user pointing it at the proxy: on S3 one dict in
``deltalake``'s spelling serves both; on Azure deltalog takes the emulator's connection string, and
``deltalake`` (object_store) its emulator switch, which reads the endpoint from the environment
(``AZURITE_BLOB_STORAGE_URL``, set in that engine's processes only). Not an explicit endpoint with
``allow_http``: object_store then lists with Azure's ``startFrom``, which Azurite 3.35 answers with an empty
page, so deltalake's time travel by timestamp found no table.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.synth import LOG_DIR
from deltalog.storage.options import EMULATOR_ACCOUNT
from tests.storage.servers import S3_KEY, S3_SECRET, Server, azure_options, s3_options, start_azurite, start_moto, stop

STORES = ("s3", "azure")
#: The bucket (S3) or container (Azure) every benchmark table lives in.
BUCKET = "deltalog-bench"
#: "deltalog" is deltalog with its default client (obstore when installed), "deltalog-fsspec" the same code on
#: s3fs / adlfs (the ``deltalog_backend`` option): one run compares both clients beside deltalake
ENGINES = ("deltalog", "deltalog-fsspec", "deltalake")
#: the storage options that pin each deltalog engine's client
PINNED: dict[str, dict[str, str]] = {"deltalog-fsspec": {"deltalog_backend": "fsspec"}}


@dataclass(frozen=True)
class Target:
    """How one engine reaches one table: its URI, its storage options and its process's extra variables."""

    location: str
    options: dict[str, Any]
    env: dict[str, str]


@dataclass(frozen=True)
class Backend:
    """One running server of one store kind."""

    store: str
    server: Server

    def target(self, engine: str, prefix: str, endpoint: str) -> Target:
        """What ``engine`` is given to reach the table under ``prefix`` through ``endpoint`` (proxy or server)."""
        return Target(self.location(prefix), self.options(engine, endpoint), self.environment(engine, endpoint))

    def location(self, prefix: str) -> str:
        scheme = "s3" if self.store == "s3" else "abfs"
        return f"{scheme}://{BUCKET}/{prefix}"

    def options(self, engine: str, endpoint: str) -> dict[str, Any]:
        """What ``engine`` is given to reach the table through ``endpoint`` (the proxy, or the server)."""
        if self.store == "s3":
            return {**s3_options(endpoint), **PINNED.get(engine, {})}
        if engine.startswith("deltalog"):
            return {**azure_options(endpoint), **PINNED.get(engine, {})}
        return {"azure_storage_use_emulator": "true", "azure_storage_account_name": EMULATOR_ACCOUNT}

    def environment(self, engine: str, endpoint: str) -> dict[str, str]:
        """Variables ``engine``'s process needs besides :meth:`options` to reach ``endpoint``."""
        return {"AZURITE_BLOB_STORAGE_URL": endpoint} if self.store == "azure" and engine == "deltalake" else {}


class DirectClient:
    """Puts and lists objects straight on the server (boto3 or azure-storage-blob), bypassing the proxy."""

    def __init__(self, backend: Backend) -> None:
        self.store = backend.store
        endpoint = backend.server.endpoint
        if self.store == "s3":
            import boto3

            self._s3 = boto3.client(
                "s3",
                endpoint_url=endpoint,
                aws_access_key_id=S3_KEY,
                aws_secret_access_key=S3_SECRET,
                region_name="us-east-1",
            )
        else:
            from azure.storage.blob import BlobServiceClient

            self._service = BlobServiceClient.from_connection_string(azure_options(endpoint)["connection_string"])
            self._container = self._service.get_container_client(BUCKET)

    def create_bucket(self) -> None:
        if self.store == "s3":
            self._s3.create_bucket(Bucket=BUCKET)
        else:
            self._container.create_container()

    def put(self, key: str, data: bytes) -> None:
        if self.store == "s3":
            self._s3.put_object(Bucket=BUCKET, Key=key, Body=data)
        else:
            self._container.upload_blob(key, data, overwrite=True)

    def list(self, prefix: str) -> list[tuple[str, int]]:
        """(key, modification time in ms) of every object under ``prefix``, in key order."""
        out: list[tuple[str, int]] = []
        if self.store == "s3":
            for page in self._s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix):
                out += [(o["Key"], int(o["LastModified"].timestamp() * 1000)) for o in page.get("Contents", ())]
        else:
            out = [
                (b.name, int(b.last_modified.timestamp() * 1000))
                for b in self._container.list_blobs(name_starts_with=prefix)
            ]
        return sorted(out)

    def commit_versions(self, prefix: str) -> dict[int, int]:
        """{version: mtime ms} of the commit files (``<20 digits>.json``) of the table under ``prefix``."""
        found = {}
        log_prefix = f"{prefix}/{LOG_DIR}/"
        for key, mtime in self.list(log_prefix):
            name = key[len(log_prefix) :]
            if len(name) == 25 and name.endswith(".json") and name[:20].isdigit():
                found[int(name[:20])] = mtime
        return found

    def close(self) -> None:
        if self.store == "azure":
            self._service.close()


@contextlib.contextmanager
def serving(store: str, workdir: Path) -> Iterator[Backend]:
    """A fresh server of ``store`` with the benchmark bucket in it, stopped on exit."""
    if store not in STORES:
        raise ValueError(f"unknown store {store!r} (known: {', '.join(STORES)})")
    server = start_moto(workdir / "moto") if store == "s3" else start_azurite(workdir / "azurite")
    try:
        backend = Backend(store, server)
        client = DirectClient(backend)
        client.create_bucket()
        client.close()
        yield backend
    finally:
        stop(server)


def upload_log(client: DirectClient, table: str, prefix: str, pause_after: int | None = None) -> int:
    """Put the ``_delta_log`` of the local ``table`` under ``prefix``, in name order; returns the object count.

    Commits go up in version order, one at a time, so their modification times follow their versions. With
    ``pause_after``, the upload waits two seconds after that version's commit: a timestamp between the two
    commits then names it unambiguously, whatever rounding or monotonic adjustment an engine applies.
    """
    log_dir = os.path.join(table, LOG_DIR)
    names = sorted(os.listdir(log_dir))
    for name in names:
        with open(os.path.join(log_dir, name), "rb") as f:
            client.put(f"{prefix}/{LOG_DIR}/{name}", f.read())
        if pause_after is not None and name == f"{pause_after:020d}.json":
            time.sleep(2.0)
    return len(names)


__all__ = ["BUCKET", "ENGINES", "STORES", "Backend", "DirectClient", "Target", "serving", "upload_log"]
