"""In-commit timestamps: when a table has them, the timestamp each commit attempt carries, and where.

PROTOCOL "In-Commit Timestamps": enabled when the writer version is 7, ``inCommitTimestamp`` is in
``writerFeatures`` and ``delta.enableInCommitTimestamps=true``. Then every commit starts with its ``commitInfo``,
whose ``inCommitTimestamp`` is the larger of the attempt time and the previous commit's timestamp + 1 ms. A
commit that enables the feature at a version > 0 records ``delta.inCommitTimestampEnablementVersion`` and
``...EnablementTimestamp`` (its own version and timestamp), and its timestamp must exceed the previous commit
file's modification time.

Delta Spark (facts, delta-io/delta ``spark/src/main/scala/org/apache/spark/sql/delta/``):
``util/TransactionHelper.scala`` stamps a first attempt with max(now, read snapshot's timestamp + 1), a pre-ICT
snapshot's timestamp being its commit file's mtime; ``ConflictChecker.resolveTimestampOrderingConflicts``
stamps each retry with max(ours, winner's timestamp + 1), the winner's file mtime standing in when it has no
ICT, and moves the enablement pair to the new version and timestamp;
``util/InCommitTimestampUtils.getUpdatedMetadataWithICTEnablementInfo`` writes the pair only when the commit
enables ICT at a version other than 0, and carries the previous version's pair over when a metadata update
(REPLACE, CLONE) would drop it while ICT stays on.

Everything here takes plain values: the committer supplies the clock, the previous commit's facts and the
winner's, and re-runs :func:`stamp_attempt` on every attempt.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from deltalog.core import actions as A
from deltalog.core.features import properties
from deltalog.core.features.configuration import TableConfiguration
from deltalog.core.features.kinds import COMMITS, NONE, Obligation, Rule
from deltalog.core.features.protocol import supported_features
from deltalog.errors import InvalidCommitError

FEATURE = "inCommitTimestamp"
ENABLED = "delta.enableInCommitTimestamps"
ENABLEMENT_VERSION = "delta.inCommitTimestampEnablementVersion"
ENABLEMENT_TIMESTAMP = "delta.inCommitTimestampEnablementTimestamp"
ENABLEMENT_KEYS = (ENABLEMENT_VERSION, ENABLEMENT_TIMESTAMP)


def enabled(protocol: A.Protocol, configuration: Mapping[str, str]) -> bool:
    """PROTOCOL's enablement: the feature supported (writer version 7 lists it) and the property true."""
    return FEATURE in supported_features(protocol) and properties.get_bool(configuration, ENABLED)


@dataclass(frozen=True)
class IctEnablement:
    """From which version commits carry ICT, and the ICT of that version (None: enabled since creation, or
    the table does not say)."""

    version: int
    timestamp: int | None


def _int(value: object) -> int | None:
    try:
        return int(str(value).strip())
    except ValueError:
        return None


def ict_enablement(configuration: Mapping[str, str], protocol: A.Protocol | None = None) -> IctEnablement | None:
    """The table's ICT enablement, or None when it does not use in-commit timestamps.

    The one reading of the enablement pair for history, time travel and cleanup. Lenient, because another
    engine wrote the value: a missing or unreadable version means ICT from version 0 (a table created with
    it records no pair), an unreadable timestamp means unknown. With ``protocol``, the property counts only
    where the protocol supports the feature, as PROTOCOL says; without it, the property alone decides.
    """
    if protocol is not None and not enabled(protocol, configuration):
        return None
    if not properties.get_bool(configuration, ENABLED):
        return None
    raw_version = configuration.get(ENABLEMENT_VERSION)
    version = _int(raw_version) if raw_version is not None else 0
    raw_ts = configuration.get(ENABLEMENT_TIMESTAMP)
    return IctEnablement(version if version is not None and version >= 0 else 0, _int(raw_ts) if raw_ts else None)


# ------------------------------------------------------------------------------------------------ timestamps


@dataclass(frozen=True)
class CommitTime:
    """A committed version's time facts: its ``inCommitTimestamp`` (None before ICT) and its file's mtime."""

    version: int
    ict: int | None
    mtime: int

    @property
    def timestamp(self) -> int:
        """The time a later commit must exceed: its ICT when it has one, else its file's modification time."""
        return self.ict if self.ict is not None else self.mtime


def stamp_of(info: Mapping[str, object]) -> int | None:
    """A commitInfo's ``inCommitTimestamp`` when it is an integer (another engine's odd value: none)."""
    value = info.get("inCommitTimestamp")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def first_attempt_timestamp(now_ms: int, previous: CommitTime | None) -> int:
    """max(now, previous timestamp + 1): strictly after the read version, even with a clock running behind."""
    return now_ms if previous is None else max(now_ms, previous.timestamp + 1)


def retry_timestamp(ours: int, winner: CommitTime) -> int:
    """A retry after ``winner`` took the version: max(our timestamp, the winner's + 1)."""
    return max(ours, winner.timestamp + 1)


# ------------------------------------------------------------------------------------------------ stamping


def enablement_properties(version: int, timestamp: int) -> dict[str, str]:
    """The pair a commit enabling ICT at ``version`` writes; none at version 0 (no commit lacks ICT then)."""
    if version == 0:
        return {}
    return {ENABLEMENT_VERSION: str(version), ENABLEMENT_TIMESTAMP: str(timestamp)}


