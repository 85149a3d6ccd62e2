"""guard-lib's mutation testing: two engines, one record from generation to gate, one store.

An engine (``engines``) makes ``Mutant`` records and judges them into ``Outcome`` records; the ``store``
keeps each engine's whole ``Run``; ``judge`` reads runs and the hand reviews of ``config``, and the gate
and the report read its ``Judgement``. Nothing past the engines names one.
"""

from .engines import Engine, EngineError, Request
from .judge import Judgement, Status, judge
from .model import Mutant, Outcome, Record, Run

__all__ = [
    "Engine",
    "EngineError",
    "Judgement",
    "Mutant",
    "Outcome",
    "Record",
    "Request",
    "Run",
    "Status",
    "judge",
]
