"""The engines: one protocol, and the registry that finds them by entry point.

An engine generates ``Mutant`` records and judges them into a ``Run``; nothing else in the tool knows how.
The two engines shipped here (``mutmut``, ``edits``) are registered in ``scripts/pyproject.toml`` in the
group ``guard_mutation.engines`` like any other; a distribution that registers an engine there is listed,
run, stored, reported and gated with no other edit. Modules load when an engine is first asked for, so
``guard-mutation --help`` and the gate import no engine.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from ..changes import Change
    from ..config import Config
    from ..model import Mutant, Run

GROUP = "guard_mutation.engines"


class EngineError(Exception):
    """An engine refused its input or could not run: bad input (exit 2), its message names what and where."""


class SuiteRed(Exception):
    """The tests fail on the unmutated code, so no verdict could be trusted: a finding (exit 1)."""

    def __init__(self, failing: Sequence[str], detail: str = "") -> None:
        said = f"{len(failing)} test(s) fail on the unmutated code"
        super().__init__(said + (f": {detail}" if detail else ""))
        self.failing = tuple(failing)


@dataclass(frozen=True)
class Request:
    """What a command asks of an engine: every field is the same for every engine."""

    root: Path  # the project
    config: Config
    jobs: int | None = None  # parallel mutants; None: the config's
    only: tuple[str, ...] = ()  # these mutant ids alone
    change: Change | None = None  # only the mutants this change touches
    full: bool = False  # judge every mutant against the whole suite, not the tests it names
    runtime: str = "simulated"  # GUARD_LIB_TEST_RUNTIME for the tests
    previous: Run | None = None  # this engine's earlier run: outcomes whose inputs are unchanged are kept
    options: dict[str, str] = field(default_factory=dict)  # an engine's own, as `--option KEY=VALUE`

    @property
    def whole(self) -> bool:
        """Whether a run of this request judges every mutant the engine makes."""
        return not self.only and self.change is None


@runtime_checkable
class Engine(Protocol):
    name: str

    def mutants(self, request: Request) -> Sequence[Mutant]:
        """Every mutant the engine makes for the request, without judging any."""
        ...

    def run(self, request: Request) -> Run:
        """Judge the request's mutants. ``Run.whole`` says whether it judged every one."""
        ...


def names() -> list[str]:
    """Every engine installed, by name, none of them loaded."""
    return sorted({point.name for point in entry_points(group=GROUP)})


def registered() -> dict[str, Engine]:
    """Every engine installed, loaded, by name."""
    return {name: engine_named(name) for name in names()}


def engine_named(name: str) -> Engine:
    """The engine of that name, loaded; one that is not installed or does not load is an ``EngineError``."""
    points = [p for p in entry_points(group=GROUP) if p.name == name]
    if not points:
        raise EngineError(f"no engine named {name!r}; installed: {', '.join(names()) or 'none'}")
    point = points[0]
    try:
        engine = point.load()
    except Exception as exc:
        raise EngineError(f"engine {name!r} ({point.value}) does not load: {exc}") from exc
    if isinstance(engine, type):
        engine = engine()
    if not isinstance(engine, Engine) or engine.name != name:
        raise EngineError(
            f"engine {name!r} ({point.value}) is not an Engine named {name!r}: it needs "
            "`name`, `mutants(request)` and `run(request)`"
        )
    return engine
