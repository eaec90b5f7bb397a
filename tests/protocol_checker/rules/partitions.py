"""Partition values (PROTOCOL.md "Partition Value Serialization", "Consistency Between Table Metadata and Data
Files", "Column Mapping > Writer Requirements").
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..context import CommitContext
from ..reading import Action
from ..report import Finding, rule
from ..values import partition_value_problem


def _expected_keys(ctx: CommitContext) -> dict[str, object] | None:
    """Partition key as the log must spell it -> column type; ``None`` when the schema is unusable."""
    schema = ctx.schema
    if schema.error:
        return None
    out: dict[str, object] = {}
    for col in ctx.after.partition_columns:
        f = schema.find(col)
        if f is None:
            return None  # shape.metaData reports the missing column
        key = f.physical_path[0] if ctx.mapping_mode != "none" else col
        out[key] = f.type
    return out


def _with_partition_values(ctx: CommitContext) -> Iterator[tuple[Action, dict[str, Any]]]:
    for a in ctx.adds + ctx.of_kind("cdc"):
        values = a.body.get("partitionValues")
        if isinstance(values, dict):
            yield a, values


@rule("partition.keys", scope="commit", section="Consistency Between Table Metadata and Data Files; Column Mapping")
def partition_keys(ctx: CommitContext) -> Iterator[Finding]:
    """An add's (and a cdc's) partitionValues keys are exactly the partition columns, by physical name under
    column mapping.

    "Values for all partition columns present in the schema MUST be present for all files in the table";
    column mapping writers "track partition values ... with the physical name of the column".
    """
    expected = _expected_keys(ctx)
    if expected is None:
        return
    for a, values in _with_partition_values(ctx):
        if set(values) != set(expected):
            missing, extra = sorted(set(expected) - set(values)), sorted(set(values) - set(expected))
            yield Finding(
                f"partitionValues keys {sorted(values)} are not the partition columns {sorted(expected)}"
                f" (missing {missing}, unexpected {extra})",
                a.line,
                a.kind,
                a.body.get("path"),
            )


@rule("partition.values", scope="commit", section="Appendix > Partition Value Serialization")
def partition_values(ctx: CommitContext) -> Iterator[Finding]:
    """Every partition value parses as its column's type: numbers, true/false, {year}-{month}-{day}, timestamps
    as `YYYY-MM-DD HH:MM:SS[.ffffff]` (or ISO-8601 in UTC for timestamp); the empty string is null."""
    expected = _expected_keys(ctx)
    if expected is None:
        return
    for a, values in _with_partition_values(ctx):
        for key, value in values.items():
            if key in expected and (problem := partition_value_problem(value, expected[key])):
                yield Finding(f"partition {key}: {problem}", a.line, a.kind, a.body.get("path"))
