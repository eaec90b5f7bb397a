"""Row rules on the commit path (issue 14 item 8, the commit-API half): the plain commit API refuses new rows
on tables with CHECK constraints, invariants or generated columns unless the caller says they were validated,
and records who did; ``add_constraint`` checks the existing rows through the scanner (null fails, deletion
vectors applied) or takes ``existing_data_validated=True``, recorded in ``commitInfo``."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable
from deltalake.schema import Field, PrimitiveType, Schema

from deltalog import DeltaLog, InvalidCommitError
from deltalog.data.dv import merge_deletion_vector
from deltalog.errors import ConcurrentAppendError, ConstraintViolationError, UnsupportedExpressionError
from deltalog.table import ddl
from tests.integration.modern_kit import IDS, append, checked, files_for, log_files, rows

VALIDATION = "deltalogValidation"


def table(root: Path, *ids: int | None, **conf: str) -> DeltaLog:
    log = DeltaLog.for_table(root)
    log.create(IDS, configuration=conf)
    if ids:
        append(log, pa.table({"id": pa.array(ids, pa.int64()), "s": ["x"] * len(ids)}))
    return log


def test_add_constraint_checks_every_live_row_and_null_fails(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = table(root, 1, None, 3)
    before = log_files(root)
    with pytest.raises(ConstraintViolationError, match="id => None") as info:
        log.add_constraint("positive", "id > 0")
    assert "positive" in info.value.constraint
    with pytest.raises(ConstraintViolationError):
        log.add_constraint("small", "id < 3")
    assert log_files(root) == before and "delta.constraints.positive" not in log.snapshot().configuration
    log.add_constraint("not_huge", "id < 100 OR id IS NULL")
    snap = log.snapshot()
    assert snap.configuration["delta.constraints.not_huge"] == "id < 100 OR id IS NULL"
    assert "checkConstraints" in snap.features
    assert snap.commit_info[VALIDATION] == {"existingRows": "checked"}
    assert snap.commit_info["operation"] == "ADD CONSTRAINT"
    checked(root, [1, 3, None])


def test_deleted_rows_do_not_block_a_constraint(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = table(root, 1, -5, 3, **{"delta.enableDeletionVectors": "true"})
    (add,) = list(log.snapshot().add_actions())
    txn = log.start_transaction()
    txn.remove_files([add.path])
    txn.commit([dataclasses.replace(add, deletion_vector=merge_deletion_vector(log.store, None, [1], 3))])
    log.add_constraint("positive", "id > 0")  # the -5 row is deleted by the vector
    checked(root, [1, 3])


def test_attested_constraints_and_expressions_outside_the_subset(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = table(root, 1, 2)
    with pytest.raises(UnsupportedExpressionError):
        log.add_constraint("odd", "some_udf(id) > 0")
    log.add_constraint("odd", "some_udf(id) > 0", existing_data_validated=True)
    assert log.snapshot().commit_info[VALIDATION] == {"existingRows": "attested"}
    log.drop_constraint("odd")
    assert "delta.constraints.odd" not in log.snapshot().configuration
    checked(root, [1, 2])


def test_the_commit_api_refuses_unvalidated_rows_on_tables_with_row_rules(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = table(root, 1)
    log.add_constraint("positive", "id > 0")
    before = log_files(root)
    new = files_for(log, rows(2))  # deltalog's writer evaluated the constraint on these rows
    with pytest.raises(InvalidCommitError, match="checkConstraints") as info:
        log.start_transaction().commit(new)
    assert info.value.rule == "validate-rows" and "data_validated=True" in str(info.value)
    assert log_files(root) == before
    log.start_transaction().commit(new, data_validated=True)
    assert log.snapshot().commit_info[VALIDATION] == {"newRows": "attested"}
    append(log, rows(3), data_validated="checked")
    assert log.snapshot().commit_info[VALIDATION] == {"newRows": "checked"}
    with pytest.raises(ConstraintViolationError):
        files_for(log, rows(-1))  # the data writer refuses a violating row before writing a file
    # removing files and dataChange=false rearrangements add no new rows: no attestation needed
    txn = log.start_transaction()
    txn.remove_files([new[0].path])
    txn.commit(operation="DELETE")
    checked(root, [1, 3])


def test_generated_columns_need_the_attestation_too(tmp_path: Path) -> None:
    root = tmp_path / "t"
    generated = {"delta.generationExpression": "id * 2"}
    long = PrimitiveType("long")
    DeltaTable.create(str(root), schema=Schema([Field("id", long), Field("twice", long, metadata=generated)]))
    log = DeltaLog.for_table(root)
    adds = files_for(log, pa.table({"id": pa.array([1, 2], pa.int64())}))  # the writer computes twice
    with pytest.raises(InvalidCommitError, match="generatedColumns"):
        log.start_transaction().commit(adds)
    log.start_transaction().commit(adds, data_validated="checked")
    checked(root, [2, 4], "twice")


def test_a_concurrent_append_conflicts_with_a_constraint_being_validated(tmp_path: Path) -> None:
    root = tmp_path / "t"
    log = table(root, 1)
    txn = DeltaLog.for_table(root).start_transaction()
    append(DeltaLog.for_table(root), rows(-1))  # lands between the scan's snapshot and the commit
    with pytest.raises(ConcurrentAppendError):
        ddl.add_constraint(txn, "positive", "id > 0")
    assert "delta.constraints.positive" not in log.snapshot().configuration
    checked(root, [-1, 1])