def stamped_metadata(
    metadata: A.Metadata,
    *,
    version: int,
    timestamp: int,
    protocol: A.Protocol,
    prior_configuration: Mapping[str, str] | None,
) -> A.Metadata:
    """``metadata`` as the commit at ``version`` with ``timestamp`` writes it.

    ``prior_configuration`` is the configuration of the version before (None when the commit creates the
    table); on a retry, the winner's. A commit that enables ICT gets the pair naming itself, replacing any
    it carried from an earlier attempt; one that keeps ICT on gets the previous pair back if it dropped it;
    anything else is returned unchanged.
    """
    conf = dict(metadata.configuration)
    prior = prior_configuration or {}
    if not enabled(protocol, conf):
        return metadata
    if prior_configuration is None or not properties.get_bool(prior, ENABLED):
        for key in ENABLEMENT_KEYS:
            conf.pop(key, None)
        conf.update(enablement_properties(version, timestamp))
    elif all(k in prior for k in ENABLEMENT_KEYS) and not any(k in conf for k in ENABLEMENT_KEYS):
        conf.update({k: prior[k] for k in ENABLEMENT_KEYS})
    else:
        return metadata
    return replace(metadata, configuration=conf)


def stamp_attempt(
    actions: Sequence[A.Action],
    *,
    version: int,
    timestamp: int,
    protocol: A.Protocol,
    configuration: Mapping[str, str],
    prior_configuration: Mapping[str, str] | None,
) -> list[A.Action]:
    """The actions of one commit attempt with ICT applied, or unchanged when ICT is off after this commit.

    ``protocol`` and ``configuration`` are those in force after the commit (its own protocol/metaData
    actions included: the caller reads them from the actions or the read snapshot). The ``commitInfo``
    (created if missing) moves first and carries ``inCommitTimestamp``; a metaData gets the enablement pair
    (:func:`stamped_metadata`). Call it again on every retry with the new version and
    :func:`retry_timestamp`: everything it sets is set again.
    """
    if not enabled(protocol, configuration):
        return list(actions)
    infos = [a for a in actions if isinstance(a, A.CommitInfo)]
    if len(infos) > 1:
        raise InvalidCommitError("a commit holds at most one commitInfo", rule="one-commit-info")
    info = replace(infos[0] if infos else A.CommitInfo(timestamp=timestamp), in_commit_timestamp=timestamp)
    rest: list[A.Action] = []
    for a in actions:
        if isinstance(a, A.CommitInfo):
            continue
        if isinstance(a, A.Metadata):
            a = stamped_metadata(
                a, version=version, timestamp=timestamp, protocol=protocol, prior_configuration=prior_configuration
            )
        rest.append(a)
    return [info, *rest]


def attempt(
    actions: Sequence[A.Action],
    *,
    version: int,
    now_ms: int,
    read: CommitTime | None,
    winners: Sequence[CommitTime],
    protocol: A.Protocol,
    configuration: Mapping[str, str],
    prior_configuration: Mapping[str, str] | None,
) -> list[A.Action]:
    """What in-commit timestamps make of one attempt at ``version``, after ``winners`` (the versions other
    writers took since ``read``, the read version's time; None for a create), checked before it is written.

    The caller asks :func:`enabled` first (the times may cost a read of the log, and are needed only then);
    ``protocol`` and ``configuration`` are those in force after the commit. Every attempt is computed from
    the same start, so nothing an earlier attempt stamped survives into a retry.
    """
    timestamp = first_attempt_timestamp(now_ms, read)
    for w in winners:
        timestamp = retry_timestamp(timestamp, w)
    out = stamp_attempt(
        actions,
        version=version,
        timestamp=timestamp,
        protocol=protocol,
        configuration=configuration,
        prior_configuration=prior_configuration,
    )
    check_stamped(out, winners[-1] if winners else read)
    return out


def check_stamped(actions: Sequence[A.Action], previous: CommitTime | None) -> int:
    """Verify an ICT commit before it is written: commitInfo first, with an ``inCommitTimestamp`` after the
    previous commit's. Returns the timestamp; a violation is an :class:`InvalidCommitError`."""
    first = actions[0] if actions else None
    if not isinstance(first, A.CommitInfo):
        raise InvalidCommitError("in-commit timestamps: commitInfo must be the commit's first action", rule="ict")
    ts = first.in_commit_timestamp
    if not isinstance(ts, int) or isinstance(ts, bool):
        raise InvalidCommitError("in-commit timestamps: commitInfo has no integer inCommitTimestamp", rule="ict")
    if previous is not None and ts <= previous.timestamp:
        raise InvalidCommitError(
            f"in-commit timestamps: {ts} is not after version {previous.version}'s timestamp {previous.timestamp}",
            rule="ict",
        )
    return ts


def obligation(kind: str, table: TableConfiguration) -> Obligation:
    """Every commit, while in-commit timestamps are on."""
    if kind in COMMITS and table.properties.enable_in_commit_timestamps:
        return Obligation(
            "in-commit timestamps are on: commitInfo comes first with a strictly increasing inCommitTimestamp", "ict"
        )
    return NONE


OBLIGATIONS: Mapping[str, Rule] = {FEATURE: obligation}


__all__ = [
    "OBLIGATIONS",
    "ENABLED",
    "ENABLEMENT_KEYS",
    "ENABLEMENT_TIMESTAMP",
    "ENABLEMENT_VERSION",
    "FEATURE",
    "CommitTime",
    "IctEnablement",
    "attempt",
    "check_stamped",
    "enabled",
    "enablement_properties",
    "first_attempt_timestamp",
    "ict_enablement",
    "retry_timestamp",
    "stamp_attempt",
    "stamp_of",
    "stamped_metadata",
]
