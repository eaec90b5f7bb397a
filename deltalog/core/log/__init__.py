"""The log's files as the core knows them: names (``paths``), the segment that rebuilds a version, the action
codec and its JSON lines, the ``_last_checkpoint`` hint, reachability of a written commit, and commit times."""
