"""The report of a judgement: a Markdown summary that gives each engine its own figures, a
mutation-testing-elements JSON valid against the vendored schema, and an HTML page that opens offline.

Records are built by hand for two made-up engines (the report names none of its own) and judged as the
gate judges them.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from guard_mutation.config import Review
from guard_mutation.judge import Judgement, judge
from guard_mutation.model import Mutant, Outcome, Record, Run
from guard_mutation.report import markdown, page, schema, write

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - 3.10
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[2]
SCHEMAS = [
    REPO / "tests" / d / "data" / "mutation-testing-report-schema.json" for d in ("tooling", "mutation")
]
SOURCE = "def f(a, b):\n    return a + b\n\n\ndef g(x):\n    if x < 0:\n        return -x\n    return x\n"
LONG = "y" * 600  # far wider than any window: the page must wrap it
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _needed(what: str, reason: str) -> None:
    """CI must not pass by skipping: there a missing tool is a failure."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"{what} is required when CI=true: {reason}")
    pytest.skip(reason)


def _record(
    engine: str,
    mid: str,
    verdict: str,
    removed: str,
    added: str,
    *,
    file: str = "pkg/mod.py",
    line: int = 2,
    end_line: int | None = None,
    function: str = "pkg.mod:f",
    operator: str = "op",
    killed_by: tuple[str, ...] = (),
    why: str = "",
    killers: tuple[str, ...] = (),
    detail: str = "",
    seconds: float = 0.0,
) -> Record:
    diff = f"--- a\n+++ b\n@@ -{line} +{line} @@\n-{removed}\n+{added}\n"
    mutant = Mutant(engine, mid, file, line, end_line or line, operator, diff, function, killed_by, why)
    return Record(mutant, Outcome(verdict, killers, seconds, detail))


@pytest.fixture
def runs() -> list[Run]:
    add, g = "    return a + b", "pkg.mod:g"
    alpha = (
        _record(
            "alpha", "m1", "killed", add, "    return a - b", operator="binop",
            killers=("tests/t.py::test_f",), detail="assert 2 == 0", seconds=0.25,
        ),
        _record("alpha", "m2", "survived", add, "    return a * b"),
        _record("alpha", "m3", "no-tests", "    if x < 0:", "    if x <= 0:", function=g, line=6, end_line=7),
        _record("alpha", "m4", "timeout", add, "    while True: pass"),
        _record("alpha", "m5", "invalid", add, "    return a +", detail="SyntaxError"),
        _record("alpha", "m6", "equivalent", add, "    return b + a", detail="same code object"),
        _record("alpha", "m7", "survived", "x = 1", "x = 2", file="pkg/gone.py", line=1, function=""),
    )  # fmt: skip
    beta = (
        _record(
            "beta", "m1", "wrong-reason", "        return -x", "        return x", function=g, line=7,
            killed_by=("tests/t.py::test_g",), why="abs of a negative", killers=("tests/t.py::test_other",),
        ),
        _record("beta", "m2", "killed", "x = 1", f"x = 2 # {LONG}", file="pkg/a.py", line=1, function=""),
        _record("beta", "m3", "survived", "a", "b", file="../outside.py", line=1),
    )  # fmt: skip
    return [Run("alpha", alpha), Run("beta", beta, whole=False, notes=("beta saw 3 of 4 lines",))]


REVIEWS = (
    Review(1, "alpha", "pkg.mod:f", "return a * b", "a < b | c: both are 0 in every test"),
    Review(2, "alpha", "pkg.mod:g", "nothing like this", "stale"),
)


@pytest.fixture
def judgement(runs: list[Run]) -> Judgement:
    return judge(runs, REVIEWS)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    (project / "pkg").mkdir(parents=True)
    (project / "pkg" / "mod.py").write_text(SOURCE, encoding="utf-8")
    (project / "pkg" / "a.py").write_text("x = 1\n", encoding="utf-8")
    (tmp_path / "outside.py").write_text("a\n", encoding="utf-8")  # there, but not in the project
    return project


