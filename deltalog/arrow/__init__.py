"""Delta <-> Arrow: what a Delta type or statistic is in Arrow terms, shared by the data plane and checkpoints."""
