"""deltalog.write streams: a generated 3 GB RecordBatchReader is written with a peak RSS under 1.5 GB.

The write runs in a child process so its peak RSS is its own: ``VmHWM`` (:func:`benchmarks.child.peak_rss_kib`),
not ``getrusage``'s ``ru_maxrss``, which Linux carries across ``execve`` from the spawning pytest process. Each
batch is freshly allocated (a writer that kept references to its input would keep every batch alive and blow the
bound), but cheap to make and to encode: constant columns, so parquet's dictionary and run-length encodings make
the files small and the test fast. The partition column is constant per batch, so rows go to four partitions.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.peers import deltalake_view
from tests.protocol_checker import assert_valid

ROOT = Path(__file__).resolve().parents[2]

CHILD = textwrap.dedent(
    """
    import json, sys
    import numpy as np, pyarrow as pa
    import deltalog
    from benchmarks.child import peak_rss_kib

    total, root = int(sys.argv[1]), sys.argv[2]
    rows = 1 << 20
    names = [f"c{k}" for k in range(7)]
    schema = pa.schema([*[(n, pa.int64()) for n in names], ("p", pa.int64())])
    produced = [0, 0]

    def generate():
        i = 0
        while produced[0] < total:
            columns = [pa.array(np.full(rows, i * 8 + k, dtype=np.int64)) for k in range(7)]
            columns.append(pa.array(np.full(rows, i % 4, dtype=np.int64)))
            batch = pa.record_batch(columns, schema=schema)
            produced[0] += batch.nbytes
            produced[1] += rows
            i += 1
            yield batch

    reader = pa.RecordBatchReader.from_batches(schema, generate())
    result = deltalog.write(reader, root, partition_by=["p"])
    peak = peak_rss_kib() * 1024
    files = sum(1 for a in result.actions if type(a).__name__ == "Add")
    report = {"input": produced[0], "rows": produced[1], "peak": peak, "files": files, "version": result.version}
    print(json.dumps(report))
    """
)


def test_a_3_gb_stream_is_written_with_a_peak_rss_under_1_5_gb(tmp_path: Path) -> None:
    total = 3 << 30
    root = tmp_path / "big"
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(total), str(root)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        check=True,
    )
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["input"] >= total and report["version"] == 0
    assert report["peak"] < 1.5 * (1 << 30), report
    assert report["files"] >= 4  # every partition got files, rolled by size
    assert_valid(root)
    assert deltalake_view(root).rows == report["rows"]
