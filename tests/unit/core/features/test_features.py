"""Protocol gating: which protocols replay, which are refused, and that refusals name the file."""

from __future__ import annotations

from pathlib import Path

import pytest

from deltalog import DeltaLog
from deltalog.core.actions import Protocol
from deltalog.core.features.protocol import (
    CATALOG_FEATURES,
    READER_FEATURES_FOR_REPLAY,
    check_readable,
    supported_features,
)
from deltalog.errors import ProtocolError, UnsupportedFeatureError
from tests.unit import logkit as K
from tests.unit import logwriter as W

SRC = "/data/t/_delta_log/00000000000000000003.json"


def refused(protocol: Protocol, feature: str | None = None) -> UnsupportedFeatureError:
    with pytest.raises(UnsupportedFeatureError) as exc:
        check_readable(protocol, SRC)
    err = exc.value
    assert isinstance(err, ProtocolError)
    assert SRC in str(err), str(err)
    assert err.path == SRC
    if feature is not None:
        assert feature in str(err)
        assert err.feature == feature
    return err


@pytest.mark.parametrize("feature", sorted(READER_FEATURES_FOR_REPLAY))
def test_accepted_reader_features(feature: str) -> None:
    check_readable(Protocol(3, 7, (feature,), (feature, "appendOnly")), SRC)


def test_all_accepted_reader_features_together() -> None:
    names = tuple(sorted(READER_FEATURES_FOR_REPLAY))
    check_readable(Protocol(3, 7, names, names), SRC)


@pytest.mark.parametrize(("reader", "writer"), [(1, 1), (1, 2), (1, 4), (2, 5), (2, 6), (1, 7), (2, 7)])
def test_legacy_versions_replay(reader: int, writer: int) -> None:
    wf = ("appendOnly",) if writer == 7 else None
    check_readable(Protocol(reader, writer, None, wf), SRC)


def test_unknown_writer_only_features_do_not_block_reads() -> None:
    check_readable(Protocol(1, 7, None, ("someFutureWriterFeature", "geospatial-writer")), SRC)
    check_readable(Protocol(3, 7, ("deletionVectors",), ("deletionVectors", "someFutureWriterFeature")), SRC)


def test_unknown_reader_feature() -> None:
    refused(Protocol(3, 7, ("someFutureFeature",), ("someFutureFeature",)), "someFutureFeature")


@pytest.mark.parametrize("feature", sorted(CATALOG_FEATURES))
def test_catalog_features_refused(feature: str) -> None:
    err = refused(Protocol(3, 7, (feature,), (feature,)), feature)
    assert "catalog" in str(err)


def test_catalog_features_list() -> None:
    assert {"catalogManaged", "catalogOwned", "catalogOwned-preview"} <= CATALOG_FEATURES


def test_geospatial_refused() -> None:
    refused(Protocol(3, 7, ("geospatial",), ("geospatial",)), "geospatial")


def test_one_unknown_among_known_is_refused() -> None:
    refused(
        Protocol(3, 7, ("deletionVectors", "mystery"), ("deletionVectors", "mystery")),
        "mystery",
    )


@pytest.mark.parametrize("reader", [4, 5, 100])
def test_reader_version_above_3(reader: int) -> None:
    err = refused(Protocol(reader, 7, (), ()))
    assert str(reader) in str(err)


def test_reader_features_with_reader_version_2() -> None:
    err = refused(Protocol(2, 7, ("columnMapping",), ("columnMapping",)))
    assert "readerFeatures" in str(err)


def test_reader_version_3_without_list() -> None:
    err = refused(Protocol(3, 7, None, ("deletionVectors",)))
    assert "readerFeatures" in str(err)


def test_reader_features_require_writer_7() -> None:
    refused(Protocol(3, 5, ("deletionVectors",), None))


def test_reader_features_missing_from_writer_features() -> None:
    refused(Protocol(3, 7, ("deletionVectors",), ("appendOnly",)), "deletionVectors")
    refused(Protocol(3, 7, ("columnMapping",), None))


