"""What a package leaves behind once imported, as one digest: the proof that a mutant of code run at import
changed nothing a test could see after it.

A test that does not import a module afresh sees only what the import left: the modules' names and
what they are bound to (functions to their code, defaults and closures; classes to their bases and own
attributes, in order; plain values to their contents), the package's loggers, and what the import said
(log records, warnings). Where a mutant's state is the unmutated one's on an implementation, only the
tests that import the module afresh can still tell them apart there, and those are the ones the map
records (``map_probe``). The digest has two halves: the state without line numbers, and with them.
A statement moved moves every line after it, and only a test under a tracer of its own reads where
code stands: where the first half is the same and the second is not, those tests still run. A
module's names count as a set, not in the order bound, as ``dir`` lists them.
"""

from __future__ import annotations

import contextvars
import hashlib
import importlib
import logging
import pkgutil
import re
import sys
import types
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
_UNSET = "<no value in this context>"
_HELD = ("default_factory", "__bound__", "__constraints__", "__covariant__", "__contravariant__", "__self__")
_PLAIN = (type(None), bool, int, float, complex, str, bytes)
_DESCRIPTORS = (
    types.MemberDescriptorType,
    types.GetSetDescriptorType,
    types.MethodDescriptorType,
    types.WrapperDescriptorType,
    types.BuiltinFunctionType,
    types.MethodWrapperType,
    types.ClassMethodDescriptorType,
)


# What a module holds that is the interpreter's, not its code's: the builtins, and how it was loaded
# (the sweep serves a mutant from memory, the unmutated module comes from its file).
_MACHINERY = frozenset({"__builtins__", "__loader__", "__spec__", "__cached__"})


class _Canon:
    """Each object reachable from the package's modules as nested tuples; an object met again is named by
    where it was first met, so sharing and cycles show and nothing is walked twice."""

    def __init__(self, package: str, *, lines: bool) -> None:
        self.package = package
        self.lines = lines
        self.seen: dict[int, str] = {}
        self.keep: list[object] = []  # the ids above stay those of live objects

    def ours(self, module: object) -> bool:
        return isinstance(module, str) and (module == self.package or module.startswith(self.package + "."))

    def of(self, value: object, where: str) -> object:
        if isinstance(value, _PLAIN):
            return (type(value).__name__, repr(value))
        if isinstance(value, types.ModuleType):
            return ("module", value.__name__)
        first = self.seen.get(id(value))
        if first is not None:
            return ("same as", first)
        self.seen[id(value)] = where
        self.keep.append(value)
        return self._walk(value, where)

    def _walk(self, value: Any, where: str) -> object:
        if isinstance(value, (tuple, list, set, frozenset, dict)):
            return self._collection(value, where)
        if isinstance(value, types.CodeType):
            return self._code(value, where)
        if isinstance(value, types.FunctionType):
            return self._function(value, where)
        return self._class(value, where) if isinstance(value, type) else self._other(value, where)

    def _other(self, value: Any, where: str) -> object:
        if isinstance(value, (staticmethod, classmethod, property)):
            return self._wrapper(value, where)
        if isinstance(value, _DESCRIPTORS):
            named = getattr(value, "__qualname__", getattr(value, "__name__", ""))
            return (
                type(value).__name__,
                named,
                self.of(getattr(value, "__self__", None), f"{where}.__self__"),
            )
        return self._instance(value, where)

    def _wrapper(
        self, value: staticmethod[Any, Any] | classmethod[Any, Any, Any] | property, where: str
    ) -> object:
        if isinstance(value, property):
            return ("property", *(self.of(f, f"{where}.{n}") for n, f in _accessors(value)))
        return (type(value).__name__, self.of(value.__func__, f"{where}.__func__"))

    def _collection(self, value: Any, where: str) -> object:
        kind = type(value).__name__
        if isinstance(value, dict):
            return (
                kind,
                tuple(
                    (self.of(k, f"{where}.key[{i}]"), self.of(v, f"{where}[{i}]"))
                    for i, (k, v) in enumerate(value.items())
                ),
                self.of(getattr(value, "default_factory", None), f"{where}.default_factory"),
            )
        if isinstance(value, (set, frozenset)):
            # by position in iteration, which may vary between processes: then the two differ, which is safe
            return (kind, tuple(sorted(repr(self.of(v, f"{where}{{{i}}}")) for i, v in enumerate(value))))
        return (kind, tuple(self.of(v, f"{where}[{i}]") for i, v in enumerate(value)))

    def _code(self, code: types.CodeType, where: str) -> object:
        consts = tuple(self.of(c, f"{where}.const[{i}]") for i, c in enumerate(code.co_consts))
        shape = (code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount, code.co_flags)
        names = (code.co_name, code.co_names, code.co_varnames, code.co_freevars, code.co_cellvars)
        where_it_stands = (code.co_firstlineno, tuple(code.co_lines())) if self.lines else ()
        return ("code", shape, names, code.co_code, consts, where_it_stands)

    def _function(self, fn: types.FunctionType, where: str) -> object:
        if not self.ours(fn.__module__):
            return ("function of", fn.__module__, fn.__qualname__)
        cells = tuple(_cell(c) for c in fn.__closure__ or ())
        return (
            "function",
            fn.__qualname__,
            fn.__doc__,
            self.of(fn.__code__, f"{where}.__code__"),
            self.of(fn.__defaults__, f"{where}.__defaults__"),
            self.of(fn.__kwdefaults__, f"{where}.__kwdefaults__"),
            self.of(cells, f"{where}.__closure__"),
            self.of(dict(fn.__dict__), f"{where}.__dict__"),
            self.of(dict(fn.__annotations__), f"{where}.__annotations__"),
        )

    def _class(self, cls: type, where: str) -> object:
        if not self.ours(cls.__module__):
            return ("class of", cls.__module__, cls.__qualname__)
        own = tuple((k, self.of(v, f"{where}.{k}")) for k, v in vars(cls).items())
        bases = tuple(self.of(b, f"{where}.__bases__[{i}]") for i, b in enumerate(cls.__bases__))
        return ("class", cls.__qualname__, self.of(type(cls), f"{where}.__class__"), bases, own)

    def _instance(self, value: object, where: str) -> object:
        kind = type(value)
        attrs = getattr(value, "__dict__", None)
        fields = self.of(dict(attrs), f"{where}.__dict__") if isinstance(attrs, dict) else None
        slots = tuple((n, self.of(_slot(value, n), f"{where}.{n}")) for n in _slot_names(kind))
        held = tuple((n, self.of(v, f"{where}.{n}")) for n, v in _held(value))
        # Another library's object may say what it holds only in its repr: addresses left out.
        shown = "" if self.ours(kind.__module__) else _ADDRESS.sub("", _repr(value))
        return ("object", self.of(kind, f"{where}.__class__"), fields, slots, held, shown)


