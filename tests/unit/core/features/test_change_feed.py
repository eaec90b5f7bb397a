"""The change reader's pure rules (:mod:`deltalog.core.features.change_feed`): which rows of which files a version's
changes are (PROTOCOL "Change Data Files", Delta Spark's ``CDCReader`` for deletion vectors), and which schema
changes a range cannot be read across."""

from __future__ import annotations

import pytest

from deltalog import actions as A
from deltalog.core.features.change_feed import (
    DELETE,
    INSERT,
    ChangeFile,
    read_incompatibility,
    recorded,
    removes_data,
    version_files,
)

DV1 = A.DeletionVector("i", "aaaa", 10, 1)
DV2 = A.DeletionVector("i", "bbbb", 12, 3)


def add(path: str, dv: A.DeletionVector | None = None, data_change: bool = True) -> A.Add:
    return A.Add(path, {"p": "1"}, 10, 0, data_change, '{"numRecords":5}', deletion_vector=dv)


def remove(path: str, dv: A.DeletionVector | None = None, data_change: bool = True) -> A.Remove:
    return A.Remove(path, 1, data_change, True, {"p": "1"}, 10, deletion_vector=dv)


def kinds(files: list[ChangeFile]) -> list[tuple[str, str | None, object, object]]:
    return [(f.path, f.change_type, f.deletion_vector, f.selected_by) for f in files]


def test_a_version_with_change_files_is_read_from_them_only() -> None:
    cdc = A.Cdc("_change_data/c.parquet", {"p": "1"}, 7)
    files = version_files([remove("a"), add("b"), cdc])
    assert kinds(files) == [("_change_data/c.parquet", None, None, None)] and files[0].is_change_file


def test_without_change_files_adds_insert_and_removes_delete_and_rearrangements_change_nothing() -> None:
    files = version_files(
        [add("new"), remove("old", DV1), add("moved", data_change=False), remove("x", data_change=False)]
    )
    assert kinds(files) == [("new", INSERT, None, None), ("old", DELETE, DV1, None)]
    assert files[1].partition_values == {"p": "1"} and files[0].stats == '{"numRecords":5}'


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        # a delete with deletion vectors: the rows the new vector marks and the old did not
        (None, DV1, [(DELETE, None, DV1)]),
        (DV1, DV2, [(DELETE, DV1, DV2), (INSERT, DV2, DV1)]),
        # a RESTORE back to a smaller vector (or none): the rows it unmarks are inserted again
        (DV2, None, [(INSERT, None, DV2)]),
        (DV1, DV1, []),
        (None, None, []),
    ],
)
def test_a_file_removed_and_added_again_is_the_rows_whose_mark_changed(
    old: A.DeletionVector | None, new: A.DeletionVector | None, expected: list[tuple[str, object, object]]
) -> None:
    files = version_files([remove("f%20x", old), add("f x", new)])  # one file, however its path is spelled
    assert [(f.change_type, f.deletion_vector, f.selected_by) for f in files] == expected
    assert all(f.path == "f x" for f in files)


def test_a_merge_that_changed_no_row_contributes_nothing() -> None:
    metrics = {"numTargetRowsInserted": "0", "numTargetRowsUpdated": "0", "numTargetRowsDeleted": "0"}
    actions = [remove("a"), add("b")]
    assert version_files(actions, {"operation": "MERGE", "operationMetrics": metrics}) == []
    assert (
        len(
            version_files(actions, {"operation": "MERGE", "operationMetrics": {**metrics, "numTargetRowsDeleted": "1"}})
        )
        == 2
    )
    assert len(version_files(actions, {"operation": "UPDATE", "operationMetrics": metrics})) == 2


def test_recorded_reads_the_property_and_its_legacy_spelling() -> None:
    assert recorded({"delta.enableChangeDataFeed": "true"}) and recorded({"delta.enableChangeDataCapture": "TRUE"})
    assert not recorded({}) and not recorded({"delta.enableChangeDataFeed": "false"})


def test_removes_data_is_what_an_append_only_reader_cannot_follow() -> None:
    assert not removes_data([add("a"), remove("b", data_change=False)])
    assert removes_data([add("a", DV1), remove("a")])


def _schema(*fields: dict[str, object]) -> dict[str, object]:
    return {"type": "struct", "fields": list(fields)}


def _field(name: str, type_: object = "long", nullable: bool = True, physical: str | None = None) -> dict[str, object]:
    meta = {"delta.columnMapping.physicalName": physical, "delta.columnMapping.id": 1} if physical else {}
    return {"name": name, "type": type_, "nullable": nullable, "metadata": meta}


def test_added_columns_are_readable_and_other_changes_are_refused_by_name() -> None:
    old = _schema(_field("a"), _field("s", _schema(_field("x"))))
    assert read_incompatibility(old, "none", _schema(*old["fields"], _field("b")), "none") is None  # type: ignore[arg-type]
    assert "'a' is not in the read schema" in str(
        read_incompatibility(old, "none", _schema(_field("s", _schema(_field("x")))), "none")
    )
    changed = read_incompatibility(
        old, "none", _schema(_field("a", "integer"), _field("s", _schema(_field("x")))), "none"
    )
    assert changed == "column 'a' changed type from long to integer"
    nested = read_incompatibility(
        old, "none", _schema(_field("a"), _field("s", _schema(_field("x", "string")))), "none"
    )
    assert nested is not None and "'s.x'" in nested
    tightened = read_incompatibility(
        old, "none", _schema(_field("a", nullable=False), _field("s", _schema(_field("x")))), "none"
    )
    assert tightened == "column 'a' became NOT NULL"
    assert "'A'" in str(
        read_incompatibility(old, "none", _schema(_field("A"), _field("s", _schema(_field("x")))), "none")
    )


def test_column_mapping_renames_and_drops_are_refused() -> None:
    old = _schema(_field("a", physical="col-1"), _field("b", physical="col-2"))
    renamed = _schema(_field("z", physical="col-1"), _field("b", physical="col-2"))
    assert read_incompatibility(old, "name", renamed, "name") == "column 'a' was renamed to 'z'"
    dropped = _schema(_field("b", physical="col-2"))
    assert read_incompatibility(old, "name", dropped, "name") == "column 'a' was dropped"
    # dropped and re-added under the old name: another physical column, so still a drop
    readded = _schema(_field("a", physical="col-9"), _field("b", physical="col-2"))
    assert read_incompatibility(old, "name", readded, "name") == "column 'a' was dropped"
    # a table that turned column mapping on in between: its old columns' physical names are their names
    upgraded = _schema(_field("a", physical="a"), _field("b", physical="b"), _field("c", physical="col-3"))
    assert read_incompatibility(_schema(_field("a"), _field("b")), "none", upgraded, "name") is None
