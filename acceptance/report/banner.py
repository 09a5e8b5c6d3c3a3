"""The top of `report.html`: the verdict banner, then each criterion as one row.

A criterion whose items all passed is one collapsed row (``16/16 nodes passed DCGM r3``) that opens
onto its items; a criterion with failures shows each failed item's one line and links to its
evidence files (relative links inside the report folder), its passed items collapsed below.
"""

from __future__ import annotations

from acceptance.report.decision import Banner, CriterionResult, Decision, Item, State
from acceptance.report.evidence_links import EvidenceIndex
from acceptance.report.markup import esc as _e

# The banner's colours; tests read them back from a screenshot.
COLORS = {Banner.ACCEPTED: "#1e7b34", Banner.NOT_ACCEPTED: "#b3261e", Banner.PENDING: "#c77700"}

CSS = f"""
.verdict{{color:#fff;padding:.7em 1.5em .8em;font-family:system-ui,sans-serif}}
.verdict .word{{font-size:2.2em;font-weight:800;letter-spacing:.06em}}
.verdict .why{{font-size:1.05em;margin-top:.2em}}.verdict ul{{margin:.3em 0 0;padding-left:1.2em}}
.verdict.accepted{{background:{COLORS[Banner.ACCEPTED]}}}
.verdict.not-accepted{{background:{COLORS[Banner.NOT_ACCEPTED]}}}
.verdict.pending{{background:{COLORS[Banner.PENDING]}}}
.crit{{border:1px solid #ccc;border-left:6px solid #999;margin:.35em 0;padding:.3em .7em}}
.crit>summary,.crit .head{{cursor:pointer;font-size:1em}}
.crit.passed{{border-left-color:{COLORS[Banner.ACCEPTED]}}}.crit.failed,.crit.blocked{{border-left-color:#b3261e}}
.crit.pending{{border-left-color:{COLORS[Banner.PENDING]}}}.crit.not-applicable{{border-left-color:#bbb;color:#555}}
.crit ul{{margin:.3em 0;padding-left:1.4em}}.crit li{{margin:.15em 0}}
.crit li.failed,.crit li.blocked{{color:#7a1010}}.crit .ev{{display:block;font-size:.85em}}
.crit .ev a{{margin-right:.9em}}
"""

_MARK = {State.PASSED: "✓", State.FAILED: "✗", State.BLOCKED: "✗", State.PENDING: "…", State.NOT_APPLICABLE: "–"}


def render_banner(decision: Decision) -> str:
    """The coloured block the page opens with: the verdict word and why."""
    line = decision.line()
    why = line.split(": ", 1)[1] if ": " in line else ""
    extra = ""
    if decision.banner is Banner.PENDING and len(decision.reasons) > 1:
        extra = "<ul>" + "".join(f"<li>{_e(r)}</li>" for r in decision.reasons[1:]) + "</ul>"
    return (
        f'<div class="verdict {decision.banner.css}" id="verdict"><div class="word">{_e(decision.banner.value)}</div>'
        f'<div class="why">{_e(why)}</div>{extra}</div>'
    )


def _evidence(criterion: CriterionResult, item: Item, index: EvidenceIndex) -> str:
    files = index.of(criterion.number, item.verdict or {}) if item.verdict is not None else ()
    if not files:
        return ""
    links = " ".join(f'<a href="{_e(f)}">{_e(f)}</a>' for f in files)
    return f'<span class="ev">evidence: {links}</span>'


def _item(criterion: CriterionResult, item: Item, index: EvidenceIndex | None) -> str:
    evidence = _evidence(criterion, item, index) if index is not None else ""
    return (
        f'<li class="{item.state.value}">{_MARK[item.state]} <code>{_e(item.name)}</code>: {_e(item.line)}'
        f"{evidence}</li>"
    )


def _head(criterion: CriterionResult) -> str:
    state = criterion.state
    tail = criterion.passed_line()
    if state is State.NOT_APPLICABLE:
        tail = "not applicable to this run"
    return f"{_MARK[state]} <b>{_e(criterion.heading)}</b> — {_e(tail)}"


def render_criterion(criterion: CriterionResult, index: EvidenceIndex) -> str:
    """One row per criterion; what did not pass is shown, what passed is behind <details>."""
    state = criterion.state
    passed = criterion.having(State.PASSED)
    shown = [i for i in criterion.items if i.state is not State.PASSED]
    passed_list = "<ul>" + "".join(_item(criterion, i, None) for i in passed) + "</ul>"
    if not shown:
        return f'<details class="crit {state.value}"><summary>{_head(criterion)}</summary>{passed_list}</details>'
    visible = "<ul>" + "".join(_item(criterion, i, index) for i in shown) + "</ul>"
    more = ""
    if passed:
        more = f"<details><summary>{len(passed)} passed</summary>{passed_list}</details>"
    return f'<div class="crit {state.value}"><div class="head">{_head(criterion)}</div>{visible}{more}</div>'


def render_criteria(
    decision: Decision, files: frozenset[str] | list[str] | tuple[str, ...] | EvidenceIndex = ()
) -> str:
    """The criteria's rows; `files`: the report folder's (or their index, built once per page)."""
    if not decision.criteria:
        return '<p class="notrun">No test ran.</p>'
    index = files if isinstance(files, EvidenceIndex) else EvidenceIndex(files)
    return "".join(render_criterion(c, index) for c in decision.criteria)
