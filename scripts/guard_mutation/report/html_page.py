"""The HTML page: one self-contained file that opens offline (no script, style or font from the network).

Each engine's figures on a row of its own, the findings, then every mutant file by file: its status, its
engine, its lines, the change with its diff, and the tests that killed it or why it stands. Long code
wraps rather than widen the page: it never scrolls sideways.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from ..judge import Judged, Judgement, Status
from .elements import description, ident, order, reason_of, status_of

_CSS = """
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,sans-serif;margin:1.5em;color:#222;overflow-wrap:anywhere}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em}
table{border-collapse:collapse;margin:.5em 0 1.5em;width:100%}
table.mutants{table-layout:fixed}
col.status{width:9em}col.engine{width:7em}col.id{width:14em}col.line{width:5em}
td,th{border:1px solid #ccc;padding:.25em .5em;text-align:left;vertical-align:top}
th{background:#f3f3f3}
pre,code{font-size:12px;white-space:pre-wrap;overflow-wrap:anywhere;margin:0}
.status{font-weight:600;padding:0 .4em;border-radius:3px;white-space:nowrap}
.Killed{background:#d4f4d4}.Survived{background:#f8c9c9}.NoCoverage{background:#fbe3b5}
.Timeout{background:#d4e4f8}.Ignored{background:#e6e6e6}.CompileError{background:#efd9f5}
.pass{color:#1a7f1a}.fail{color:#b00020}
small{color:#555}
"""

# Counts the rows (so a browser's DOM shows the script ran), opens every diff under #open-all, and marks
# on <body> whether the page is wider than the window.
_JS = """
function fits(){var d=document.documentElement;
 document.body.dataset.overflow=String(d.scrollWidth>d.clientWidth);}
document.addEventListener('DOMContentLoaded',function(){
 if(location.hash==='#open-all'){document.querySelectorAll('details').forEach(function(x){x.open=true;});}
 document.getElementById('shown').textContent=document.querySelectorAll('tr.mutant').length+' mutants listed';
 fits();});
window.addEventListener('load',fits);
window.addEventListener('resize',fits);
"""


def page(judgement: Judgement) -> str:
    e = html.escape
    findings = judgement.findings
    by_file: dict[str, list[Judged]] = {}
    for judged in sorted(judgement.judged, key=order):
        by_file.setdefault(judged.record.mutant.file, []).append(judged)
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        "<meta name='viewport' content='width=device-width, initial-scale=1'>",
        f"<title>Mutation report</title><style>{_CSS}</style><script>{_JS}</script></head><body>",
        "<h1>Mutation report</h1>",
        f"<p id='verdict' class='{'fail' if findings else 'pass'}'>{len(findings)} finding(s)</p>",
        *_engines(judgement),
    ]
    if findings:  # a mutant's finding links to its row
        linked = [
            f"<a href='#{e(ident(j.record.mutant))}'>{e(j.finding)}</a>"
            for j in judgement.judged
            if j.finding
        ]
        listed = [*linked, *map(e, judgement.review_findings)]
        parts += ["<h2>Findings</h2><ul id='findings'>", *(f"<li>{f}</li>" for f in listed), "</ul>"]
    parts.append("<h2>Files</h2><table id='files'><tr><th>file</th><th>mutants</th><th>findings</th></tr>")
    for path, here in by_file.items():
        count = sum(j.status is Status.FINDING for j in here)
        link = f"<a href='#{_anchor(path)}'>{e(path)}</a>"
        parts.append(f"<tr><td>{link}</td><td>{len(here)}</td><td>{count}</td></tr>")
    parts.append("</table><p id='shown'></p>")
    for path, here in by_file.items():
        parts += _file(path, here)
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _engines(judgement: Judgement) -> list[str]:
    e = html.escape
    head = "".join(f"<th>{s.value}</th>" for s in Status)
    rows = [f"<h2>Engines</h2><table id='engines'><tr><th>engine</th><th>score</th>{head}<th>notes</th></tr>"]
    for tally in judgement.tallies:
        name = tally.engine + ("" if tally.whole else " (a part)")
        score = "no score: no mutant" if tally.score is None else f"{tally.score:.1f} %"
        counts = "".join(f"<td>{tally.counts.get(s, 0)}</td>" for s in Status)
        said = "<br>".join(e(note) for note in tally.notes)
        cells = f"<td>{e(name)}</td><td>{score}</td>{counts}<td>{said}</td>"
        rows.append(f"<tr data-engine='{e(tally.engine)}'>{cells}</tr>")
    rows.append("</table>")
    return rows


def _anchor(path: str) -> str:
    return "file-" + "".join(c if c.isalnum() else "-" for c in path)


def _file(path: str, judged: Sequence[Judged]) -> list[str]:
    e = html.escape
    parts = [
        f"<h2 class='file' id='{_anchor(path)}'>{e(path)}</h2>",
        "<table class='mutants'><colgroup><col class='status'><col class='engine'><col class='id'>"
        "<col class='line'><col><col></colgroup>",
        "<tr><th>status</th><th>engine</th><th>mutant</th><th>lines</th><th>change</th>"
        "<th>killed by, or why not</th></tr>",
    ]
    for j in judged:
        mutant, status = j.record.mutant, status_of(j)
        lines = str(mutant.line) if mutant.end_line == mutant.line else f"{mutant.line}-{mutant.end_line}"
        said = (", ".join(j.record.outcome.killers), reason_of(j))
        why = "<br>".join(f"<small>{e(w)}</small>" for w in said if w)
        parts.append(
            f"<tr class='mutant' id='{e(ident(mutant))}' data-status='{status}' "
            f"data-finding='{str(j.status is Status.FINDING).lower()}'>"
            f"<td><span class='status {status}'>{status}</span></td><td>{e(mutant.engine)}</td>"
            f"<td><code>{e(mutant.id)}</code></td><td>{lines}</td><td>{e(description(j))}"
            f"<details><summary>diff</summary><pre>{e(mutant.diff)}</pre></details></td><td>{why}</td></tr>"
        )
    parts.append("</table>")
    return parts
