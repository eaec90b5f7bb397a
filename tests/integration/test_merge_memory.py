"""A MERGE whose source is three times its ``max_memory`` completes with a peak RSS under twice that budget.

The merge runs in a child process so its peak RSS is its own: ``VmHWM`` (:func:`benchmarks.child.peak_rss_kib`),
not ``getrusage``'s ``ru_maxrss``, which Linux carries across ``execve`` from the spawning pytest process. It
takes its source as a one-shot generator (materialized: spilled to a temporary directory once past its share of
the budget, and deleted after the commit). Half the source rows update rows of the table, half are new; each
row carries a 400-byte string (cheap to encode: it compresses to almost nothing), so the source is large in Arrow
bytes with few rows. The table is then read back by deltalake and checked by the protocol checker.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.peers import deltalake_view
from tests.protocol_checker import assert_valid

ROOT = Path(__file__).resolve().parents[2]
BUDGET = 256 << 20
TABLE_ROWS = 400_000

CHILD = textwrap.dedent(
    """
    import json, logging, os, sys
    import numpy as np, pyarrow as pa
    import deltalog
    from benchmarks.child import peak_rss_kib
    from deltalog import DeltaLog

    budget, total, root, table_rows = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    ids = np.arange(table_rows, dtype=np.int64)
    deltalog.write(pa.table({"id": ids, "v": ids, "s": pa.array(["t"] * table_rows)}), root, target_file_size=4 << 20)
    spilled = []
    logging.basicConfig(level=logging.WARNING)
    handler = logging.Handler()
    handler.emit = lambda record: spilled.append(record.getMessage())
    logging.getLogger("deltalog.dml.merge.source").addHandler(handler)
    logging.getLogger("deltalog.dml.merge.source").setLevel(logging.INFO)
    payload = "x" * 400
    produced = [0, 0]

    def source():
        n, rows = 0, 20_000
        while produced[0] < total:
            keys = np.arange(n, n + rows, dtype=np.int64) * 2  # even keys: those below table_rows * 2 match
            batch = pa.RecordBatch.from_pydict({"id": keys, "v": -keys, "s": pa.array([payload] * rows)})
            produced[0] += batch.nbytes
            produced[1] += rows
            n += rows
            yield batch

    log = DeltaLog.for_table(root)
    result = (
        log.merge(source(), "t.id = s.id", max_memory=budget)
        .when_matched_update_all()
        .when_not_matched_insert_all()
        .execute()
    )
    peak = peak_rss_kib() * 1024  # this process's own peak (VmHWM), not the spawning pytest process's
    left = [p for p in os.listdir(os.environ["TMPDIR"])]
    print(json.dumps({"input": produced[0], "rows": produced[1], "peak": peak, "metrics": dict(result.metrics),
                      "spilled": any("spilling" in m for m in spilled), "left": left}))
    """
)


def test_a_source_three_times_the_budget_merges_under_twice_the_budget(tmp_path: Path) -> None:
    root = tmp_path / "t"
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    total = 3 * BUDGET
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(BUDGET), str(total), str(root), str(TABLE_ROWS)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        check=True,
        env={**os.environ, "TMPDIR": str(scratch)},
    )
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["input"] >= total and report["spilled"] and report["left"] == []  # spilled, then deleted
    assert report["peak"] < 2 * BUDGET, report
    metrics = report["metrics"]
    matched = TABLE_ROWS // 2
    assert metrics["numSourceRows"] == str(report["rows"])
    assert metrics["numTargetRowsUpdated"] == str(matched)
    assert metrics["numTargetRowsInserted"] == str(report["rows"] - matched)
    assert_valid(root)
    assert deltalake_view(root).rows == TABLE_ROWS + report["rows"] - matched
