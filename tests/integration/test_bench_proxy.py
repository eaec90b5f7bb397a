"""The benchmark proxy (benchmarks/proxy.py) counts what it forwards and chains only what cannot overlap.

Issue 16's gates are request counts and serial round trips measured by this proxy, so the proxy is tested on
known request patterns: sequential requests through it against a real moto server make one chain as long
as the sequence; requests released together (the injected latency keeps them in flight together) make a
chain of one; two waves make two. The operation classes are checked on the requests S3 and Azure clients
really send. It also has to be transparent: bodies, HEAD answers, chunked answers, ``Expect: 100-continue``
and kept-alive connections go through unchanged (a stdlib HTTP/1.1 server stands in for the upstream where a
store would not send those shapes on demand). No timing is asserted: only counts and the order of events.
"""

from __future__ import annotations

import http.client
import http.server
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from benchmarks.arrival import kernel_dates_arrivals
from benchmarks.proxy import LatencyProxy, Request, serial_round_trips
from benchmarks.request_stats import op_class, tally, touches_log
from tests.storage.servers import BUCKET, S3_KEY, S3_SECRET, Server, azure_options, azurite_server, moto_server, unique

__all__ = ["azurite_server", "moto_server"]

#: Long enough that requests released together are still in flight together on a loaded 2-core machine.
CONCURRENT_LATENCY_MS = 1000.0


def _req(start: float, end: float) -> Request:
    return Request("GET", "/b/k", 200, start, start, start, end, end)


def test_serial_round_trips_is_the_longest_chain_of_non_overlapping_requests() -> None:
    assert serial_round_trips([]) == 0
    assert serial_round_trips([_req(0, 1), _req(1, 2), _req(2, 3)]) == 3  # each starts as the previous ends
    assert serial_round_trips([_req(0, 1), _req(0.1, 1.1), _req(0.5, 2)]) == 1  # all in flight together
    # two waves of three, then one request overlapping the end of the second wave: 2
    waves = [_req(0, 1), _req(0.01, 1.01), _req(0.02, 1.02), _req(1.5, 2.5), _req(1.6, 2.6), _req(2.4, 3)]
    assert serial_round_trips(waves) == 2
    # a long request beside a chain of short ones does not shorten the chain
    assert serial_round_trips([_req(0, 10), _req(0, 1), _req(2, 3), _req(4, 5), _req(6, 7)]) == 4
    # order of the input does not matter
    assert serial_round_trips(list(reversed([_req(0, 1), _req(1, 2), _req(2, 3)]))) == 3


def test_operation_classes_of_s3_and_azure_requests() -> None:
    s3 = [
        ("GET", "/bkt/t/_delta_log/00000000000000000000.json", "GET"),
        ("HEAD", "/bkt/t/_delta_log/_last_checkpoint", "HEAD"),
        ("GET", "/bkt?list-type=2&prefix=t%2F_delta_log%2F", "LIST"),
        ("GET", "/bkt?prefix=t%2F_delta_log%2F&delimiter=%2F", "LIST"),
        ("GET", "/bkt?location", "GET"),
        ("PUT", "/bkt/t/_delta_log/00000000000000000001.json", "PUT"),
        ("DELETE", "/bkt/t/part-0.parquet", "DELETE"),
        ("POST", "/bkt?delete", "POST batch"),
        ("POST", "/bkt/t/big.parquet?uploads", "other"),
    ]
    azure = [
        ("GET", "/devstoreaccount1/c/t/_delta_log/00000000000000000000.json", "GET"),
        ("GET", "/devstoreaccount1/c?restype=container&comp=list&prefix=t%2F_delta_log%2F", "LIST"),
        ("PUT", "/devstoreaccount1/c/t/_delta_log/00000000000000000001.json", "PUT"),
        ("POST", "/devstoreaccount1/c?restype=container&comp=batch", "POST batch"),
        ("DELETE", "/devstoreaccount1/c/t/part-0.parquet", "DELETE"),
    ]
    for method, target, want in s3 + azure:
        assert op_class(method, target) == want, (method, target)
    assert touches_log("/bkt?list-type=2&prefix=t%2F_delta_log%2F")
    assert not touches_log("/bkt/t/part-0.parquet")


def _s3(endpoint: str) -> Any:
    return boto3.client(
        "s3", endpoint_url=endpoint, aws_access_key_id=S3_KEY, aws_secret_access_key=S3_SECRET, region_name="us-east-1"
    )


