"""The protocol checker (tests/protocol_checker) on the corpus, on hand-built logs, incrementally.

(a) Every corpus table: strict mode reports exactly the violations listed in :data:`CORPUS_VIOLATIONS`
    (the one place where upstream fixture quirks are accepted, each with its reason), lenient mode the
    same minus strict-only rules.
(b) One hand-built log per rule (:mod:`tests.unit.protocol_cases`) yields exactly its expected violations;
    valid hand-built logs yield none.
(c) Logs written by ``deltalake``: tests/integration/test_protocol_checker_deltalake.py.
"""

from __future__ import annotations

import ast
import copy
import json
import random
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.corpus import corpus_entries, table_path
from tests.protocol_checker import (
    RULES,
    CheckState,
    ProtocolViolationError,
    assert_valid,
    check_log,
    check_table,
)
from tests.protocol_checker.rules.log_layout import hint_checksum

from . import logkit as lk
from . import logwriter as lw
from .protocol_cases import CASES, VALID, dv_log, legacy_add, legacy_log, modern_log, write

CHECKER = Path(__file__).resolve().parents[1] / "protocol_checker"

# ---------------------------------------------------------------------------------------------- (a) the corpus

_NO_SCHEMA = "synthetic upstream log: metaData without schemaString (deltalake refuses the table too)"
_HINT_SIZE = "delta-rs wrote _last_checkpoint.size that is not the checkpoint's action count (strict only)"
_FAKE_CDC = (
    "synthetic upstream log: cdc 'fake/path/2' outside _change_data/ (strict only), keyed by a partition column"
    " the unpartitioned table does not have"
)

#: table -> {(rule, version): why the violation is expected}. Strict mode; lenient drops strict-only rules.
CORPUS_VIOLATIONS: dict[str, dict[tuple[str, int | None], str]] = {
    "delta/corrupted-last-checkpoint": {("shape.metaData", 0): _NO_SCHEMA},
    "delta/deltalog-state-reconstruction-from-checkpoint-missing-metadata": {
        ("shape.metaData", 0): _NO_SCHEMA,
        ("ckpt.protocol-and-metadata", 10): "the fixture's point: its checkpoint lacks the metaData action",
        ("ckpt.matches-replay", 10): "so the checkpoint's metadata differs from the replay's",
        ("log.last-checkpoint-fields", None): "its hint counts 13 actions, the checkpoint (without metaData) has 12",
    },
    "delta/deltalog-state-reconstruction-without-protocol": {
        ("commit.first-version", 0): "the fixture's point: the log has no protocol action",
    },
    "delta/deltalog-invalid-protocol-version": {("protocol.versions", 0): "the fixture's point: reader version 99"},
    "delta/canonicalized-paths-normal-a": {("shape.metaData", 0): _NO_SCHEMA},
    "delta/canonicalized-paths-special-a": {("shape.metaData", 0): _NO_SCHEMA},
    "delta/deltalog-commit-info": {("shape.metaData", 0): _NO_SCHEMA},
    "delta/update-deleted-directory": {("shape.metaData", 0): _NO_SCHEMA},
    "delta/deltalog-getChanges": {("cdf.cdc-location", 1): _FAKE_CDC, ("partition.keys", 1): _FAKE_CDC},
    "delta-kernel-rs/table-with-cdf": {("cdf.cdc-location", 1): _FAKE_CDC, ("partition.keys", 1): _FAKE_CDC},
    "delta/identity_test_written_by_version_5": {
        ("protocol.property-needs-feature", 0): "identity column metadata on a (1, 2) table (strict only)",
    },
    "delta-rs/checkpoint_with_partitions": {("log.last-checkpoint-fields", None): _HINT_SIZE},
    "delta-rs/latest_not_checkpointed": {("log.last-checkpoint-fields", None): _HINT_SIZE},
    "delta-rs/data_err_logs-table_d": {("log.last-checkpoint-fields", None): _HINT_SIZE},
    "delta-rs/data_err_logs-table_f": {("log.last-checkpoint-fields", None): _HINT_SIZE},
    "delta-rs/simple_table_features": {
        ("protocol.versions", 0): "the fixture's point: reader version 5 with reader features",
        ("protocol.feature-listing", 0): "reader-writer features listed for writers only at reader version 5",
        ("protocol.feature-dependency", 0): "icebergCompatV1 without readable columnMapping",
        **{("rt.fresh-ids", v): "rowTracking listed, adds without row ids" for v in range(5)},
    },
    "delta-rs/data_err_logs-table_c": {("log.versions-contiguous", 12): "the fixture's point: commit 12 is missing"},
    "delta-rs/data_err_logs-table_h": {
        ("log.versions-contiguous", 14): "the fixture's point: commits 14..9998 missing before a far checkpoint",
    },
    "delta-kernel-rs/crc-full": {
        ("crc.matches-state", 0): "a checksum-parsing fixture: its .crc describes 10 files, the log adds none",
    },
}


