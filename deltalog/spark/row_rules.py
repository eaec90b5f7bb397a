"""The table's row rules as Spark SQL columns, evaluated on the executors before and while files are written.

Delta Spark evaluates CHECK constraints, invariants and generated columns with Spark SQL; so does this writer,
so the full language is available, not deltalog's subset. Two failures are turned into typed errors naming the
rule: an expression Spark cannot analyse on the table (:class:`~deltalog.errors.UnsupportedExpressionError`,
before any task runs), and a rule whose evaluation fails on a row with an arithmetic error (an overflow, a
division by zero or an out-of-range cast under ANSI mode, Spark 4's default). Spark reports the latter without
saying which of the job's expressions failed, so each rule is then evaluated alone to find it.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from deltalog.core.constraints import GENERATION, row_rules
from deltalog.core.schema import top_level_fields
from deltalog.data.constraints import DEFAULT
from deltalog.errors import ConstraintViolationError, UnsupportedExpressionError
from deltalog.spark._files import RowCheck, checked_batches

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from deltalog.table.new_table import NewTable
    from deltalog.table.snapshot import Snapshot

#: Spark's error classes of an arithmetic failure (``SparkArithmeticException``)
_ARITHMETIC = ("SparkArithmeticException", "ARITHMETIC_OVERFLOW", "DIVIDE_BY_ZERO", "CAST_OVERFLOW")


@dataclass(frozen=True)
class Probe:
    """One expression of the write (a computed column or a rule column) and the frame to evaluate it on."""

    label: str
    expression: str
    frame: Any  # the DataFrame holding it
    column: str  # its name in ``frame``


@dataclass(frozen=True)
class AppliedRules:
    """The DataFrame as the table's columns plus one boolean column per rule; the rules, for the executors'
    check; and every expression of the write, for naming one that fails."""

    frame: Any
    checks: tuple[RowCheck, ...]
    probes: tuple[Probe, ...]


def computed_columns(table_schema: dict[str, Any]) -> dict[str, str]:
    """Top-level columns the writer computes when the data lacks them: name -> generation or default SQL."""
    out = {}
    for f in top_level_fields(table_schema):
        meta = f.get("metadata") or {}
        for key in (GENERATION, DEFAULT):
            if key in meta:
                out[f["name"]] = str(meta[key])
                break
    return out


def quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _analysed(df: DataFrame, column: Column, label: str, expression: str, feature: str) -> Column:
    """``column`` after Spark has analysed it against ``df``; an expression Spark cannot evaluate there (a
    parse error, an unknown column or function, a type error) refuses the write by rule name."""
    try:
        df.select(column).schema  # noqa: B018 - analysis happens here, on the driver, before any task runs
    except Exception as exc:  # pyspark's AnalysisException / ParseException; their classes vary by version
        raise UnsupportedExpressionError(
            f"cannot write: {label} ({expression}) is not an expression Spark can evaluate on this table: "
            f"{_first_line(exc)}",
            constraint=label,
            expression=expression,
            feature=feature,
        ) from None
    return column


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def row_rules_applied(df: DataFrame, snap: Snapshot | NewTable) -> AppliedRules:
    """``df`` as the table's columns (generated and default ones computed when missing) plus one boolean
    column per row rule, true where the row passes.

    A CHECK constraint or invariant passes where it is true (false or null fails, as in Delta Spark's
    ``CheckDeltaInvariant``); a generated column where ``column <=> expression``.
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    spark_schema = StructType.fromJson(snap.schema_json)
    computed = computed_columns(snap.schema_json)
    present = set(df.columns)
    columns = []
    probes: list[Probe] = []
    for field in spark_schema.fields:
        if field.name in present:
            columns.append(F.col(quoted(field.name)))
            continue
        text = computed[field.name]  # check_schema let only computed columns be missing
        label = f"generated column {field.name}" if GENERATION in field.metadata else f"default of {field.name}"
        feature = "generatedColumns" if GENERATION in field.metadata else "allowColumnDefaults"
        value = F.expr(text).cast(field.dataType).alias(field.name)
        columns.append(_analysed(df, value, label, text, feature))
        probes.append(Probe(label, text, None, field.name))
    table = df.select(*columns)
    probes = [Probe(p.label, p.expression, table, p.column) for p in probes]
    checks: list[RowCheck] = []
    rule_columns = []
    for i, rule in enumerate(row_rules(snap.configuration, snap.schema_json)):
        name = f"__deltalog_rule_{i}"
        if rule.kind == "generated":
            label, feature = rule.name, "generatedColumns"
            passes = F.expr(f"{quoted(str(rule.column))} <=> ({rule.expression})")
        else:
            label = f"CHECK constraint {rule.name}" if rule.kind == "check" else rule.name
            feature = "checkConstraints" if rule.kind == "check" else "invariants"
            passes = F.coalesce(F.expr(f"({rule.expression})").cast("boolean"), F.lit(False))
        rule_columns.append(_analysed(table, passes.alias(name), label, rule.expression, feature))
        checks.append(RowCheck(name, label, rule.expression))
    checked = table.select("*", *rule_columns)
    probes += [Probe(c.constraint, c.expression, checked, c.column) for c in checks]
    return AppliedRules(checked, tuple(checks), tuple(probes))


def check_first(checked: DataFrame, checks: Sequence[RowCheck], data: Sequence[str]) -> None:
    """Raise the :class:`ConstraintViolationError` of the first row that breaks a rule, if any, before any
    file is written: a job whose tasks found it only while writing would leave the files of tasks that had
    already finished (the accumulator that reports them can miss a task cancelled as it completes). One
    extra pass over the input, made only for tables with rules."""
    from pyspark.sql import functions as F

    if not checks:
        return
    passes = functools.reduce(lambda a, b: a & b, [F.col(c.column) for c in checks])
    offending = checked.where(~passes).limit(1).toArrow()
    for _ in checked_batches(iter(offending.to_batches()), checks, data):
        pass


def is_arithmetic(exc: BaseException) -> bool:
    """Did a Spark job fail on an arithmetic error (ANSI mode: overflow, division by zero, a cast out of range)?"""
    from pyspark.errors import ArithmeticException

    return isinstance(exc, ArithmeticException) or any(mark in str(exc) for mark in _ARITHMETIC)


def raise_rule_failure(exc: BaseException, probes: Sequence[Probe]) -> None:
    """When ``exc`` is an arithmetic failure, raise a :class:`ConstraintViolationError` naming the first
    expression of the write (computed columns first: rules read them) that fails the same way on its own."""
    from pyspark.sql import functions as F

    if not is_arithmetic(exc):
        return
    for probe in probes:
        try:
            # hash: every row's value is computed (an isnull test on a non-null rule column would be folded away)
            probe.frame.select(F.max(F.hash(F.col(quoted(probe.column))))).collect()
        except Exception as failure:
            if not is_arithmetic(failure):
                continue
            raise ConstraintViolationError(
                f"cannot write: {probe.label} ({probe.expression}) cannot be evaluated on a row: "
                f"{_first_line(failure)}; nothing was committed",
                constraint=probe.label,
                expression=probe.expression,
            ) from exc


__all__ = [
    "AppliedRules",
    "Probe",
    "check_first",
    "computed_columns",
    "is_arithmetic",
    "quoted",
    "raise_rule_failure",
    "row_rules_applied",
]
