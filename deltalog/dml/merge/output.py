"""The rows a clause writes: an update's (the target row with its assigned columns replaced) and an insert's.

Every assignment of a clause is evaluated on the rows as they were (``SET a = b, b = a`` swaps), with Spark's
semantics. A generated column the clause does not assign is computed again from the new row, as Delta Spark
adds its generation expression to every UPDATE and INSERT (an assigned one must equal its expression, which the
data-file writer checks); an insert's unassigned column takes its default, else NULL. Values keep the types the
evaluator gives them (the data-file writer matches names and casts safely, structs by field name).
"""

from __future__ import annotations

import pyarrow as pa

from deltalog.compute import Evaluation, evaluate
from deltalog.compute.arrow_types import arrow_type
from deltalog.dml.merge.clauses import UPDATE
from deltalog.dml.merge.plan import PAIR, SOURCE, BoundClause, MergePlan


def evaluation(
    clause: BoundClause, target: pa.RecordBatch | None, source: pa.RecordBatch | None, plan: MergePlan, now: int
) -> Evaluation:
    """The rows ``clause``'s expressions read, as its scope orders them."""
    tz = plan.session_time_zone
    if clause.scope == PAIR:
        assert target is not None and source is not None
        return Evaluation.of(target, source, session_time_zone=tz, now_micros=now)
    rows = source if clause.scope == SOURCE else target
    assert rows is not None
    return Evaluation.of(rows, session_time_zone=tz, now_micros=now)


def output_rows(
    plan: MergePlan,
    clause: BoundClause,
    target: pa.RecordBatch | None,
    source: pa.RecordBatch | None,
    now_micros: int,
) -> pa.RecordBatch:
    """The rows ``clause`` writes for ``target`` (an update: the table columns it leaves as they are and those
    its assignments read, logical names) and/or ``source`` rows, one output row per input row, with the table's
    columns in order."""
    ev = evaluation(clause, target, source, plan, now_micros)
    n = ev.num_rows
    values = {name: evaluate(expr, ev, clause.shown) for name, expr in clause.assignments}
    names, arrays = [], []
    for col in plan.columns:
        names.append(col.name)
        if col.name in values:
            arrays.append(values[col.name])
        elif clause.action == UPDATE and col.generated is None:
            assert target is not None
            arrays.append(target.column(col.name))
        else:
            arrays.append(pa.nulls(n, arrow_type(col.type)))
    batch = pa.RecordBatch.from_arrays(arrays, names=names)
    if clause.action != UPDATE:
        for i, col in enumerate(plan.columns):
            if col.default is not None and col.name not in values:
                batch = _set(batch, i, evaluate(col.default, _on(batch, plan, now_micros), f"default of {col.name}"))
    for i, col in enumerate(plan.columns):
        if col.generated is not None and col.name not in values:
            batch = _set(batch, i, evaluate(col.generated, _on(batch, plan, now_micros), f"generated {col.name}"))
    return batch


def _on(batch: pa.RecordBatch, plan: MergePlan, now: int) -> Evaluation:
    return Evaluation.of(batch, session_time_zone=plan.session_time_zone, now_micros=now)


def _set(batch: pa.RecordBatch, i: int, value: pa.Array) -> pa.RecordBatch:
    return batch.set_column(i, pa.field(batch.schema.field(i).name, value.type), value)


__all__ = ["evaluation", "output_rows"]
