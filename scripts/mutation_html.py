"""The report's HTML page: one self-contained file that opens offline, nothing fetched.

It shows the same tally as every other output, each file's score per engine, each file's source with
its mutants in place, and for each mutant its status, the test that killed it (where the engine
records one) and, for a reviewed equivalent, the reason. The page never scrolls sideways: long code
wraps instead.
"""

from __future__ import annotations

import html
from typing import Any

from mutation_evaluation import EngineTally, Evaluation, tally
from mutation_lines import SET_ASIDE, coverage_lines, line_engines, one_line, source_of

ENGINE_ORDER = ("mutmut", "sweep", "critical", "core-deletions")

# Schema status -> the gate's category, per engine: what each engine's verdicts mean for the gate.
_KILLED = {
    "mutmut": {"Killed", "Timeout", "CompileError"},
    "sweep": {"Killed", "Timeout"},
    "critical": {"Killed"},
    "core-deletions": {"Killed"},
}

_CSS = """
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,sans-serif;margin:1.5em;color:#222;overflow-wrap:anywhere}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em}
table{border-collapse:collapse;margin:.5em 0 1.5em;width:100%}
table.mutants{table-layout:fixed}
table.mutants col.status{width:9em}table.mutants col.engine{width:6em}table.mutants col.line{width:4em}
td,th{border:1px solid #ccc;padding:.25em .5em;text-align:left;vertical-align:top}
th{background:#f3f3f3}
pre,code{font-size:12px;white-space:pre-wrap;overflow-wrap:anywhere;margin:0}
.status{font-weight:600;padding:0 .4em;border-radius:3px;white-space:nowrap}
.Killed{background:#d4f4d4}.Survived{background:#f8c9c9}.NoCoverage{background:#fbe3b5}
.Timeout{background:#d4e4f8}.Ignored{background:#e6e6e6}.CompileError,.RuntimeError{background:#efd9f5}
.verdict-pass{color:#1a7f1a}.verdict-fail{color:#b00020}
ol.source{font:12px/1.4 ui-monospace,monospace;padding-left:4em;margin:.5em 0}
ol.source li{white-space:pre-wrap;overflow-wrap:anywhere}
ol.source li.has-mutants{background:#fffbe6}
ol.source a.badge{display:inline-block;margin-left:.4em;padding:0 .3em;border-radius:3px;
 font:11px system-ui,sans-serif;text-decoration:none;color:#222}
small{color:#555}
"""

_JS = """
function markOverflow(){
 var d=document.documentElement;
 document.body.dataset.overflow=String(d.scrollWidth>d.clientWidth);}
document.addEventListener('DOMContentLoaded',function(){
 if(location.hash==='#open-all'){document.querySelectorAll('details').forEach(function(x){x.open=true;});}
 var rows=document.querySelectorAll('tr.mutant');
 document.getElementById('mutant-count').textContent=rows.length+' mutants listed';
 var box=document.getElementById('only-open');
 box.addEventListener('change',function(){
  rows.forEach(function(r){
   r.style.display=(box.checked&&r.dataset.category!=='not killed')?'none':'';});
  markOverflow();});
 markOverflow();});
window.addEventListener('load',markOverflow);
window.addEventListener('resize',markOverflow);
"""


def engine_of(item: dict[str, Any]) -> str:
    prefix = str(item["id"]).partition(":")[0]
    return prefix if prefix in ENGINE_ORDER else "mutmut"


def category(item: dict[str, Any]) -> str:
    """The gate's reading of one schema mutant: killed, equivalent (or skipped), or not killed."""
    engine = engine_of(item)
    if item["status"] in _KILLED[engine]:
        return "killed"
    if item["status"] == "Ignored":
        return "equivalent"
    return "not killed"