def test_sequential_requests_through_the_proxy_make_one_chain(moto_server: Server) -> None:
    prefix = unique("proxy")
    with LatencyProxy(moto_server.endpoint, latency_ms=5) as proxy:
        client = _s3(proxy.endpoint)
        client.put_object(Bucket=BUCKET, Key=f"{prefix}/_delta_log/a.json", Body=b"first\n")
        for _ in range(3):
            assert client.get_object(Bucket=BUCKET, Key=f"{prefix}/_delta_log/a.json")["Body"].read() == b"first\n"
        client.head_object(Bucket=BUCKET, Key=f"{prefix}/_delta_log/a.json")
        listed = client.list_objects_v2(Bucket=BUCKET, Prefix=f"{prefix}/_delta_log/")
        assert [o["Key"] for o in listed["Contents"]] == [f"{prefix}/_delta_log/a.json"]
        client.delete_object(Bucket=BUCKET, Key=f"{prefix}/_delta_log/a.json")
        seen = proxy.records()
    counted = tally(seen)
    assert counted.requests == 7
    assert counted.by_class == {"PUT": 1, "GET": 3, "HEAD": 1, "LIST": 1, "DELETE": 1}
    assert counted.serial == 7
    assert counted.outside_log == 0
    assert [r.status for r in seen] == [200, 200, 200, 200, 200, 200, 204]
    assert all(r.start <= r.released <= r.sent <= r.answered <= r.end for r in seen)
    assert all(r.released - r.start >= 0.005 for r in seen)  # the injected wait happened before forwarding


def _together(client: Any, keys: list[str]) -> None:
    """GET every key from its own thread, all released at once by a barrier."""
    barrier = threading.Barrier(len(keys))
    errors: list[BaseException] = []

    def get(key: str) -> None:
        barrier.wait(timeout=60)
        try:
            client.get_object(Bucket=BUCKET, Key=key)["Body"].read()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=get, args=(k,)) for k in keys]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert errors == []


def test_concurrent_requests_through_the_proxy_do_not_chain(moto_server: Server) -> None:
    prefix = unique("proxy")
    keys = [f"{prefix}/_delta_log/{i:020d}.json" for i in range(6)]
    direct = _s3(moto_server.endpoint)
    for k in keys:
        direct.put_object(Bucket=BUCKET, Key=k, Body=b"{}\n")
    with LatencyProxy(moto_server.endpoint, latency_ms=CONCURRENT_LATENCY_MS) as proxy:
        client = _s3(proxy.endpoint)
        client.head_bucket(Bucket=BUCKET)  # opens the client's pool, so the waves below are GETs only
        proxy.clear()
        _together(client, keys)
        one_wave = proxy.records()
        proxy.clear()
        _together(client, keys[:3])
        _together(client, keys[3:])
        two_waves = proxy.records()
    assert tally(one_wave).requests == 6
    assert tally(one_wave).by_class == {"GET": 6}
    assert tally(one_wave).serial == 1
    assert tally(two_waves).requests == 6
    assert tally(two_waves).serial == 2


def test_azure_requests_through_the_proxy_are_counted_by_class(azurite_server: Server) -> None:
    from azure.storage.blob import BlobServiceClient

    with LatencyProxy(azurite_server.endpoint, latency_ms=5) as proxy:
        service = BlobServiceClient.from_connection_string(azure_options(proxy.endpoint)["connection_string"])
        container = service.get_container_client("deltalog-tests")
        prefix = unique("proxy")
        container.upload_blob(f"{prefix}/_delta_log/00000000000000000000.json", b"{}\n", overwrite=False)
        assert container.download_blob(f"{prefix}/_delta_log/00000000000000000000.json").readall() == b"{}\n"
        assert [b.name for b in container.list_blobs(name_starts_with=f"{prefix}/_delta_log/")] == [
            f"{prefix}/_delta_log/00000000000000000000.json"
        ]
        container.upload_blob(f"{prefix}/data.parquet", b"x", overwrite=True)
        service.close()
        counted = tally(proxy.records())
    assert counted.by_class == {"PUT": 2, "GET": 1, "LIST": 1}
    assert counted.serial == 4
    assert counted.outside_log == 1


