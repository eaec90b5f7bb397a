"""A load that reads log compaction files sends fewer requests: counted by the proxy in front of the real moto S3
server (never timed). 30 commits, a compaction file of versions 0..28: the latest load is the hint, one LIST,
the compaction file and commit 29, where it was 30 commit GETs without; time travel into the range still reads
the commits.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import orjson
import pytest
from click.testing import CliRunner

from benchmarks.proxy import LatencyProxy
from deltalog import DeltaLog
from deltalog.cli.main import cli
from deltalog.core.log.paths import compaction_name
from tests.storage.servers import BUCKET, Server, s3_options, unique
from tests.storage.test_read_requests import commit, commit_bytes, kinds, reads_of


@pytest.fixture
def proxied(moto_server: Server) -> Iterator[tuple[LatencyProxy, str, Server]]:
    with LatencyProxy(moto_server.endpoint, latency_ms=0) as proxy:
        yield proxy, f"s3://{BUCKET}/{unique()}", moto_server


def test_a_latest_load_reads_the_compaction_file_instead_of_its_commits(
    proxied: tuple[LatencyProxy, str, Server],
) -> None:
    proxy, location, server = proxied
    direct = DeltaLog.for_table(location, s3_options(server.endpoint))
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda v: direct.store.put_if_absent(commit(v), commit_bytes(v)), range(30)))

    def load(version: int | None = None) -> tuple[int, Counter[str], list[str]]:
        log = DeltaLog.for_table(location, s3_options(proxy.endpoint))
        proxy.clear()
        snap = log.snapshot(version=version)
        requests = proxy.records()
        return snap.num_files, kinds(requests), reads_of(requests)

    files, before, _ = load()
    assert files == 30 and before == Counter({"GET": 1 + 30, "LIST": 1})
    assert direct.compact_log(0, 28).written
    files, after, names = load()
    assert files == 30 and after == Counter({"GET": 1 + 2, "LIST": 1})
    assert sorted(names) == sorted(["_last_checkpoint", compaction_name(0, 28), f"{29:020d}.json"])
    files, inside, names = load(version=20)  # time travel into the range: the commits
    assert files == 21 and inside["GET"] == 1 + 21 and compaction_name(0, 28) not in names


def test_the_compact_log_verb_reaches_s3_through_storage_options(proxied: tuple[LatencyProxy, str, Server]) -> None:
    _, location, server = proxied
    options = s3_options(server.endpoint)
    direct = DeltaLog.for_table(location, options)
    for v in range(5):
        direct.store.put_if_absent(commit(v), commit_bytes(v))
    args = [arg for k, v in options.items() for arg in ("--storage-option", f"{k}={v}")]
    result = CliRunner().invoke(cli, ["compact-log", location, "--from", "1", "--to", "3", "--json", *args])
    assert result.exit_code == 0, (result.stdout, result.stderr)
    doc = orjson.loads(result.stdout)
    assert doc["written"] is True and doc["path"] == f"_delta_log/{compaction_name(1, 3)}"
    assert str(options["AWS_SECRET_ACCESS_KEY"]) not in result.stdout + result.stderr
    snap = DeltaLog.for_table(location, options).snapshot()
    assert snap.num_files == 5 and [p.name for p in snap.segment.compactions] == [compaction_name(1, 3)]
