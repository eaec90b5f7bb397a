"""obstore's exceptions as deltalog's typed errors.

Why a module of its own: ``object_store`` reports a failure as one of a few exception classes whose message
carries the rest (the HTTP status, the cloud's error code, "error sending request" for a connection that never
answered). Which of the shared situations (:mod:`deltalog.storage.cloud_errors`) an exception is, is decided
here, from the class first and the message second.
"""

from __future__ import annotations

import re

from deltalog.errors import StorageError
from deltalog.storage.cloud_errors import access_denied, no_container, request_failed, where

_STATUS = re.compile(r"(?:status code: |\(code: )(\d{3})")
#: the cloud's codes for "the bucket or container is not there"
_NO_CONTAINER = ("NoSuchBucket", "ContainerNotFound")
#: what object_store says when no answer came (after its own retries): may pass later
_TRANSPORT = ("error sending request", "connection", "timed out", "timeout", "dns error", "broken pipe", "reset")
_AUTH_CLASSES = ("PermissionDeniedError", "UnauthenticatedError")


def status_of(exc: BaseException) -> int:
    """The HTTP status an obstore exception's message names (its last one: retries come first), else 0."""
    found = _STATUS.findall(str(exc))
    return int(found[-1]) if found else 0


def no_container_code(exc: BaseException) -> bool:
    """Whether ``exc`` says the bucket or container does not exist (a 404 that no retry or file fixes)."""
    text = str(exc)
    return any(code in text for code in _NO_CONTAINER)


def is_already_exists(exc: BaseException) -> bool:
    """A conditional create that lost: ``AlreadyExistsError`` (S3's 412, Azure's 409) or a precondition failure."""
    return type(exc).__name__ in ("AlreadyExistsError", "PreconditionError")


def typed_error(
    kind: str, op: str, display: str, container: str, path: str, exc: BaseException, secrets: tuple[str, ...]
) -> StorageError:
    """A :class:`StorageError` for a failed ``op`` on ``path``: what failed, whether a retry may help, what to fix."""
    at = where(op, display, path)
    status = status_of(exc)
    name = type(exc).__name__
    if no_container_code(exc):
        return no_container(kind, container, at, path)
    if name in _AUTH_CLASSES or status in (401, 403):
        return access_denied(kind, status or name, at, display, path, secrets)
    text = str(exc).lower()
    retryable = status in (408, 409, 429) or status >= 500 or (not status and any(t in text for t in _TRANSPORT))
    label = f"HTTP {status}" if status else name
    return request_failed(at, label, str(exc) or name, path, secrets, retryable)


__all__ = ["is_already_exists", "no_container_code", "status_of", "typed_error"]
