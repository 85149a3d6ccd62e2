"""The map of which tests reach which line names each test as pytest collected it."""

from __future__ import annotations

from pathlib import Path

from mutation_sweep import select_tests


def test_a_test_is_found_by_any_name_coverage_gives_its_module(tmp_path: Path) -> None:
    for rel in ("tests/behaviour/__init__.py", "tests/behaviour/test_x.py", "tests/test_top.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("", encoding="utf-8")
    modules = select_tests.test_modules(tmp_path)
    assert modules["behaviour.test_x"] == modules["tests.behaviour.test_x"] == "tests/behaviour/test_x.py"
    assert modules["test_top"] == "tests/test_top.py"
    collected = {"tests/behaviour/test_x.py::test_y"}
    # pytest's rootdir-relative package: the module is behaviour.test_x, as this project's tests are
    assert select_tests._node_id("behaviour.test_x.test_y", modules, collected) == (
        "tests/behaviour/test_x.py::test_y"
    )
    assert (
        select_tests._node_id("behaviour.test_x.Case.test_z", modules, collected)
        == "tests/behaviour/test_x.py"
    )
