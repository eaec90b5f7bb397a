"""Committing a version: the transaction and the stages its commit goes through (see docs/architecture.md)."""
