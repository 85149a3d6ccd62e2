"""Which implementation serves ``DeviceGuard`` and ``device``, and the compiled core's C path.

The behaviour suite runs once per implementation (``GUARD_LIB_IMPL``); these tests pin the choice
itself, and that the compiled core calls a runtime through its C entry points when it offers them.
"""

from __future__ import annotations

import ast
import importlib.util
import logging
import os
import re
import shutil
import subprocess
import sys
import textwrap
import types
from pathlib import Path
from typing import Any

import pytest

import guard_lib
from guard_lib import DeviceGuard, cuda_errors, device, device_guard
from guard_lib.implementation import IMPL_ENV
from guard_lib.runtime import CudaRuntime, SimulatedRuntime, use_runtime

from .support import GET_DEVICE_SIGNATURE, SET_DEVICE_SIGNATURE, EntryPointRuntime, refusal

COMPILED = guard_lib.IMPLEMENTATION == "compiled"
needs_core = pytest.mark.skipif(not COMPILED, reason="the Python implementation has no C path")
# mutmut's variable, spelled out rather than read from guard_lib: the name is mutmut's contract.
MUTMUT_ENV = "MUTANT_UNDER_TEST"
MUTMUT_REASON = "mutmut is running the tests on its mutated copy (MUTANT_UNDER_TEST is set)"


def test_the_implementation_is_the_one_asked_for() -> None:
    wanted = os.environ.get(IMPL_ENV, "auto")
    if wanted == "python":
        assert guard_lib.IMPLEMENTATION == "python"
        assert guard_lib.implementation.REASON == "GUARD_LIB_IMPL=python"
    if wanted == "compiled":
        assert guard_lib.IMPLEMENTATION == "compiled"
    if guard_lib.IMPLEMENTATION == "python":
        assert (DeviceGuard, device) == (device_guard.DeviceGuard, device_guard.device)
        assert guard_lib.implementation.CORE is None
        assert guard_lib.Ok.__module__ == guard_lib.Err.__module__ == "guard_lib.result"
    else:
        assert DeviceGuard.__module__ == device.__module__ == "guard_lib._core"
        assert DeviceGuard is not device_guard.DeviceGuard
        # One Ok and one Err in the process, whichever name they are imported by: `match` needs it.
        core = guard_lib.implementation.CORE
        assert core is not None
        reference_module = vars(device_guard)
        assert guard_lib.Ok is guard_lib.result.Ok is reference_module["Ok"] is core.Ok
        assert guard_lib.Err is guard_lib.result.Err is reference_module["Err"] is core.Err
    outcome = DeviceGuard.create(-1, runtime=SimulatedRuntime())
    assert type(outcome) is guard_lib.Err
    assert outcome.is_err()


def _fresh(env_value: str | None, *, hide_core: bool = False) -> subprocess.CompletedProcess[str]:
    program = textwrap.dedent(
        f"""
        import sys
        if {hide_core}:
            sys.modules["guard_lib._core"] = None  # as where the core was never built
        import guard_lib
        reason, module = guard_lib.implementation.REASON, guard_lib.DeviceGuard.__module__
        print(guard_lib.IMPLEMENTATION, "|", reason, "|", module)
        """
    )
    # A fresh interpreter outside mutmut, also when mutmut runs this test: under mutmut the child would
    # import mutmut's copy (the working directory is mutants/) and take the reference whatever it is asked.
    env = {k: v for k, v in os.environ.items() if k not in {IMPL_ENV, MUTMUT_ENV}}
    if env_value is not None:
        env[IMPL_ENV] = env_value
    return subprocess.run(
        [sys.executable, "-c", program], env=env, capture_output=True, text=True, check=False
    )


def test_python_is_chosen_by_name() -> None:
    done = _fresh("python")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split(" | ") == ["python", "GUARD_LIB_IMPL=python", "guard_lib.device_guard\n"]


def test_without_the_core_auto_falls_back_and_says_why() -> None:
    done = _fresh(None, hide_core=True)
    assert done.returncode == 0, done.stderr
    name, reason, module = done.stdout.split(" | ")
    assert (name, module) == ("python", "guard_lib.device_guard\n")
    assert reason.startswith("the compiled core is not built (")


def test_compiled_by_name_refuses_to_fall_back() -> None:
    done = _fresh("compiled", hide_core=True)
    assert done.returncode == 1
    assert "ImportError: GUARD_LIB_IMPL=compiled, but the compiled core cannot be imported" in done.stderr


