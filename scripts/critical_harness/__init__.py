"""The critical-mutant harness as a pipeline of small stages; ``scripts/critical_mutants.py`` is its CLI.

catalogue -> edits -> workspace -> engine (processes, outcomes) -> orchestrate -> reports, and ``cli``
over them all; ``model`` holds what they share. ``docs/pipeline.md`` draws it.
"""
