"""`report.html`: one self-contained page (inline CSS, PNG data URIs, no script, no network)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from acceptance.report import banner as verdict_banner
from acceptance.report import heatmap, heatmap_html
from acceptance.report import localize as localization
from acceptance.report.causes import headline
from acceptance.report.data import ReportData, TestRecord, iter_tables
from acceptance.report.decision import decide
from acceptance.report.evidence_links import EvidenceIndex
from acceptance.report.markup import esc as _e
from acceptance.report.plots import busbw_plots, diagnostics_matrix
from acceptance.report.plots_recurrence import recurrence_plot
from acceptance.report.plots_training import loss_plot, steptime_plot

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#222;background:#fff}
main{max-width:1100px;margin:0 auto;padding:1em 1.5em}
h1{font-size:1.5em;margin:.3em 0}h2{border-bottom:2px solid #ddd;padding-bottom:.2em;margin-top:1.6em}
table{border-collapse:collapse;margin:.5em 0;font-size:.92em}
th,td{border:1px solid #ccc;padding:.25em .5em;text-align:left;vertical-align:top}
th{background:#f2f2f2}
td:first-child{white-space:nowrap}
.banner{background:#4a4a4a;color:#ffd54f;font-weight:bold;text-align:center;padding:.35em;letter-spacing:.08em}
.unsigned{background:#8b0000;color:#fff;padding:.5em 1em;font-weight:bold}
.signed{background:#e8f4ea;border:1px solid #9c9;padding:.5em 1em}
.margin-note{background:#fff3cd;border:1px solid #d4a000;padding:.5em 1em;margin-top:.3em}
.cause{background:#f8d7da;border:1px solid #b00;padding:.5em 1em;margin-top:.3em;font-weight:bold}
.pass,.passed{background:#d4edda}.fail,.failed,.error{background:#f8d7da}
.skip,.skipped,.warn,.inconclusive,.not-comparable,.pending{background:#fff3cd}
.missing{background:#e2e3e5}
.notrun{color:#666;font-style:italic}
.caption{color:#555;font-size:.88em;margin:.2em 0 1em}
img{max-width:100%;height:auto;border:1px solid #eee}
code{font-size:.9em}
"""


_SIMULATED = "SIMULATED: this report comes from the embedded simulator, not from hardware"


def _img(uri: str | None, alt: str) -> str:
    return f'<img src="{uri}" alt="{_e(alt)}">' if uri else '<p class="notrun">not run</p>'


_STEPTIME_NOTE = (
    "Left: distributions of the kept steps (warm-up, first steps after a restore, checkpoint/eval "
    "steps and outliers dropped), baseline grey, smoke run blue; dashed: baseline median; dotted red: "
    "the limit (1 + margin) × baseline median; solid blue: smoke median. Right: the smoke run per step, "
    "dropped steps as crosses."
)
_PROBATION_NOTE = (
    "Criterion 5: each signal over the probation window, hours since the acceptance passed; dotted lines: "
    "the rules' limits (or the GPUs expected); red: the first recurrence; grey: the part of the window "
    "not yet elapsed. Counters are increases per minute; only minutes with something to show are drawn."
)
_LOSS_NOTE = (
    "Top: loss before the incident (grey) and after the restore (blue); black: the robust trend "
    "fitted before the restore, dashed where extrapolated, shaded ± spike limit; dashed red: the "
    "restore step; red dots: points beyond the spike limit. Bottom: z-scores of the judged steps "
    "after the restore with the spike (dashed) and level-shift (dotted) limits."
)


def _plot(uri: str | None, alt: str, note: str) -> str:
    return f'{_img(uri, alt)}<p class="caption">{_e(note)}</p>' if uri else _img(uri, alt)


def _fabric(verdicts: list[dict[str, Any]]) -> str:
    plots = busbw_plots(verdicts)
    if not plots:
        return '<p class="notrun">not run</p>'
    return "".join(f"<h3>{_e(title)}</h3>{_img(uri, title + ' busbw plot')}" for title, uri in plots)


