"""Snapshot-load benchmarks: synthetic Delta logs, timed in fresh processes against other engines.

Run through ``scripts/bench`` (it installs the comparison engines). The pieces, each small:

- :mod:`benchmarks.synth` writes a synthetic ``_delta_log`` from a :class:`~benchmarks.synth.LogSpec`;
  :mod:`benchmarks.shape` holds the table's schema and partition column (stdlib only, for the children).
- :mod:`benchmarks.cases` is the registry: tables (a spec plus checkpoints) and cases (a table at a version).
- :mod:`benchmarks.engines` is the registry of engine runners; :mod:`benchmarks.child` runs one of them in
  a fresh interpreter and prints one JSON line.
- :mod:`benchmarks.measure` spawns the children and checks that every engine saw the same files.
- :mod:`benchmarks.report` prints the table and rewrites the generated part of ``BENCHMARKS.md``.
- :mod:`benchmarks.profile` runs deltalog's load under cProfile for the hotspots.
- :mod:`benchmarks.source` pins deltalog to a git commit (``--rev``) instead of the working tree.
"""