ALPHA = "alpha: 66.7 % (2 killed, 1 equivalent, 1 reviewed, 1 not counted, 2 finding)"
BETA = "beta (a part): 33.3 % (1 killed, 2 finding)"
FINDINGS = [
    r"alpha m3 (pkg/mod.py:6, pkg.mod:g) no-tests, reviewed by nobody: if x \<= 0:",
    r"alpha m7 (pkg/gone.py:1, \<module\>) survived, reviewed by nobody: x = 2",
    "critical beta m1 (pkg/mod.py:7, pkg.mod:g) wrong-reason: abs of a negative",
    "beta m3 (../outside.py:1, pkg.mod:f) survived, reviewed by nobody: b",
    "review 2 (alpha, pkg.mod:g: nothing like this) is stale: its engine's whole run made no such mutant; "
    "delete the review or fix its keys",
]


def test_markdown_gives_each_engine_its_own_figures_and_notes(judgement: Judgement, runs: list[Run]) -> None:
    lines = markdown(judgement).splitlines()
    assert "5 finding(s)." in lines
    # one line per engine, the notes of each under its own: never one score over both
    assert [line for line in lines if "%" in line] == [f"- {ALPHA}", f"- {BETA}"]
    assert lines[lines.index(f"- {BETA}") + 1] == "  - beta saw 3 of 4 lines"
    assert not any("beta saw" in line for line in lines[: lines.index(f"- {BETA}")])


def test_markdown_lists_the_findings_and_the_reviews_with_their_reasons(judgement: Judgement) -> None:
    text = markdown(judgement)
    findings = text.split("### Findings\n\n")[1].split("\n\n")[0].splitlines()
    assert findings == [f"- {f}" for f in FINDINGS]
    reviewed = text.split("### Reviewed mutants\n\n")[1].splitlines()
    assert reviewed[2:] == [
        r"| alpha | m2 | pkg/mod.py:2 pkg.mod:f | return a + b → return a \* b | 1 | "
        r"a \< b \| c: both are 0 in every test |"
    ]
    short = markdown(judgement, max_rows=2)
    assert short.count("\n- ") == 2 + 2  # two engines, two findings
    assert "… and 3 more in the JSON and HTML reports." in short
    assert short.endswith("|\n")  # the one review, nothing said of more
    none = markdown(judgement, max_rows=0)
    assert "- alpha m3" not in none
    assert "| alpha | m2 |" not in none
    assert "… and 5 more in the JSON and HTML reports." in none
    assert "… and 1 more in the JSON and HTML reports." in none
    empty = judge([Run("empty", ())], ())
    assert (
        markdown(empty) == "## Mutation testing\n\n0 finding(s).\n\n- empty: no score: no mutant (nothing)\n"
    )