@pytest.mark.parametrize(("reader", "writer"), [(0, 2), (1, 0), (-1, 2)])
def test_invalid_versions(reader: int, writer: int) -> None:
    refused(Protocol(reader, writer))


def test_supported_features_legacy_and_listed() -> None:
    assert supported_features(Protocol(1, 1)) == frozenset()
    assert supported_features(Protocol(1, 2)) == {"appendOnly", "invariants"}
    assert supported_features(Protocol(1, 4)) >= {
        "appendOnly",
        "invariants",
        "checkConstraints",
        "changeDataFeed",
        "generatedColumns",
    }
    assert "columnMapping" in supported_features(Protocol(2, 5))
    assert "identityColumns" in supported_features(Protocol(2, 6))
    # from writer 7 only the lists count
    assert supported_features(Protocol(1, 7, None, ("appendOnly",))) == {"appendOnly"}
    assert supported_features(Protocol(3, 7, ("deletionVectors",), ("deletionVectors", "rowTracking"))) == {
        "deletionVectors",
        "rowTracking",
    }


# ---------------------------------------------------------------------------------------------- end to end


def _table(root: Path, proto: dict[str, object]) -> Path:
    return W.write_table(root, [[K.commit_info(), proto, K.metadata(), K.add("a.parquet")]])


@pytest.mark.parametrize("feature", sorted(READER_FEATURES_FOR_REPLAY))
def test_snapshot_with_accepted_feature(tmp_path: Path, feature: str) -> None:
    _table(tmp_path, K.protocol(3, 7, [feature], [feature]))
    snap = DeltaLog.for_table(tmp_path).snapshot()
    assert snap.reader_features == (feature,)
    assert feature in snap.features
    assert snap.num_files == 1


@pytest.mark.parametrize(
    ("proto", "feature"),
    [
        (K.protocol(3, 7, ["someFutureFeature"], ["someFutureFeature"]), "someFutureFeature"),
        (K.protocol(3, 7, ["catalogManaged"], ["catalogManaged"]), "catalogManaged"),
        (K.protocol(3, 7, ["catalogOwned-preview"], ["catalogOwned-preview"]), "catalogOwned-preview"),
        (K.protocol(3, 7, ["geospatial"], ["geospatial"]), "geospatial"),
        (K.protocol(4, 7, [], []), None),
        (K.protocol(2, 7, ["columnMapping"], ["columnMapping"]), None),
        (K.protocol(3, 7, None, ["deletionVectors"]), None),
        (K.protocol(3, 7, ["deletionVectors"], ["appendOnly"]), "deletionVectors"),
    ],
)
def test_snapshot_refusal_names_protocol_file(tmp_path: Path, proto: dict[str, object], feature: str | None) -> None:
    _table(tmp_path, K.protocol())
    W.write_commit(tmp_path, 1, [K.commit_info("SET TBLPROPERTIES"), proto])
    W.write_commit(tmp_path, 2, [K.commit_info(), K.add("b.parquet")])
    with pytest.raises(UnsupportedFeatureError) as exc:
        DeltaLog.for_table(tmp_path).snapshot()
    assert W.commit_name(1) in str(exc.value)
    assert exc.value.path is not None and exc.value.path.endswith(f"_delta_log/{W.commit_name(1)}")
    if feature is not None:
        assert feature in str(exc.value)
    # the version before the upgrade is still readable
    assert DeltaLog.for_table(tmp_path).snapshot(version=0).num_files == 1


def test_refusal_from_checkpoint_names_checkpoint(tmp_path: Path) -> None:
    proto = K.protocol(3, 7, ["someFutureFeature"], ["someFutureFeature"])
    W.write_table(tmp_path, [[K.commit_info(), proto, K.metadata(), K.add("a.parquet")], [K.add("b.parquet")]])
    cp = W.write_checkpoint(tmp_path, 1, [proto, K.metadata(), K.add("a.parquet"), K.add("b.parquet")])
    (tmp_path / "_delta_log" / W.commit_name(0)).unlink()
    with pytest.raises(UnsupportedFeatureError) as exc:
        DeltaLog.for_table(tmp_path).snapshot()
    assert cp.name in str(exc.value)
    assert "someFutureFeature" in str(exc.value)