def test_an_unknown_choice_is_refused_by_name() -> None:
    done = _fresh("fast")
    assert done.returncode == 1
    assert (
        "ImportError: GUARD_LIB_IMPL='fast' names no implementation: use one of auto, compiled, python"
        in done.stderr
    )


@needs_core
def test_the_core_is_chosen_where_it_is_built() -> None:
    done = _fresh(None)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split(" | ") == ["compiled", "the compiled core is built", "guard_lib._core\n"]


@needs_core
def test_the_core_calls_a_runtime_through_its_c_entry_points() -> None:
    rt = EntryPointRuntime(device_count=4)
    with device(2, runtime=rt):
        assert rt.current_device == 2
    guard = DeviceGuard.create(3, runtime=rt).unwrap()
    with guard.take():
        pass
    assert rt.current_device == 0
    assert rt.c_calls == ["get_device", "set_device", "set_device"] * 2
    # every call went through C: the runtime's Python methods were called only by its C functions
    assert [op for op, _ in rt.calls] == rt.c_calls


@needs_core
def test_a_c_path_failure_reads_as_the_python_path_does() -> None:
    rt = EntryPointRuntime(device_count=2)
    rt.fail_next("set_device", cuda_errors.LAUNCH_FAILURE, moves_to=1)
    error = refusal(DeviceGuard.create(1, runtime=rt))
    assert str(error) == "cannot select CUDA device 1: cudaErrorLaunchFailure"
    assert (error.code, error.code_name, error.device_index) == (719, "cudaErrorLaunchFailure", 1)
    # settled: the failed switch moved the thread, so it was put back, and the error was cleared
    assert rt.current_device == 0
    assert rt.peek_at_last_error() == (0,)


@needs_core
def test_each_runtime_is_called_through_its_own_entry_points() -> None:
    first, second, plain = EntryPointRuntime(4), EntryPointRuntime(4), SimulatedRuntime(4)
    for rt in (first, second, plain, first, plain, second):
        with device(1, runtime=rt):
            assert rt.current_device == 1
    assert first.c_calls == second.c_calls == ["get_device", "set_device", "set_device"] * 2
    assert [op for op, _ in plain.calls] == ["get_device", "set_device", "set_device"] * 2


class _LaidOutAsOneThatOffers(SimulatedRuntime):
    """Offers no entry points, in an object the size of an ``EntryPointRuntime``: one of those may take
    the address that one of these leaves."""

    __slots__ = ("_a", "_b", "_c", "_d")


@needs_core
def test_a_runtime_at_the_address_a_plain_one_left_is_called_through_its_own_entry_points() -> None:
    plain = _LaidOutAsOneThatOffers(4)
    assert sys.getsizeof(plain) == sys.getsizeof(EntryPointRuntime(4))
    with device(1, runtime=plain):
        pass
    address = id(plain)
    del plain
    # CPython gives a freed block to the next object of its size, so one of these soon lands there.
    tried = []
    for _ in range(1000):
        rt = EntryPointRuntime(4)
        if id(rt) == address:
            break
        tried.append(rt)
    else:
        pytest.fail("no runtime was made at the address the plain one left")
    with device(1, runtime=rt):
        assert rt.current_device == 1
    assert rt.c_calls == ["get_device", "set_device", "set_device"]


def test_an_index_beyond_a_c_int_is_refused_as_any_absent_device_is() -> None:
    rt = EntryPointRuntime(device_count=2)
    error = refusal(DeviceGuard.create(2**31, runtime=rt))
    assert str(error) == "cannot select CUDA device 2147483648: cudaErrorInvalidDevice"
    assert error.code == cuda_errors.INVALID_DEVICE
    assert rt.current_device == 0
    assert rt.c_calls == []


class _Offering(SimulatedRuntime):
    """Offers whatever capsules it is given, to show which the core refuses."""

    __slots__ = ("offer",)

    def __init__(self, offer: object) -> None:
        super().__init__(device_count=2)
        self.offer = offer

    def c_entry_points(self) -> object:
        return self.offer


def _misnamed() -> object:
    get_device, set_device = EntryPointRuntime().c_entry_points()
    # the right functions under the other's name: a signature that does not match is not called
    return set_device, get_device