def _cell(statuses: Mapping[str, str]) -> tuple[str, str]:
    """One node × test cell: the worst status (its CSS class) and which GPUs had what."""
    by_status: dict[str, list[str]] = {}
    for gpu, status in statuses.items():
        by_status.setdefault(status, []).append(gpu)
    worst = max(by_status, key=heatmap.severity)
    parts = []
    for status in sorted(by_status, key=lambda st: -heatmap.severity(st)):
        gpus = by_status[status]
        parts.append(f"{status} ×{len(gpus)}" if status == "pass" else f"{status}: GPU {', '.join(gpus)}")
    return worst, "; ".join(parts)


def _dcgm(data: ReportData, index: EvidenceIndex) -> str:
    """The node × test heatmap, then the per-node table (GPUs named) behind <details>."""
    verdicts = [v for t in data.tests if t.criterion[0] == 1 for v in t.verdicts]
    drawn = heatmap_html.render(heatmap.build(verdicts, index))
    if not drawn:
        return _diagnostics(verdicts)
    bad = [v for v in verdicts if v.get("status") != "pass" or _any_row_not_passed(v)]
    if not bad:
        return drawn
    return f"{drawn}<h3>Nodes that did not pass every test, GPUs named</h3>{_diagnostics(bad)}"


def _any_row_not_passed(verdict: Mapping[str, Any]) -> bool:
    return any(row.get("status") != "pass" for _, rows in iter_tables([verdict], {"status"}) for row in rows)


def _diagnostics(verdicts: list[dict[str, Any]]) -> str:
    """Nodes × tests; a cell lists the GPUs that did not pass (a 1024-node cluster stays 1024 rows)."""
    tests, rows, cells = diagnostics_matrix(verdicts)
    if not rows:
        return '<p class="notrun">not run</p>'
    nodes: dict[str, list[str]] = {}
    for node, gpu in rows:
        nodes.setdefault(node, []).append(gpu)
    head = "<tr><th>node</th><th>GPUs</th>" + "".join(f"<th>{_e(t)}</th>" for t in tests) + "</tr>"
    body = []
    for node, gpus in nodes.items():
        tds = []
        for test in tests:
            worst, text = _cell({gpu: cells.get((node, gpu, test), "missing") for gpu in gpus})
            tds.append(f'<td class="{_e(worst)}">{_e(text)}</td>')
        body.append(f"<tr><td>{_e(node)}</td><td>{len(gpus)}</td>{''.join(tds)}</tr>")
    return f"<table>{head}{''.join(body)}</table>"


def _definition_list(obj: Mapping[str, Any], depth: int = 0) -> str:
    if not obj:
        return '<p class="notrun">none recorded</p>'
    rows = []
    for key, value in obj.items():
        if isinstance(value, Mapping) and depth < 4:
            shown = _definition_list(value, depth + 1)
        elif isinstance(value, list | tuple):
            shown = "<br>".join(_e(v) for v in value)
        else:
            shown = _e(value)
        rows.append(f"<tr><th>{_e(key)}</th><td>{shown}</td></tr>")
    return f"<table>{''.join(rows)}</table>"


# Above this many passed verdicts their figures stay in junit.xml and report-data.json only: at 1024
# nodes they would be 2 MB of "gpu5.pcie=pass" that the heatmap already shows.
PASSED_FIGURES_MAX = 200


def _evidence(tests: Sequence[TestRecord]) -> str:
    items = []
    passed = [(t, v) for t in tests for v in t.verdicts if v.get("status") == "pass"]
    hide_passed = len(passed) > PASSED_FIGURES_MAX
    for test in tests:
        for verdict in test.verdicts:
            lines = verdict.get("evidence") or []
            figures = verdict.get("figures") or {}
            if (not lines and not figures) or (hide_passed and verdict.get("status") == "pass"):
                continue
            figs = ", ".join(f"{_e(k)}={_e(v)}" for k, v in figures.items())
            ev = "".join(f"<li>{_e(line)}</li>" for line in lines)
            items.append(
                f"<details><summary><code>{_e(test.nodeid)}</code>: {_e(verdict.get('subject'))}</summary>"
                f"<p>{figs}</p><ul>{ev}</ul></details>"
            )
    if hide_passed:
        items.append(
            f'<p class="notrun">{len(passed)} passed verdicts: their figures are in junit.xml (properties) and '
            "report-data.json</p>"
        )
    return "".join(items) or '<p class="notrun">none</p>'


