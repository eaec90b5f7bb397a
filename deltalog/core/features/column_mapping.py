"""Column mapping at the log level: ids and physical names for new columns, mode changes, physical keys.

PROTOCOL "Column Mapping": under ``delta.columnMapping.mode`` ``name`` or ``id`` (honoured only when the protocol
supports ``columnMapping``) every column, nested or leaf, has a unique physical name
(``delta.columnMapping.physicalName``) and a unique 32-bit id (``delta.columnMapping.id``). Writers give each
new column a globally unique physical name and a new id, keep ``delta.columnMapping.maxColumnId`` (an internal
property) at least the highest id ever assigned, and key partition values, statistics and clustering columns
by physical name.

Delta Spark (facts, ``DeltaColumnMapping.scala``): new physical names are ``col-<uuid>``; switching an
existing table from ``none`` to ``name`` keeps each column's current name as its physical name, since the data
files already use it; ``id`` mode can only be chosen when the table is created; leaving column mapping
rewrites the data (``REMOVE COLUMN MAPPING``), never a bare property change; a mode change between ``name``
and ``id`` is refused.

A physical name or id the schema already had is kept, even when the column is renamed. Metadata of a column
the previous schema did not have is refused instead of trusted: a caller-chosen physical name could be one a
dropped column's files still hold.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import orjson

from deltalog.core import actions as A
from deltalog.core.features import properties
from deltalog.core.features.configuration import TableConfiguration
from deltalog.core.features.kinds import ADDS_FILES, METADATA, NONE, RESTORE, Obligation, Rule
from deltalog.core.features.protocol import supported_features
from deltalog.core.files.facts import parse_stats
from deltalog.core.schema import COLUMN_ID, PHYSICAL_NAME, parse_schema, top_level_fields, walk_fields
from deltalog.errors import InvalidCommitError, PropertyError, SchemaError, UnsupportedFeatureError

FEATURE = "columnMapping"
MODE = "delta.columnMapping.mode"
MAX_COLUMN_ID = "delta.columnMapping.maxColumnId"
MODES = ("none", "name", "id")
_INT32_MAX = 2**31 - 1


def new_physical_name() -> str:
    return f"col-{uuid.uuid4()}"


def mode(protocol: A.Protocol, configuration: Mapping[str, str]) -> str:
    """The mode in force: the property's, where the protocol supports column mapping; else ``none``."""
    value = properties.column_mapping_mode(configuration)
    if value not in MODES:
        raise properties.unusable(MODE, configuration.get(MODE), f"is not one of {', '.join(MODES)}")
    return value if FEATURE in supported_features(protocol) else "none"


def max_column_id(configuration: Mapping[str, str]) -> int:
    n = properties.get_int(configuration, MAX_COLUMN_ID, 0)
    if n < 0:
        raise properties.unusable(MAX_COLUMN_ID, configuration.get(MAX_COLUMN_ID), "is negative")
    return n


def _meta(field: Mapping[str, Any]) -> dict[str, Any]:
    meta = field.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _pairs(schema: Any) -> dict[Any, Any]:
    """id -> physical name of every mapped field."""
    return {_meta(at.field).get(COLUMN_ID): _meta(at.field).get(PHYSICAL_NAME) for at in walk_fields(schema)}


def check_mode_change(before: str, after: str, *, creating: bool) -> None:
    if before == after or creating:
        return
    if before == "none" and after == "name":
        return
    if after == "none":
        why = "leaving column mapping needs the data rewritten with logical names"
    elif before == "none":
        why = "id mode can only be chosen when a table is created (its files have no field ids)"
    else:
        why = f"switching from {before} to {after} mode would misread every file"
    raise UnsupportedFeatureError(f"cannot change {MODE} from {before!r} to {after!r}: {why}", feature=FEATURE)


