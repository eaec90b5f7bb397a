"""The JSON spelling of actions: what Delta writes, byte for byte in shape, and the one commit-file decoder.

Writing: camelCase keys, ``metaData`` with a capital D, optional fields omitted rather than ``null``
(Spark serialises NON_ABSENT), one action per line. Reading: unknown action kinds and unknown fields are
ignored, as the protocol requires of readers; ``null`` in an optional field reads as absent. A commit
file becomes actions in one place, :func:`decode_commit` (replay reads the same lines as columns).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import orjson

from deltalog.core import actions as A
from deltalog.core.field_types import type_errors
from deltalog.core.jsonlines import LineError, corrupt_line, parse_lines
from deltalog.errors import InvalidArgumentError

#: action class -> the key that wraps it on a log line
ACTION_KEYS: dict[type[A.Action], str] = {
    A.Add: "add",
    A.Remove: "remove",
    A.Metadata: "metaData",
    A.Protocol: "protocol",
    A.Txn: "txn",
    A.CommitInfo: "commitInfo",
    A.Cdc: "cdc",
    A.DomainMetadata: "domainMetadata",
    A.CheckpointMetadata: "checkpointMetadata",
    A.Sidecar: "sidecar",
}
KEY_ACTIONS: dict[str, type[A.Action]] = {v: k for k, v in ACTION_KEYS.items()}

#: fields of add/cdc written even when empty, because readers require the key
_ALWAYS_WRITTEN = {"partition_values"}


class ActionDecodeError(InvalidArgumentError):
    """An action line has the right key but a shape that cannot be an action of that kind."""


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def _encode_value(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _encode_fields(value)
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, Mapping):
        return dict(value)
    return value


_FIELD_NAMES: dict[type, tuple[tuple[str, str, bool], ...]] = {}


def _field_names(cls: type) -> tuple[tuple[str, str, bool], ...]:
    """(attribute, JSON key, written even when empty) of each field of an action class, worked out once per class:
    encoding a commit of many file actions asked ``dataclasses.fields`` and re-camel-cased every name per action."""
    found = _FIELD_NAMES.get(cls)
    if found is None:
        always = issubclass(cls, (A.Add, A.Cdc))
        found = tuple((f.name, _camel(f.name), always and f.name in _ALWAYS_WRITTEN) for f in dataclasses.fields(cls))
        _FIELD_NAMES[cls] = found
    return found


def _encode_fields(obj: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, key, always in _field_names(type(obj)):
        value = getattr(obj, name)
        if name == "other":  # CommitInfo's free-form remainder goes back at top level
            for k, v in value.items():
                out.setdefault(k, v)
            continue
        if value is None and not always:
            continue
        if name == "operation_parameters" and value is not None:
            # Spark writes every parameter value as JSON text (a string inside the JSON object).
            value = {k: v if isinstance(v, str) else orjson.dumps(v).decode() for k, v in value.items()}
        out[key] = _encode_value(value if value is not None else {})
    return out


def to_dict(action: A.Action) -> dict[str, Any]:
    """The one-key object Delta writes for ``action``."""
    try:
        key = ACTION_KEYS[type(action)]
    except KeyError:
        raise TypeError(f"not a Delta action: {type(action).__name__}") from None
    return {key: _encode_fields(action)}


def encode_line(action: A.Action) -> bytes:
    return orjson.dumps(to_dict(action))


def encode_actions(actions: Iterable[A.Action]) -> bytes:
    """Newline-delimited JSON for a commit file: one action per line, each line ending in ``\\n``."""
    return b"".join(encode_line(a) + b"\n" for a in actions)


# ---------------------------------------------------------------------------------------------- decoding


def _opt_map(v: Any) -> dict[str, Any] | None:
    if v is None:
        return None
    if not isinstance(v, dict):
        raise ActionDecodeError(f"expected an object, got {type(v).__name__}")
    return v


def _opt_tuple(v: Any) -> tuple[str, ...] | None:
    if v is None:
        return None
    if not isinstance(v, list):
        raise ActionDecodeError(f"expected an array, got {type(v).__name__}")
    return tuple(v)


def decode_dv(v: Any) -> A.DeletionVector | None:
    if v is None:
        return None
    d = _require_obj(v)
    return A.DeletionVector(
        storage_type=_req(d, "storageType"),
        path_or_inline_dv=_req(d, "pathOrInlineDv"),
        size_in_bytes=_req(d, "sizeInBytes"),
        cardinality=_req(d, "cardinality"),
        offset=d.get("offset"),
    )


def _decode_configuration(v: Any) -> dict[str, Any]:
    """``metaData.configuration``, whose values the protocol makes strings (Delta Spark: ``Map[String, String]``).

    A number or a boolean reads as its JSON text, as Delta Spark (Jackson) and delta-kernel-rs read it. An object
    or a list, which neither reads, is kept as written: the log is corrupt for that key, yet the version still
    loads (nothing may need the key) and ``set_properties``/``unset_properties`` can repair it; what would write
    it again (a checkpoint, a commit of the metaData) refuses it naming the key
    (:func:`deltalog.core.properties.check_string_values`).
    """
    if v is None:
        return {}
    return {k: orjson.dumps(x).decode() if isinstance(x, (bool, int, float)) else x for k, x in _require_obj(v).items()}


def _decode_format(v: Any) -> A.Format:
    if v is None:
        return A.Format()
    d = _require_obj(v)
    return A.Format(provider=d.get("provider") or "parquet", options=d.get("options") or {})


# Per action class: field name -> converter for values that need more than a copy.
_CONVERTERS: dict[type, dict[str, Callable[[Any], Any]]] = {
    A.Add: {"deletion_vector": decode_dv, "tags": _opt_map},
    A.Remove: {"deletion_vector": decode_dv, "tags": _opt_map, "partition_values": _opt_map},
    A.Cdc: {"tags": _opt_map},
    A.Metadata: {
        "format": _decode_format,
        "partition_columns": lambda v: _opt_tuple(v) or (),
        "configuration": _decode_configuration,
    },
    A.Protocol: {"reader_features": _opt_tuple, "writer_features": _opt_tuple},
}

# Fields that default to a value rather than None when absent (so the dataclass default applies).
_FIELD_TABLE: dict[type, list[tuple[str, str, bool]]] = {}


def _field_table(cls: type) -> list[tuple[str, str, bool]]:
    table = _FIELD_TABLE.get(cls)
    if table is None:
        table = [
            (
                f.name,
                _camel(f.name),
                (f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)
                or (cls is A.Metadata and f.name == "id"),
            )
            for f in dataclasses.fields(cls)
            if f.name != "other"
        ]
        _FIELD_TABLE[cls] = table
    return table


def _require_obj(v: Any) -> dict[str, Any]:
    if not isinstance(v, dict):
        raise ActionDecodeError(f"expected an object, got {type(v).__name__}")
    return v


def _req(d: Mapping[str, Any], key: str) -> Any:
    v = d.get(key)
    if v is None:
        raise ActionDecodeError(f"required field {key!r} is missing")
    return v


def from_dict(key: str, body: Any) -> A.Action | None:
    """Decode one wrapped action; ``None`` for an action kind this engine does not know."""
    cls = KEY_ACTIONS.get(key)
    if cls is None:
        return None
    d = _require_obj(body)
    converters = _CONVERTERS.get(cls, {})
    kwargs: dict[str, Any] = {}
    for name, json_name, required in _field_table(cls):
        raw = d.get(json_name)
        if name in converters:
            if raw is None and not required and name not in ("format", "partition_columns", "configuration"):
                continue
            try:
                kwargs[name] = converters[name](raw)
            except ActionDecodeError as exc:
                raise ActionDecodeError(f"{key}.{json_name}: {exc}") from None
            continue
        if raw is None:
            if required:
                if cls is A.Add and name == "partition_values":
                    kwargs[name] = {}
                    continue
                raise ActionDecodeError(f"{key}: required field {json_name!r} is missing")
            continue
        kwargs[name] = raw
    if cls is A.CommitInfo:
        known = {json_name for _, json_name, _ in _field_table(cls)}
        kwargs["other"] = {k: v for k, v in d.items() if k not in known}
    try:
        action = cls(**kwargs)
    except TypeError as exc:  # pragma: no cover - defensive: shape errors surface above
        raise ActionDecodeError(f"{key}: {exc}") from None
    errors = type_errors(action)
    if errors:
        raise ActionDecodeError(f"{key}: " + "; ".join(errors))
    return action


def decode_line(line: bytes | str) -> list[A.Action]:
    """Decode one log line; a line normally holds one action, unknown kinds yield nothing."""
    obj = orjson.loads(line)
    if not isinstance(obj, dict):
        raise ActionDecodeError("a log line must be a JSON object")
    out = []
    for key, body in obj.items():
        action = from_dict(key, body)
        if action is not None:
            out.append(action)
    return out


@dataclasses.dataclass(frozen=True)
class DecodedCommit:
    """A commit file as actions: its raw commitInfo (the last one) and every other action, in file order."""

    commit_info: dict[str, Any] | None
    actions: tuple[A.Action, ...]


def decode_lines(
    data: bytes,
    path: str,
    check: Callable[[int, Any], None] | None = None,
    error: LineError | None = None,
) -> Iterator[tuple[int, A.Action | dict[str, Any]]]:
    """(line number, action) for every action of the commit file ``path`` (or a file of actions in its
    format), in file order; a ``commitInfo`` comes as its raw JSON object, an unknown action kind not at all.

    A bad line (malformed JSON, not an object, a known action that does not decode) is a
    :class:`~deltalog.errors.CorruptLogError` naming the file and line, or what ``error`` makes of the
    line and the reason. ``check`` sees every parsed line first (line number, JSON value), for a caller
    that accepts less than the log does. A ``null`` action is no action, as replay reads it.
    """
    fail = error or corrupt_line(path)
    for line, obj in enumerate(parse_lines(data, path, fail), start=1):
        if obj is None:
            continue  # a blank line
        if check is not None:
            check(line, obj)
        if type(obj) is not dict:
            raise fail(line, "a log line must be a JSON object")
        for key, body in obj.items():
            if body is None:
                continue
            if key == "commitInfo" and type(body) is dict:
                yield line, body
                continue
            try:
                action = from_dict(key, body)
            except ActionDecodeError as exc:
                raise fail(line, f"invalid {key} action: {exc}") from None
            if action is not None:
                yield line, action


def decode_commit(
    data: bytes,
    path: str,
    check: Callable[[int, Any], None] | None = None,
    error: LineError | None = None,
) -> DecodedCommit:
    """Decode the commit file ``path`` (see :func:`decode_lines`): its last commitInfo and its other actions."""
    info: dict[str, Any] | None = None
    actions: list[A.Action] = []
    for _, action in decode_lines(data, path, check, error):
        if isinstance(action, dict):
            info = action
        else:
            actions.append(action)
    return DecodedCommit(info, tuple(actions))


__all__ = [
    "ACTION_KEYS",
    "ActionDecodeError",
    "DecodedCommit",
    "KEY_ACTIONS",
    "decode_commit",
    "decode_dv",
    "decode_line",
    "decode_lines",
    "encode_actions",
    "encode_line",
    "from_dict",
    "to_dict",
]
