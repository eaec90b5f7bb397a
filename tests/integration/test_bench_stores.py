"""``scripts/bench --store s3|azure --quick`` works end to end: every object-store case of issue 16, both engines,
through the counting proxy in front of a real moto server and a real Azurite, with every answer checked.

The harness is what later work proves issue 16's gates with, so the test runs it as a user would (the CLI,
small tables, one run) and reads the raw numbers it leaves in ``last-run-<store>.json``: every case and
engine made requests, its serial round trips lie between 1 and its request count, no deltalog writer
failed, and deltalog's default client meets issue 16's gates (requests, and dependent round trips counted
with the proxy answering in rounds) on these small tables. Request counts must be exact to serve as gates,
so one more run does the same cases twice and finds the same counts. Times are never asserted.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchmarks.store_cases import QUICK_CASES
from benchmarks.stores import ENGINES
from tests.tiers import backends

ROOT = Path(__file__).resolve().parents[2]


def _bench(tmp_path: Path, *args: str) -> list[dict[str, Any]]:
    markdown = tmp_path / "BENCHMARKS.md"
    markdown.write_text("untouched\n")
    cmd = [sys.executable, "-m", "benchmarks", "--quick", "--latency-ms", "5", "--dir", str(tmp_path), *args]
    cmd += ["--markdown", str(markdown)]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900, env=os.environ.copy())
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "every check passed" in done.stdout
    assert markdown.read_text() == "untouched\n"  # a quick run never writes results
    store = args[args.index("--store") + 1]
    return list(json.loads((tmp_path / "quick" / "stores" / f"last-run-{store}.json").read_text()))


@pytest.mark.parametrize("store", backends("s3", "azure"))
def test_quick_store_bench_runs_every_case_through_the_proxy(store: str, tmp_path: Path) -> None:
    results = _bench(tmp_path, "--store", store)
    assert {(r["case"], r["engine"]) for r in results} == {(case, engine) for case in QUICK_CASES for engine in ENGINES}
    assert ENGINES == ("deltalog", "deltalog-fsspec", "deltalake")  # both deltalog clients beside deltalake
    for r in results:
        (run,) = r["runs"]
        where = f"{r['case']} / {r['engine']}"
        assert run["requests"] > 0, where
        assert 1 <= run["serial"] <= run["requests"], where
        assert sum(run["by_class"].values()) == run["requests"], where
        assert run["wall_s"] > 0, where
        if r["case"] == "writers":
            assert run["successes"] + run["failed"] == 2 * 3, where
            if r["engine"].startswith("deltalog"):
                assert run["failed"] == 0, run["first_failure"]
        if r["case"] == "append" and r["engine"].startswith("deltalog"):
            assert run["outside_log"] == 0  # deltalog's append writes the commit only
        if r["case"] != "writers":
            assert run["outside_log"] <= run["requests"], where
            assert 1 <= r["depth"] <= run["requests"], where  # the dependency pass ran
        if r["engine"] == "deltalog" and QUICK_CASES[r["case"]].gate(run["requests"], r["depth"]) is not None:
            assert QUICK_CASES[r["case"]].gate(run["requests"], r["depth"]), (where, run["requests"], r["depth"])


@pytest.mark.cloud  # the harness starts moto itself, in its own process
def test_request_counts_repeat_exactly_across_runs(tmp_path: Path) -> None:
    results = _bench(tmp_path, "--store", "s3", "--runs", "2", "--cases", "load,travel-version,append")
    assert len(results) == 3 * len(ENGINES)
    for r in results:
        first, second = r["runs"]
        assert first["requests"] > 0
        assert (first["requests"], first["by_class"]) == (second["requests"], second["by_class"]), (
            r["case"],
            r["engine"],
        )