def _mutants(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {m["id"]: m for f in document["files"].values() for m in f["mutants"]}


def test_json_statuses_reasons_and_locations(judgement: Judgement, root: Path) -> None:
    document = schema(judgement, root, min_score=90)
    assert document["schemaVersion"] == "1"
    assert document["thresholds"] == {"high": 90, "low": 70}
    # the file that is gone, and the one outside the project, are left out with their mutants
    assert list(document["files"]) == ["pkg/a.py", "pkg/mod.py"]
    assert document["files"]["pkg/mod.py"]["source"] == SOURCE
    mutants = _mutants(document)
    # file by file, then by line, engine and id
    assert list(mutants) == [
        "beta:m2", "alpha:m1", "alpha:m2", "alpha:m4", "alpha:m5", "alpha:m6", "alpha:m3", "beta:m1",
    ]  # fmt: skip
    assert {i: m["status"] for i, m in mutants.items()} == {
        "alpha:m1": "Killed",
        "alpha:m2": "Ignored",
        "alpha:m3": "NoCoverage",
        "alpha:m4": "Timeout",
        "alpha:m5": "CompileError",
        "alpha:m6": "Ignored",
        "beta:m1": "Survived",
        "beta:m2": "Killed",
    }
    assert mutants["alpha:m1"] == {
        "id": "alpha:m1",
        "mutatorName": "binop",
        "replacement": "return a - b",
        "description": "pkg.mod:f: return a + b -> return a - b [alpha: killed]",
        "location": {"start": {"line": 2, "column": 1}, "end": {"line": 2, "column": 17}},
        "status": "Killed",
        "statusReason": "assert 2 == 0",
        "killedBy": ["tests/t.py::test_f"],
        "duration": 250.0,
    }
    assert mutants["alpha:m3"]["location"] == {
        "start": {"line": 6, "column": 1},
        "end": {"line": 7, "column": 18},
    }
    assert mutants["alpha:m2"]["statusReason"] == "reviewed (review 1): a < b | c: both are 0 in every test"
    assert mutants["alpha:m6"]["statusReason"] == "equivalent: same code object"
    assert mutants["alpha:m5"]["statusReason"] == "not counted, not a program: SyntaxError"
    assert mutants["beta:m1"]["statusReason"] == FINDINGS[2]
    assert mutants["beta:m1"]["killedBy"] == ["tests/t.py::test_other"]
    assert "statusReason" not in mutants["beta:m2"]
    assert (
        mutants["beta:m2"]["description"] == f"<module>: x = 1 -> {f'x = 2 # {LONG}'[:97]}... [beta: killed]"
    )
    assert mutants["beta:m2"]["location"]["end"] == {"line": 1, "column": 6}
    assert [e["engine"] for e in document["engines"]] == ["alpha", "beta"]
    assert document["engines"][1]["counts"] == {
        "killed": 1, "equivalent": 0, "reviewed": 0, "not counted": 0, "finding": 2,
    }  # fmt: skip
    assert len(document["findings"]) == len(FINDINGS)


def test_json_follows_the_mutation_testing_elements_schema(judgement: Judgement, root: Path) -> None:
    found = [path for path in SCHEMAS if path.is_file()]
    if not found:
        _needed("the vendored schema", f"none of {', '.join(map(str, SCHEMAS))} is there")
    jsonschema = (
        pytest.importorskip("jsonschema") if os.environ.get("CI") != "true" else __import__("jsonschema")
    )
    jsonschema.validate(schema(judgement, root), json.loads(found[0].read_text(encoding="utf-8")))


def test_write_writes_what_it_is_given_and_nothing_else(
    judgement: Judgement, runs: list[Run], root: Path
) -> None:
    out = root / "reports" / "new"
    write(judgement, json_path=None, html_path=None, markdown_path=out / "summary.md", root=root)
    assert [p.name for p in out.iterdir()] == ["summary.md"]
    paths = {"json_path": out / "r.json", "html_path": out / "r.html", "markdown_path": out / "summary.md"}
    write(judgement, **paths, root=root, min_score=80)
    assert json.loads(paths["json_path"].read_text(encoding="utf-8")) == schema(judgement, root, min_score=80)
    assert paths["html_path"].read_text(encoding="utf-8") == page(judgement)
    assert paths["markdown_path"].read_text(encoding="utf-8") == markdown(judgement)


def test_html_is_self_contained_and_shows_every_mutant(judgement: Judgement, runs: list[Run]) -> None:
    html = page(judgement)
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)  # nothing fetched from anywhere
    rows = re.findall(r"<tr class='mutant' id='([^']+)' data-status='(\w+)' data-finding='(\w+)'>", html)
    assert rows == [  # file by file, then by line, engine and id
        ("beta:m3", "Survived", "true"),
        ("beta:m2", "Killed", "false"),
        ("alpha:m7", "Survived", "true"),  # its file is gone: the page needs no source
        ("alpha:m1", "Killed", "false"),
        ("alpha:m2", "Ignored", "false"),
        ("alpha:m4", "Timeout", "false"),
        ("alpha:m5", "CompileError", "false"),
        ("alpha:m6", "Ignored", "false"),
        ("alpha:m3", "NoCoverage", "true"),
        ("beta:m1", "Survived", "true"),
    ]
    assert "<p id='verdict' class='fail'>5 finding(s)</p>" in html
    assert (
        "<tr data-engine='alpha'><td>alpha</td><td>66.7 %</td>"
        "<td>2</td><td>1</td><td>1</td><td>1</td><td>2</td><td></td></tr>"
    ) in html
    assert "<td>beta (a part)</td><td>33.3 %</td><td>1</td><td>0</td><td>0</td><td>0</td><td>2</td>" in html
    assert "<td>beta saw 3 of 4 lines</td></tr>" in html
    # each finding listed, a mutant's linked to its row
    assert html.count("<li>") == len(FINDINGS)
    assert "<li><a href='#alpha:m3'>alpha m3 (pkg/mod.py:6, pkg.mod:g) no-tests, reviewed by nobody" in html
    assert "<li>review 2 (alpha, pkg.mod:g: nothing like this) is stale" in html
    assert "<tr><td><a href='#file-pkg-mod-py'>pkg/mod.py</a></td><td>7</td><td>2</td></tr>" in html
    # each row: its lines, its change and diff, the test that killed it or why it stands
    assert "<td>6-7</td>" in html
    assert "pkg.mod:f: return a + b -&gt; return a * b [alpha: survived]" in html
    assert "<pre>--- a\n+++ b\n@@ -2 +2 @@\n-    return a + b\n+    return a * b\n</pre>" in html
    assert "<small>tests/t.py::test_f</small><br><small>assert 2 == 0</small>" in html
    assert "reviewed (review 1): a &lt; b | c: both are 0 in every test" in html
    empty = page(judge([Run("empty", ())], ()))
    assert "<p id='verdict' class='pass'>0 finding(s)</p>" in empty
    assert "<td>empty</td><td>no score: no mutant</td>" in empty
    assert "<h2>Findings</h2>" not in empty