def _files(files: Iterable[str]) -> str:
    """The folder's files, one collapsed list per top-level folder."""
    by_top: dict[str, list[str]] = {}
    for f in files:
        by_top.setdefault(f.split("/", 1)[0] if "/" in f else "", []).append(f)
    if not by_top:
        return '<p class="notrun">none</p>'
    out = []
    for top, names in by_top.items():
        items = "".join(f'<li><a href="{_e(f)}">{_e(f)}</a></li>' for f in names)
        out.append(
            f"<ul>{items}</ul>"
            if not top
            else f"<details><summary>{_e(top)}/ ({len(names)} files)</summary><ul>{items}</ul></details>"
        )
    return "".join(out)


def render_html(data: ReportData, *, signing: str, signed: bool, files: Iterable[str] = ()) -> str:
    """The whole page. `signing` is one line on the signatures (or why there are none)."""
    prov = data.provenance
    verdicts = data.verdicts()
    title = f"Recovery acceptance: {prov.get('cluster', '?')}"
    if prov.get("ticket"):
        title += f" ({prov['ticket']})"
    listed = list(files)
    index = EvidenceIndex(listed)
    decision = decide(data)
    banner = verdict_banner.render_banner(decision)
    if data.simulated:
        banner += f'<div class="banner">{_SIMULATED}</div>'
    sig_class = "signed" if signed else "unsigned"
    differ = prov.get("margins_differ") or {}
    notes = "".join(f'<div class="margin-note">{_e(line)}</div>' for line in differ.values())
    counts: dict[str, int] = {}
    for test in data.tests:
        counts[test.outcome] = counts.get(test.outcome, 0) + 1
    tally = ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) or "no tests"
    causes = "".join(f'<div class="cause">{_e(line)}</div>' for line in headline(data))
    steptime = _plot(steptime_plot(verdicts), "step time distributions", _STEPTIME_NOTE)
    loss = _plot(loss_plot(verdicts), "loss around the restore", _LOSS_NOTE)
    probation = _plot(recurrence_plot(verdicts), "signals over the probation window", _PROBATION_NOTE)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy"
 content="default-src 'none'; img-src data:; style-src 'unsafe-inline'">
<title>{_e(decision.banner.value)}: {_e(title)}</title>
<style>{_CSS}{verdict_banner.CSS}{heatmap_html.CSS}</style></head>
<body>{banner}<main>
<h1>{_e(title)}</h1>
<p>{_e(prov.get("start_utc", ""))} → {_e(prov.get("end_utc", ""))} · {_e(tally)}</p>
{causes}<div class="{sig_class}">{_e(signing)}</div>{notes}
<h2 id="summary">Criteria</h2>{verdict_banner.render_criteria(decision, index)}
<h2 id="diagnostics">DCGM diagnostics: nodes × tests</h2>{_dcgm(data, index)}
<h2 id="fabric">Fabric: busbw vs message size</h2>{_fabric(verdicts)}
<h2 id="localize">Fabric localization: group results per round</h2>{localization.render(verdicts)}
<h2 id="steptime">Smoke step time vs baseline</h2>{steptime}
<h2 id="loss">Loss around the restore</h2>{loss}
<h2 id="probation">Probation: signals over the window</h2>{probation}
<h2 id="evidence">Figures and evidence per verdict</h2>{_evidence(data.tests)}
<h2 id="provenance">Conditions and provenance</h2>{_definition_list(prov)}
<h2 id="files">Files of this report</h2>{_files(listed)}
</main></body></html>
"""
