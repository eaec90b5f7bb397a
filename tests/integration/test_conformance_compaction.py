"""The compaction runner (``python -m conformance --compaction``) on a corpus made here: it compares the files a
corpus holds as found, writes kernel-rs-shaped and invalid ones on scratch copies of every table with three
commits or more, leaves the corpus untouched, and fails a table whose own compaction file changes a version
(one that passes the structural check but lies about the commits: the check is no proof of content)."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest

from conformance.__main__ import main
from conformance.compaction import foreign, run_compaction
from deltalog import DeltaLog
from tests import foreign_compaction as fc
from tests.corpus import corpus_dir
from tests.integration.test_foreign_compaction import kernel_rs_table
from tests.integration.test_log_compaction import small_table

LOG = "_delta_log"


def _tables(root: Path, names: list[str]) -> None:
    tables = [{"name": f"made/{n}", "path": f"tables/made/{n}", "features": []} for n in names]
    (root / "manifest.json").write_bytes(orjson.dumps({"tables": tables}))


def _snapshot(root: Path) -> dict[str, int]:
    return {
        os.path.relpath(os.path.join(d, n), root): os.stat(os.path.join(d, n)).st_size
        for d, _, ns in os.walk(root)
        for n in ns
    }


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """``kernel``: the kernel-rs-shaped history of the foreign-compaction tests, no compaction files;
    ``own``: a deltalog table with its own compaction files and a kernel-rs one beside them; ``short``: two
    commits (nothing to compact below the latest version)."""
    root = tmp_path / "corpus"
    kernel_rs_table(root / "tables/made/kernel")
    own = root / "tables/made/own"
    log = small_table(own, 8)
    log.compact_log(1, 3)
    log.compact_log(4, 6)
    fc.write(own, 0, 2, fc.kernel_rs_shaped(fc.commit_bytes(own, 0, 2)))
    small_table(root / "tables/made/short", 1)
    _tables(root, ["kernel", "own", "short"])
    return root


def test_the_runner_compares_as_found_and_foreign_files_and_leaves_the_corpus_alone(
    corpus: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _snapshot(corpus)
    results, found = run_compaction(str(corpus))
    assert found == 1
    by = {(r.name, r.mode): r for r in results}
    assert set(by) == {("made/own", "as found"), ("made/own", "foreign"), ("made/kernel", "foreign")}
    assert all(r.ok for r in results), [r.failures for r in results]
    assert by[("made/own", "as found")].loads_using > 0
    kernel = by[("made/kernel", "foreign")]
    assert kernel.written >= 5 and kernel.unusable >= 2 and kernel.invalid_checked and kernel.loads_using > 0
    assert main(["--compaction", "--corpus", str(corpus)]) == 0
    out = capsys.readouterr().out
    assert "as found: 1 tables with compaction files" in out and "compaction: 3 passed, 0 failed" in out
    assert _snapshot(corpus) == before


def test_a_compaction_file_that_lies_about_its_commits_fails_the_table(
    corpus: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Reconciled in shape (one action per file), so a reader uses it, but it drops a live file: the as-found
    comparison is what catches it."""
    own = corpus / "tables/made/own"
    path = own / LOG / fc.compaction_name(4, 6)
    lines = path.read_bytes().splitlines()
    dropped = next(i for i, line in enumerate(lines) if line.startswith(b'{"add"'))
    path.write_bytes(b"\n".join(lines[:dropped] + lines[dropped + 1 :]) + b"\n")
    assert DeltaLog.for_table(own).snapshot().num_files < 8
    assert main(["--compaction", "--corpus", str(corpus), "--table", "made/own"]) == 1
    out = capsys.readouterr().out
    assert "FAIL made/own (as found" in out and "compaction: 1 passed, 1 failed" in out


def test_the_invalid_file_must_be_passed_over_with_a_warning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """If deltalog read the invalid file (two metaData actions, the older last) the table would fail twice:
    a wrong version, and no warning."""
    root = tmp_path / "t"
    kernel_rs_table(root)
    result = foreign("t", root, tmp_path / "scratch")
    assert result is not None and result.ok and result.invalid_checked
    monkeypatch.setattr("deltalog.table.load.unusable_reason", lambda *_: None)
    broken = foreign("t", root, tmp_path / "scratch2")
    assert broken is not None and not broken.ok
    assert any("was not passed over with a warning" in f for f in broken.failures), broken.failures


CORPORA = [c for c in [corpus_dir()] if c is not None]  # no case without a corpus (tests/corpus.py)


@pytest.mark.corpus
@pytest.mark.parametrize("root", CORPORA, ids=["corpus"] * len(CORPORA))
def test_the_real_corpus_has_no_compaction_files_and_passes(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--compaction", "--corpus", str(root)]) == 0
    out = capsys.readouterr().out
    assert "as found: none of the" in out and "0 tables differ" in out
