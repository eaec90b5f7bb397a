"""The public API explains itself: every public DeltaLog and Snapshot member has a docstring, and the Spark
entry points show their real parameters (equal to the implementations', so they cannot drift)."""

from __future__ import annotations

import inspect

import pytest

import deltalog.spark
from deltalog import DeltaLog, Snapshot
from deltalog.spark import changes, distributed_checkpoint, reader, writer


def _doc(cls: type, name: str) -> str | None:
    raw = inspect.getattr_static(cls, name)
    target = raw.fget if isinstance(raw, property) else getattr(raw, "__func__", raw)
    return getattr(target, "__doc__", None)


@pytest.mark.parametrize("cls", [DeltaLog, Snapshot])
def test_every_public_member_has_a_docstring(cls: type) -> None:
    missing = [name for name in sorted(vars(cls)) if not name.startswith("_") and not _doc(cls, name)]
    assert missing == []


@pytest.mark.parametrize(
    ("public", "implementation"),
    [
        (deltalog.spark.write, writer.write),
        (deltalog.spark.read, reader.read),
        (deltalog.spark.read_changes, changes.read_changes),
        (deltalog.spark.checkpoint, distributed_checkpoint.checkpoint),
    ],
)
def test_spark_entry_points_have_the_implementations_signatures(public: object, implementation: object) -> None:
    def shape(f: object) -> list[tuple[str, object, object]]:
        return [(p.name, p.kind, p.default) for p in inspect.signature(f).parameters.values()]  # type: ignore[arg-type]

    assert shape(public) == shape(implementation)
    assert inspect.getdoc(public)


def _results() -> list[type]:
    from deltalog.checkpoint.writer import CheckpointResult
    from deltalog.maintenance.cleanup import CleanupResult
    from deltalog.maintenance.restore import RestoreResult
    from deltalog.maintenance.vacuum import VacuumResult

    return [VacuumResult, CleanupResult, RestoreResult, CheckpointResult]


def _public_classes() -> list[type]:
    import deltalog

    named = [getattr(deltalog, name) for name in deltalog.__all__ if not name.startswith("_")]
    return [obj for obj in named if inspect.isclass(obj)] + _results()


def _own_doc(cls: type) -> str | None:
    doc = cls.__dict__.get("__doc__")
    # a dataclass without a docstring gets its signature as one: that explains nothing
    return None if not doc or doc.startswith(f"{cls.__name__}(") else doc


def test_every_public_name_and_member_has_a_docstring() -> None:
    """Every class deltalog exports (DeltaLog, Snapshot, Transaction, CommitResult, HistoryEntry, the errors) and
    every result the API returns, and each of their public methods and properties, explain themselves."""
    import dataclasses

    missing = []
    for cls in _public_classes():
        if not _own_doc(cls):
            missing.append(cls.__name__)
        fields = {f.name for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else set()
        for name in sorted(vars(cls)):
            raw = inspect.getattr_static(cls, name)
            if name.startswith("_") or name in fields or issubclass(cls, BaseException):
                continue
            if (callable(raw) or isinstance(raw, (property, staticmethod, classmethod))) and not _doc(cls, name):
                missing.append(f"{cls.__name__}.{name}")
    assert missing == []


@pytest.mark.parametrize("cls", _results(), ids=lambda c: c.__name__)
def test_results_share_paths_counts_bytes_and_dry_run(cls: type) -> None:
    for name, kind in (("paths", tuple), ("num_files", int), ("bytes", int), ("dry_run", bool)):
        raw = inspect.getattr_static(cls, name, None)
        fields = {f.name: f.type for f in __import__("dataclasses").fields(cls)}
        assert isinstance(raw, property) or name in fields, f"{cls.__name__} has no {name}"
        if isinstance(raw, property):
            returned = inspect.signature(raw.fget).return_annotation  # type: ignore[arg-type]
            assert kind.__name__ in str(returned), (cls.__name__, name, returned)


# ---------------------------------------------------------------------------------------------- the surface, pinned
#: what a user of deltalog calls: the facade, a version of the table, a transaction. Machinery stays out of these
#: (the table layer's view of a snapshot is functions of deltalog.table.snapshot; the facade's cache and commit
#: policy are deltalog.table.latest). Changing this list is changing the public API: say so in the docs.
SURFACE: dict[str, list[str]] = {
    "DeltaLog": [
        "add_columns",
        "add_constraint",
        "change_column_type",
        "changes",
        "checkpoint",
        "cleanup",
        "cluster_by",
        "commit_timeline",
        "compact_log",
        "create",
        "delete",
        "drop_columns",
        "drop_constraint",
        "earliest_version",
        "enable_feature",
        "for_table",
        "fresh_snapshot",
        "history",
        "latest_version",
        "list_log",
        "load_as_version",
        "merge",
        "new_files",
        "now_ms",
        "on_commit",
        "optimize",
        "purge_deletion_vectors",
        "read_hint",
        "rename_column",
        "restore",
        "segment",
        "set_properties",
        "snapshot",
        "start_create",
        "start_planned_create",
        "start_transaction",
        "unset_properties",
        "update",
        "vacuum",
        "version_at",
    ],
    "Snapshot": [
        "add_actions",
        "app_version",
        "column_mapping_mode",
        "commit_info",
        "configuration",
        "context",
        "domain_metadata",
        "features",
        "file_uris",
        "files",
        "metadata",
        "num_files",
        "partition_columns",
        "physical_names",
        "protocol",
        "reader_features",
        "scan",
        "schema",
        "schema_json",
        "segment",
        "table_configuration",
        "to_arrow",
        "to_pandas",
        "to_polars",
        "to_pyarrow_dataset",
        "tombstones",
        "txns",
        "version",
    ],
    "Transaction": [
        "abort",
        "app_version",
        "check_early",
        "commit",
        "context",
        "declare_intent",
        "intent",
        "new_table",
        "read",
        "read_files",
        "read_version",
        "remove_files",
        "remove_where",
        "snapshot",
        "stage",
    ],
}


@pytest.mark.parametrize("name", sorted(SURFACE))
def test_the_public_members_are_the_pinned_surface(name: str) -> None:
    import deltalog

    cls = getattr(deltalog, name)
    assert sorted(n for n in vars(cls) if not n.startswith("_")) == SURFACE[name]


def test_the_package_exports_the_surface_and_every_public_error() -> None:
    import deltalog
    import deltalog.errors

    assert [e for e in deltalog.errors.__all__ if e not in deltalog.__all__] == []
    assert all(getattr(deltalog, e) is getattr(deltalog.errors, e) for e in deltalog.errors.__all__)
    own = sorted(set(deltalog.__all__) - set(deltalog.errors.__all__))
    assert own == [
        "CommitResult",
        "DeltaLog",
        "HistoryEntry",
        "RetryPolicy",
        "Snapshot",
        "Transaction",
        "__version__",
        "actions",
        "errors",
        "write",
    ]
    assert all(isinstance(getattr(deltalog.errors, e), type) for e in deltalog.errors.__all__)
