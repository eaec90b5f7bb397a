"""A MERGE (or UPDATE) bound against its table and source: what to join on, what to read, what each clause does.

Binding happens once, before any row is read, so every mistake is refused by name with nothing written: a
column that does not exist or carries the wrong alias, an ambiguous unqualified name, an ``updates`` key the
table lacks, a value Spark's store assignment refuses for its column, an update of an identity column, or an
insert of one that does not allow explicit values.

Scopes are Spark's: the merge condition and ``WHEN MATCHED`` clauses see the target (relation 0) and the
source (relation 1) under their aliases; ``WHEN NOT MATCHED`` sees the source alone and ``WHEN NOT MATCHED BY
SOURCE`` (and UPDATE) the target alone. Bound trees read logical names, as the data plane's batches carry them.

What the plan derives from the condition:

* the equi-join keys (``t.x = s.y`` and ``t.x <=> s.y`` conjuncts whose sides each read one relation), which
  the join engine hashes, and the rest of the condition (the residual), evaluated with Spark's semantics on
  the pairs the keys produce;
* the target-only conjuncts, which prune files (partitions, statistics) and, as Delta Spark records it, make the
  read predicate: for a merge with only ``WHEN MATCHED`` clauses, OR-ed with the target-only part of each
  clause's condition (``MergeIntoCommandBase.getTargetOnlyPredicates``); with any ``NOT MATCHED BY SOURCE``
  clause, the whole table (every target row may be changed).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa

from deltalog.arrow.schema import delta_field
from deltalog.core.features import identity as identities
from deltalog.core.schema import top_level_fields
from deltalog.data.constraints import DEFAULT, GENERATION
from deltalog.data.expressions import fold
from deltalog.data.filters import source as filter_source
from deltalog.dml.merge import clauses as C
from deltalog.errors import InvalidArgumentError, InvalidExpressionError
from deltalog.expr import Relation, Scope, bind, bind_assignment, bind_predicate, parse
from deltalog.expr import tree as X
from deltalog.expr import types as T

#: a bound clause's scope: the pair (target 0, source 1), the source alone, or the target alone
PAIR = "pair"
SOURCE = "source"
TARGET = "target"
_SCOPES = {C.MATCHED: PAIR, C.NOT_MATCHED: SOURCE, C.NOT_MATCHED_BY_SOURCE: TARGET}
#: types the join engine hashes exactly as Spark compares them (floats after normalising -0.0 and NaN)
_UNHASHABLE = (T.DAY_TIME, T.YEAR_MONTH, T.VOID)


@dataclass(frozen=True)
class BoundClause:
    """One clause, bound: ``condition`` (None: always) and ``assignments`` (target column -> value, logical
    names as the table spells them) in the clause's ``scope``; ``text`` is the condition as the caller wrote it."""

    kind: str
    action: str
    scope: str
    condition: X.Expr | None
    text: str | None
    assignments: tuple[tuple[str, X.Expr], ...] = ()
    shown: str = ""

    @property
    def updates(self) -> bool:
        return self.action == C.UPDATE


@dataclass(frozen=True)
class KeyPair:
    """One equi-join key: the target side (relation 0 of the target's scope), the source side (relation 0 of the
    source's scope), and whether NULLs match (``<=>``)."""

    target: X.Expr
    source: X.Expr
    null_safe: bool

    @property
    def floating(self) -> bool:
        return self.target.type in (T.FLOAT, T.DOUBLE)


@dataclass(frozen=True)
class Column:
    """A table column an output row is computed for: a generated column's expression or a default value
    (over the table's logical scope), and whether it is an identity column."""

    name: str
    type: T.DataType
    generated: X.Expr | None = None
    default: X.Expr | None = None
    identity: identities.IdentityColumn | None = None