@needs_core
@pytest.mark.parametrize("offer", [None, ("not", "capsules"), "misnamed"])
def test_a_runtime_without_usable_entry_points_is_called_from_python(offer: object) -> None:
    rt = _Offering(_misnamed() if offer == "misnamed" else offer)
    with device(1, runtime=rt):
        assert rt.current_device == 1
    assert [op for op, _ in rt.calls] == ["get_device", "set_device", "set_device"]


def test_the_cuda_runtime_offers_cuda_pythons_own_entry_points() -> None:
    capsules = CudaRuntime().c_entry_points()
    assert capsules is not None
    names = [repr(c).split('"')[1] for c in capsules]
    assert names == [GET_DEVICE_SIGNATURE.decode(), SET_DEVICE_SIGNATURE.decode()]


def test_the_cuda_runtime_offers_none_once_its_calls_are_replaced() -> None:
    rt = CudaRuntime()
    rt.get_device = lambda: (0, 0)
    assert rt.c_entry_points() is None
    rt = CudaRuntime()
    rt.set_device = lambda index: (0,)
    assert rt.c_entry_points() is None


@pytest.mark.parametrize("broken", ["no __pyx_capi__", "no cudaGetDevice", "no cudaSetDevice"])
def test_the_cuda_runtime_offers_none_from_a_cyruntime_without_the_capsules(
    monkeypatch: pytest.MonkeyPatch, broken: str
) -> None:
    import cuda.bindings
    from cuda.bindings import cyruntime

    stand_in = types.ModuleType("cuda.bindings.cyruntime")
    if broken != "no __pyx_capi__":
        capsules = dict(cyruntime.__pyx_capi__)
        del capsules[broken.removeprefix("no ")]
        stand_in.__pyx_capi__ = capsules  # type: ignore[attr-defined]
    monkeypatch.setattr(cuda.bindings, "cyruntime", stand_in, raising=False)
    monkeypatch.setitem(sys.modules, "cuda.bindings.cyruntime", stand_in)
    assert CudaRuntime().c_entry_points() is None


def test_the_cuda_runtime_offers_none_without_cyruntime(monkeypatch: pytest.MonkeyPatch) -> None:
    import cuda.bindings
    import cuda.bindings.runtime  # loaded first, as any earlier use loads it: it needs cyruntime itself

    monkeypatch.delattr(cuda.bindings, "cyruntime", raising=False)
    monkeypatch.setitem(sys.modules, "cuda.bindings.cyruntime", None)
    assert CudaRuntime().c_entry_points() is None


@pytest.mark.parametrize(
    ("value", "hide_core", "expected"),
    [
        ("python", False, ("python", "GUARD_LIB_IMPL=python")),
        (
            "",
            True,
            (
                "python",
                "the compiled core is not built (import of guard_lib._core halted; None in sys.modules)",
            ),
        ),
        (
            "auto",
            True,
            (
                "python",
                "the compiled core is not built (import of guard_lib._core halted; None in sys.modules)",
            ),
        ),
    ],
)
@pytest.mark.usefixtures("build_note")
def test_the_choice_in_process(
    monkeypatch: pytest.MonkeyPatch, value: str, hide_core: bool, expected: tuple[str, str]
) -> None:
    if hide_core:
        monkeypatch.delattr(guard_lib, "_core", raising=False)
        monkeypatch.setitem(sys.modules, "guard_lib._core", None)
    assert guard_lib.implementation._choose({IMPL_ENV: value}) == (*expected, None)


@pytest.fixture
def build_note(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where the choice looks for the build's note: a scratch file, absent until a test writes it."""
    note = tmp_path / "_core_not_built.txt"
    monkeypatch.setattr(guard_lib.implementation, "_NOTE", str(note))
    # Read as outside mutmut's run, which would choose the reference before any note is read.
    monkeypatch.delenv(MUTMUT_ENV, raising=False)
    return note


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("fast", "GUARD_LIB_IMPL='fast' names no implementation: use one of auto, compiled, python"),
        ("compiled", "GUARD_LIB_IMPL=compiled, but the compiled core cannot be imported: import of"),
    ],
)
@pytest.mark.usefixtures("build_note")
def test_a_choice_that_cannot_be_had_is_refused_in_process(
    monkeypatch: pytest.MonkeyPatch, value: str, message: str
) -> None:
    monkeypatch.delattr(guard_lib, "_core", raising=False)
    monkeypatch.setitem(sys.modules, "guard_lib._core", None)
    with pytest.raises(ImportError, match=re.escape(message)):
        guard_lib.implementation._choose({IMPL_ENV: value})


