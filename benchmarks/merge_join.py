"""The measurement behind MERGE's join engine (docs/merge.md): the first pass's join of 10M target keys with
100k source keys, half of them matching, in pyarrow's Acero hash join and in duckdb over the same Arrow tables.

Run: ``python -m benchmarks.merge_join [--rows N] [--source M]``. Prints the best of three runs per engine and
key type. Acero builds its hash table on the right-hand table; the merge puts the smaller side there.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np
import pyarrow as pa


def _best(run: Callable[[], int], repeat: int = 3) -> tuple[float, int]:
    best, rows = float("inf"), 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        rows = run()
        best = min(best, time.perf_counter() - t0)
    return best, rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--rows", type=int, default=10_000_000)
    p.add_argument("--source", type=int, default=100_000)
    args = p.parse_args(argv)
    import duckdb

    rng = np.random.default_rng(26)
    n, m = args.rows, args.source
    keys = np.concatenate([rng.choice(n, m // 2, replace=False), np.arange(n, n + m - m // 2)]).astype(np.int64)
    rng.shuffle(keys)
    con = duckdb.connect()
    for kind in ("long", "string"):
        target_keys = pa.array(np.arange(n, dtype=np.int64))
        source_keys = pa.array(keys)
        if kind == "string":
            target_keys, source_keys = target_keys.cast(pa.string()), source_keys.cast(pa.string())
        target = pa.table({"k": target_keys, "pos": pa.array(np.arange(n, dtype=np.int64))})
        source = pa.table({"k": source_keys, "src": pa.array(np.arange(m, dtype=np.int64))})
        con.register("target", target)
        con.register("source", source)
        acero = _best(lambda: target.join(source, keys="k", join_type="inner").num_rows)  # noqa: B023
        duck = _best(lambda: con.sql("SELECT pos, src FROM target JOIN source USING (k)").to_arrow_table().num_rows)
        print(f"{kind:6s} keys: acero {acero[0]:.3f} s, duckdb {duck[0]:.3f} s ({acero[1]} and {duck[1]} pairs)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
