"""Table features: one home for what each feature asks of readers, writers and a retry.

Words (every module here, and the commit path, use these and no others):

feature      a name in the protocol's reader or writer feature lists, or one its legacy versions imply
supported    the protocol has the feature (a table may support a feature it does not use)
enabled      supported, and in use: switched on by a property (``delta.enableDeletionVectors``), by the schema
             (a ``timestamp_ntz`` column, an invariant) or, for features no metadata switches, by being supported
             (a clustered table, domain metadata); PROTOCOL "Enabled Features"
kind         what an operation does to the table's files: append, delete, overwrite, rewrite, rearrange, dv_delete,
             metadata, restore (commits); checkpoint, cleanup, vacuum (maintenance); write (any commit). A commit's
             kind is read from its actions unless its writer names it (:mod:`.kinds`)
obligation   what one feature asks of one kind on one table: nothing; a check, named by the feature module that
             runs it; or a refusal, when deltalog cannot meet it. An operation is refused, before anything is
             written, when an obligation is a refusal or names a check its path does not run (:mod:`.obligations`)
check        a feature's rules run on one prepared commit: what its actions must hold, typed refusals naming the
             feature, file or rule (:mod:`.commit_checks` runs them all)
attempt      what a feature computes again for each version a commit attempts, since a retry follows winners the
             first attempt never saw: in-commit timestamps (``ict.attempt``), row ids (``row_tracking.attempt``);
             and a winner's new protocol is held to the same obligations (``conflicts.HeldTo``)

The table configuration (:mod:`.configuration`) is a version's protocol and metadata read once: supported and
enabled features, the column mapping mode in force, the properties features read (parsed once, :mod:`.properties`).
The version state exposes it, and every obligation is a function of it.

Modules: one per feature (or a few that behave alike), and what they share.

* ``append_only`` appendOnly; ``deletion_vectors`` deletionVectors; ``column_mapping`` columnMapping;
  ``clustering`` clustering; ``ict`` inCommitTimestamp; ``row_tracking`` rowTracking;
  ``cdf`` changeDataFeed (what a commit owes) with ``change_feed`` (what a reader of the changes reads);
  ``constraints`` the row rules: checkConstraints, invariants, generatedColumns, allowColumnDefaults;
  ``identity`` identityColumns; ``type_widening`` typeWidening; ``checkpoints`` v2Checkpoint and
  checkpointProtection; ``honoured`` the features deltalog meets by what it already does (domainMetadata,
  timestampNtz, variants, vacuumProtocolCheck); ``refused`` those it does not meet (UniForm, catalogs, ...).
* ``protocol`` feature names, legacy versions, which protocols are readable, protocol upgrades;
  ``properties`` reading table properties, ``property_rules`` which may be set and which feature each switches on;
  ``configuration`` the table configuration; ``kinds`` kinds and obligations; ``obligations`` the registry of every
  feature's obligations and the operation check; ``commit_checks`` the checks every commit runs; ``peer_writers``
  which released peers stop writing a table after a protocol upgrade.
"""
