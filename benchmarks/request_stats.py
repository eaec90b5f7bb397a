"""What a set of proxied requests amounts to: the count per operation class, the serial round trips, and
how many fell outside ``_delta_log`` (a data file a writer put, which deltalog's appends never include).

Operation classes are those of the object-store APIs, told apart by method and query (S3 path-style URLs,
Azure blob URLs): ``LIST`` is S3's ListObjectsV2 (``list-type=2``) or v1 (a GET on the bucket with no query,
a prefix or a delimiter) and Azure's List Blobs (``comp=list``); ``POST batch`` is S3's DeleteObjects
(``?delete``) and Azure's Blob Batch (``comp=batch``); ``GET``, ``HEAD``, ``PUT`` and ``DELETE`` are the
object operations; anything else (a multipart upload's POSTs, say) is ``other``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from urllib.parse import parse_qsl, unquote, urlsplit

from benchmarks.proxy import Request, serial_round_trips

CLASSES = ("GET", "HEAD", "PUT", "LIST", "DELETE", "POST batch", "other")


def op_class(method: str, target: str) -> str:
    parts = urlsplit(target)
    query = {k.lower(): v for k, v in parse_qsl(parts.query, keep_blank_values=True)}
    if method == "GET":
        bucket_only = "/" not in parts.path.strip("/")
        listing_v1 = bucket_only and (not query or "prefix" in query or "delimiter" in query)
        if query.get("comp") == "list" or "list-type" in query or listing_v1:
            return "LIST"
        return "GET"
    if method == "POST":
        return "POST batch" if "delete" in query or query.get("comp") == "batch" else "other"
    return method if method in CLASSES else "other"


def touches_log(target: str) -> bool:
    """Whether a request reads, lists or writes under a table's ``_delta_log``."""
    return "/_delta_log" in unquote(target)


@dataclass(frozen=True)
class Tally:
    requests: int
    serial: int
    by_class: dict[str, int]
    outside_log: int

    def classes_text(self) -> str:
        return ", ".join(f"{c} {self.by_class[c]}" for c in CLASSES if self.by_class.get(c))


def tally(requests: list[Request]) -> Tally:
    counts = Counter(op_class(r.method, r.target) for r in requests)
    outside = sum(1 for r in requests if not touches_log(r.target))
    return Tally(len(requests), serial_round_trips(requests), dict(counts), outside)


__all__ = ["CLASSES", "Tally", "op_class", "tally", "touches_log"]
