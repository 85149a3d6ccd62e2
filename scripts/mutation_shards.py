"""Sharding a mutmut run: one shard's share of the mutant list, and merging shard exports into one.

Nothing here imports mutmut, pytest or guard_lib.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence

from mutation_common import MutantRecord, Results, natural_key, universe_of
from mutation_io import InputError


def parse_shard(text: str) -> tuple[int, int]:
    """``"2/4"`` -> ``(2, 4)``. Shards are 1-based, as CI matrices usually are."""
    match = re.fullmatch(r"(\d+)/(\d+)", text.strip())
    if not match:
        raise InputError(f"--shard must look like I/N (e.g. 1/4), got {text!r}")
    index, count = int(match[1]), int(match[2])
    if count < 1 or not 1 <= index <= count:
        raise InputError(f"--shard {text}: need 1 <= I <= N")
    return index, count


def select_shard(names: Iterable[str], index: int, count: int) -> list[str]:
    """Mutants of shard ``index`` (1-based) of ``count``.

    Round-robin over the naturally sorted names: every shard sees the same list (all are generated
    from one commit), so each mutant lands in exactly one shard and the shards differ in size by at
    most one. Neighbouring mutants of one function are spread across shards, which spreads a slow
    function's cost too.
    """
    ordered = sorted(set(names), key=natural_key)
    return ordered[index - 1 :: count]


def merge_results(parts: Sequence[Results]) -> Results:
    """Combine shard exports into one, refusing anything that is not an exact partition."""
    if not parts:
        raise InputError("merge: no result files given")
    universes = {json.dumps(p.universe, sort_keys=True) for p in parts}
    if len(universes) != 1:
        raise InputError(
            "merge: shards were cut from different mutant lists (universe differs); "
            "all shards must run on the same commit and config"
        )
    counts = {p.shard["count"] if p.shard else 1 for p in parts}
    if len(counts) != 1:
        raise InputError(f"merge: shards disagree on the shard count: {sorted(counts)}")
    count = counts.pop()
    indices = sorted(p.shard["index"] if p.shard else 1 for p in parts)
    if indices != list(range(1, count + 1)):
        raise InputError(f"merge: expected shards 1..{count} once each, got {indices}")
    by_name: dict[str, MutantRecord] = {}
    for part in parts:
        for mutant in part.mutants:
            if mutant.name in by_name:
                raise InputError(f"merge: mutant {mutant.name} appears in more than one shard")
            by_name[mutant.name] = mutant
    universe = parts[0].universe
    if not universe:
        raise InputError(
            "merge: the shards carry no universe (the mutant list they were cut from), so nothing shows "
            "that they add up to a whole run; re-run them with `python scripts/mutation_run.py run --shard`"
        )
    if universe_of(by_name) != universe:
        raise InputError(
            f"merge: shards hold {len(by_name)} mutants but the mutant list has {universe.get('count')}; "
            "a shard is missing mutants or holds extra ones"
        )
    sources: dict[str, str] = {}
    for part in parts:
        sources.update(part.sources)
    return Results(
        mutants=list(by_name.values()),
        scope=parts[0].scope,
        shard=None,
        universe=universe,
        sources=sources,
        mutmut_version=parts[0].mutmut_version,
    )
