"""The harness tests' shared fixtures: a fresh copy of the fixture project, and the CLI run inside it."""

from __future__ import annotations

from test_critical_mutants import cli, project

__all__ = ["cli", "project"]
