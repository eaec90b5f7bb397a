"""Action shapes: required fields and their types, per action (PROTOCOL.md "Actions" and its subsections).

Types are JSON types: ``Long``/``Int`` are integral numbers (not booleans), ``Map[String, String]`` an
object whose values are strings or null, ``Array[String]`` a list of strings. Unknown fields and unknown
action kinds are legal ("Protocol Evolution": clients must ignore unrecognized fields and actions).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from ..context import CommitContext
from ..features import is_int
from ..reading import Action
from ..report import Finding, rule
from ..schema import parse_schema

Check = Callable[[Any], bool]


def _str(v: Any) -> bool:
    return isinstance(v, str)


def _nonempty_str(v: Any) -> bool:
    return isinstance(v, str) and v != ""


def _int(v: Any) -> bool:
    return is_int(v)


def _size(v: Any) -> bool:
    return is_int(v) and v >= 0


def _bool(v: Any) -> bool:
    return isinstance(v, bool)


def _obj(v: Any) -> bool:
    return isinstance(v, dict)


def _str_map(v: Any) -> bool:
    return isinstance(v, dict) and all(isinstance(k, str) and (x is None or isinstance(x, str)) for k, x in v.items())


def _str_list(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


def _nullable(check: Check) -> Check:
    return lambda v: v is None or check(v)


TYPE_NAMES = {
    _str: "a string",
    _nonempty_str: "a non-empty string",
    _int: "an integer",
    _size: "a non-negative integer",
    _bool: "a boolean",
    _obj: "an object",
    _str_map: "a string-to-string map",
    _str_list: "an array of strings",
}

# field -> (check, required); optional fields may be null or absent
ADD = {
    "path": (_nonempty_str, True),
    "partitionValues": (_str_map, True),
    "size": (_size, True),
    "modificationTime": (_int, True),
    "dataChange": (_bool, True),
    "stats": (_str, False),
    "tags": (_str_map, False),
    "deletionVector": (_obj, False),
    "baseRowId": (_int, False),
    "defaultRowCommitVersion": (_int, False),
    "clusteringProvider": (_str, False),
}
REMOVE = {
    "path": (_nonempty_str, True),
    "dataChange": (_bool, True),
    "deletionTimestamp": (_int, False),
    "extendedFileMetadata": (_bool, False),
    "partitionValues": (_str_map, False),
    "size": (_size, False),
    "stats": (_str, False),
    "tags": (_str_map, False),
    "deletionVector": (_obj, False),
    "baseRowId": (_int, False),
    "defaultRowCommitVersion": (_int, False),
}
METADATA = {
    "id": (_nonempty_str, True),
    "name": (_str, False),
    "description": (_str, False),
    "format": (_obj, True),
    "schemaString": (_str, True),
    "partitionColumns": (_str_list, True),
    "createdTime": (_int, False),
    "configuration": (_str_map, True),
}
PROTOCOL = {
    "minReaderVersion": (_int, True),
    "minWriterVersion": (_int, True),
    "readerFeatures": (_str_list, False),
    "writerFeatures": (_str_list, False),
}
TXN = {"appId": (_nonempty_str, True), "version": (_int, True), "lastUpdated": (_int, False)}
DOMAIN = {"domain": (_nonempty_str, True), "configuration": (_str, True), "removed": (_bool, True)}
CDC = {
    "path": (_nonempty_str, True),
    "partitionValues": (_str_map, True),
    "size": (_size, True),
    "dataChange": (_bool, True),
    "tags": (_str_map, False),
}


def field_problems(body: Any, spec: dict[str, tuple[Check, bool]]) -> list[str]:
    if not isinstance(body, dict):
        return [f"the action is {type(body).__name__}, not an object"]
    out = []
    for name, (check, required) in spec.items():
        if name not in body or body[name] is None:
            if required:
                out.append(f"required field {name} is missing")
            continue
        if not check(body[name]):
            out.append(f"{name} must be {TYPE_NAMES[check]}, found {body[name]!r:.80}")
    return out


def _key(a: Action) -> str | None:
    if not isinstance(a.body, dict):
        return None
    for name in ("path", "appId", "domain"):
        if isinstance(a.body.get(name), str):
            return str(a.body[name])
    return None


def shape_findings(ctx: CommitContext, kind: str, spec: dict[str, tuple[Check, bool]]) -> Iterator[Finding]:
    for a in ctx.actions:
        if a.kind == kind:
            for problem in field_problems(a.body, spec):
                yield Finding(problem, a.line, a.kind, _key(a))


@rule("log.json", scope="commit", section="Delta Log Entries (newline-delimited JSON, one action per line)")
def log_json(ctx: CommitContext) -> Iterator[Finding]:
    """Every line of a commit is one JSON object holding exactly one action (PROTOCOL.md "Delta Log Entries")."""
    for p in ctx.read_problems:
        yield Finding(p.message, p.line)


@rule("shape.add", scope="commit", section="Actions > Add File and Remove File (add schema)")
def shape_add(ctx: CommitContext) -> Iterator[Finding]:
    """An add has path, partitionValues, size, modificationTime, dataChange ("Add File and Remove File")."""
    yield from shape_findings(ctx, "add", ADD)


@rule("shape.remove", scope="commit", section="Actions > Add File and Remove File (remove schema)")
def shape_remove(ctx: CommitContext) -> Iterator[Finding]:
    """A remove has path and dataChange; its optional fields have their types ("Add File and Remove File")."""
    yield from shape_findings(ctx, "remove", REMOVE)


@rule("shape.metaData", scope="commit", section="Actions > Change Metadata; Schema Serialization Format")
def shape_metadata(ctx: CommitContext) -> Iterator[Finding]:
    """A metaData has id, format, schemaString (a struct), partitionColumns, configuration ("Change Metadata").

    The schema must parse as a struct whose column names are unique regardless of casing, and every
    partition column must be a top-level column ("Schema Serialization Format").
    """
    for a in ctx.actions:
        if a.kind != "metaData":
            continue
        problems = field_problems(a.body, METADATA)
        fmt = a.body.get("format") if isinstance(a.body, dict) else None
        if isinstance(fmt, dict) and not isinstance(fmt.get("provider"), str):
            problems.append("format.provider must be a string")
        if isinstance(a.body, dict) and isinstance(a.body.get("schemaString"), str):
            schema = parse_schema(a.body["schemaString"])
            if schema.error:
                problems.append(schema.error)
            else:
                problems.extend(_schema_name_problems(schema.fields))
                columns = a.body.get("partitionColumns")
                for col in columns if isinstance(columns, list) else []:
                    if isinstance(col, str) and schema.find(col) is None:
                        problems.append(f"partition column {col!r} is not a top-level column of the schema")
        for problem in problems:
            yield Finding(problem, a.line, a.kind)


def _schema_name_problems(fields: Any) -> list[str]:
    seen: dict[tuple[str, ...], str] = {}
    out = []
    for f in fields:
        key = (*f.path[:-1], f.path[-1].lower())
        if key in seen:
            out.append(f"column {'.'.join(f.path)!r} collides with {seen[key]!r} (names are case-insensitive)")
        seen.setdefault(key, ".".join(f.path))
    return out


@rule("shape.protocol", scope="commit", section="Actions > Protocol Evolution")
def shape_protocol(ctx: CommitContext) -> Iterator[Finding]:
    """A protocol has integer minReaderVersion and minWriterVersion, feature lists of strings ("Protocol Evolution")."""
    yield from shape_findings(ctx, "protocol", PROTOCOL)


@rule("shape.txn", scope="commit", section="Actions > Transaction Identifiers")
def shape_txn(ctx: CommitContext) -> Iterator[Finding]:
    """A txn has a string appId and an integer version ("Transaction Identifiers")."""
    yield from shape_findings(ctx, "txn", TXN)


@rule("shape.domainMetadata", scope="commit", section="Actions > Domain Metadata")
def shape_domain(ctx: CommitContext) -> Iterator[Finding]:
    """A domainMetadata has a string domain, a string configuration and a boolean removed ("Domain Metadata")."""
    yield from shape_findings(ctx, "domainMetadata", DOMAIN)


@rule("shape.cdc", scope="commit", section="Actions > Add CDC File")
def shape_cdc(ctx: CommitContext) -> Iterator[Finding]:
    """A cdc action has path, partitionValues, size and dataChange ("Add CDC File")."""
    yield from shape_findings(ctx, "cdc", CDC)


@rule("shape.commitInfo", scope="commit", section="Actions > Commit Provenance Information")
def shape_commit_info(ctx: CommitContext) -> Iterator[Finding]:
    """commitInfo is a JSON object; an inCommitTimestamp in it is a long ("Commit Provenance Information")."""
    for a in ctx.actions:
        if a.kind != "commitInfo":
            continue
        if not isinstance(a.body, dict):
            yield Finding(f"commitInfo is {type(a.body).__name__}, not an object", a.line, a.kind)
        elif "inCommitTimestamp" in a.body and not is_int(a.body["inCommitTimestamp"]):
            yield Finding(f"inCommitTimestamp {a.body['inCommitTimestamp']!r} is not a long", a.line, a.kind)


@rule(
    "commit.checkpoint-only-action", scope="commit", section="Actions > Sidecar File Information; Checkpoint Metadata"
)
def checkpoint_only(ctx: CommitContext) -> Iterator[Finding]:
    """checkpointMetadata and sidecar actions are only allowed in V2 spec checkpoints, never in commits."""
    for a in ctx.actions:
        if a.kind in ("checkpointMetadata", "sidecar"):
            yield Finding(f"{a.kind} is only allowed in a V2 checkpoint", a.line, a.kind)