@dataclass(frozen=True)
class MergePlan:
    """Everything a merge's work needs to know, bound and frozen (picklable: an executor can be handed it).

    ``schema`` is the target's Delta schema after any evolution; ``condition`` is None for an UPDATE (no
    source); ``read_predicate`` None means the whole table; ``target_columns`` are the columns the first pass
    reads of each candidate file (keys, conditions), never the assignments'.
    """

    schema: Mapping[str, Any]
    partition_columns: tuple[str, ...]
    columns: tuple[Column, ...]
    clauses: tuple[BoundClause, ...]
    condition: X.Expr | None = None
    condition_text: str = ""
    keys: tuple[KeyPair, ...] = ()
    residual: X.Expr | None = None
    target_only: X.Expr | None = None
    read_predicate: X.Expr | None = None
    target_columns: tuple[str, ...] = ()
    session_time_zone: str = "UTC"

    def of_kind(self, kind: str) -> tuple[BoundClause, ...]:
        return tuple(c for c in self.clauses if c.kind == kind)

    @property
    def matched(self) -> tuple[BoundClause, ...]:
        return self.of_kind(C.MATCHED)

    @property
    def not_matched(self) -> tuple[BoundClause, ...]:
        return self.of_kind(C.NOT_MATCHED)

    @property
    def not_matched_by_source(self) -> tuple[BoundClause, ...]:
        return self.of_kind(C.NOT_MATCHED_BY_SOURCE)

    @property
    def target_clauses(self) -> tuple[BoundClause, ...]:
        """The clauses that change target rows, in the order their indexes are recorded: matched, then not
        matched by source."""
        return (*self.matched, *self.not_matched_by_source)

    @property
    def matched_only(self) -> bool:
        return bool(self.matched) and not self.not_matched and not self.not_matched_by_source

    @property
    def insert_only(self) -> bool:
        return bool(self.not_matched) and not self.matched and not self.not_matched_by_source

    @property
    def only_unconditional_delete(self) -> bool:
        """Delta Spark's one exception to the duplicate-match rule: the only matched clause is an unconditional
        delete, so every pair of a duplicated target row deletes it (``isOnlyOneUnconditionalDelete``)."""
        m = self.matched
        return len(m) == 1 and m[0].action == C.DELETE and m[0].condition is None

    @property
    def removes_rows(self) -> bool:
        return bool(self.matched or self.not_matched_by_source)


# ---------------------------------------------------------------------------------------------- scopes
def source_fields(schema: pa.Schema) -> tuple[T.StructField, ...]:
    """The source's columns as the binder sees them (Arrow types mapped as a Delta column would hold them)."""
    return tuple(T.struct_field(delta_field(f), physical=False) for f in schema)


def table_fields(schema: Mapping[str, Any]) -> tuple[T.StructField, ...]:
    return T.schema_fields(schema, physical=False)


def scopes(
    schema: Mapping[str, Any], source: pa.Schema | None, target_alias: str | None, source_alias: str | None
) -> dict[str, Scope]:
    target = Relation(table_fields(schema), target_alias)
    out = {TARGET: Scope((target,))}
    if source is not None:
        src = Relation(source_fields(source), source_alias)
        out[PAIR] = Scope((target, src))
        out[SOURCE] = Scope((src,))
    return out


def _tree(value: Any, scope: Scope, what: str) -> tuple[X.Expr, str]:
    """A condition or value in any form the API takes, as an unbound tree and the text messages quote."""
    if isinstance(value, str):
        return parse(value), value
    fields = scope.relations[0].fields
    found = filter_source(value, fields)
    if found.tree is None:
        raise InvalidArgumentError(
            f"{what}: the pyarrow Expression {found.text} cannot be read as a Spark SQL expression; write it as SQL"
        )
    return found.tree, found.text


def bind_condition(value: Any, scope: Scope, what: str, tz: str = "UTC") -> tuple[X.Expr, str]:
    """A condition bound in ``scope`` and folded (constant parts evaluated once, in the session zone ``tz``)."""
    tree, text = _tree(value, scope, what)
    return fold(bind_predicate(tree, scope, text), tz), text


# ---------------------------------------------------------------------------------------------- columns
def _columns(schema: Mapping[str, Any], tz: str) -> tuple[Column, ...]:
    """Every top-level column with its generated expression or default, bound over the table's logical scope
    and typed as the column (Spark stores the value cast to the column's type)."""
    scope = Scope.of_schema(schema, physical=False)
    identity = {c.name: c for c in identities.columns(schema)}
    out = []
    for f in top_level_fields(schema):
        meta = f.get("metadata") or {}
        t = T.from_delta(f.get("type"), physical=False)
        generated = default = None
        if GENERATION in meta:
            generated = fold(_typed(bind(str(meta[GENERATION]), scope), t), tz)
        elif DEFAULT in meta:
            default = fold(_typed(bind(str(meta[DEFAULT]), scope), t), tz)
        out.append(Column(str(f["name"]), t, generated, default, identity.get(str(f["name"]))))
    return tuple(out)


def _typed(e: X.Expr, t: T.DataType) -> X.Expr:
    if e.type == t:
        return e
    if isinstance(e, X.Literal) and e.value is None:
        return X.Literal(None, t)
    return X.Cast(e, t, False, True)


def _column_named(key: str, columns: Sequence[Column], target_alias: str | None, clause: C.Clause) -> Column:
    """The table column an ``updates`` key names (case-insensitively; ``t.amount`` with the target's alias)."""
    name = key
    if target_alias is not None and key.lower().startswith(target_alias.lower() + "."):
        name = key[len(target_alias) + 1 :]
    name = name.strip("`")
    found = [c for c in columns if c.name.lower() == name.lower()]
    if not found:
        nested = "." in name and any(c.name.lower() == name.split(".")[0].lower() for c in columns)
        why = (
            "assigning a nested field is not supported; assign the whole struct column"
            if nested
            else f"the table's columns are {[c.name for c in columns]}"
        )
        raise InvalidExpressionError(
            f"{clause.shown}: {key!r} is not a column of the table ({why})", expression=key, column=key
        )
    return found[0]