def render_html(ev: Evaluation, report: dict[str, Any], seen: str | None = None) -> str:
    e = html.escape
    findings = ev.findings()
    verdict = (
        '<p class="verdict-pass" id="verdict">Gate: PASSED</p>'
        if not findings
        else f'<p class="verdict-fail" id="verdict">Gate: FAILED ({len(findings)} finding(s))</p>'
    )
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        "<meta name='viewport' content='width=device-width, initial-scale=1'>",
        "<title>guard_lib mutation report</title>",
        f"<style>{_CSS}</style><script>{_JS}</script></head><body>",
        "<h1>guard_lib mutation report</h1>",
        verdict,
        f"<p id='score'>Gate on mutmut's mutants: {e(ev.score_text())}</p>",
        *_tally_table(tally(ev)),
        *([f"<p id='visibility'>{e(seen)}</p>"] if seen else []),
    ]
    if findings:
        parts.append("<h2>Findings</h2><ul id='findings'>")
        parts += [f"<li>{e(f)}</li>" for f in findings]
        parts.append("</ul>")
    parts += _file_scores(report)
    parts += _html_sweep(ev)
    parts += [
        "<h2>Mutants, file by file</h2>",
        "<p id='mutant-count'></p>",
        "<label><input type='checkbox' id='only-open'> show only the mutants not killed</label>",
    ]
    diffs = _diffs(ev)
    for path, entry in sorted(report["files"].items()):
        parts += _file_section(path, entry, diffs)
    parts.append("</body></html>")
    return "\n".join(parts)


def _tally_table(counts: list[EngineTally]) -> list[str]:
    rows = [
        "<table id='totals'><tr><th>engine</th><th>mutants</th><th>killed</th><th>reviewed equivalent</th>"
        "<th>skipped</th><th>not killed</th><th>score</th></tr>"
    ]
    for t in counts:
        score = "no score" if t.score is None else f"{t.score:.2f}%"
        rows.append(
            f"<tr data-engine='{t.engine}'><td>{t.engine}</td><td>{t.total}</td><td>{t.killed}</td>"
            f"<td>{t.equivalent}</td><td>{t.skipped}</td><td>{t.not_killed}</td><td>{score}</td></tr>"
        )
    rows.append("</table>")
    return rows


def _anchor(path: str) -> str:
    return "file-" + "".join(c if c.isalnum() else "-" for c in path)


def _file_scores(report: dict[str, Any]) -> list[str]:
    e = html.escape
    rows = [
        "<h2>Files</h2><table id='files'><tr><th>file</th>"
        + "".join(f"<th>{n}: killed / counted</th>" for n in ENGINE_ORDER)
        + "<th>not killed</th></tr>"
    ]
    for path, entry in sorted(report["files"].items()):
        cells = []
        open_count = 0
        for engine in ENGINE_ORDER:
            mine = [category(m) for m in entry["mutants"] if engine_of(m) == engine]
            killed, missed = mine.count("killed"), mine.count("not killed")
            open_count += missed
            counted = killed + missed
            score = f" ({100 * killed / counted:.1f}%)" if counted else ""
            cells.append(f"<td>{killed} / {counted}{score}</td>" if mine else "<td>-</td>")
        rows.append(
            f"<tr><td><a href='#{_anchor(path)}'>{e(path)}</a></td>{''.join(cells)}<td>{open_count}</td></tr>"
        )
    rows.append("</table>")
    return rows


def _killed_by(item: dict[str, Any]) -> str:
    if item.get("killedBy"):
        return ", ".join(str(t) for t in item["killedBy"])
    if category(item) == "killed" and engine_of(item) == "mutmut":
        return "(mutmut does not record which test)"
    return ""