def assign(
    schema: Mapping[str, Any],
    *,
    max_id: int,
    previous: Mapping[str, Any] | None = None,
    keep_names: bool = False,
    name_factory: Callable[[], str] = new_physical_name,
    accept_new_above: int | None = None,
) -> tuple[dict[str, Any], int]:
    """A copy of ``schema`` in which every field has an id and a physical name, and the new max id.

    Fields without either get ``max_id + 1, ...`` (walk order, parents first) and a fresh ``col-<uuid>`` (or, with
    ``keep_names``, their current name: enabling name mode on an existing table). Fields with both keep them;
    with a ``previous`` schema, only the pairs it had are kept (a renamed column keeps its pair) and, when
    ``accept_new_above`` is given (the read version's ``maxColumnId``), new pairs above it with unused names:
    a data writer's, which wrote files under them. Any other pair is refused, as are half-mapped fields,
    duplicate ids or physical names, and ids outside 32 bits.
    """
    out: dict[str, Any] = orjson.loads(orjson.dumps(schema))
    known = _pairs(previous) if previous is not None else None
    known_names = set(known.values()) if known is not None else set()
    ids: set[int] = set()
    names: set[str] = set()
    for at in walk_fields(out):
        field = at.field
        assert isinstance(field, dict)
        meta = dict(_meta(field))
        has_id, has_name = COLUMN_ID in meta, PHYSICAL_NAME in meta
        if not has_id and not has_name:
            max_id += 1
            meta[COLUMN_ID] = max_id
            meta[PHYSICAL_NAME] = str(field.get("name")) if keep_names else name_factory()
            field["metadata"] = meta
        elif has_id != has_name:
            missing = PHYSICAL_NAME if has_id else COLUMN_ID
            raise SchemaError(f"column {at.path!r} has column mapping metadata without {missing}", field=at.path)
        ident, name = meta[COLUMN_ID], meta[PHYSICAL_NAME]
        if not isinstance(ident, int) or isinstance(ident, bool) or not 0 < ident <= _INT32_MAX:
            raise SchemaError(f"column {at.path!r}: {COLUMN_ID}={ident!r} is not a positive 32-bit id", field=at.path)
        if not isinstance(name, str) or not name:
            raise SchemaError(f"column {at.path!r}: {PHYSICAL_NAME}={name!r} is not a name", field=at.path)
        # A data writer that already wrote files under a new column's pair (ids above the table's max, a name
        # no column had) brings it; anything else that is not the column's own pair is refused.
        brought = (
            known is not None
            and accept_new_above is not None
            and ident > accept_new_above
            and ident not in known
            and name not in known_names
        )
        if known is not None and known.get(ident) != name and (has_id or has_name) and not brought:
            raise SchemaError(
                f"column {at.path!r} brings its own column mapping metadata (id {ident}, {name!r}): ids and physical "
                "names of new columns are assigned by the commit, and existing ones never change",
                field=at.path,
            )
        if ident in ids or name in names:
            raise SchemaError(f"column {at.path!r}: id {ident} or physical name {name!r} is used twice", field=at.path)
        ids.add(ident)
        names.add(name)
    return out, max(max_id, *ids) if ids else max_id


def mapped_metadata(before: A.Metadata | None, after: A.Metadata, protocol_after: A.Protocol) -> A.Metadata:
    """``after`` as the commit writes it: every column mapped (new ones assigned), ``maxColumnId`` monotonic.

    ``before`` is the read version's metadata (None when creating the table). Unchanged when column mapping is
    off after the commit. Refused: a mode the protocol does not support, a mode change Spark refuses.
    """
    try:
        new_mode = properties.column_mapping_mode(after.configuration)
        old_mode = properties.column_mapping_mode(before.configuration) if before is not None else "none"
        if new_mode not in MODES:
            raise properties.unusable(MODE, after.configuration.get(MODE), f"is not one of {', '.join(MODES)}")
        check_mode_change(old_mode, new_mode, creating=before is None)
        if new_mode == "none":
            return after
        if FEATURE not in supported_features(protocol_after):
            raise UnsupportedFeatureError(f"{MODE}={new_mode} needs the columnMapping feature", feature=FEATURE)
        read_max = max_column_id(before.configuration) if before is not None else 0
        floor = max(read_max, max_column_id(after.configuration))
    except PropertyError as exc:
        raise InvalidCommitError(str(exc), rule="column-mapping") from None
    enabling = before is not None and old_mode == "none"
    previous = parse_schema(before.schema_string) if before is not None and not enabling else None
    current = parse_schema(after.schema_string)
    schema, top = assign(current, max_id=floor, previous=previous, keep_names=enabling, accept_new_above=read_max)
    conf = {**after.configuration, MAX_COLUMN_ID: str(top)}
    text = after.schema_string if schema == current else orjson.dumps(schema).decode()
    if text == after.schema_string and conf == dict(after.configuration):
        return after
    return replace(after, schema_string=text, configuration=conf)


