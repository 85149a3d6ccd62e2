"""The report: mutation-testing-elements JSON valid against the vendored schema, Markdown summary, and
an HTML page that headless Chromium renders offline with files, mutants and statuses."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import _scripts
import mutation_gate
import mutation_report
import pytest

SCHEMA = Path(__file__).parent / "data" / "mutation-testing-report-schema.json"
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
MUTANT = '\nfile = "pkg/mod.py"\nscope = "f"\ndelete = "return a"\nwhy = "w"\nkilled_by = ["t"]\n'
EQUIV = (
    '[gate]\n[[reviewed]]\nengine = "mutmut"\nfunction = "pkg.mod:f"\ndiff = "return a * b"\n'
    'reason = "both are 0 in every test"\n'
    + '[[mutant]]\nid = "restore-skipped"'
    + MUTANT
    + '[[mutant]]\nid = "wrong-device"'
    + MUTANT
)


def _needed(what: str, reason: str) -> None:
    """CI must not pass by skipping: there a missing tool is a failure."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"{what} is required when CI=true: {reason}")
    pytest.skip(reason)


@pytest.fixture
def report(tmp_path: Path) -> dict[str, Path]:
    mutants = [
        _scripts.mutant("pkg.mod.x_f__mutmut_1", "killed", added="return a"),
        _scripts.mutant("pkg.mod.x_f__mutmut_2", "survived", added="return a - b"),
        _scripts.mutant("pkg.mod.x_f__mutmut_3", "survived", added="return a * b"),
        _scripts.mutant("pkg.mod.x_f__mutmut_4", "no tests", added="return None"),
        _scripts.mutant("pkg.mod.x_f__mutmut_5", "timeout", added="return b"),
    ]
    results = _scripts.results_file(tmp_path / "results.json", mutants)
    cfg = tmp_path / "mutation_config.toml"
    cfg.write_text(EQUIV, encoding="utf-8")
    crit = tmp_path / "critical.json"
    crit.write_text(
        json.dumps(
            {
                "mutants": [
                    {
                        "id": "restore-skipped",
                        "verdict": "killed",
                        "file": "pkg/mod.py",
                        "diff": "@@ -2 +2 @@\n-x\n+y",
                    },
                    {
                        "id": "wrong-device",
                        "verdict": "wrong-reason",
                        "file": "pkg/mod.py",
                        "why": "kills by accident",
                    },
                ]
            }
        ),
        encoding="utf-8",
    )
    out = {"json": tmp_path / "report.json", "html": tmp_path / "report.html", "md": tmp_path / "summary.md"}
    argv = ["--results", str(results), "--config", str(cfg), "--critical", str(crit)]
    argv += ["--json", str(out["json"]), "--html", str(out["html"]), "--markdown", str(out["md"])]
    assert mutation_report.main(argv) == 0
    return out


def test_json_follows_the_mutation_testing_elements_schema(report: dict[str, Path]) -> None:
    jsonschema = (
        pytest.importorskip("jsonschema") if os.environ.get("CI") != "true" else __import__("jsonschema")
    )
    data = json.loads(report["json"].read_text(encoding="utf-8"))
    jsonschema.validate(data, json.loads(SCHEMA.read_text(encoding="utf-8")))
    statuses = {m["id"]: m["status"] for f in data["files"].values() for m in f["mutants"]}
    assert statuses == {
        "pkg.mod.x_f__mutmut_1": "Killed",
        "pkg.mod.x_f__mutmut_2": "Survived",
        "pkg.mod.x_f__mutmut_3": "Ignored",
        "pkg.mod.x_f__mutmut_4": "NoCoverage",
        "pkg.mod.x_f__mutmut_5": "Timeout",
        "critical:restore-skipped": "Killed",
        "critical:wrong-device": "Survived",
    }
    ignored = next(m for m in data["files"]["pkg/mod.py"]["mutants"] if m["status"] == "Ignored")
    assert "both are 0 in every test" in ignored["statusReason"]
    assert data["files"]["pkg/mod.py"]["source"].startswith("def f(a, b):")


def test_markdown_summary_has_the_tally_survivors_and_critical_table(report: dict[str, Path]) -> None:
    text = report["md"].read_text(encoding="utf-8")
    assert "**Gate: FAILED**" in text
    assert "| mutmut | 5 | 2 | 1 | 0 | 2 | 50.00% |" in text
    assert "| critical | 2 | 1 | 0 | 0 | 1 | 50.00% |" in text
    assert "`pkg.mod.x_f__mutmut_2` | survived" in text
    assert "`pkg.mod.x_f__mutmut_3`" not in text.split("### Not killed")[1].split("###")[0]
    assert "| `wrong-device` | ❌ wrong-reason |" in text


def _browser() -> str | None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        _needed("chromium", "chromium is not installed (apt-get install -y chromium)")
    return browser


