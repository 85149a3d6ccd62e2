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
EQUIV = (
    '[gate]\n[[equivalent]]\nfunction = "pkg.mod:f"\ndiff = "return a * b"\n'
    'reason = "both are 0 in every test"\n'
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


def test_markdown_summary_has_totals_survivors_and_critical_table(report: dict[str, Path]) -> None:
    text = report["md"].read_text(encoding="utf-8")
    assert "**Gate: FAILED**" in text
    assert "| survived | 2 |" in text
    assert "| equivalent (reviewed) | 1 |" in text
    assert "`pkg.mod.x_f__mutmut_2` | survived" in text
    assert "`pkg.mod.x_f__mutmut_3`" not in text.split("### Not killed")[1].split("###")[0]
    assert "| `wrong-device` | ❌ wrong-reason |" in text


def test_html_renders_offline_in_headless_chromium(report: dict[str, Path], tmp_path: Path) -> None:
    page = report["html"].read_text(encoding="utf-8")
    # self-contained: nothing is fetched from anywhere
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        _needed("chromium", "chromium is not installed (apt-get install -y chromium)")
        return
    dom = subprocess.run(
        [
            browser,
            *CHROMIUM_FLAGS,
            f"--user-data-dir={tmp_path / 'profile'}",
            "--dump-dom",
            report["html"].as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    ).stdout
    # the inline script ran, so this is the browser's DOM and not just the file read back
    assert "7 mutants listed" in dom
    assert '<h2 class="file">pkg/mod.py</h2>' in dom
    for name, status in [
        ("pkg.mod.x_f__mutmut_1", "Killed"),
        ("pkg.mod.x_f__mutmut_2", "Survived"),
        ("pkg.mod.x_f__mutmut_3", "Ignored"),
        ("pkg.mod.x_f__mutmut_4", "NoCoverage"),
        ("critical:wrong-device", "Survived"),
    ]:
        row = re.search(rf'<tr class="mutant" data-status="{status}" id="{re.escape(name)}">', dom)
        assert row, f"{name} is not shown as {status}"
    assert "Gate: FAILED" in dom


def test_report_needs_an_output_and_readable_results(tmp_path: Path) -> None:
    assert mutation_report.main(["--results", str(tmp_path / "r.json")]) == 2
    assert mutation_report.main(["--results", str(tmp_path / "none.json"), "--markdown", "-"]) == 2