FAILED_BUILD = "failed\nits build failed (CompileError: command 'gcc' failed with exit code 1)\n"


@pytest.mark.parametrize("value", ["", "auto"])
def test_a_failed_build_is_named_in_the_reason_and_logged_once(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, build_note: Path, value: str
) -> None:
    build_note.write_text(FAILED_BUILD, encoding="utf-8")
    monkeypatch.setenv(IMPL_ENV, value)
    monkeypatch.setitem(sys.modules, "guard_lib._core", None)
    with caplog.at_level(logging.WARNING, logger="guard_lib"):
        chosen = guard_lib.implementation._choose()
    why = "its build failed (CompileError: command 'gcc' failed with exit code 1)"
    assert chosen == ("python", f"the compiled core is not built ({why})", None)
    assert [(r.name, r.levelno) for r in caplog.records] == [("guard_lib", logging.WARNING)]
    message = caplog.records[0].getMessage()
    assert message.startswith("guard_lib runs its Python implementation (the same behaviour, slower)")
    assert f"the compiled core is not built ({why})" in message
    assert "GUARD_LIB_IMPL=python" in message
    assert "GUARD_LIB_BUILD=python" in message


def test_the_warning_for_a_failed_build_says_what_to_do_word_for_word(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, build_note: Path
) -> None:
    build_note.write_text("failed\nno compiler\n", encoding="utf-8")
    monkeypatch.delenv(IMPL_ENV, raising=False)
    monkeypatch.setitem(sys.modules, "guard_lib._core", None)
    with caplog.at_level(logging.WARNING, logger="guard_lib"):
        guard_lib.implementation._choose()
    assert [r.getMessage() for r in caplog.records] == [
        "guard_lib runs its Python implementation (the same behaviour, slower): the compiled core is not "
        "built (no compiler). Reinstall where a C compiler and Python's headers are present to build it, or "
        "set GUARD_LIB_IMPL=python, or reinstall with GUARD_LIB_BUILD=python, to choose the Python one."
    ]


def test_a_note_of_several_lines_is_read_whole_after_its_kind(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, build_note: Path
) -> None:
    build_note.write_text("failed\nthe compiler said:\n  error: no such file\n", encoding="utf-8")
    monkeypatch.delenv(IMPL_ENV, raising=False)
    monkeypatch.setitem(sys.modules, "guard_lib._core", None)
    with caplog.at_level(logging.WARNING, logger="guard_lib"):
        chosen = guard_lib.implementation._choose()
    why = "the compiler said:\n  error: no such file"
    assert chosen == ("python", f"the compiled core is not built ({why})", None)
    assert len(caplog.records) == 1


def test_a_required_core_missing_without_a_note_says_only_why_it_cannot_be_imported(
    monkeypatch: pytest.MonkeyPatch, build_note: Path
) -> None:
    monkeypatch.setenv(IMPL_ENV, "compiled")
    monkeypatch.setitem(sys.modules, "guard_lib._core", None)
    with pytest.raises(ImportError) as raised:
        guard_lib.implementation._choose()
    assert str(raised.value) == (
        "GUARD_LIB_IMPL=compiled, but the compiled core cannot be imported: import of guard_lib._core "
        "halted; None in sys.modules"
    )


def test_the_note_is_opened_as_utf_8(monkeypatch: pytest.MonkeyPatch, build_note: Path) -> None:
    # The same contract as below, seen from inside this process: the locale's codec is never asked.
    build_note.write_text("failed\n\u2018gcc\u2019 failed\n", encoding="utf-8")
    opened: list[object] = []
    real_open = open

    def spying_open(file: Any, *args: Any, **kwargs: Any) -> Any:
        if str(file) == str(build_note):
            opened.append(kwargs.get("encoding", args[1] if len(args) > 1 else None))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr("builtins.open", spying_open)
    assert guard_lib.implementation._build_note() == ("failed", "\u2018gcc\u2019 failed")
    assert [str(e).lower().replace("_", "-") for e in opened] == ["utf-8"]