def _shape(t: Any) -> Any:
    """A data type without field metadata and nullability: what decides whether an overwrite's column is the
    table's column again."""
    if not isinstance(t, Mapping):
        return t
    kind = t.get("type")
    if kind == "struct":
        return {"struct": [(f.get("name"), _shape(f.get("type"))) for f in t.get("fields") or ()]}
    if kind == "array":
        return {"array": _shape(t.get("elementType"))}
    if kind == "map":
        return {"map": (_shape(t.get("keyType")), _shape(t.get("valueType")))}
    return dict(t)


def reuse_pairs(schema: Mapping[str, Any], previous: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``schema`` (an overwrite's, without mapping metadata) in which every field whose path (regardless
    of case) and type (nullability aside) ``previous`` has takes that field's id and physical name, as Delta
    Spark reuses them when a schema is overwritten; the others get fresh pairs from the commit."""
    old = {at.path.lower(): at.field for at in walk_fields(previous)}
    out: dict[str, Any] = orjson.loads(orjson.dumps(schema))
    for at in walk_fields(out):
        was = old.get(at.path.lower())
        meta = _meta(was) if was is not None else {}
        if was is None or COLUMN_ID not in meta or _shape(was.get("type")) != _shape(at.field.get("type")):
            continue
        field = at.field
        assert isinstance(field, dict)
        field["metadata"] = {**_meta(field), COLUMN_ID: meta[COLUMN_ID], PHYSICAL_NAME: meta[PHYSICAL_NAME]}
    return out


# ------------------------------------------------------------------------------------------------ physical keys
Tree = dict[str, "Tree | None"]


def physical_tree(schema: Mapping[str, Any], mapped: bool) -> Tree:
    """Physical name -> the physical tree of a struct column (None for any other type), as stats nest."""
    out: Tree = {}
    for f in top_level_fields(schema):
        name = str(_meta(f).get(PHYSICAL_NAME, f["name"])) if mapped else f["name"]
        t = f.get("type")
        out[name] = physical_tree(t, mapped) if isinstance(t, Mapping) and t.get("type") == "struct" else None
    return out


def _check_keys(path: str, what: str, values: Mapping[str, Any], tree: Tree, where: str) -> None:
    for key, value in values.items():
        if key not in tree:
            raise InvalidCommitError(
                f"{path}: stats {what} names {where}{key!r}, which is not a physical column name of the table",
                rule="physical-names",
            )
        sub = tree[key]
        if sub is not None and isinstance(value, Mapping):
            _check_keys(path, what, value, sub, f"{where}{key}.")


def check_file_keys(
    adds: Iterable[A.Add], schema: Mapping[str, Any], mapping_mode: str, partition_columns: Sequence[str]
) -> None:
    """New adds key partition values and statistics by physical names of the current schema.

    Only new files: a re-committed add keeps the stats it was written with, which may name a column dropped
    since.
    """
    mapped = mapping_mode != "none"
    tree = physical_tree(schema, mapped)
    fields = {f["name"]: f for f in top_level_fields(schema)}
    expected = {str(_meta(fields[c]).get(PHYSICAL_NAME, c)) if mapped and c in fields else c for c in partition_columns}
    for a in adds:
        if set(a.partition_values) != expected:
            raise InvalidCommitError(
                f"{a.path}: partition values are keyed {sorted(a.partition_values)}, the table's physical partition "
                f"columns are {sorted(expected)}",
                rule="physical-names",
            )
        stats = parse_stats(a.stats, a.path)
        if stats is None:
            continue
        for what, values in (
            ("minValues", stats.min_values),
            ("maxValues", stats.max_values),
            ("nullCount", stats.null_count),
        ):
            _check_keys(a.path, what, values, tree, "")


def obligation(kind: str, table: TableConfiguration) -> Obligation:
    """Commits that add files or change metadata, under a mode: ids and physical names, physical keys."""
    mode = table.properties.column_mapping_mode
    if mode != "none" and kind in ADDS_FILES | {METADATA} and kind != RESTORE:
        return Obligation(
            f"column mapping ({mode} mode): new columns get ids and physical names, and partition values "
            "and stats are keyed by physical names",
            "column_mapping",
        )
    return NONE


OBLIGATIONS: Mapping[str, Rule] = {FEATURE: obligation}


__all__ = [
    "FEATURE",
    "OBLIGATIONS",
    "MAX_COLUMN_ID",
    "MODE",
    "MODES",
    "assign",
    "check_file_keys",
    "check_mode_change",
    "mapped_metadata",
    "max_column_id",
    "mode",
    "new_physical_name",
    "physical_tree",
    "reuse_pairs",
]
