"""``describe`` separates what the protocol supports from what the table actively uses, with the evidence.

Logs are hand-written (``tests.unit.logwriter``): each names features its protocol lists and uses some of
them through properties, field metadata, column types, domains or deletion vectors.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from click.testing import CliRunner

from deltalog.cli.main import cli
from tests.unit.logkit import Y2026, inline_dv, protocol
from tests.unit.logwriter import make_table

WRITER = [
    "appendOnly",
    "changeDataFeed",
    "checkConstraints",
    "clustering",
    "columnMapping",
    "deletionVectors",
    "domainMetadata",
    "generatedColumns",
    "inCommitTimestamp",
    "rowTracking",
    "timestampNtz",
]


def described(root: Path) -> Any:
    result = CliRunner().invoke(cli, ["describe", str(root), "--json"])
    assert result.exit_code == 0, result.output
    return orjson.loads(result.stdout)


def test_supported_but_unused_features_are_not_in_use(tmp_path: Path) -> None:
    root = make_table(
        tmp_path / "t", [[protocol(3, 7, ["deletionVectors"], ["deletionVectors", "appendOnly"]), Y2026.metadata()]]
    )
    doc = described(root)
    assert doc["protocol"]["features"] == ["appendOnly", "deletionVectors"]
    assert doc["features_in_use"] == []
    out = CliRunner().invoke(cli, ["describe", str(root)]).stdout
    assert "Features in use: none" in out


def test_every_kind_of_evidence(tmp_path: Path) -> None:
    configuration = {
        "delta.appendOnly": "true",
        "delta.enableChangeDataFeed": "true",
        "delta.enableDeletionVectors": "false",  # off, yet a file carries a deletion vector
        "delta.constraints.positive": "id > 0",
        "delta.columnMapping.mode": "name",
        "delta.enableInCommitTimestamps": "true",
        "delta.inCommitTimestampEnablementVersion": "0",
        "delta.enableRowTracking": "true",
    }
    meta = Y2026.metadata(
        {"id": "long", "doubled": "long", "at": "timestamp_ntz"},
        configuration=configuration,
        field_metadata={
            "id": {"delta.columnMapping.id": 1, "delta.columnMapping.physicalName": "c1"},
            "doubled": {
                "delta.generationExpression": "id * 2",
                "delta.columnMapping.id": 2,
                "delta.columnMapping.physicalName": "c2",
            },
            "at": {"delta.columnMapping.id": 3, "delta.columnMapping.physicalName": "c3"},
        },
    )
    clustering = {"domainMetadata": {"domain": "delta.clustering", "configuration": "{}", "removed": False}}
    root = make_table(
        tmp_path / "t",
        [
            [protocol(3, 7, ["deletionVectors", "columnMapping", "timestampNtz"], WRITER), meta, clustering],
            [Y2026.add("a.parquet", size=1, deletion_vector=inline_dv(1))],
        ],
    )
    in_use = {f["feature"]: (f["evidence"], f["supported"]) for f in described(root)["features_in_use"]}
    assert in_use == {
        "appendOnly": ("delta.appendOnly=true", True),
        "changeDataFeed": ("delta.enableChangeDataFeed=true", True),
        "checkConstraints": ("constraints positive", True),
        "clustering": ("domain delta.clustering", True),
        "columnMapping": ("delta.columnMapping.mode=name", True),
        "deletionVectors": ("1 live file with a deletion vector", True),
        "domainMetadata": ("domains delta.clustering", True),
        "generatedColumns": ("columns doubled", True),
        "inCommitTimestamp": ("delta.enableInCommitTimestamps=true (from version 0)", True),
        "rowTracking": ("delta.enableRowTracking=true", True),
        "timestampNtz": ("columns at", True),
    }
