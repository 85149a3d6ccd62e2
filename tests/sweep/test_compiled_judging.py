"""End to end: the core's mutants built into one woven extension, each judged with its switch on."""

from __future__ import annotations

from pathlib import Path

import pytest

from .programs import answer

ROOT = Path(__file__).resolve().parents[2]

# Run in a fresh interpreter: the fork engine forks children that run pytest, which a pytest process
# that forks would confuse.
PROGRAM = """
import json, sys
from pathlib import Path
from mutation_sweep.runners import compiled_builds, forked
from mutation_sweep.generate import generate
from mutation_sweep.operators import delete_statement, swap_variable

root, scratch = Path(sys.argv[1]), Path(sys.argv[2])
generated = generate(root, ["guard_lib/_core.pyx"], operators=(delete_statement, swap_variable))

def pick(scope, operator, original, mutated):
    found = [m for m in generated.mutants
             if (m.scope, m.operator, m.original, m.mutated) == (scope, operator, original, mutated)]
    return found[0]

killer = pick("_Borrow._enter", "delete-statement", "self._owes = True", "pass")
refused = pick("_ask", "swap-variable", "offer", "set_device")
builds = compiled_builds.build(root, [killer, refused], generated.sources, scratch, 2)
woven, switch = builds.at[killer.id]
test = "tests/behaviour/test_device_guard.py"
def verdict(switch, mutant=killer):
    job = forked.Job(mutant, "guard_lib._core", "", (test,), built=woven, switch=switch)
    [result] = forked.run([job], root, ["-m", "not cuda"], parallel=1, timeout_s=300, on_result=print)
    return result.verdict
print(json.dumps({
    "switch": switch,
    "refused": builds.refused.get(refused.id, ""),
    "by_switch": {str(switch): verdict(switch), "None": verdict(None)},
}))
"""


@pytest.mark.e2e
def test_a_compiled_mutant_is_killed_with_its_switch_on_and_one_cython_refuses_is_set_aside(
    tmp_path: Path,
) -> None:
    found = answer(PROGRAM, [str(ROOT), str(tmp_path)], cwd=ROOT, timeout=600)
    assert isinstance(found["switch"], int)
    # the same build, the same tests: red with the mutant's switch on, green with none on
    assert sorted(found["by_switch"].values()) == ["killed", "survived"]
    assert found["by_switch"]["None"] == "survived"
    assert found["refused"].startswith("Cython refuses it: ")