def _pairs(violations: list) -> set[tuple[str, int | None]]:
    return {(v.rule, v.version) for v in violations}


@pytest.mark.corpus
@pytest.mark.parametrize("name", [e["name"] for e in corpus_entries()])
def test_corpus_table_has_exactly_its_listed_violations(name: str) -> None:
    expected = set(CORPUS_VIOLATIONS.get(name, {}))
    assert _pairs(check_table(table_path(name))) == expected
    lenient = {(r, v) for r, v in expected if not RULES[r].strict_only}
    assert _pairs(check_table(table_path(name), strict=False)) == lenient


@pytest.mark.corpus
def test_every_listed_corpus_table_exists() -> None:
    names = {e["name"] for e in corpus_entries()}
    assert names, "no corpus"
    assert set(CORPUS_VIOLATIONS) <= names


# ---------------------------------------------------------------------------------------------- (b) hand-built logs


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_a_broken_log_yields_exactly_its_violations(tmp_path: Path, case) -> None:
    case.build(tmp_path)
    violations = check_table(tmp_path)
    assert _pairs(violations) == set(case.expected), "\n".join(map(str, violations))
    lenient = {(r, v) for r, v in case.expected if not RULES[r].strict_only}
    assert _pairs(check_table(tmp_path, strict=False)) == lenient


def test_every_rule_has_a_case_that_breaks_it() -> None:
    assert set(RULES) == {rule for c in CASES for rule, _ in c.expected}


@pytest.mark.parametrize("name", sorted(VALID))
def test_a_valid_log_yields_no_violation(tmp_path: Path, name: str) -> None:
    VALID[name](tmp_path)
    assert check_table(tmp_path) == []


def test_a_violation_names_version_file_line_action_and_rule(tmp_path: Path) -> None:
    commits = legacy_log()
    commits[1][1]["add"]["partitionValues"]["d"] = "2024-02-30"
    write(tmp_path, commits)
    (v,) = check_table(tmp_path)
    assert (v.rule, v.version, v.file, v.line, v.action, v.key) == (
        "partition.values",
        1,
        "00000000000000000001.json",
        2,
        "add",
        "p=y/b.parquet",
    )
    assert str(v).startswith("v1 00000000000000000001.json:2 add[p=y/b.parquet]: partition.values:")


def test_assert_valid_raises_an_assertion_listing_each_violation(tmp_path: Path) -> None:
    commits = legacy_log()
    commits[1].append(lk.txn("app", 1))
    commits[1].append(lk.txn("app", 2))
    write(tmp_path, commits)
    with pytest.raises(ProtocolViolationError, match=r"commit\.one-txn-per-app") as err:
        assert_valid(tmp_path)
    assert isinstance(err.value, AssertionError)
    assert assert_valid(tmp_path, allow={"commit.one-txn-per-app"}).version == 1


def test_the_json_checksum_of_protocol_md_example() -> None:
    example = {
        "k0": "'v 0'",
        "checksum": "adsaskfljadfkjadfkj",
        "k1": {"k2": 2, "k3": ["v3", [1, 2], {"k4": "v4", "k5": ["v5", "v6", "v7"]}]},
    }
    assert hint_checksum(example) == "6a92d155a59bf2eecbd4b4ec7fd1f875"


JUNK: list[Any] = [None, "", "x", -1, 0, 2**70, 1.5, True, [], ["x"], {}, {"a": 1}]


def _mangle(rng: random.Random, commits: list[list[dict[str, Any]]]) -> None:
    """Replace or drop one field of one action (sometimes inside a nested object, sometimes the whole body)."""
    action = rng.choice(rng.choice(commits))
    ((kind, body),) = action.items()
    if not isinstance(body, dict) or not body:
        return
    if rng.random() < 0.1:
        action[kind] = copy.deepcopy(rng.choice(JUNK))
        return
    target = body
    nested = [k for k, v in body.items() if isinstance(v, dict) and v]
    if nested and rng.random() < 0.3:
        target = body[rng.choice(sorted(nested))]
    key = rng.choice(sorted(target))
    if rng.random() < 0.3:
        del target[key]
    else:
        target[key] = copy.deepcopy(rng.choice(JUNK))


