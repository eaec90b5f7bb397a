"""Which table features a table actively uses, and what shows it, for ``describe``.

Why apart from the protocol's list: a protocol that *supports* a feature says what writers may do, not
what they did. Delta Spark adds ``deletionVectors`` to every new table's protocol, yet a table without
``delta.enableDeletionVectors=true`` and without a single deletion vector behaves like one without the
feature; an operator deciding whether a reader or a vacuum is safe needs the second answer. Each entry
names its evidence (the property, the columns, the domain, the count of files) so it can be checked.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from deltalog import Snapshot

Evidence = dict[str, Any]


def _fields(schema: Any, prefix: str = "") -> Iterable[tuple[str, dict[str, Any]]]:
    """(dotted name, field) for every field, nested ones included."""
    stack: list[tuple[str, Any]] = [(prefix, schema)]
    while stack:
        path, t = stack.pop()
        if not isinstance(t, Mapping):
            continue
        kind = t.get("type")
        if kind == "struct":
            for f in t.get("fields") or []:
                if isinstance(f, Mapping):
                    name = f"{path}.{f.get('name')}" if path else str(f.get("name"))
                    yield name, dict(f)
                    stack.append((name, f.get("type")))
        elif kind == "array":
            stack.append((f"{path}[]", t.get("elementType")))
        elif kind == "map":
            stack.extend(((f"{path}{{key}}", t.get("keyType")), (f"{path}{{value}}", t.get("valueType"))))


def _type_names(t: Any) -> Iterable[str]:
    """The primitive type names of one field's type (struct fields are fields of their own)."""
    if isinstance(t, str):
        yield t
    elif isinstance(t, Mapping) and t.get("type") in ("array", "map"):
        for key in ("elementType", "keyType", "valueType"):
            yield from _type_names(t.get(key))


def _flag(conf: Mapping[str, str], key: str) -> bool:
    return str(conf.get(key, "")).strip().lower() == "true"


def _dv_count(snap: Snapshot) -> int:
    files = snap.files()
    return files.num_rows - files.column("deletion_vector").null_count if files.num_rows else 0


#: boolean table properties that switch a feature on
_SWITCHES = (
    ("appendOnly", "delta.appendOnly"),
    ("changeDataFeed", "delta.enableChangeDataFeed"),
    ("deletionVectors", "delta.enableDeletionVectors"),
    ("inCommitTimestamp", "delta.enableInCommitTimestamps"),
    ("rowTracking", "delta.enableRowTracking"),
    ("typeWidening", "delta.enableTypeWidening"),
)


def features_in_use(snap: Snapshot) -> list[Evidence]:
    """``[{"feature", "evidence", "supported"}]`` sorted by feature; ``supported``: the protocol allows it."""
    conf = snap.configuration
    fields = list(_fields(snap.schema_json))
    meta = {name: f.get("metadata") or {} for name, f in fields}
    types = {name: set(_type_names(f.get("type"))) for name, f in fields}
    domains = sorted(snap.domain_metadata)
    found: dict[str, list[str]] = {}

    def note(feature: str, evidence: str) -> None:
        found.setdefault(feature, []).append(evidence)

    for feature, key in _SWITCHES:
        if _flag(conf, key):
            since = conf.get("delta.inCommitTimestampEnablementVersion") if feature == "inCommitTimestamp" else None
            note(feature, f"{key}=true" + (f" (from version {since})" if since else ""))
    dvs = _dv_count(snap)
    if dvs:
        note("deletionVectors", f"{dvs:,} live file{'' if dvs == 1 else 's'} with a deletion vector")
    if snap.column_mapping_mode != "none" or str(conf.get("delta.columnMapping.mode", "none")).lower() != "none":
        note("columnMapping", f"delta.columnMapping.mode={conf.get('delta.columnMapping.mode', 'none')}")
    if "delta.rowTracking" in domains:
        note("rowTracking", "domain delta.rowTracking")
    for feature, domain in (("clustering", "delta.clustering"), ("liquid", "delta.liquid")):  # liquid: preview
        if domain in domains:
            note(feature, f"domain {domain}")
    if conf.get("delta.liquid.clusteringColumns"):
        note("liquid", f"delta.liquid.clusteringColumns={conf['delta.liquid.clusteringColumns']}")
    if str(conf.get("delta.checkpointPolicy", "")).lower() == "v2":
        note("v2Checkpoint", "delta.checkpointPolicy=v2")
    constraints = sorted(k.removeprefix("delta.constraints.") for k in conf if k.startswith("delta.constraints."))
    if constraints:
        note("checkConstraints", "constraints " + ", ".join(constraints))
    for feature, key in (
        ("invariants", "delta.invariants"),
        ("generatedColumns", "delta.generationExpression"),
        ("identityColumns", "delta.identity.start"),
    ):
        columns = [name for name, m in meta.items() if key in m]
        if columns:
            note(feature, "columns " + ", ".join(sorted(columns)))
    for feature, type_name in (("timestampNtz", "timestamp_ntz"), ("variantType", "variant")):
        columns = [name for name, names in types.items() if type_name in names]
        if columns:
            note(feature, "columns " + ", ".join(sorted(columns)))
    if domains:
        note("domainMetadata", "domains " + ", ".join(domains))
    supported = snap.features
    preview = {f.removesuffix("-preview") for f in supported}
    return [
        {"feature": name, "evidence": "; ".join(evidence), "supported": name in supported or name in preview}
        for name, evidence in sorted(found.items())
    ]


__all__ = ["features_in_use"]
