"""A Delta protocol checker for the test suite, written from PROTOCOL.md, independent of deltalog.

It reads a table's ``_delta_log`` itself (stdlib, orjson, pyarrow.parquet for checkpoints; nothing from
``deltalog``), replays it version by version and reports every broken rule as a :class:`Violation`
naming the version, the file (and line or row), the action and the rule. A bug in deltalog's replay
therefore cannot hide a bug in the checker's verdict.

Scope (one rule module each under ``rules/``; ``README.md`` lists every rule id with its section):

* action shapes: required fields and JSON types of add, remove, metaData, protocol, txn, commitInfo,
  domainMetadata, cdc; checkpointMetadata and sidecar only in checkpoints;
* what one commit may hold: one metaData, one protocol, one txn per appId, one action per domain, at most
  one add and one remove per path, no add and remove of the same (path, DV), no second DV for a live path;
* protocol validity: versions vs feature lists, reader features among writer features, dependencies,
  what the schema and properties need supported, no feature removal outside the drop-feature procedure;
* partition values: keys are the partition columns (physical names under column mapping), values parse;
* deletion vectors, in-commit timestamps, row tracking, domain metadata and clustering, column mapping,
  change data files, append-only tables, version checksums;
* checkpoints (classic, multi-part, V2 with sidecars) against the replay, ``_last_checkpoint``, log
  compaction files, contiguous versions.

Out of scope: data files (the checker never opens parquet data or DV files: row counts, stats values and
DV bitmaps are taken on trust), staged commits of catalog-managed tables, object stores (local paths only).

Entry points::

    violations = check_table(root)           # list[Violation], strict mode
    state = assert_valid(root)               # raises ProtocolViolationError (an AssertionError)
    state = assert_valid(root, since=state)  # later: checks only the commits made since

``strict=False`` skips the rules marked strict-only (SHOULDs, and MUSTs third-party writers are known to
break without harming readers).
"""

from .checker import CheckResult, CheckState, assert_valid, check_log, check_table
from .report import RULES, ProtocolViolationError, Rule, Violation

__all__ = [
    "RULES",
    "CheckResult",
    "CheckState",
    "ProtocolViolationError",
    "Rule",
    "Violation",
    "assert_valid",
    "check_log",
    "check_table",
]