# ------------------------------------------------------------------------------------------ transparency
class _Upstream(http.server.BaseHTTPRequestHandler):
    """An HTTP/1.1 server with keep-alive that answers in the shapes the proxy must pass on unchanged."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        if self.path == "/chunked":
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for part in (b"hello ", b"chunked ", b"world"):
                self.wfile.write(f"{len(part):x}\r\n".encode() + part + b"\r\n")
            self.wfile.write(b"0\r\n\r\n")
            return
        if self.path == "/empty":
            self.send_response(204)
            self.end_headers()
            return
        body = f"path={self.path} conn={id(self.connection)}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_HEAD(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "12345")
        self.end_headers()

    def do_PUT(self) -> None:
        data = self.rfile.read(int(self.headers["Content-Length"]))
        body = b"got " + data[::-1]
        self.send_response(201)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def upstream() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Upstream)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=30)


def test_the_proxy_passes_every_message_shape_through_unchanged(upstream: str) -> None:
    with LatencyProxy(upstream, latency_ms=1) as proxy:
        conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=60)
        answers = []
        for method, path, body, headers in (
            ("GET", "/a?x=1", None, {}),
            ("HEAD", "/a", None, {}),
            ("GET", "/chunked", None, {}),
            ("GET", "/empty", None, {}),
            ("PUT", "/p", b"0123456789" * 1000, {"Expect": "100-continue"}),
            ("GET", "/b", None, {}),
        ):
            conn.request(method, path, body=body, headers=headers)
            resp = conn.getresponse()
            answers.append((resp.status, resp.read(), resp.getheader("Content-Length")))
        conn.close()
        seen = proxy.records()
    assert answers[0][0] == 200 and answers[0][1].startswith(b"path=/a?x=1 ")
    assert answers[1] == (200, b"", "12345")  # a HEAD's Content-Length without a body
    assert answers[2] == (200, b"hello chunked world", None)
    assert answers[3] == (204, b"", None)
    assert answers[4] == (201, b"got " + (b"0123456789" * 1000)[::-1], str(4 + 10_000))
    # one client connection, kept alive: one server connection served every request
    assert answers[5][1].split(b" conn=")[1] == answers[0][1].split(b" conn=")[1]
    assert [(r.method, r.target, r.status) for r in seen] == [
        ("GET", "/a?x=1", 200),
        ("HEAD", "/a", 200),
        ("GET", "/chunked", 200),
        ("GET", "/empty", 204),
        ("PUT", "/p", 201),
        ("GET", "/b", 200),
    ]
    assert seen[4].bytes_in == 10_000
    assert serial_round_trips(seen) == 6


def test_answers_in_rounds_count_dependency_depth_not_time(moto_server: Server) -> None:
    """Three GETs sent together, then one sent after their answers, then a bounded pool of 2 over 4 keys: the
    rounds are 0, 0, 0 | 1 | 2, 2, 3, 3: the depth of what waited for what, however slowly each was sent."""
    prefix = unique("rounds")
    keys = [f"{prefix}/_delta_log/{i:020d}.json" for i in range(4)]
    direct = _s3(moto_server.endpoint)
    for k in keys:
        direct.put_object(Bucket=BUCKET, Key=k, Body=b"{}\n")
    with LatencyProxy(moto_server.endpoint, latency_ms=0) as proxy:
        client = _s3(proxy.endpoint)
        client.head_bucket(Bucket=BUCKET)
        proxy.answer_in_rounds(0.3)
        proxy.clear()
        _together(client, keys[:3])
        client.get_object(Bucket=BUCKET, Key=keys[3])["Body"].read()
        _together(client, keys[:2])
        _together(client, keys[2:])
        proxy.answer_in_rounds(None)
        seen = proxy.records()
        client.get_object(Bucket=BUCKET, Key=keys[0])["Body"].read()  # answered at once again
        after = proxy.records()[-1]
    assert sorted(r.round for r in seen) == [0, 0, 0, 1, 2, 2, 3, 3]
    assert after.round == -1


def test_the_kernel_dates_arriving_packets_once_asked() -> None:
    """What a proxy waits for when it starts: Linux switches receive dates on from a work queue, and a packet
    that arrives before the switch is dated when it is read (the failure this guards: a busy proxy's request
    dated 0.5 s late on a machine at load 35)."""
    assert kernel_dates_arrivals()


def test_a_request_is_dated_when_it_arrived_even_while_the_proxy_was_busy(upstream: str) -> None:
    """The proxy's thread is busy for 0.5 s while a request arrives: its start is still the time it was sent
    (the kernel's receive time), so a busy proxy cannot make independent requests look dependent."""
    with LatencyProxy(upstream, latency_ms=0) as proxy:
        sock = socket.create_connection(("127.0.0.1", proxy.port), timeout=60)
        proxy.occupy(0.5)
        sent = time.monotonic()
        sock.sendall(b"GET /late HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
        data = b""
        while b"\r\n\r\n" not in data:
            data += sock.recv(65536)
        sock.close()
        (record,) = proxy.records()
    assert data.startswith(b"HTTP/1.1 200")
    assert record.target == "/late"
    assert sent <= record.start < sent + 0.25 < record.end