def _held(value: object) -> Iterator[tuple[str, object]]:
    """What an object holds that neither its ``__dict__`` nor its slots show: a ContextVar's value in
    this context, a defaultdict's factory, a TypeVar's bounds (C objects from 3.12), a bound method's
    object."""
    if isinstance(value, contextvars.ContextVar):
        yield "value", value.get(_UNSET)
    for name in _HELD:
        try:
            found = getattr(value, name)
        except Exception:  # not one this object has
            continue
        yield name, found


def _repr(value: object) -> str:
    try:
        return repr(value)
    except Exception as exc:  # a repr that fails says so, the same way each time
        return f"<repr failed: {type(exc).__name__}>"


def _accessors(value: property) -> Iterator[tuple[str, object]]:
    yield from (("fget", value.fget), ("fset", value.fset), ("fdel", value.fdel))


def _cell(cell: types.CellType) -> object:
    try:
        return cell.cell_contents
    except ValueError:
        return "<empty cell>"


def _slot_names(kind: type) -> list[str]:
    names: list[str] = []
    for klass in kind.__mro__:
        slots = vars(klass).get("__slots__", ())
        names.extend([slots] if isinstance(slots, str) else slots)
    return [n for n in names if n not in ("__dict__", "__weakref__")]


def _slot(value: object, name: str) -> object:
    try:
        return object.__getattribute__(value, name)
    except AttributeError:
        return "<unset>"


class _Said(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[tuple[str, int, str, str, int]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(
            (record.name, record.levelno, record.getMessage(), record.pathname, record.lineno)
        )


@contextmanager
def _listening() -> Iterator[tuple[_Said, list[warnings.WarningMessage], list[object]]]:
    """What the import logs and warns, and the warning filters it leaves (put back once it is read)."""
    said, filters = _Said(), list[object]()
    root = logging.getLogger()
    root.addHandler(said)
    try:
        with warnings.catch_warnings(record=True) as warned:
            warnings.simplefilter("always")
            yield said, warned, filters
            filters.extend(repr(f) for f in warnings.filters)
    finally:
        root.removeHandler(said)


def state(package: str, first: str, modules: Sequence[str] = ()) -> str:
    """What importing ``first`` (a module of ``package``), then the package and ``modules`` (every module
    of it where none are named), leaves behind: ``<digest without line numbers>:<digest with them>``, or
    ``<…>`` where an import raised."""
    found = snapshot(package, first, modules)
    if isinstance(found, str):
        return found
    return ":".join(hashlib.sha256(repr(half).encode()).hexdigest() for half in found)


def snapshot(package: str, first: str, modules: Sequence[str] = ()) -> tuple[list[Any], list[Any]] | str:
    """What :func:`state` digests, without line numbers and with them; or why there is nothing to digest."""
    with _listening() as (said, warned, filters):
        try:
            importlib.import_module(first)
            root = importlib.import_module(package)
            every = modules or [i.name for i in pkgutil.walk_packages(root.__path__, package + ".")]
            for name in sorted(every):
                importlib.import_module(name)
        except BaseException as exc:  # any failure is a state of its own, and differs
            return f"<import failed: {type(exc).__name__}: {exc}>"
    heard = [(str(w.category), str(w.message), w.filename, w.lineno) for w in warned]
    told = (said.records, heard, filters)
    return _left(package, told, lines=False), _left(package, told, lines=True)


def _left(package: str, told: tuple[list[Any], list[Any], list[object]], *, lines: bool) -> list[Any]:
    canon = _Canon(package, lines=lines)
    loaded = sorted(name for name in sys.modules if canon.ours(name) and sys.modules[name] is not None)
    found: list[Any] = [loaded]
    for name in loaded:
        bound = sorted((kv for kv in vars(sys.modules[name]).items() if kv[0] not in _MACHINERY), key=_name)
        found.append((name, tuple((k, canon.of(v, f"{name}.{k}")) for k, v in bound)))
    loggers = logging.Logger.manager.loggerDict
    for name in sorted(n for n in loggers if canon.ours(n)):
        found.append(("logger", name, canon._instance(loggers[name], f"logger {name}")))
    # what the import said, and (with line numbers) from where
    said, heard, filters = told
    found.append(("said", [r if lines else r[:-1] for r in said], [w if lines else w[:-1] for w in heard]))
    found.append(("warning filters", filters))
    return found


def _name(item: tuple[str, object]) -> str:
    return item[0]