def test_a_note_is_read_as_utf_8_whatever_the_locale(tmp_path: Path) -> None:
    # Compilers quote with typographic marks; a C locale's default codec cannot read them.
    package = tmp_path / "guard_lib"
    package.mkdir()
    shutil.copy(guard_lib.implementation.__file__, package / "implementation.py")
    (package / "__init__.py").write_text("", encoding="utf-8")
    note = package / Path(guard_lib.implementation._NOTE).name
    note.write_text("failed\n\u2018gcc\u2019 failed\n", encoding="utf-8")
    code = "import sys; sys.modules['guard_lib._core'] = None; from guard_lib import implementation as i; "
    code += "print(i.__file__, ascii(i.REASON))"
    # In mutmut's copy the module copied is mutmut's, which reads mutmut's variable to pick a mutant; while
    # mutmut only records which tests reach what ("stats"), the child has nothing to record.
    env = {k: v for k, v in os.environ.items() if k not in {IMPL_ENV, "PYTHONUTF8"}}
    if env.get(MUTMUT_ENV) == "stats":
        del env[MUTMUT_ENV]
    env.update(LC_ALL="C", LANG="C", PYTHONCOERCECLOCALE="0", PYTHONPATH=str(tmp_path))
    # The copy first on the path (and no core), no UTF-8 mode, and the C locale left as it is.
    done = subprocess.run(
        [sys.executable, "-X", "utf8=0", "-c", code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    reason = ascii("the compiled core is not built (\u2018gcc\u2019 failed)")
    assert done.stdout.strip() == f"{package / 'implementation.py'} {reason}"


def test_a_core_skipped_on_purpose_is_named_in_the_reason_but_not_logged(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, build_note: Path
) -> None:
    build_note.write_text("skipped\nGUARD_LIB_BUILD=python at install\n", encoding="utf-8")
    monkeypatch.delenv(IMPL_ENV, raising=False)
    monkeypatch.setitem(sys.modules, "guard_lib._core", None)
    with caplog.at_level(logging.DEBUG, logger="guard_lib"):
        chosen = guard_lib.implementation._choose()
    assert chosen == ("python", "the compiled core is not built (GUARD_LIB_BUILD=python at install)", None)
    assert caplog.records == []


def test_a_python_choice_reads_no_note_and_logs_nothing(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, build_note: Path
) -> None:
    build_note.write_text(FAILED_BUILD, encoding="utf-8")
    monkeypatch.setenv(IMPL_ENV, "python")
    with caplog.at_level(logging.DEBUG, logger="guard_lib"):
        assert guard_lib.implementation._choose() == ("python", "GUARD_LIB_IMPL=python", None)
    assert caplog.records == []


def test_a_required_core_that_failed_to_build_says_why(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, build_note: Path
) -> None:
    build_note.write_text(FAILED_BUILD, encoding="utf-8")
    monkeypatch.setenv(IMPL_ENV, "compiled")
    monkeypatch.setitem(sys.modules, "guard_lib._core", None)
    with pytest.raises(ImportError) as raised:
        guard_lib.implementation._choose()
    assert str(raised.value) == (
        "GUARD_LIB_IMPL=compiled, but the compiled core cannot be imported: import of guard_lib._core "
        "halted; None in sys.modules (its build failed (CompileError: command 'gcc' failed with exit code 1))"
    )
    assert caplog.records == []


def test_a_note_beside_a_core_that_imports_is_not_read(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, build_note: Path
) -> None:
    build_note.write_text(FAILED_BUILD, encoding="utf-8")
    monkeypatch.delenv(IMPL_ENV, raising=False)
    stand_in = types.ModuleType("guard_lib._core")
    monkeypatch.setitem(sys.modules, "guard_lib._core", stand_in)
    assert guard_lib.implementation._choose() == ("compiled", "the compiled core is built", stand_in)
    assert caplog.records == []


def test_the_note_is_this_interpreters() -> None:
    # setup.py names it by the same tag: an editable checkout serves several Pythons from one folder.
    note = Path(guard_lib.implementation._NOTE)
    assert note.parent == Path(guard_lib.__file__).parent
    assert note.name == f"_core_not_built.{sys.implementation.cache_tag}.txt"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, ("compiled", "the compiled core is built")),
        ("auto", ("compiled", "the compiled core is built")),
        ("compiled", ("compiled", "GUARD_LIB_IMPL=compiled")),
    ],
)
def test_a_core_that_imports_is_chosen_in_process(
    monkeypatch: pytest.MonkeyPatch, value: str | None, expected: tuple[str, str]
) -> None:
    stand_in = _stand_in_installed(monkeypatch)
    environ = {} if value is None else {IMPL_ENV: value}
    assert guard_lib.implementation._choose(environ) == (*expected, stand_in)


