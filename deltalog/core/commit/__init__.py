"""What the core decides about a commit: its rules (``rules``), conflicts with winners (``conflicts``), Spark's
operation names (``operations``), declared intents of long-running writers, and which engines may share a
store (``engine_safety``)."""
