"""Which other engines can safely share a table's log store with deltalog, judged from ``commitInfo.engineInfo``.

Why: deltalog's commits are safe against each other because every writer races through the same atomic
put-if-absent. A writer that commits some other way does not take part in that race. On S3, Delta Spark commits
through ``S3SingleDriverLogStore`` (an in-JVM lock, then a plain PUT: it overwrites whatever another process
wrote) or ``S3DynamoDBLogStore`` (a DynamoDB lock that deltalog never sees). Either can silently overwrite a
commit of ours, or have its own overwritten (delta#1830). delta-rs (``delta-rs:...``) uses ``If-None-Match: *``
like deltalog and is safe. On Azure (ABFS), Spark renames without overwrite, which is atomic on the server and
excludes deltalog's conditional create too, so it is safe. Reading is always safe; only concurrent writing is at
risk.

The checks here are pure (bytes and strings in, a verdict out) so the log can run them on commits it already read.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

import orjson

#: schemes where some common writers commit without a put-if-absent deltalog can see
S3_SCHEMES = frozenset({"s3", "s3a", "s3n"})

_ENGINE_INFO = re.compile(rb'"engineInfo"\s*:\s*"((?:[^"\\]|\\.)*)"')

#: engineInfo prefixes (lower case) of writers that cannot share an S3 table with deltalog
_UNSAFE_ON_S3 = (
    ("apache-spark", "Delta Spark"),
    ("databricks", "Databricks"),
)


@dataclass(frozen=True)
class EngineRisk:
    """An engine found in the log that cannot commit to this store alongside deltalog."""

    version: int | None
    engine_info: str
    engine: str
    reason: str
    fix: str

    def message(self, location: str) -> str:
        at = f" (version {self.version})" if self.version is not None else ""
        return (
            f"{location} has commits by {self.engine_info!r}{at}: {self.reason} Concurrent writes by {self.engine} "
            f"and deltalog can lose commits. {self.fix}"
        )


def scheme_of(location: str) -> str:
    """The lower-case URI scheme of a table location, ``""`` for a plain path."""
    head, sep, _ = location.partition("://")
    return head.lower() if sep and head.isascii() and head.replace("+", "").isalnum() else ""


def relevant(location: str) -> bool:
    """Whether any engine could be unsafe at ``location``: lets callers skip the scan everywhere else."""
    return scheme_of(location) in S3_SCHEMES


def engine_risk(engine_info: object, location: str, version: int | None = None) -> EngineRisk | None:
    """The risk of sharing ``location``'s store with the writer that wrote ``engine_info``, if there is one."""
    if not isinstance(engine_info, str) or not engine_info.strip() or not relevant(location):
        return None
    low = engine_info.strip().lower()
    for prefix, engine in _UNSAFE_ON_S3:
        if low.startswith(prefix):
            return EngineRisk(
                version,
                engine_info,
                engine,
                reason=(
                    f"on S3, {engine} commits through S3SingleDriverLogStore (a lock inside one JVM, then a "
                    "plain PUT that overwrites) or S3DynamoDBLogStore (a DynamoDB lock deltalog never sees), "
                    "not through the conditional PUT (If-None-Match) deltalog and delta-rs race with."
                ),
                fix=(
                    f"Let only one kind of writer commit to this table at a time (readers are fine), or write "
                    f"with delta-rs or deltalog instead of {engine}. See docs/storage.md."
                ),
            )
    return None


def engine_infos(data: bytes) -> list[str]:
    """Every ``engineInfo`` string in a commit file's bytes, found without parsing the whole file."""
    if b'"engineInfo"' not in data:
        return []
    out = []
    for m in _ENGINE_INFO.finditer(data):
        try:
            value = orjson.loads(b'"' + m.group(1) + b'"')
        except orjson.JSONDecodeError:
            continue
        if isinstance(value, str):
            out.append(value)
    return out


def first_unsafe(location: str, commits: Iterable[tuple[int, bytes]]) -> EngineRisk | None:
    """The first commit (in the order given) written by an engine that is unsafe at ``location``."""
    if not relevant(location):
        return None
    for version, data in commits:
        for info in engine_infos(data):
            risk = engine_risk(info, location, version)
            if risk is not None:
                return risk
    return None


__all__ = ["S3_SCHEMES", "EngineRisk", "engine_infos", "engine_risk", "first_unsafe", "relevant", "scheme_of"]
