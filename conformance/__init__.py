"""Conformance runner: replays third-party Delta tables and compares with an independent reader's results.

Run ``python -m conformance --corpus DIR``; DIR holds ``manifest.json`` and ``tables/`` (see the corpus
README). Deliberate deviations from the reference reader live in :mod:`conformance.deviations`.
"""
