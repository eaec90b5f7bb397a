"""The typed errors every object store gives, worded once: what failed, whether a retry may help, what to fix.

Why one module: S3 (s3fs), GCS (gcsfs), Azure (adlfs) and the obstore backend meet the same few situations
(credentials refused, a bucket or container that is not there, a request that failed and may pass later)
through different client exceptions. Each store only decides which situation it has; the messages, the
``retryable`` flag and the scrubbing of secret values are the same for all of them, so a user sees one
wording whichever client served the table.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from deltalog.errors import AccessDeniedError, StorageError
from deltalog.storage.options import scrub

#: where each cloud's credentials are given, for the "access denied" message
CREDENTIALS_HINT = {
    "s3": "storage_options key/secret or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN",
    "azure": (
        "storage_options account_name/account_key, connection_string or sas_token, or AZURE_STORAGE_ACCOUNT_KEY, "
        "AZURE_STORAGE_CONNECTION_STRING"
    ),
    "gcs": "storage_options token, or GOOGLE_APPLICATION_CREDENTIALS",
}


def cause_of(exc: BaseException, match: Callable[[BaseException], bool]) -> BaseException | None:
    """The first of ``exc`` and its causes (a few levels: clients re-raise each other's errors) that ``match``."""
    seen: BaseException | None = exc
    for _ in range(6):
        if seen is None:
            return None
        if match(seen):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def where(op: str, display: str, path: str) -> str:
    """How a message names the call: ``read s3://bucket/table/_delta_log/…``."""
    return f"{op} {display}/{path}".rstrip("/")


def access_denied(kind: str, label: Any, at: str, display: str, path: str, secrets: tuple[str, ...]) -> StorageError:
    """Credentials refused (401/403 or the cloud's code for it): never retryable; says which options to check."""
    msg = (
        f"access denied ({label}) for {at}: check the credentials ({CREDENTIALS_HINT[kind]}) and that they may "
        f"read, write, list and delete under {display}"
    )
    return AccessDeniedError(scrub(msg, secrets), path=path)


def no_container(kind: str, name: str, at: str, path: str) -> StorageError:
    """The bucket (S3, GCS) or container (Azure) does not exist: fixing the URI is the only cure."""
    word = "container" if kind == "azure" else "bucket"
    return StorageError(f"{word} {name!r} does not exist ({at}): create it, or fix the table URI", path=path)


def request_failed(
    at: str, label: str, detail: str, path: str, secrets: tuple[str, ...], retryable: bool
) -> StorageError:
    """Any other failure: the client's first line of explanation, scrubbed, and whether a retry may pass."""
    first_line = (detail.strip().splitlines() or [""])[0]
    return StorageError(scrub(f"{at} failed: {label}: {first_line}", secrets), path=path, retryable=retryable)


def mtime_ms(value: Any) -> int:
    """A listing's modification time (a datetime, or an ISO 8601 string) in ms since the epoch; 0 if unknown."""
    if value is None:
        return 0
    if hasattr(value, "timestamp"):
        return int(value.timestamp() * 1000)
    try:
        return int(datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return 0


__all__ = ["CREDENTIALS_HINT", "access_denied", "cause_of", "mtime_ms", "no_container", "request_failed", "where"]
