"""Which table properties may be set, to what: Delta Spark's configuration validation and deltalog's own."""

from __future__ import annotations

import pytest

from deltalog.core.features.properties import (
    check_checkpoint_properties,
    checkpoint_interval,
    deleted_file_retention_ms,
    get_strict_bool,
)
from deltalog.core.features.property_rules import (
    INTERNAL,
    ProtocolRequest,
    activated_features,
    canonical_key,
    check_changed,
    check_unset,
    keys_matching,
    split_protocol_requests,
    validate_updates,
)
from deltalog.errors import InvalidArgumentError, PropertyError


def refused(updates: dict[str, object], match: str | None = None, **kwargs: bool) -> PropertyError:
    with pytest.raises(PropertyError, match=match) as info:
        validate_updates(updates, **kwargs)
    assert isinstance(info.value, InvalidArgumentError)
    return info.value


# ---------------------------------------------------------------------------------------------- keys
def test_known_keys_match_regardless_of_case_and_are_stored_canonically() -> None:
    got = validate_updates(
        {"DELTA.APPENDONLY": "TRUE", "delta.checkpointinterval": "5", "Delta.IsolationLevel": "serializable"}
    )
    assert got == {"delta.appendOnly": "true", "delta.checkpointInterval": "5", "delta.isolationLevel": "Serializable"}
    assert canonical_key("delta.columnmapping.MODE") == "delta.columnMapping.mode"
    assert canonical_key("owner") == "owner"


def test_keys_without_the_delta_prefix_are_the_callers_own() -> None:
    assert validate_updates({"owner": "team", "comment": "", "Delta-ish": "x"}) == {
        "owner": "team",
        "comment": "",
        "Delta-ish": "x",
    }


def test_unknown_delta_keys_need_the_explicit_opt_in() -> None:
    err = refused({"delta.targetFileSize": "100mb"}, "allow_unknown_properties=True")
    assert err.key == "delta.targetFileSize"
    assert validate_updates({"delta.targetFileSize": "100mb"}, allow_unknown=True) == {"delta.targetFileSize": "100mb"}
    # Spark exempts the UniForm config namespace
    assert validate_updates({"delta.universalFormat.config.iceberg.x": "1"}) == {
        "delta.universalFormat.config.iceberg.x": "1"
    }


@pytest.mark.parametrize("key", sorted(INTERNAL))
def test_internal_keys_are_refused_for_set_and_unset(key: str) -> None:
    assert refused({key: "1"}, "cannot be set by hand").key == key
    assert refused({key.upper(): "1"}).key == key
    with pytest.raises(PropertyError, match="cannot be unset by hand"):
        check_unset([key])


def test_constraints_and_clustering_name_the_right_operation() -> None:
    refused({"delta.constraints.positive": "id > 0"}, "ADD CONSTRAINT")
    refused({"clusteringColumns": '[["id"]]'}, "CLUSTER BY")
    with pytest.raises(PropertyError, match="CLUSTER BY"):
        split_protocol_requests({"delta.feature.clustering": "supported"})


def test_the_same_key_twice_with_different_values_is_refused() -> None:
    refused({"delta.appendOnly": "true", "DELTA.APPENDONLY": "false"}, "twice")


# ---------------------------------------------------------------------------------------------- values
@pytest.mark.parametrize(
    ("key", "value", "stored"),
    [
        ("delta.logRetentionDuration", "interval 30 days", "interval 30 days"),
        ("delta.logRetentionDuration", "8 weeks", "8 weeks"),
        ("delta.deletedFileRetentionDuration", "interval 1 day 12 hours", "interval 1 day 12 hours"),
        ("delta.setTransactionRetentionDuration", "interval 1.5 seconds", "interval 1.5 seconds"),
        ("delta.checkpointInterval", "1", "1"),
        ("delta.checkpointInterval", "+10", "10"),
        ("delta.dataSkippingNumIndexedCols", "-1", "-1"),
        ("delta.randomPrefixLength", "2", "2"),
        ("delta.checkpoint.partSize", "9223372036854775807", "9223372036854775807"),
        ("delta.enableExpiredLogCleanup", "False", "false"),
        ("delta.isolationLevel", "WriteSerializable", "WriteSerializable"),
        ("delta.checkpointPolicy", "V2", "v2"),
        ("delta.columnMapping.mode", "NONE", "none"),
        ("delta.parquet.compression.codec", "ZSTD", "zstd"),
        ("delta.autoOptimize.autoCompact", "auto", "auto"),
        ("delta.universalFormat.enabledFormats", "", ""),
        ("delta.dataSkippingStatsColumns", "a,b.c", "a,b.c"),
    ],
)
def test_valid_values_are_stored(key: str, value: str, stored: str) -> None:
    assert validate_updates({key: value}) == {key: stored}


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("delta.deletedFileRetentionDuration", "interval 1 month"),
        ("delta.logRetentionDuration", "interval 1 year"),
        ("delta.logRetentionDuration", "interval -1 days"),
        ("delta.logRetentionDuration", "interval 1.5 days"),
        ("delta.logRetentionDuration", "30d"),
        ("delta.logRetentionDuration", "forever"),
        ("delta.logRetentionDuration", ""),
        ("delta.checkpointInterval", "0"),
        ("delta.checkpointInterval", "ten"),
        ("delta.checkpointInterval", "2147483648"),
        ("delta.checkpointInterval", " 5"),
        ("delta.dataSkippingNumIndexedCols", "-2"),
        ("delta.appendOnly", "yes"),
        ("delta.appendOnly", " true"),
        ("delta.isolationLevel", "snapshot"),
        ("delta.isolationLevel", "SnapshotIsolation"),
        ("delta.checkpointPolicy", "v3"),
        ("delta.columnMapping.mode", "names"),
        ("delta.parquet.compression.codec", "lzo"),
        ("delta.universalFormat.enabledFormats", "iceberg,iceberg"),
        ("delta.universalFormat.enabledFormats", "paimon"),
    ],
)
def test_invalid_values_are_refused_naming_key_and_value(key: str, value: str) -> None:
    err = refused({key: value})
    assert (err.key, err.value) == (key, value)
    assert key in str(err) and repr(value) in str(err)


