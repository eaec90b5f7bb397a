"""Secrets kept out of every log record, including the DEBUG records of the cloud client libraries.

Why a record factory: deltalog scrubs the messages it builds itself, but with DEBUG on, botocore logs each
request with its headers (``X-Amz-Security-Token`` is the session token, verbatim), and the Azure SDK's
HTTP logging and other libraries can print URLs and headers too. A ``logging.Filter`` only sees records of
the logger it is attached to, not those of its children (``botocore.endpoint``, ``botocore.auth``...), and
loggers created later would be missed. The record factory sees every record when it is made, before any
filter or handler, so a secret never reaches a handler, whichever library logged it.

Only the secret values deltalog was given (storage options) or that the clients it creates will pick up
from the environment are masked; the cost is one substring search per secret on each record created,
which only happens for enabled levels.
"""

from __future__ import annotations

import logging
import os
import threading
import traceback
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote

MASK = "***"
#: shorter values are not masked: they would turn ordinary words into asterisks
MIN_SECRET_LEN = 4
#: environment variables whose values the cloud clients deltalog creates read as credentials
ENV_SECRETS = {
    "s3": ("AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN"),
    "azure": (
        "AZURE_STORAGE_KEY",
        "AZURE_STORAGE_ACCOUNT_KEY",
        "AZURE_STORAGE_SAS_TOKEN",
        "AZURE_STORAGE_CONNECTION_STRING",
        "AZURE_CLIENT_SECRET",
    ),
}

_lock = threading.Lock()
_secrets: tuple[str, ...] = ()
_installed = False


def _variants(secret: str) -> set[str]:
    """The secret as given and as it appears percent-encoded in a URL or a signed query string."""
    out = {secret, quote(secret, safe=""), quote(secret, safe="/")}
    return {v for v in out if len(v) >= MIN_SECRET_LEN}


def mask(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret replaced by ``***``; ``secrets`` must come longest first."""
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, MASK)
    return text


def registered() -> tuple[str, ...]:
    """The values masked in log records now (longest first)."""
    return _secrets


def redact_in_logs(secrets: Iterable[str], env_kind: str | None = None) -> None:
    """Mask ``secrets`` (and, for ``env_kind`` ``"s3"``/``"azure"``, the credentials in the environment that
    those clients read) in every log record from now on, whichever logger it comes from."""
    values = [s for s in secrets if isinstance(s, str)]
    if env_kind is not None:
        values += [os.environ.get(name, "") for name in ENV_SECRETS.get(env_kind, ())]
    new: set[str] = set()
    for value in values:
        if len(value) >= MIN_SECRET_LEN:
            new |= _variants(value)
    global _secrets
    with _lock:
        if new - set(_secrets):
            _secrets = tuple(sorted(set(_secrets) | new, key=len, reverse=True))
        _install()


def _install() -> None:
    global _installed
    if _installed:
        return
    previous = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        secrets = _secrets
        if secrets:
            scrub_record(record, secrets)
        return record

    logging.setLogRecordFactory(factory)
    _installed = True


def scrub_record(record: logging.LogRecord, secrets: tuple[str, ...]) -> None:
    """Replace ``record``'s message (and its formatted exception) by a masked copy when it holds a secret."""
    try:
        message = record.getMessage()
    except Exception:  # a malformed format string: the handler will report it; there is nothing to mask in
        message = str(record.msg)
    masked = mask(message, secrets)
    if masked != message:
        record.msg, record.args = masked, ()
    if record.exc_info and record.exc_info[0] is not None:
        text = "".join(traceback.format_exception(*record.exc_info)).rstrip("\n")
        masked = mask(text, secrets)
        if masked != text:
            record.exc_text = masked
    if record.stack_info:
        record.stack_info = mask(record.stack_info, secrets)


__all__ = ["ENV_SECRETS", "MASK", "mask", "redact_in_logs", "registered", "scrub_record"]
