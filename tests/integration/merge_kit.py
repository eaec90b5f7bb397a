"""Generated MERGE and UPDATE statements for the differential test against duckdb's ``MERGE INTO``.

Each predicate and value is built once as a small tree and rendered as SQL both engines read the same way:
comparisons, ``AND``/``OR``/``NOT``, ``IS [NOT] NULL``, ``+`` on small integers (no overflow), ``CASE WHEN``,
``coalesce``, ``||`` on strings (NULL when an operand is NULL in both). Nothing where Spark and duckdb differ:
no ``<=>``, no implicit string casts (literals have their column's type), no division, no overflow; those are
the expression issue's pyspark oracle's business.

Duplicate matches are judged by Delta Spark's rule (docs/merge.md), computed in duckdb with SQL from the same
trees: insert-only merges and a lone unconditional matched delete never fail; a merge with only matched clauses
fails when a target row has two pairs for which some matched condition holds; any other merge when a target row
has two pairs at all. duckdb itself never refuses duplicates, so the expected table is duckdb's only when the
rule lets the merge through.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

#: the table: id and a are BIGINT, b and p (the partition column, when partitioned) strings
COLUMNS = ("id", "a", "b", "p")
STRINGS = ("x", "y", "z", "xy")
PARTS = ("p0", "p1")


# ---------------------------------------------------------------------------------------------- trees
@dataclass(frozen=True)
class Node:
    kind: str  # col, int, str, null, cmp, and, or, not, isnull, notnull, add, case, coalesce, concat
    args: tuple[Any, ...] = ()

    def sql(self, qualified: bool = True) -> str:
        """The SQL both engines read; ``qualified=False`` leaves columns bare (an UPDATE's)."""
        k, a = self.kind, tuple(x.sql(qualified) if isinstance(x, Node) else x for x in self.args)
        if k == "col":
            return f"{a[0]}.{a[1]}" if qualified else str(a[1])
        if k == "int":
            return str(a[0])
        if k == "str":
            return "'" + str(a[0]).replace("'", "''") + "'"
        if k == "null":
            return "NULL"
        if k == "bool":
            return "TRUE" if a[0] else "FALSE"
        if k == "cmp":
            return f"({a[1]} {a[0]} {a[2]})"
        if k in ("and", "or"):
            return "(" + f" {k.upper()} ".join(a) + ")"
        if k == "not":
            return f"(NOT {a[0]})"
        if k == "isnull":
            return f"({a[0]} IS NULL)"
        if k == "notnull":
            return f"({a[0]} IS NOT NULL)"
        if k == "add":
            return f"({a[0]} + {a[1]})"
        if k == "concat":
            return f"({a[0]} || {a[1]})"
        if k == "case":
            return f"(CASE WHEN {a[0]} THEN {a[1]} ELSE {a[2]} END)"
        if k == "coalesce":
            return f"coalesce({a[0]}, {a[1]})"
        raise AssertionError(k)


def col(side: str, name: str) -> Node:
    return Node("col", (side, name))


class Gen:
    """Random trees over the sides a clause may read (``t``, ``s`` or both)."""

    def __init__(self, rng: random.Random, partitioned: bool) -> None:
        self.rng = rng
        self.partitioned = partitioned

    def int_value(self, sides: tuple[str, ...], depth: int = 0) -> Node:
        r = self.rng.random()
        if r < 0.35 or depth > 1:
            return col(self.rng.choice(sides), self.rng.choice(("id", "a")))
        if r < 0.55:
            return Node("int", (self.rng.randint(-3, 12),))
        if r < 0.7:
            return Node("add", (self.int_value(sides, depth + 1), self.int_value(sides, depth + 1)))
        if r < 0.8:
            return Node("coalesce", (self.int_value(sides, depth + 1), Node("int", (self.rng.randint(0, 5),))))
        if r < 0.9:
            return Node(
                "case",
                (self.condition(sides, depth + 1), self.int_value(sides, depth + 1), self.int_value(sides, depth + 1)),
            )
        return Node("null")

    def str_value(self, sides: tuple[str, ...], depth: int = 0) -> Node:
        r = self.rng.random()
        if r < 0.4 or depth > 1:
            return col(self.rng.choice(sides), "b")
        if r < 0.7:
            return Node("str", (self.rng.choice(STRINGS),))
        if r < 0.85:
            return Node("concat", (self.str_value(sides, depth + 1), self.str_value(sides, depth + 1)))
        return Node("null")

    def condition(self, sides: tuple[str, ...], depth: int = 0) -> Node:
        r = self.rng.random()
        if depth < 2 and r < 0.2:
            return Node(
                self.rng.choice(("and", "or")), (self.condition(sides, depth + 1), self.condition(sides, depth + 1))
            )
        if depth < 2 and r < 0.27:
            return Node("not", (self.condition(sides, depth + 1),))
        if r < 0.4:
            return Node(
                self.rng.choice(("isnull", "notnull")), (col(self.rng.choice(sides), self.rng.choice(("a", "b"))),)
            )
        if r < 0.75:
            op = self.rng.choice(("=", "<>", "<", "<=", ">", ">="))
            return Node("cmp", (op, self.int_value(sides, 1), self.int_value(sides, 1)))
        op = self.rng.choice(("=", "<>"))
        return Node("cmp", (op, col(self.rng.choice(sides), "b"), self.str_value(sides, 1)))

    def assignments(self, sides: tuple[str, ...], insert: bool) -> dict[str, Node]:
        names = ["a", "b"] if not insert else ["id", "a", "b"]
        chosen = [n for n in names if self.rng.random() < 0.7] or [names[-1]]
        if insert and self.partitioned and self.rng.random() < 0.7:
            chosen.append("p")
        out = {}
        for n in chosen:
            if n == "p":
                out[n] = Node("str", (self.rng.choice(PARTS),)) if self.rng.random() < 0.5 else col("s", "p")
            elif n == "b":
                out[n] = self.str_value(sides)
            else:
                out[n] = self.int_value(sides)
        return out


@dataclass
class MergeCase:
    condition: Node
    clauses: list[tuple[str, str, Node | None, dict[str, Node] | None]] = field(default_factory=list)

    @property
    def kinds(self) -> list[str]:
        return [c[0] for c in self.clauses]


def gen_merge(rng: random.Random, partitioned: bool) -> MergeCase:
    g = Gen(rng, partitioned)
    cond = Node("cmp", ("=", col("t", "id"), col("s", "id")))
    r = rng.random()
    if r < 0.25:
        cond = Node("and", (cond, g.condition(("t",))))
    elif r < 0.4:
        cond = Node("and", (cond, g.condition(("s",))))
    elif r < 0.5:
        cond = Node("and", (cond, g.condition(("t", "s"))))
    elif r < 0.55 and partitioned:
        cond = Node("and", (cond, Node("cmp", ("=", col("t", "p"), col("s", "p")))))
    case = MergeCase(cond)
    kinds = []
    for kind, chance in (("matched", 0.8), ("not_matched", 0.6), ("not_matched_by_source", 0.35)):
        n = 0
        while rng.random() < (chance if n == 0 else 0.35) and n < 3:
            n += 1
        kinds.append((kind, n))
    if all(n == 0 for _, n in kinds):
        kinds[0] = ("matched", 1)
    for kind, n in kinds:
        for i in range(n):
            last = i == n - 1
            sides: tuple[str, ...] = {"matched": ("t", "s"), "not_matched": ("s",), "not_matched_by_source": ("t",)}[
                kind
            ]
            condition = None if last and rng.random() < 0.5 else g.condition(sides)
            if kind == "not_matched":
                case.clauses.append((kind, "insert", condition, g.assignments(sides, insert=True)))
            elif rng.random() < 0.3:
                case.clauses.append((kind, "delete", condition, None))
            else:
                case.clauses.append((kind, "update", condition, g.assignments(sides, insert=False)))
    return case


def spark_builder(log: Any, source: Any, case: MergeCase) -> Any:
    b = log.merge(source, case.condition.sql(), source_alias="s", target_alias="t")
    for kind, action, cond, sets in case.clauses:
        pred = cond.sql() if cond is not None else None
        updates = {k: v.sql() for k, v in (sets or {}).items()}
        if kind == "matched":
            b = b.when_matched_update(updates, pred) if action == "update" else b.when_matched_delete(pred)
        elif kind == "not_matched":
            b = b.when_not_matched_insert(updates, pred)
        elif action == "update":
            b = b.when_not_matched_by_source_update(updates, pred)
        else:
            b = b.when_not_matched_by_source_delete(pred)
    return b


def duckdb_merge(case: MergeCase) -> str:
    parts = [f"MERGE INTO tgt AS t USING src AS s ON {case.condition.sql()}"]
    for kind, action, cond, sets in case.clauses:
        when = {
            "matched": "WHEN MATCHED",
            "not_matched": "WHEN NOT MATCHED",
            "not_matched_by_source": "WHEN NOT MATCHED BY SOURCE",
        }[kind]
        if cond is not None:
            when += f" AND {cond.sql()}"
        if action == "delete":
            parts.append(f"{when} THEN DELETE")
        elif action == "update":
            sets_sql = ", ".join(f"{k} = {v.sql()}" for k, v in (sets or {}).items())
            parts.append(f"{when} THEN UPDATE SET {sets_sql}")
        else:
            names = list((sets or {}).keys())
            values = ", ".join(v.sql() for v in (sets or {}).values())
            parts.append(f"{when} THEN INSERT ({', '.join(names)}) VALUES ({values})")
    return " ".join(parts)


def duplicate_rule_fails(con: Any, case: MergeCase) -> bool:
    """Whether Delta Spark's duplicate-match rule refuses ``case`` on duckdb's tables ``tgt`` and ``src``."""
    kinds = case.kinds
    matched = [c for c in case.clauses if c[0] == "matched"]
    if "matched" not in kinds and "not_matched_by_source" not in kinds:
        return False  # insert-only
    if len(matched) == 1 and matched[0][1] == "delete" and matched[0][2] is None:
        return False  # one unconditional delete
    where = ""
    if set(kinds) == {"matched"}:
        options = [c[2].sql() if c[2] is not None else "TRUE" for c in matched]
        where = f" AND coalesce(({' OR '.join(options)}), FALSE)"
    query = (
        f"SELECT count(*) FROM (SELECT t.rowid AS r, count(*) AS n FROM tgt AS t JOIN src AS s "
        f"ON coalesce({case.condition.sql()}, FALSE){where} GROUP BY t.rowid) WHERE n > 1"
    )
    (count,) = con.execute(query).fetchone()
    return bool(count)


def gen_rows(rng: random.Random, n: int, ids: int, partitioned: bool, nulls: bool = True) -> list[dict[str, Any]]:
    rows = []
    for _ in range(n):
        rows.append(
            {
                "id": None if nulls and rng.random() < 0.08 else rng.randint(0, ids),
                "a": None if rng.random() < 0.15 else rng.randint(-2, 10),
                "b": None if rng.random() < 0.15 else rng.choice(STRINGS),
                "p": rng.choice(PARTS),
            }
        )
    return rows


def gen_update(rng: random.Random, partitioned: bool) -> tuple[Node | None, dict[str, Node]]:
    g = Gen(rng, partitioned)
    cond = None if rng.random() < 0.15 else g.condition(("t",))
    return cond, g.assignments(("t",), insert=False)


__all__ = [
    "COLUMNS",
    "Gen",
    "MergeCase",
    "Node",
    "duckdb_merge",
    "duplicate_rule_fails",
    "gen_merge",
    "gen_rows",
    "gen_update",
    "spark_builder",
]
