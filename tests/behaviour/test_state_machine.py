"""Any sequence of create / take / close / nesting, with faults injected into selections, ends with the
thread on its original device, and no guard ever restores twice."""

from __future__ import annotations

import logging

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from guard_lib import DeviceGuard
from guard_lib.cuda_errors import INVALID_DEVICE, LAUNCH_FAILURE, NO_DEVICE
from guard_lib.runtime import SimulatedRuntime

from .support import refusal

DEVICES = 4
FAULTS = st.sampled_from(["none", "set-fails", "set-fails-and-moves", "get-fails"])


class GuardMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.sim = SimulatedRuntime(device_count=DEVICES)
        self.start = 0
        self.expected = 0
        self.open: list[DeviceGuard] = []  # innermost last
        self.spent: list[DeviceGuard] = []
        logging.getLogger("guard_lib").disabled = True

    @rule(index=st.integers(-2, DEVICES + 1), fault=FAULTS, moved_to=st.integers(0, DEVICES - 1))
    def create(self, index: int, fault: str, moved_to: int) -> None:
        # Faults are aimed only at calls the guard will make, so none is left over for a later rule.
        reads = index >= 0
        switches = reads and index != self.expected and fault != "get-fails"
        if fault == "get-fails" and reads:
            self.sim.fail_next("get_device", NO_DEVICE)
        elif fault == "set-fails" and switches:
            self.sim.fail_next("set_device", LAUNCH_FAILURE)
        elif fault == "set-fails-and-moves" and switches:
            self.sim.fail_next("set_device", LAUNCH_FAILURE, moves_to=moved_to)
        else:
            fault = "none"
        result = DeviceGuard.create(index, runtime=self.sim)
        if reads and index < DEVICES and fault == "none":
            guard = result.unwrap()
            assert (guard.original_device, guard.current_device) == (self.expected, index)
            self.open.append(guard)
            self.expected = index
        else:
            assert refusal(result).code in {None, LAUNCH_FAILURE, NO_DEVICE, INVALID_DEVICE}
        assert self.sim.peek_at_last_error() == (0,)

    @precondition(lambda self: self.open)
    @rule()
    def take_innermost(self) -> None:
        guard = self.open.pop()
        self.open.append(guard.take())
        self.spent.append(guard)

    @precondition(lambda self: self.open)
    @rule()
    def close_innermost(self) -> None:
        guard = self.open.pop()
        self.sim.calls.clear()
        guard.close()
        restores = [call for call in self.sim.calls if call[0] == "set_device"]
        moved = guard.current_device != guard.original_device
        assert restores == ([("set_device", (guard.original_device,))] if moved else [])
        self.expected = guard.original_device
        self.spent.append(guard)

    @precondition(lambda self: self.spent)
    @rule(data=st.data())
    def close_a_spent_guard_again(self, data: st.DataObject) -> None:
        guard = data.draw(st.sampled_from(self.spent))
        self.sim.calls.clear()
        guard.close()
        assert self.sim.calls == []

    @invariant()
    def thread_is_where_the_innermost_guard_put_it(self) -> None:
        assert self.sim.current_device == self.expected

    def teardown(self) -> None:
        while self.open:
            self.close_innermost()
        assert self.sim.current_device == self.start
        logging.getLogger("guard_lib").disabled = False


GuardMachine.TestCase.settings = settings(max_examples=150, stateful_step_count=30, deadline=None)
test_guard_sequences = GuardMachine.TestCase