def _dom(browser: str, url: str, profile: Path, width: int = 1280) -> str:
    return subprocess.run(
        [
            browser,
            *CHROMIUM_FLAGS,
            f"--user-data-dir={profile}",
            f"--window-size={width},900",
            "--dump-dom",
            url,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    ).stdout


def test_html_renders_offline_in_headless_chromium(report: dict[str, Path], tmp_path: Path) -> None:
    page = report["html"].read_text(encoding="utf-8")
    # self-contained: nothing is fetched from anywhere
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    browser = _browser()
    if browser is None:
        return
    dom = _dom(browser, report["html"].as_uri(), tmp_path / "profile")
    # the inline script ran, so this is the browser's DOM and not just the file read back
    assert "7 mutants listed" in dom
    assert '<h2 class="file" id="file-pkg-mod-py">pkg/mod.py</h2>' in dom
    for name, status in [
        ("pkg.mod.x_f__mutmut_1", "Killed"),
        ("pkg.mod.x_f__mutmut_2", "Survived"),
        ("pkg.mod.x_f__mutmut_3", "Ignored"),
        ("pkg.mod.x_f__mutmut_4", "NoCoverage"),
        ("critical:wrong-device", "Survived"),
    ]:
        row = re.search(rf'<tr class="mutant" data-status="{status}" id="{re.escape(name)}"', dom)
        assert row, f"{name} is not shown as {status}"
    assert "Gate: FAILED" in dom
    # each file's score per engine, its source with the mutants in place, reasons and killing tests
    assert "<td>2 / 4 (50.0%)</td>" in dom  # mutmut in pkg/mod.py: 2 killed of 4 counted
    assert "the source with its 7 mutants in place" in dom
    assert 'href="#pkg.mod.x_f__mutmut_2"' in dom
    assert "equivalent: both are 0 in every test" in dom
    assert "(mutmut does not record which test)" in dom


@pytest.mark.parametrize("width", [1280, 1920])
def test_html_never_scrolls_sideways(report: dict[str, Path], tmp_path: Path, width: int) -> None:
    """Every <details> opened, long lines included: the page fits the window. A screenshot is kept."""
    data = json.loads(report["json"].read_text(encoding="utf-8"))
    long = "x" * 600  # a line far wider than any window
    data["files"]["pkg/mod.py"]["source"] += f"{long}\n"
    page = report["html"].read_text(encoding="utf-8").replace("def f(a, b):", f"def f(a, b):  # {long}")
    report["html"].write_text(page, encoding="utf-8")
    browser = _browser()
    if browser is None:
        return
    url = report["html"].as_uri() + "#open-all"
    dom = _dom(browser, url, tmp_path / "profile", width)
    assert 'data-overflow="false"' in dom, "the page scrolls sideways"
    shots = Path(os.environ.get("REPORT_SCREENSHOTS", tmp_path))
    shots.mkdir(parents=True, exist_ok=True)
    shot = shots / f"mutation-report-{width}.png"
    subprocess.run(
        [
            browser,
            *CHROMIUM_FLAGS,
            f"--user-data-dir={tmp_path / 'profile-shot'}",
            f"--window-size={width},1400",
            "--hide-scrollbars",
            f"--screenshot={shot}",
            url,
        ],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert shot.is_file()
    assert shot.stat().st_size > 10_000


def test_every_output_counts_the_same_mutants_the_same_way(
    report: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from mutation_html import category, engine_of

    data = json.loads(report["json"].read_text(encoding="utf-8"))
    tally = {t["engine"]: t for t in data["tally"]}
    # the schema's own statuses, read the gate's way, add up to the tally
    for engine, t in tally.items():
        mine = [category(m) for f in data["files"].values() for m in f["mutants"] if engine_of(m) == engine]
        assert len(mine) == t["total"]
        assert mine.count("killed") == t["killed"]
        assert mine.count("not killed") == t["not_killed"]
        assert mine.count("equivalent") == t["equivalent"] + t["skipped"]
    # the gate's lines, the Markdown rows and the HTML rows say the same numbers
    argv = ["--results", str(tmp_path / "results.json"), "--config", str(tmp_path / "mutation_config.toml")]
    argv += ["--critical", str(tmp_path / "critical.json"), "--json", str(tmp_path / "gate.json")]
    assert mutation_gate.main(argv) == 1  # the fixture's survivors are findings
    out = capsys.readouterr().out
    gate = {t["engine"]: t for t in json.loads((tmp_path / "gate.json").read_text())["tally"]}
    assert gate == tally
    md = report["md"].read_text(encoding="utf-8")
    page = report["html"].read_text(encoding="utf-8")
    for t in tally.values():
        score = "no score" if t["score"] is None else f"{t['score']:.2f}%"
        n = (t["total"], t["killed"], t["equivalent"], t["not_killed"])
        assert (
            f"{t['engine']}: {n[0]} mutants: {n[1]} killed, {n[2]} reviewed equivalent, {n[3]} not killed"
            in out
        )
        assert f"| {t['engine']} | {n[0]} | {n[1]} | {n[2]} | {t['skipped']} | {n[3]} | {score} |" in md
        assert (
            f"<tr data-engine='{t['engine']}'><td>{t['engine']}</td><td>{n[0]}</td><td>{n[1]}</td>"
            f"<td>{n[2]}</td><td>{t['skipped']}</td><td>{n[3]}</td><td>{score}</td></tr>"
        ) in page


def test_report_needs_an_output_and_readable_results(tmp_path: Path) -> None:
    assert mutation_report.main(["--results", str(tmp_path / "r.json")]) == 2
    assert mutation_report.main(["--results", str(tmp_path / "none.json"), "--markdown", "-"]) == 2


@pytest.mark.parametrize("option", ["--json", "--html", "--markdown"])
def test_an_output_that_is_a_folder_is_exit_2_before_any_work(
    report: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str
) -> None:
    argv = ["--results", str(tmp_path / "results.json"), "--config", str(tmp_path / "mutation_config.toml")]
    assert mutation_report.main([*argv, option, str(tmp_path)]) == 2
    assert f"{option} {tmp_path} is a directory" in capsys.readouterr().err
    assert mutation_gate.main([*argv, "--json", str(tmp_path)]) == 2
    assert f"--json {tmp_path} is a directory" in capsys.readouterr().err