def _assignments(
    clause: C.Clause,
    scope: Scope,
    columns: Sequence[Column],
    source: pa.Schema | None,
    target_alias: str | None,
    source_alias: str | None,
    evolving: bool,
    tz: str = "UTC",
) -> tuple[tuple[str, X.Expr], ...]:
    if clause.action == C.DELETE:
        return ()
    pairs: list[tuple[Column, Any, str]] = []
    if clause.star:
        assert source is not None
        given = {f.name.lower(): f.name for f in source}
        for col in columns:
            name = given.get(col.name.lower())
            if name is None:
                if col.generated is not None or col.identity is not None or evolving:
                    continue  # computed from the row or generated / left as it is (UPDATE) or its default (INSERT)
                raise InvalidExpressionError(
                    f"{clause.shown}: the source has no column {col.name!r}, which the table has; the source has "
                    f"{list(source.names)} (schema_mode='merge' leaves missing columns unchanged on update and "
                    "null on insert)",
                    expression="*",
                    column=col.name,
                )
            ref = f"{X.quote(source_alias)}.{X.quote(name)}" if source_alias else X.quote(name)
            pairs.append((col, ref, ref))
    else:
        seen: set[str] = set()
        for key, value in clause.assignments:
            col = _column_named(key, columns, target_alias, clause)
            if col.name in seen:
                raise InvalidExpressionError(
                    f"{clause.shown}: column {col.name!r} is assigned twice", expression=key, column=col.name
                )
            seen.add(col.name)
            pairs.append((col, value, value if isinstance(value, str) else X.to_sql(value)))
    out = []
    for col, value, text in pairs:
        if col.identity is not None:  # Delta Spark's: never updated; inserted only where explicit values are allowed
            identities.check_assignment(col.identity, update=clause.action == C.UPDATE, where=clause.shown)
        tree = parse(value) if isinstance(value, str) else value
        if not isinstance(tree, (X.Column, X.Field, X.Literal, X.Call, X.Cast, X.Case)):
            tree = X.literal_of(tree)
        out.append((col.name, fold(bind_assignment(tree, scope, col.name, col.type, text), tz)))
    return tuple(out)


# ---------------------------------------------------------------------------------------------- the condition
def _relations(e: X.Expr) -> set[int]:
    return {f.relation for f in X.references(e)}


def on_relation(e: X.Expr, relation: int) -> X.Expr:
    """``e`` with every column read from relation ``relation`` (a one-sided key evaluated on its side alone)."""
    if isinstance(e, X.Field):
        return replace(e, relation=relation)
    kids = X.children(e)
    return X.with_children(e, [on_relation(k, relation) for k in kids]) if kids else e


def split_keys(condition: X.Expr) -> tuple[tuple[KeyPair, ...], X.Expr | None]:
    """The condition's equi-join keys and the conjuncts left over (None: none)."""
    keys, rest = [], []
    for c in X.conjuncts(condition):
        pair = _key(c)
        if pair is None:
            rest.append(c)
        else:
            keys.append(pair)
    return tuple(keys), (X.and_(*rest, bound=True) if rest else None)


def _key(c: X.Expr) -> KeyPair | None:
    if not (isinstance(c, X.Call) and c.name in ("=", "<=>") and len(c.args) == 2):
        return None
    left, right = c.args
    sides = (_relations(left), _relations(right))
    if sides == ({0}, {1}):
        target, src = left, right
    elif sides == ({1}, {0}):
        target, src = right, left
    else:
        return None
    if not T.is_atomic(target.type) or target.type in _UNHASHABLE or target.type != src.type:
        return None
    return KeyPair(target, on_relation(src, 0), c.name == "<=>")


def target_only(e: X.Expr) -> X.Expr | None:
    """The conjuncts of ``e`` that read the target alone (relation 0 of a pair scope); None: none."""
    parts = [c for c in X.conjuncts(e) if _relations(c) == {0}]
    return X.and_(*parts, bound=True) if parts else None


def read_predicate(condition: X.Expr, matched: Sequence[BoundClause], matched_only: bool, nmbs: bool) -> X.Expr | None:
    """What Delta Spark records as read: None (the whole table) with a NOT MATCHED BY SOURCE clause; else the
    condition's target-only conjuncts, and for a matched-only merge also the OR of each matched clause's
    target-only part (a clause without one makes that OR true)."""
    if nmbs:
        return None
    parts = [c for c in X.conjuncts(condition) if _relations(c) == {0}]
    if matched_only:
        options: list[X.Expr] = []
        for m in matched:
            own = target_only(m.condition) if m.condition is not None else None
            if own is None:
                options = []
                break
            options.append(own)
        if options:
            parts.append(X.or_(*options, bound=True))
    return X.and_(*parts, bound=True) if parts else None


