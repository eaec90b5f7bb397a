"""``python -m benchmarks --data --quick`` works end to end: issue 15's data-plane cases (write, selective and
full scans, a delete with deletion vectors, the change data feed) with deltalog and deltalake on small tables,
the engines agreeing on the rows, and the selective scan opening no more files than deltalake. Times are never
asserted.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from benchmarks.data_cases import CASES, QUICK, selective_range

ROOT = Path(__file__).resolve().parents[2]


def test_the_data_plane_benchmark_runs_and_checks_itself(tmp_path: Path) -> None:
    markdown = tmp_path / "BENCHMARKS.md"
    markdown.write_text("untouched\n")
    cmd = [sys.executable, "-m", "benchmarks", "--data", "--quick", "--dir", str(tmp_path), "--markdown", str(markdown)]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900, env=os.environ.copy())
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "every check passed" in done.stdout and markdown.read_text() == "untouched\n"
    runs = json.loads((tmp_path / "quick" / "data" / "last-run.json").read_text())
    by = {(r["case"], r["engine"]): r["runs"][0] for r in runs}
    assert {c for c, _ in by} == set(CASES)
    low, high = selective_range(QUICK)
    assert by[("scan-selective", "deltalog")]["rows"] == high - low + 1
    assert by[("scan-selective", "deltalog")]["files"] <= by[("scan-selective", "deltalake")]["files"]
    assert by[("scan-full", "deltalog")]["files"] == QUICK.scan_files
    assert by[("delete", "deltalog")]["rows"] == by[("delete", "deltalake")]["rows"] == QUICK.delete_rows * 99 // 100
    assert by[("write", "deltalog")]["call_peak_rss_kib"] > 0
    ours, theirs = by[("changes", "deltalog")], by[("changes", "deltalake")]
    assert ours["rows"] == theirs["rows"] > 0 and ours["digest"] == theirs["digest"]  # the same change rows