def _browser() -> str:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        _needed("chromium", "chromium is not installed (apt-get install -y chromium)")
    assert browser is not None
    return browser


@pytest.mark.parametrize("width", [1280, 1920])
def test_html_renders_offline_in_chromium_and_never_scrolls_sideways(
    judgement: Judgement, runs: list[Run], root: Path, tmp_path: Path, width: int
) -> None:
    """Every diff opened, a 600-character line among them: the page fits the window. A screenshot is kept."""
    browser = _browser()
    report = tmp_path / "report.html"
    write(judgement, json_path=None, html_path=report, markdown_path=None, root=root)
    url = report.as_uri() + "#open-all"
    command = [browser, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run(
        [*command, f"--window-size={width},900", "--dump-dom", url],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    ).stdout
    # the inline script ran, so this is the browser's DOM and not the file read back
    assert "10 mutants listed" in dom
    assert re.search(r"<details open=\"\"><summary>diff</summary><pre>[^<]*" + LONG, dom)
    assert 'data-overflow="false"' in dom, "the page scrolls sideways"
    shots = Path(os.environ.get("REPORT_SCREENSHOTS", tmp_path))
    shots.mkdir(parents=True, exist_ok=True)
    shot = shots / f"mutation-report-{width}.png"
    shot.unlink(missing_ok=True)
    subprocess.run(
        [*command, f"--window-size={width},1400", "--hide-scrollbars", f"--screenshot={shot}", url],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert shot.is_file()
    assert shot.stat().st_size > 10_000


def test_the_report_imports_no_engine_and_names_none() -> None:
    pyproject = tomllib.loads((REPO / "scripts" / "pyproject.toml").read_text(encoding="utf-8"))
    names = set(pyproject["project"]["entry-points"]["guard_mutation.engines"])
    assert names
    code = "import sys, guard_mutation.report; print(' '.join(sys.modules))"
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert "guard_mutation.report" in loaded
    # the package's registry of engines may load (the package's __init__ names it), no engine's module
    assert [
        m for m in loaded if m.startswith("guard_mutation.engines.") or m.partition(".")[0] in names
    ] == []
    for module in sorted((REPO / "scripts" / "guard_mutation" / "report").glob("*.py")):
        text = module.read_text(encoding="utf-8").lower()
        assert not [n for n in names if re.search(rf"\b{re.escape(n)}\b", text)], module.name
