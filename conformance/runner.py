"""Checks every table and listed version of a corpus against its expected values."""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson

from conformance import deviations
from conformance.expectations import Layout, layout, table_error_class, version_error_class
from deltalog import DeltaLog, DeltaLogError, Snapshot
from deltalog.errors import CorruptLogError, UnsupportedFeatureError

_NAMES_FILE = re.compile(r"_delta_log|\d{20}\.")


@dataclass
class TableResult:
    name: str
    features: list[str]
    checks: int = 0
    failures: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures


def load_manifest(corpus: str) -> dict[str, Any]:
    with open(os.path.join(corpus, "manifest.json"), "rb") as f:
        manifest: dict[str, Any] = orjson.loads(f.read())
    return manifest


def _sorted_or_none(v: Any) -> list[str] | None:
    # The reference's Python binding reports an empty feature list as None; the log says [] and so do we.
    return None if not v else sorted(v)


class TableChecker:
    """Runs the checks of one manifest entry; every mismatch is recorded, none stops the others."""

    def __init__(self, corpus: str, entry: dict[str, Any], clock: Callable[[], float] | None = None) -> None:
        self.entry = entry
        self.root = os.path.join(corpus, entry["path"])
        self.tags: list[str] = entry.get("features", [])
        self.result = TableResult(entry["name"], self.tags)
        self.log = DeltaLog.for_table(self.root) if clock is None else DeltaLog.for_table(self.root, clock=clock)
        self.layout: Layout = layout(self.root)

    def fail(self, what: str) -> None:
        self.result.failures.append(what)

    def check(self, label: str, actual: Any, expected: Any) -> None:
        self.result.checks += 1
        if actual != expected:
            self.fail(f"{label}: expected {expected!r}, got {actual!r}")

    # -------------------------------------------------------------------------------------------- runs
    def run(self) -> TableResult:
        expected = self.entry.get("expected") or {}
        if deviations.applies(self.entry):
            self._run_deviation()
            return self.result
        if "expected_error" in self.entry:
            self._expect_error("latest", None, table_error_class(self.tags))
        else:
            snap = self._load("latest", None)
            if snap is not None:
                self._compare(snap, expected["latest"], "latest", detail=True)
        for key, state in sorted(expected.get("versions", {}).items(), key=lambda kv: int(kv[0])):
            v = int(key)
            if "error" in state:
                self._expect_error(f"v{v}", v, version_error_class(self.tags, self.layout, v))
            else:
                snap = self._load(f"v{v}", v)
                if snap is not None:
                    self._compare(snap, state, f"v{v}")
        return self.result

    def _run_deviation(self) -> None:
        for v, state in sorted(deviations.STATES[self.entry["name"]].items()):
            if "error" in state:
                self._expect_error(f"v{v} (deviation)", v, state["error"])
                continue
            snap = self._load(f"v{v} (deviation)", v)
            if snap is None:
                continue
            self.check(f"v{v} version", snap.version, v)
            self.check(f"v{v} paths", sorted(snap.files().column("path").to_pylist()), state["paths"])
            self.check(f"v{v} schema", snap.schema_json, deviations.EMPTY_SCHEMA)

    def _load(self, label: str, version: int | None) -> Snapshot | None:
        self.result.checks += 1
        try:
            return self.log.snapshot(version=version)
        except DeltaLogError as exc:
            self.fail(f"{label}: unexpected {type(exc).__name__}: {exc}")
        except Exception as exc:  # a crash is a failure of this table, not of the run
            self.fail(f"{label}: crashed with {type(exc).__name__}: {exc}")
        return None

    def _expect_error(self, label: str, version: int | None, cls: type[DeltaLogError]) -> None:
        self.result.checks += 1
        try:
            snap = self.log.snapshot(version=version)
            _ = snap.schema_json
        except cls as exc:
            if cls in (UnsupportedFeatureError, CorruptLogError) and not _NAMES_FILE.search(str(exc)):
                self.fail(f"{label}: {cls.__name__} does not name the file: {exc}")
            return
        except Exception as exc:
            self.fail(f"{label}: expected {cls.__name__}, got {type(exc).__name__}: {exc}")
            return
        self.fail(f"{label}: expected {cls.__name__}, but version {snap.version} loaded")

    # -------------------------------------------------------------------------------------------- compare
    def _compare(self, snap: Snapshot, exp: dict[str, Any], label: str, detail: bool = False) -> None:
        self.check(f"{label} version", snap.version, exp["version"])
        p = exp["protocol"]
        self.check(f"{label} minReaderVersion", snap.protocol.min_reader_version, p["min_reader_version"])
        self.check(f"{label} minWriterVersion", snap.protocol.min_writer_version, p["min_writer_version"])
        self.check(f"{label} readerFeatures", _sorted_or_none(snap.protocol.reader_features), p["reader_features"])
        self.check(f"{label} writerFeatures", _sorted_or_none(snap.protocol.writer_features), p["writer_features"])
        m = exp["metadata"]
        md = snap.metadata
        self.check(f"{label} metadata.id", md.id, m["id"])
        self.check(f"{label} metadata.name", md.name, m["name"])
        self.check(f"{label} metadata.description", md.description, m["description"])
        self.check(f"{label} partition_columns", list(md.partition_columns), m["partition_columns"])
        self.check(f"{label} configuration", dict(md.configuration), m["configuration"])
        self.check(f"{label} created_time", md.created_time, m["created_time"])
        self.check(f"{label} schema", snap.schema_json, m["schema"])
        files = snap.files(stats=detail)
        paths = sorted(files.column("path").to_pylist())
        self.check(f"{label} num_files", len(paths), exp["num_files"])
        if "add_paths" in exp:
            self.check(f"{label} add_paths", paths, exp["add_paths"])
        elif "add_paths_sha256" in exp:
            digest = hashlib.sha256("\n".join(paths).encode()).hexdigest()
            self.check(f"{label} add_paths_sha256", digest, exp["add_paths_sha256"])
        self._compare_txns(snap, exp, label)
        if detail and "files_detail" in exp:
            self._compare_details(files, exp["files_detail"], label)

    def _compare_txns(self, snap: Snapshot, exp: dict[str, Any], label: str) -> None:
        expected_txns = exp.get("txns", {})
        if self.entry["name"] in deviations.TXN_STATES:
            expected_txns = deviations.TXN_STATES[self.entry["name"]]
        for app in self.entry["expected"].get("txn_app_ids_probed", []):
            self.check(f"{label} txn {app}", snap.app_version(app), expected_txns.get(app))

    def _compare_details(self, files: Any, details: Iterable[dict[str, Any]], label: str) -> None:
        by_path = {row["path"]: row for row in files.select(["path", "size", "stats"]).to_pylist()}
        for d in details:
            row = by_path.get(d["path"])
            if row is None:
                self.fail(f"{label} files_detail: {d['path']!r} not live")
                continue
            self.check(f"{label} size of {d['path']}", row["size"], d["size"])
            if d.get("num_records") is not None:
                stats = orjson.loads(row["stats"]) if row["stats"] else {}
                self.check(f"{label} numRecords of {d['path']}", stats.get("numRecords"), d["num_records"])


def run_corpus(
    corpus: str, only: Iterable[str] | None = None, clock: Callable[[], float] | None = None
) -> list[TableResult]:
    manifest = load_manifest(corpus)
    wanted = set(only) if only else None
    results = []
    for entry in manifest["tables"]:
        if wanted is not None and entry["name"] not in wanted:
            continue
        results.append(TableChecker(corpus, entry, clock).run())
    return results


__all__ = ["TableChecker", "TableResult", "load_manifest", "run_corpus"]
