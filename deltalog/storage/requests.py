"""Every request a store sends, as one DEBUG record on the ``deltalog.storage.requests`` logger.

Why: on an object store the number of requests and how they chain decide the time, and a user who wonders why
a load is slow should not need a proxy to count them. Turn the logger on
(``logging.getLogger("deltalog.storage.requests").setLevel(logging.DEBUG)``, or ``deltalog --log-level
deltalog.storage.requests=DEBUG ...``) and each request gives one record: its method, path (query included,
signatures and tokens masked), status and duration, also as the record attributes ``request_method``,
``request_path``, ``request_status`` and ``request_ms`` for a handler that counts. When the logger is off,
a request costs one ``isEnabledFor`` check.

Where the records come from: S3 from botocore's ``before-send``/``response-received`` events on the s3fs
client (every HTTP attempt, retries and s3fs's own calls included); Azure from the SDK's per-call request and
response hooks on the calls deltalog makes itself (reads, listings, puts, deletes, batches: not adlfs's own
calls behind ``open``/``open_write``); the other backends from the store around each request it makes.
"""

from __future__ import annotations

import logging
import time
import weakref
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

REQUESTS = logging.getLogger("deltalog.storage.requests")

#: query parameters that carry credentials (SigV4 presigning, Azure SAS, tokens): never logged
_SENSITIVE = frozenset(
    {"sig", "signature", "x-amz-signature", "x-amz-credential", "x-amz-security-token", "token", "access_token"}
)
_T0 = "deltalog_request_t0"


def enabled() -> bool:
    return REQUESTS.isEnabledFor(logging.DEBUG)


def target_of(url: str) -> str:
    """The path and query of ``url`` as a record shows them, credential-bearing query values masked."""
    parts = urlsplit(url)
    if not parts.query:
        return parts.path
    query = [(k, "***" if k.lower() in _SENSITIVE else v) for k, v in parse_qsl(parts.query, keep_blank_values=True)]
    return f"{parts.path}?{urlencode(query)}"


def record(method: str, target: str, status: int, seconds: float, operation: str = "") -> None:
    """One record for one request (``status`` 0: no answer, e.g. the connection failed)."""
    if not REQUESTS.isEnabledFor(logging.DEBUG):
        return
    ms = seconds * 1000.0
    REQUESTS.debug(
        "%s %s -> %s in %.1f ms%s",
        method,
        target,
        status or "no answer",
        ms,
        f" ({operation})" if operation else "",
        extra={"request_method": method, "request_path": target, "request_status": status, "request_ms": ms},
    )


class Timed:
    """Times one request a store makes itself: ``with Timed("GET", target) as t: ...; t.status = 200``."""

    def __init__(self, method: str, target: str, operation: str = "") -> None:
        self.method, self.target, self.operation = method, target, operation
        self.status = 0
        self._t0 = 0.0

    def __enter__(self) -> Timed:
        self._t0 = time.monotonic()
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if self.status == 0 and exc is not None:
            self.status = int(getattr(exc, "status_code", 0) or getattr(exc, "status", 0) or 0)
        record(self.method, self.target, self.status, time.monotonic() - self._t0, self.operation)


# ------------------------------------------------------------------------------------------ botocore (S3)
def _before_send(request: Any, **_: Any) -> None:
    context = getattr(request, "context", None)
    if isinstance(context, dict):
        context[_T0] = (time.monotonic(), request.method, request.url)


def _response_received(context: Any, response_dict: Any, exception: Any, event_name: str = "", **_: Any) -> None:
    if not enabled() or not isinstance(context, dict) or _T0 not in context:
        return
    t0, method, url = context.pop(_T0)
    status = int((response_dict or {}).get("status_code") or 0)
    record(method, target_of(url), status, time.monotonic() - t0, event_name.rsplit(".", 1)[-1])


def instrument_botocore(client: Any) -> None:
    """Register the request records on an (aio)botocore client, once per client object."""
    if client in _INSTRUMENTED:
        return
    client.meta.events.register("before-send.s3", _before_send)
    client.meta.events.register("response-received.s3", _response_received)
    _INSTRUMENTED.add(client)


#: clients already instrumented (weakly held: a client's life is its filesystem's)
_INSTRUMENTED: weakref.WeakSet[Any] = weakref.WeakSet()


# ------------------------------------------------------------------------------------------ azure-core (Azure)
def _azure_request(request: Any) -> None:
    request.context[_T0] = time.monotonic()


def _azure_response(response: Any) -> None:
    t0 = response.context.get(_T0) if response.context is not None else None
    if t0 is None or not enabled():
        return
    http = response.http_request
    record(http.method, target_of(http.url), int(response.http_response.status_code), time.monotonic() - t0)


def azure_hooks() -> dict[str, Any]:
    """Keyword arguments for an Azure SDK call: its HTTP requests (each attempt) are recorded."""
    return {"raw_request_hook": _azure_request, "raw_response_hook": _azure_response}


__all__ = ["REQUESTS", "Timed", "azure_hooks", "enabled", "instrument_botocore", "record", "target_of"]