@pytest.mark.parametrize("value", [None, 1.5, ["a"]])
def test_values_must_be_strings(value: object) -> None:
    refused({"delta.appendOnly": value}, "must be a string")


def test_booleans_and_ints_given_as_python_values_are_accepted() -> None:
    assert validate_updates({"delta.appendOnly": True, "delta.checkpointInterval": 3}) == {
        "delta.appendOnly": "true",
        "delta.checkpointInterval": "3",
    }


def test_log_retention_must_cover_deleted_file_retention() -> None:
    before = {"delta.deletedFileRetentionDuration": "interval 2 weeks"}
    with pytest.raises(PropertyError, match=r"delta\.logRetentionDuration"):
        check_changed(before, {**before, "delta.logRetentionDuration": "interval 1 week"})
    with pytest.raises(PropertyError, match="shorter"):
        check_changed({}, {"delta.deletedFileRetentionDuration": "interval 31 days"})  # default log: 30 days
    check_changed({}, {"delta.deletedFileRetentionDuration": "interval 30 days"})
    # a partner value another engine stored badly is not compared (and not re-checked)
    bad = {"delta.logRetentionDuration": "interval 1 year"}
    check_changed(bad, {**bad, "delta.deletedFileRetentionDuration": "interval 2 days"})


def test_check_changed_checks_only_what_changes() -> None:
    foreign = {"delta.isolationLevel": "snapshot", "delta.targetFileSize": "1", "delta.columnMapping.maxColumnId": "3"}
    check_changed(foreign, {**foreign, "owner": "x"})
    with pytest.raises(PropertyError, match="isolationLevel"):
        check_changed({}, {"delta.isolationLevel": "snapshot"})
    with pytest.raises(PropertyError, match=r"'delta\.appendOnly'"):
        check_changed({}, {"delta.appendonly": "true"})  # readers look the canonical key up
    with pytest.raises(PropertyError, match="protocol request"):
        check_changed({}, {"delta.feature.v2Checkpoint": "supported"})


# ---------------------------------------------------------------------------------------------- protocol requests
def test_protocol_requests_are_split_off() -> None:
    request, rest = split_protocol_requests(
        {
            "delta.minReaderVersion": "3",
            "DELTA.MINWRITERVERSION": "7",
            "delta.feature.timestampNtz": "Supported",
            "k": "v",
        }
    )
    assert request == ProtocolRequest(3, 7, frozenset({"timestampNtz"}))
    assert rest == {"k": "v"}


@pytest.mark.parametrize(
    "conf",
    [
        {"delta.minReaderVersion": "4"},
        {"delta.minWriterVersion": "8"},
        {"delta.minWriterVersion": "0"},
        {"delta.minWriterVersion": "x"},
        {"delta.feature.v2Checkpoint": "disabled"},
    ],
)
def test_bad_protocol_requests_are_refused(conf: dict[str, str]) -> None:
    with pytest.raises(PropertyError):
        split_protocol_requests(conf)


def test_activated_features() -> None:
    conf = {
        "delta.appendOnly": "true",
        "delta.checkpointPolicy": "v2",
        "delta.enableDeletionVectors": "TRUE",
        "delta.enableChangeDataCapture": "true",
        "delta.columnMapping.mode": "id",
        "delta.enableRowTracking": "false",
        "delta.enableInCommitTimestamps": "true",
    }
    assert activated_features(conf) == {
        "appendOnly": "delta.appendOnly",
        "v2Checkpoint": "delta.checkpointPolicy",
        "deletionVectors": "delta.enableDeletionVectors",
        "changeDataFeed": "delta.enableChangeDataCapture",
        "columnMapping": "delta.columnMapping.mode",
        "inCommitTimestamp": "delta.enableInCommitTimestamps",
    }


def test_keys_matching_finds_every_spelling_of_a_delta_key() -> None:
    conf = {"delta.appendonly": "true", "delta.appendOnly": "false", "owner": "x", "Owner": "y"}
    assert sorted(keys_matching(conf, "DELTA.APPENDONLY")) == ["delta.appendOnly", "delta.appendonly"]
    assert keys_matching(conf, "owner") == ["owner"]


# ---------------------------------------------------------------------------------------------- reading for maintenance
def test_maintenance_reads_name_the_bad_value_and_the_fix() -> None:
    with pytest.raises(PropertyError) as info:
        deleted_file_retention_ms({"delta.deletedFileRetentionDuration": "interval 1 month"})
    err = info.value
    assert (err.key, err.value) == ("delta.deletedFileRetentionDuration", "interval 1 month")
    assert "set_properties" in str(err) and "unset_properties" in str(err)
    with pytest.raises(PropertyError, match=r"delta\.checkpointInterval"):
        checkpoint_interval({"delta.checkpointInterval": "0"})
    with pytest.raises(PropertyError, match="writeStatsAsJson"):
        check_checkpoint_properties({"delta.checkpoint.writeStatsAsJson": "yes"})
    with pytest.raises(PropertyError, match="lzo"):
        check_checkpoint_properties({"delta.parquet.compression.codec": "lzo"})
    assert get_strict_bool({"k": " TRUE "}, "k", False) is True
    assert checkpoint_interval({}) == 10
    check_checkpoint_properties({})