def _stand_in_installed(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    """A core that imports, so a choice is pinned whichever implementation this run imports."""
    monkeypatch.delattr(guard_lib, "_core", raising=False)
    stand_in = types.ModuleType("guard_lib._core")
    monkeypatch.setitem(sys.modules, "guard_lib._core", stand_in)
    return stand_in


MUTMUTS_COPY = "/work/proj/mutants/guard_lib/implementation.py"


@pytest.mark.parametrize("value", [None, "", "auto", " auto "])
@pytest.mark.parametrize("active", ["", "stats", "guard_lib.device_guard.x_device__mutmut_1"])
def test_mutmuts_copy_takes_the_reference_while_mutmut_runs_the_tests(
    monkeypatch: pytest.MonkeyPatch, value: str | None, active: str
) -> None:
    _stand_in_installed(monkeypatch)
    environ = {MUTMUT_ENV: active} if value is None else {MUTMUT_ENV: active, IMPL_ENV: value}
    assert guard_lib.implementation._choose(environ, MUTMUTS_COPY) == ("python", MUTMUT_REASON, None)


@pytest.mark.parametrize(
    ("environ", "module_file", "expected"),
    [
        # a backend's own mutmut run imports an installed guard_lib
        ({MUTMUT_ENV: ""}, "/venv/site-packages/guard_lib/implementation.py", "the compiled core is built"),
        ({MUTMUT_ENV: ""}, "/work/proj/guard_lib/implementation.py", "the compiled core is built"),
        # a parent whose name sorts before "mutants": the name is compared for equality
        ({MUTMUT_ENV: ""}, "/home/ci/build/guard_lib/implementation.py", "the compiled core is built"),
        # a folder named mutants that is not one level above the package
        ({MUTMUT_ENV: ""}, "/work/mutants/implementation.py", "the compiled core is built"),
        ({MUTMUT_ENV: ""}, "/work/mutants/src/guard_lib/implementation.py", "the compiled core is built"),
        # mutmut's copy, but mutmut is not running it
        ({}, MUTMUTS_COPY, "the compiled core is built"),
        # asked for by name, the core is served even to mutmut
        ({MUTMUT_ENV: "", IMPL_ENV: "compiled"}, MUTMUTS_COPY, "GUARD_LIB_IMPL=compiled"),
    ],
)
def test_the_core_is_kept_unless_mutmut_runs_its_copy(
    monkeypatch: pytest.MonkeyPatch, environ: dict[str, str], module_file: str, expected: str
) -> None:
    stand_in = _stand_in_installed(monkeypatch)
    assert guard_lib.implementation._choose(environ, module_file) == ("compiled", expected, stand_in)


def test_mutmut_asking_for_the_reference_by_name_gets_it_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    _stand_in_installed(monkeypatch)
    environ = {MUTMUT_ENV: "", IMPL_ENV: "python"}
    assert guard_lib.implementation._choose(environ, MUTMUTS_COPY) == (
        "python",
        "GUARD_LIB_IMPL=python",
        None,
    )


def _copy_as_mutmut_does(root: Path) -> Path:
    """guard_lib copied to ``root/mutants/guard_lib``, built core included, as ``mutmut run`` copies it."""
    source = Path(guard_lib.__file__).parent
    mutants = root / "mutants"
    shutil.copytree(
        source, mutants / "guard_lib", ignore=shutil.ignore_patterns("__pycache__", "*.c", "*.html")
    )
    return mutants


def _import_from(mutants: Path, env: dict[str, str]) -> list[str]:
    program = textwrap.dedent(
        """
        import sys
        import guard_lib
        print(guard_lib.__file__, guard_lib.IMPLEMENTATION, guard_lib.implementation.REASON,
              guard_lib.DeviceGuard.__module__, "guard_lib._core" in sys.modules, sep=" | ")
        """
    )
    # A script beside mutmut's copy: Python puts its folder first on the path, as mutmut puts mutants/.
    probe = mutants / "probe.py"
    probe.write_text(program, encoding="utf-8")
    done = subprocess.run([sys.executable, str(probe)], env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout.rstrip("\n").split(" | ")


def test_a_fresh_interpreter_in_mutmuts_copy_under_mutmut_imports_the_reference(tmp_path: Path) -> None:
    mutants = _copy_as_mutmut_does(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != IMPL_ENV}
    # Under mutmut, the active mutant's name reaches the child; else the value mutmut's clean run sets.
    env.setdefault(MUTMUT_ENV, "")
    where, name, reason, module, core_loaded = _import_from(mutants, env)
    assert Path(where).parent == mutants / "guard_lib"
    assert (name, reason, module, core_loaded) == ("python", MUTMUT_REASON, "guard_lib.device_guard", "False")
    # the same copy outside mutmut serves the core where one is built: the choice is mutmut's variable
    del env[MUTMUT_ENV]
    outside = _import_from(mutants, env)[1:]
    if importlib.util.find_spec("guard_lib._core") is not None:
        assert outside == ["compiled", "the compiled core is built", "guard_lib._core", "True"]
    else:
        assert (outside[0], outside[2]) == ("python", "guard_lib.device_guard")
        assert outside[1].startswith("the compiled core is not built (")


@needs_core
def test_the_suite_refuses_to_serve_mutmut_from_the_core() -> None:
    # what a `mutmut run` with GUARD_LIB_IMPL=compiled exported would do: stop before any test, saying why
    env = {**os.environ, MUTMUT_ENV: "", IMPL_ENV: "compiled"}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--co", __file__],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == pytest.ExitCode.TESTS_FAILED
    assert (
        "mutmut mutates guard_lib's Python reference, but these tests would run the compiled core "
        "(GUARD_LIB_IMPL=compiled)" in done.stdout + done.stderr
    )


@pytest.mark.parametrize("index", [2**70, -(2**70)])
def test_an_index_beyond_any_c_value_is_refused_as_the_reference_refuses_it(
    sim: SimulatedRuntime, index: int
) -> None:
    error = refusal(DeviceGuard.create(index, runtime=sim))
    if index > 0:
        assert str(error) == f"cannot select CUDA device {index}: cudaErrorInvalidDevice"
    else:
        assert str(error) == f"cannot select CUDA device {index}: a device index is >= 0"
        assert error.code is None
    assert sim.current_device == 0


def test_the_default_runtime_is_made_on_first_use(monkeypatch: pytest.MonkeyPatch) -> None:
    from guard_lib import runtime as runtime_module

    monkeypatch.setattr(runtime_module, "_default", None)
    monkeypatch.setenv(runtime_module.RUNTIME_ENV, "simulated:3")
    with device(2):
        made = runtime_module._default
        assert isinstance(made, SimulatedRuntime)
        assert made.current_device == 2
    assert made.current_device == 0


@pytest.mark.parametrize("order", ["c-entry first", "plain first"])
def test_a_borrow_entered_again_under_another_default_restores_through_it(order: str) -> None:
    runtimes: list[SimulatedRuntime] = [EntryPointRuntime(4), SimulatedRuntime(4)]
    if order == "plain first":
        runtimes.reverse()
    borrow = device(1)
    for rt in runtimes:
        with use_runtime(rt), borrow:
            assert rt.current_device == 1
        assert rt.current_device == 0
    assert [rt.current_device for rt in runtimes] == [0, 0]


def test_a_subclass_of_device_takes_arguments_of_its_own(sim: SimulatedRuntime) -> None:
    # Construction goes through __init__ in both implementations, so a subclass may add arguments.
    class Tagged(device):
        def __init__(self, index: int, tag: str) -> None:
            super().__init__(index, runtime=sim)
            self.tag = tag

    with Tagged(1, "backend") as borrow:
        assert sim.current_device == 1
    assert isinstance(borrow, Tagged)
    assert (type(borrow), borrow.tag, sim.current_device) == (Tagged, "backend", 0)


def test_a_subclass_creates_guards_of_its_own_kind(sim: SimulatedRuntime) -> None:
    class Mine(DeviceGuard):
        __slots__ = ()

    guard = Mine.create(1, runtime=sim).unwrap()
    assert type(guard) is Mine
    with guard:
        assert sim.current_device == 1
    assert sim.current_device == 0


def test_a_taker_restores_the_device_the_caller_was_on(sim: SimulatedRuntime) -> None:
    sim.set_device(2)
    guard = DeviceGuard.create(1, runtime=sim).unwrap()
    with guard.take() as taker:
        assert (taker.original_device, sim.current_device) == (2, 1)
    assert sim.current_device == 2


def _executed_afresh(name: str) -> types.ModuleType:
    """guard_lib's module ``name`` (the package itself for "") executed again, apart from the one imported,
    against what ``guard_lib.implementation`` and ``sys.modules`` hold now: the choice's branches for the
    other implementation run under either. The code is the one the import system served, by its own spec
    (a mutation engine's, where one serves the module)."""
    spec = importlib.util.find_spec(f"guard_lib.{name}" if name else "guard_lib")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _stand_in_core() -> types.ModuleType:
    core = types.ModuleType("guard_lib._core")
    core.DeviceGuard, core.device = type("DeviceGuard", (), {}), type("device", (), {})  # type: ignore[attr-defined]
    core.Ok = type("Ok", (), {"__class_getitem__": classmethod(types.GenericAlias)})  # type: ignore[attr-defined]
    core.Err = type("Err", (), {})  # type: ignore[attr-defined]
    return core


def test_a_chosen_core_serves_the_guards(monkeypatch: pytest.MonkeyPatch) -> None:
    core = _stand_in_core()
    monkeypatch.delattr(guard_lib, "_core", raising=False)
    monkeypatch.setitem(sys.modules, "guard_lib._core", core)
    monkeypatch.setenv(IMPL_ENV, "compiled")
    assert _executed_afresh("implementation").CORE is core
    monkeypatch.setenv(IMPL_ENV, "python")
    assert _executed_afresh("implementation").CORE is None
    # The package takes the guards from the implementation chosen.
    monkeypatch.setattr(guard_lib.implementation, "CORE", core)
    served = _executed_afresh("")
    assert (served.DeviceGuard, served.device) == (core.DeviceGuard, core.device)
    monkeypatch.setattr(guard_lib.implementation, "CORE", None)
    served = _executed_afresh("")
    assert (served.DeviceGuard, served.device) == (device_guard.DeviceGuard, device_guard.device)


def test_a_chosen_core_serves_ok_and_err(monkeypatch: pytest.MonkeyPatch) -> None:
    core = _stand_in_core()
    monkeypatch.setattr(guard_lib.implementation, "CORE", core)
    served = _executed_afresh("result")
    assert (served.Ok, served.Err) == (core.Ok, core.Err)
    monkeypatch.setattr(guard_lib.implementation, "CORE", None)
    served = _executed_afresh("result")
    assert served.Ok.__module__ == served.Err.__module__ == "guard_lib.result"
    assert served.Ok.__qualname__ == "Ok"
    assert served.Err.__qualname__ == "Err"


def test_the_choice_imports_nothing_of_guard_lib() -> None:
    # The reference's modules ask for the choice while they load: a choice that imported them back would
    # work only while statements ran in one order.
    tree = ast.parse(Path(guard_lib.implementation.__file__).read_text(encoding="utf-8"))
    imported = [
        node.module or "."
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("guard_lib"))
    ]
    imported += [
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
        if alias.name.startswith("guard_lib")
    ]
    assert imported == []


@pytest.mark.parametrize(
    "first",
    [
        "guard_lib.implementation",
        "guard_lib.result",
        "guard_lib.device_guard",
        "guard_lib.runtime",
        "guard_lib",
    ],
)
@pytest.mark.parametrize("impl", ["python", "auto"])
def test_any_module_can_be_imported_first(first: str, impl: str) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            f"import {first}, guard_lib.runtime as r; r.SimulatedRuntime; import guard_lib; "
            "guard_lib.device(1, runtime=r.SimulatedRuntime(2)).__enter__().close()",
        ],
        env={**os.environ, IMPL_ENV: impl},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr


@needs_core
def test_the_core_imports_no_reference_but_what_both_share() -> None:
    code = (
        "import sys, guard_lib, guard_lib.runtime as r; "
        "guard_lib.DeviceGuard.create(-1, runtime=r.SimulatedRuntime()).is_err(); "
        "guard_lib.device(1, runtime=r.SimulatedRuntime(1)).__enter__; "
        "print(sorted(m for m in sys.modules if m.startswith('guard_lib.')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, IMPL_ENV: "compiled"},
        capture_output=True,
        text=True,
        check=True,
    )
    loaded = set(ast.literal_eval(done.stdout))
    assert "guard_lib._shared" in loaded
    assert "guard_lib.device_guard" not in loaded