@pytest.mark.parametrize("seed", range(3))
def test_a_mangled_log_gets_violations_not_a_crash(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    bases = [modern_log, legacy_log, dv_log]
    for i in range(60):
        commits = copy.deepcopy(bases[i % 3]())
        for _ in range(rng.randint(1, 3)):
            _mangle(rng, commits)
        log = tmp_path / str(i) / "_delta_log"
        log.mkdir(parents=True)
        for version, actions in enumerate(commits):  # stdlib json: orjson cannot write integers past 64 bits
            (log / f"{version:020d}.json").write_text("".join(json.dumps(a) + "\n" for a in actions))
        for strict in (True, False):
            assert all(v.rule in RULES for v in check_table(tmp_path / str(i), strict=strict))


# ---------------------------------------------------------------------------------------------- incremental mode


def test_incremental_check_reads_only_commits_after_its_state(tmp_path: Path) -> None:
    commits = legacy_log()
    write(tmp_path, commits)
    state = assert_valid(tmp_path)
    assert state.version == 1
    # a later rewrite of an old commit is not re-read by an incremental check, which a full check sees
    (tmp_path / "_delta_log" / f"{0:020d}.json").write_bytes(b"{broken\n")
    lw.write_commit(tmp_path, 2, [lk.commit_info(), legacy_add("p=z/c.parquet", "z")])
    state = assert_valid(tmp_path, since=state)
    assert state.version == 2
    assert ("log.json", 0) in _pairs(check_table(tmp_path))


def test_incremental_check_reports_a_broken_new_commit(tmp_path: Path) -> None:
    commits = legacy_log()
    write(tmp_path, commits)
    state = assert_valid(tmp_path)
    lw.write_commit(tmp_path, 2, [lk.commit_info(), lk.remove("p=x/a.parquet"), legacy_add("p=x/a.parquet")])
    with pytest.raises(ProtocolViolationError, match=r"commit\.add-and-remove-same-file") as err:
        assert_valid(tmp_path, since=state)
    assert [v.version for v in err.value.violations] == [2]


def _grow(src: Path, dst: Path) -> Iterator[None]:
    """Copy ``src``'s log into ``dst`` one version at a time (commit, checksum, checkpoints), then the rest."""
    log = src / "_delta_log"
    names = sorted(p.name for p in log.iterdir() if p.is_file())
    versions = sorted({int(n[:20]) for n in names if n[:20].isdigit()})
    (dst / "_delta_log").mkdir(parents=True)
    if (log / "_sidecars").is_dir():
        shutil.copytree(log / "_sidecars", dst / "_delta_log" / "_sidecars")
    for v in versions:
        for n in names:
            if n.startswith(f"{v:020d}.") and ".compacted." not in n:
                shutil.copy2(log / n, dst / "_delta_log" / n)
        yield
    for n in names:
        if not (dst / "_delta_log" / n).exists():
            shutil.copy2(log / n, dst / "_delta_log" / n)
    yield


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_checking_after_every_commit_finds_what_one_full_check_finds(tmp_path: Path, case) -> None:
    case.build(tmp_path / "full")
    state: CheckState | None = None
    found: set[tuple[str, int | None]] = set()
    for _ in _grow(tmp_path / "full", tmp_path / "grown"):
        result = check_log(tmp_path / "grown", since=state)
        found |= _pairs(result.violations)
        state = result.state
    assert found == set(case.expected)


# ---------------------------------------------------------------------------------------------- the package


def _imports(path: Path) -> Iterator[tuple[str, int]]:
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from ((a.name, 0) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            yield node.module or "", node.level


def test_the_checker_imports_nothing_from_deltalog_or_other_tests() -> None:
    allowed = {"orjson", "pyarrow", "__future__"}
    for path in sorted(CHECKER.rglob("*.py")):
        for module, level in _imports(path):
            top = module.split(".")[0]
            assert level > 0 or top in allowed or top in sys.stdlib_module_names, f"{path.name} imports {module}"


def test_every_rule_is_documented_with_its_section() -> None:
    readme = (CHECKER / "README.md").read_text()
    for rule in RULES.values():
        assert rule.summary and rule.section, rule.id
        assert f"`{rule.id}`" in readme, f"README.md does not list {rule.id}"
