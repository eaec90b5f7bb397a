"""``import deltalog`` loads the errors and the action types; ``DeltaLog`` and ``Snapshot`` bring the read path
and nothing a reader does not need.

Every reader pays the import (issue 7 keeps it under 0.3 s), and so does every run of the ``deltalog`` command
(``--version`` too: issue 31), so the read path loads when ``DeltaLog`` or ``Snapshot`` is first named, and
cloud backends, Spark, the CLI, maintenance, the checkpoint writer and the commit machinery on first use.
Checked in a fresh interpreter, by module name, not by timing: a timing test would fail on a busy machine and
pass a regression on a quiet one.
"""

from __future__ import annotations

import json
import subprocess
import sys

NOT_ON_IMPORT = (
    "deltalog.storage.s3",
    "deltalog.storage.azure",
    "deltalog.storage.fsspec_store",
    "deltalog.storage.options",
    "deltalog.spark",
    "deltalog.cli",
    "deltalog.maintenance",
    "deltalog.checkpoint.writer",
    "deltalog.checkpoint.v2",
    "deltalog.checkpoint.publish",
    "deltalog.checkpoint.existing",
    "deltalog.table.commit_loop",
    "deltalog.table.acknowledgment",
    "deltalog.table.transaction",
    "deltalog.table.prepare",
    "deltalog.table.read_set",
    "deltalog.table.declared_intents",
    "deltalog.table.ddl",
    "deltalog.core.conflicts",
    "fsspec",
    "s3fs",
    "adlfs",
    "botocore",
    "pyspark",
    "hypothesis",
    "pandas",
    "sqlglot",  # parsed on the first SQL expression, not on import (about half a second)
)


def modules_after(code: str) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    loaded = json.loads(out.stdout.strip().splitlines()[-1])
    assert isinstance(loaded, list)
    return loaded


def offenders(loaded: list[str]) -> list[str]:
    return [m for m in loaded if any(m == p or m.startswith(p + ".") for p in NOT_ON_IMPORT)]


def test_import_deltalog_leaves_backends_spark_cli_and_writers_unloaded() -> None:
    bare = modules_after("import deltalog\nassert deltalog.errors.DeltaLogError and deltalog.actions.Add")
    assert "deltalog.log" not in bare and "pyarrow" not in bare  # errors and actions need neither
    loaded = modules_after("from deltalog import DeltaLog, Snapshot")
    assert "deltalog.log" in loaded and "deltalog.table.snapshot" in loaded  # the read path is there
    assert offenders(loaded) == []


def test_the_writing_api_is_still_importable_from_the_package() -> None:
    loaded = modules_after(
        "import deltalog\n"
        "from deltalog import CommitResult, RetryPolicy, Transaction\n"
        "assert Transaction.__module__ == 'deltalog.table.transaction'\n"
        "assert RetryPolicy.__module__ == 'deltalog.table.commit_loop'\n"
        "assert CommitResult is deltalog.CommitResult and 'Transaction' in dir(deltalog)"
    )
    assert "deltalog.table.transaction" in loaded and "deltalog.table.commit_loop" in loaded


def test_an_unknown_attribute_is_still_an_attribute_error() -> None:
    import deltalog

    try:
        deltalog.NoSuchThing  # noqa: B018
    except AttributeError as exc:
        assert "NoSuchThing" in str(exc)
    else:
        raise AssertionError("deltalog.NoSuchThing resolved")