def _file_section(path: str, entry: dict[str, Any], diffs: dict[str, str]) -> list[str]:
    e = html.escape
    mutants = sorted(entry["mutants"], key=lambda m: (m["location"]["start"]["line"], m["id"]))
    parts = [
        f'<h2 class="file" id="{_anchor(path)}">{e(path)}</h2>',
        "<table class='mutants'><colgroup><col class='status'><col class='engine'><col><col class='line'>"
        "<col><col></colgroup>",
        "<tr><th>status</th><th>engine</th><th>mutant</th><th>line</th><th>mutation</th>"
        "<th>killed by, or why not</th></tr>",
    ]
    for m in mutants:
        status = m["status"]
        diff = diffs.get(m["id"], "")
        detail = f"<details><summary>diff</summary><pre>{e(diff)}</pre></details>" if diff else ""
        why = [_killed_by(m), m.get("statusReason", "")]
        parts.append(
            f'<tr class="mutant" data-status="{e(status)}" id="{e(m["id"])}" '
            f'data-category="{category(m)}">'
            f"<td><span class='status {e(status)}'>{e(status)}</span></td><td>{engine_of(m)}</td>"
            f"<td><code>{e(m['id'])}</code></td><td>{m['location']['start']['line']}</td>"
            f"<td>{e(m.get('description', ''))}{detail}</td>"
            f"<td>{'<br>'.join(f'<small>{e(w)}</small>' for w in why if w)}</td></tr>"
        )
    parts.append("</table>")
    parts += _source_view(path, entry.get("source") or "", mutants)
    return parts


def _source_view(path: str, source: str, mutants: list[dict[str, Any]]) -> list[str]:
    """The file as written, each line followed by badges for the mutants on it, linked to their rows."""
    e = html.escape
    if not source:
        return []
    by_line: dict[int, list[dict[str, Any]]] = {}
    for m in mutants:
        by_line.setdefault(int(m["location"]["start"]["line"]), []).append(m)
    items = []
    for number, text in enumerate(source.splitlines(), start=1):
        here = by_line.get(number, [])
        badges = "".join(
            f"<a class='badge {e(m['status'])}' href='#{e(m['id'])}' title='{e(m['id'])}'>"
            f"{engine_of(m)[0]}:{e(m['status'])}</a>"
            for m in here
        )
        css = " class='has-mutants'" if here else ""
        items.append(f"<li{css} value='{number}'>{e(text) or ' '}{badges}</li>")
    return [
        f"<details class='source'><summary>{e(path)}: the source with its {len(mutants)} mutants in place"
        "</summary><ol class='source'>",
        *items,
        "</ol></details>",
    ]


def _html_sweep(ev: Evaluation) -> list[str]:
    e = html.escape
    coverage = line_engines(ev)
    if ev.sweep is None or coverage is None:
        return []
    parts = [
        "<h2>Every executable line</h2>",
        *(f"<p class='lines'>{e(line)}</p>" for line in coverage_lines(coverage)),
        "<table id='line-engines'><tr><th>file</th><th>executable lines</th><th>sweep</th><th>mutmut</th>"
        "<th>critical</th><th>set aside</th><th>any engine</th></tr>",
    ]
    for path, lines in sorted(coverage.executable.items()):
        per = coverage.engines.get(path, {})

        def count(engine: str | None, lines: list[int] = lines, per: dict[int, set[str]] = per) -> int:
            return sum(1 for ln in lines if (per.get(ln) if engine is None else engine in per.get(ln, set())))

        parts.append(
            f"<tr><td>{e(path)}</td><td>{len(lines)}</td><td>{count('sweep')}</td><td>{count('mutmut')}</td>"
            f"<td>{count('critical')}</td><td>{count(SET_ASIDE)}</td><td>{count(None)}</td></tr>"
        )
    parts.append("</table>")
    for path, lines in sorted(coverage.executable.items()):
        per = coverage.engines.get(path, {})
        source = source_of(path).splitlines()
        parts.append(f"<details class='line-engines'><summary>{e(path)}: engines per line</summary><table>")
        parts.append("<tr><th>line</th><th>engines</th><th>source</th></tr>")
        for ln in lines:
            engines = ", ".join(sorted(per.get(ln, set()))) or "none"
            text = source[ln - 1].strip() if 0 < ln <= len(source) else ""
            parts.append(
                f"<tr><td>{ln}</td><td>{e(engines)}</td><td><code>{e(one_line(text))}</code></td></tr>"
            )
        parts.append("</table></details>")
    return parts


def _diffs(ev: Evaluation) -> dict[str, str]:
    found = {r.mutant.id: r.mutant.diff for r in ev.mutmut.records}
    found.update({f"critical:{c.id}": c.diff for c in ev.critical or []})
    return found