def _narrow(*trees: X.Expr | None) -> tuple[str, ...]:
    """The top-level target columns (relation 0) ``trees`` read, in order."""
    out: dict[str, None] = {}
    for t in trees:
        if t is None:
            continue
        for f in X.references(t):
            if f.relation == 0:
                out[f.path[0]] = None
    return tuple(out)


# ---------------------------------------------------------------------------------------------- plans
def plan_merge(
    schema: Mapping[str, Any],
    partition_columns: Sequence[str],
    source: pa.Schema,
    condition: Any,
    clauses: Sequence[C.Clause],
    *,
    target_alias: str | None = "t",
    source_alias: str | None = "s",
    evolving: bool = False,
    session_time_zone: str | None = None,
) -> MergePlan:
    """Bind a merge against the target's ``schema`` (after evolution) and the ``source``'s Arrow schema."""
    C.check_order(clauses)
    if target_alias is not None and source_alias is not None and target_alias.lower() == source_alias.lower():
        raise InvalidArgumentError(f"the source and the target have the same alias {target_alias!r}")
    tz = session_time_zone or "UTC"
    found = scopes(schema, source, target_alias, source_alias)
    bound_condition, text = bind_condition(condition, found[PAIR], "the merge condition", tz)
    columns = _columns(schema, tz)
    bound: list[BoundClause] = []
    for kind in C.KINDS:
        for c in (c for c in clauses if c.kind == kind):
            scope = found[_SCOPES[kind]]
            cond, cond_text = (None, None)
            if c.condition is not None:
                cond, cond_text = bind_condition(c.condition, scope, f"the condition of {c.shown}", tz)
            pairs = _assignments(c, scope, columns, source, target_alias, source_alias, evolving, tz)
            bound.append(BoundClause(kind, c.action, _SCOPES[kind], cond, cond_text, pairs, c.shown))
    keys, residual = split_keys(bound_condition)
    matched = [b for b in bound if b.kind == C.MATCHED]
    nmbs = [b for b in bound if b.kind == C.NOT_MATCHED_BY_SOURCE]
    matched_only = bool(matched) and len(matched) == len(bound)
    narrow = _narrow(
        *(k.target for k in keys),
        residual,
        *(b.condition for b in matched),
        *(b.condition for b in nmbs),
    )
    return MergePlan(
        schema=schema,
        partition_columns=tuple(partition_columns),
        columns=columns,
        clauses=tuple(bound),
        condition=bound_condition,
        condition_text=text,
        keys=keys,
        residual=residual,
        target_only=target_only(bound_condition),
        read_predicate=read_predicate(bound_condition, matched, matched_only, bool(nmbs)),
        target_columns=narrow,
        session_time_zone=session_time_zone or "UTC",
    )


def plan_update(
    schema: Mapping[str, Any],
    partition_columns: Sequence[str],
    updates: Mapping[str, Any],
    predicate: Any = None,
    *,
    session_time_zone: str | None = None,
) -> MergePlan:
    """An UPDATE as a plan with one target-only update clause: the predicate is its condition (None: every row)."""
    scope = scopes(schema, None, None, None)[TARGET]
    if not isinstance(updates, Mapping) or not updates:
        raise InvalidArgumentError("UPDATE needs updates={column: expression, ...}")
    clause = replace(C.clause(C.NOT_MATCHED_BY_SOURCE, C.UPDATE, predicate, updates), label="UPDATE")
    shown = clause.shown
    tz = session_time_zone or "UTC"
    cond, text = (None, None) if predicate is None else bind_condition(predicate, scope, "the UPDATE predicate", tz)
    columns = _columns(schema, tz)
    pairs = _assignments(clause, scope, columns, None, None, None, False, tz)
    bound = BoundClause(C.NOT_MATCHED_BY_SOURCE, C.UPDATE, TARGET, cond, text, pairs, shown)
    return MergePlan(
        schema=schema,
        partition_columns=tuple(partition_columns),
        columns=columns,
        clauses=(bound,),
        target_only=cond,
        read_predicate=cond,
        target_columns=_narrow(cond),
        session_time_zone=session_time_zone or "UTC",
    )


__all__ = [
    "PAIR",
    "SOURCE",
    "TARGET",
    "BoundClause",
    "Column",
    "KeyPair",
    "MergePlan",
    "bind_condition",
    "on_relation",
    "plan_merge",
    "plan_update",
    "read_predicate",
    "scopes",
    "source_fields",
    "split_keys",
    "target_only",
]
