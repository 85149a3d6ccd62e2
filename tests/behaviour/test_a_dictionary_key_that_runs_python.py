"""A key of a runtime's dictionary, or of its class's, may run Python when a method's name is looked up.

A key that hashes as ``get_device`` does, but is not that string, is compared with the name by its own
``__eq__`` on every lookup that meets it, and that ``__eq__`` may change the very methods being looked up:
replace one on the instance, or give the instance another dictionary. Invariant: each borrow calls the
methods the reference calls, and the core never uses what such a change freed.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import pytest

from guard_lib import device
from guard_lib.runtime import SimulatedRuntime

from .support import EntryPointRuntime


class _Armed:
    """What a key does on the first comparison after it is armed."""

    on_compare: Callable[[], object] = staticmethod(lambda: None)
    armed = False

    def compared(self) -> bool:
        if self.armed:
            self.armed = False
            self.on_compare()
        return False


def _same_hash(name: str, base: type) -> Any:
    """A key that hashes as ``name`` and is not equal to it: an object, or a str of other text."""

    def __hash__(self: _Armed) -> int:
        return hash(name)

    def __eq__(self: _Armed, other: object) -> bool:
        return self.compared()

    bases = (_Armed,) if base is object else (base, _Armed)
    cls = type("SameHash", bases, {"__hash__": __hash__, "__eq__": __eq__})
    return cls("not " + name) if base is str else cls()


# From 3.13 Python warns of such a key when a class is made with one: here it is the point.
pytestmark = pytest.mark.filterwarnings("ignore:non-string key in the __dict__ of class:RuntimeWarning")
KEYS = pytest.mark.parametrize("base", [object, str], ids=["object-key", "str-subclass-key"])


class _Logged:
    """A runtime method standing in for the class's own, logging each call; held only where it is put."""

    def __init__(self, kind: str, runtime: SimulatedRuntime, log: list[str]) -> None:
        self.call = functools.partial(getattr(SimulatedRuntime, kind), runtime)
        self.kind, self.log = kind, log

    def __call__(self, *args: object) -> Any:
        self.log.append(self.kind)
        return self.call(*args)


@KEYS
def test_a_method_put_on_the_instance_while_its_class_is_searched_is_the_one_called(base: type) -> None:
    key = _same_hash("get_device", base)
    cls = type("Keyed", (EntryPointRuntime,), {key: None})
    rt, log = cls(2), list[str]()
    with device(1, runtime=rt):
        pass
    cls.unrelated = 1  # type: ignore[attr-defined]  # the next lookup searches the classes again
    key.on_compare = lambda: setattr(rt, "get_device", _Logged("get_device", rt, log))
    key.armed = True
    rt.c_calls.clear()
    with device(1, runtime=rt):
        assert rt.current_device == 1
    assert rt.current_device == 0
    assert log == ["get_device"]
    assert "get_device" not in rt.c_calls


@KEYS
def test_a_dictionary_replaced_while_it_is_searched_is_not_read_after(base: type) -> None:
    key = _same_hash("get_device", base)
    rt, log = type("Open", (EntryPointRuntime,), {})(2), list[str]()
    vars(rt)[key] = None  # put first, so that it is met first
    rt.get_device = _Logged("get_device", rt, log)
    key.on_compare = lambda: setattr(rt, "__dict__", {})
    key.armed = True
    for _ in range(2):
        with device(1, runtime=rt):
            assert rt.current_device == 1
        assert rt.current_device == 0
    # The lookup that met the key found the logged method in the dictionary it began with; every later
    # one finds the class's.
    assert log == ["get_device"]


@KEYS
def test_a_dictionary_replaced_while_the_class_is_searched_is_not_read_after(base: type) -> None:
    key = _same_hash("get_device", base)
    cls = type("Keyed", (EntryPointRuntime,), {key: None})
    rt, log = cls(2), list[str]()
    rt.get_device = _Logged("get_device", rt, log)
    with device(1, runtime=rt):
        pass
    cls.unrelated = 1  # type: ignore[attr-defined]  # the next lookup searches the classes again
    key.on_compare = lambda: setattr(rt, "__dict__", {})
    key.armed = True
    rt.c_calls.clear()
    del log[:]
    with device(1, runtime=rt):
        assert rt.current_device == 1
    assert rt.current_device == 0
    # the instance's dictionary is empty now: the class's own method is the one called, from Python
    assert (log, rt.c_calls) == ([], [])
