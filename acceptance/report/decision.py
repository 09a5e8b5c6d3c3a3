"""The run's verdict, first: ACCEPTED, NOT ACCEPTED or PENDING, with what failed grouped by criterion.

Pure: `ReportData` in, a `Decision` out; `banner.py` draws it in the HTML, the plugin prints its
line first in the terminal summary. A wrong ACCEPTED costs a week of corrupted training, so
ACCEPTED is the one verdict that needs every condition; anything not positively judged keeps it out:

- NOT ACCEPTED: an item failed or errored; a verdict FAIL, ERROR, NOT COMPARABLE (conditions differ
  from the baseline's: a failure, never a silent pass) or INCONCLUSIVE (data missing is never "no
  recurrence"); an item skipped because the preflight found the cluster unusable; the run was
  interrupted (a signal, Ctrl-C) or stopped early (-x, --maxfail); an acceptance run (one with items
  of criteria 0–4) lacks one of those criteria: not selected (a partial selection accepts nothing),
  or not judged because the run was interrupted or stopped before it finished (the provenance's
  ``interrupted``, ``stopped`` and ``selected_criteria`` tell which: `ending.session_end`); no item
  was judged at all.
- PENDING: none of the above, and an item's time has not come (criterion 5's window is still open).
- ACCEPTED: everything else. An item skipped by design (criterion 5 in the acceptance run that starts
  its probation, loss continuity while recording a baseline, a site check) is listed as not applicable;
  any other skip of criteria 0–4 is "not judged", and keeps ACCEPTED out (see `classify`).
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from acceptance.criteria import CRITERIA, of_phase
from acceptance.report.data import ReportData, TestRecord
from acceptance.report.statuses import BAD_STATUSES, PREFLIGHT_SKIP

ACCEPTANCE_CRITERIA = tuple(c.number for c in of_phase("acceptance") if c.number is not None)
RECORDING = "record-baseline"  # provenance "mode" of a run that records the handover baseline (RunContext.mode)
# The line of an item a bad verdict failed starts FAIL, ERROR, NOT COMPARABLE or INCONCLUSIVE
_LABELS = {status: status.upper().replace("-", " ") for status in BAD_STATUSES}
_PASSED_OUTCOMES = ("passed", "xpassed")


class Banner(enum.Enum):
    ACCEPTED = "ACCEPTED"
    NOT_ACCEPTED = "NOT ACCEPTED"
    PENDING = "PENDING"

    @property
    def css(self) -> str:
        return self.value.lower().replace(" ", "-")


class State(enum.Enum):
    """One item as the banner counts it."""

    PASSED = "passed"
    FAILED = "failed"
    PENDING = "pending"
    BLOCKED = "blocked"  # skipped, not judged: the preflight found the cluster unusable, or an acceptance item
    NOT_APPLICABLE = "not-applicable"  # skipped by design: criterion 5 in an acceptance, loss while recording


@dataclass(frozen=True)
class Item:
    """One test item: its state, its one line, and the verdict that decided it (None: no verdict)."""

    nodeid: str
    state: State
    line: str
    verdict: Mapping[str, Any] | None = None

    @property
    def name(self) -> str:
        return self.nodeid.split("::", 1)[-1]


@dataclass(frozen=True)
class CriterionResult:
    """The items of one criterion (or one site check)."""

    number: int | None
    title: str
    items: tuple[Item, ...]

    @property
    def heading(self) -> str:
        return f"{self.number}. {self.title}" if self.number is not None else self.title

    def having(self, *states: State) -> list[Item]:
        return [i for i in self.items if i.state in states]

    @property
    def state(self) -> State:
        for state in (State.FAILED, State.BLOCKED, State.PENDING, State.PASSED):
            if self.having(state):
                return state
        return State.NOT_APPLICABLE

    def passed_line(self) -> str:
        """``16/16 nodes passed DCGM r3``: the row passed items collapse into."""
        judged = [i for i in self.items if i.state is not State.NOT_APPLICABLE]
        noun, what = _NOUNS.get(self.number, ("items", ""))
        if self.number == 1:
            levels = Counter(lv for i in judged if isinstance(lv := _figure(i, "level"), int))
            what = f" DCGM r{levels.most_common(1)[0][0]}" if levels else " DCGM"
        return f"{len(self.having(State.PASSED))}/{len(judged)} {noun} passed{what}"


_NOUNS: dict[int | None, tuple[str, str]] = {c.number: (c.noun, c.detail) for c in CRITERIA}


def _figure(item: Item, name: str) -> Any:
    return ((item.verdict or {}).get("figures") or {}).get(name)


@dataclass(frozen=True)
class Decision:
    banner: Banner
    reasons: tuple[str, ...]  # run-wide reasons (interrupted, criteria missing, nothing judged, what is pending)
    criteria: tuple[CriterionResult, ...]

    def line(self) -> str:
        """The one line the report and the terminal lead with."""
        if self.banner is Banner.ACCEPTED:
            judged = sum(len(c.having(State.PASSED)) for c in self.criteria)
            passed = [c for c in self.criteria if c.having(State.PASSED)]
            # one criterion (a probation run: criterion 5) is named with its title, several by their numbers
            where = _named(passed[0]) if len(passed) == 1 else _criteria_list(passed)
            counted = f"all {judged} judged items passed" if judged != 1 else "the 1 judged item passed"
            return f"ACCEPTED: {counted}" + (f" ({where})" if where else "")
        if self.banner is Banner.PENDING:
            return f"PENDING: {self.reasons[0]}" if self.reasons else "PENDING"
        parts = list(self.reasons)
        for state, what in ((State.FAILED, "failed"), (State.BLOCKED, "not judged")):
            items = [i for c in self.criteria for i in c.having(state)]
            if items:
                crits = _criteria_list([c for c in self.criteria if c.having(state)])
                parts.append(f"{len(items)} item{'s' * (len(items) != 1)} {what} ({crits})")
        return "NOT ACCEPTED: " + "; ".join(parts)


def _missing(missing: Sequence[int], provenance: Mapping[str, Any]) -> list[str]:
    """Why criteria of 0–4 are absent from the results: not selected (-k, a file list), or not reached
    because the run was interrupted or stopped early (`ending.session_end` records which, and what the
    run selected)."""
    if not missing:
        return []
    interrupted, stopped = provenance.get("interrupted"), provenance.get("stopped")
    known = provenance.get("selected_criteria")
    only = "only a run of criteria 0–4 accepts a cluster"
    if not interrupted and not stopped:
        return [f"{_numbers(missing)} not in this run (a partial selection: -k or a file list); {only}"]
    how = "interrupted" if interrupted else "stopped early"
    if not isinstance(known, list):  # the selection is not known (a pytest-xdist controller): either may apply
        was = "were" if len(missing) > 1 else "was"
        return [f"{_numbers(missing)} not judged: the run was {how} before {_they(missing)} finished, or "
                f"{_they(missing)} {was} not selected; {only}"]  # fmt: skip
    selected = {int(n) for n in known}
    unreached = [n for n in missing if n in selected]
    unselected = [n for n in missing if n not in selected]
    out = (
        [f"{_numbers(unreached)} not judged: the run was {how} before {_they(unreached)} finished"] if unreached else []
    )
    if unselected:
        out.append(f"{_numbers(unselected)} not in this run (a partial selection: -k or a file list); {only}")
    return out


def _numbers(numbers: Sequence[int]) -> str:
    return f"criteri{'a' if len(numbers) > 1 else 'on'} {', '.join(str(n) for n in numbers)}"


def _they(numbers: Sequence[int]) -> str:
    return "they" if len(numbers) > 1 else "it"


def _named(criterion: CriterionResult) -> str:
    """``criterion 5: no recurrence during probation``; a site check by its title."""
    if criterion.number is None:
        return criterion.title
    return f"criterion {criterion.number}: {criterion.title}"


def _criteria_list(criteria: Sequence[CriterionResult]) -> str:
    numbers = [str(c.number) for c in criteria if c.number is not None]
    named = [c.title for c in criteria if c.number is None]
    text = ", ".join(numbers)
    if numbers:
        text = f"criteri{'a' if len(numbers) > 1 else 'on'} {text}"
    return ", ".join(p for p in (text, *named) if p)


def _worst(verdicts: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    for status in (*BAD_STATUSES, "pending"):
        found = next((v for v in verdicts if str(v.get("status")) == status), None)
        if found is not None:
            return found
    return verdicts[0] if verdicts else None


def classify(test: TestRecord, *, recording: bool = False) -> Item:
    """One test item's state; anything not plainly passed or plainly excused counts against acceptance.

    A skip excuses an item only where the agreement says the criterion does not apply: criterion 5
    (judged after the acceptance, or pending) and site checks (their authors' call), and loss
    continuity while recording a baseline (`recording`: no restore at handover). A skipped item of
    criteria 0–4 otherwise was not judged, and a cluster is not accepted on what was not judged.
    """
    verdict = _worst(test.verdicts)
    status = str(verdict.get("status")) if verdict is not None else None
    summary = str(verdict.get("summary") or "") if verdict is not None else ""
    if status in _LABELS:
        return Item(test.nodeid, State.FAILED, f"{_LABELS[status]}: {summary or test.reason}", verdict)
    if test.outcome not in (*_PASSED_OUTCOMES, "skipped"):
        tag = "ERROR" if test.outcome == "error" else "FAIL"
        return Item(test.nodeid, State.FAILED, f"{tag}: {test.reason or summary or test.outcome}", verdict)
    if test.outcome == "skipped":
        if status == "pending" or test.reason.startswith("PENDING:"):
            return Item(test.nodeid, State.PENDING, summary or test.reason.removeprefix("PENDING: "), verdict)
        if test.reason.startswith(PREFLIGHT_SKIP):
            return Item(test.nodeid, State.BLOCKED, f"NOT JUDGED: {test.reason}", verdict)
        number = test.criterion[0]
        if number in ACCEPTANCE_CRITERIA and not (number == 4 and recording):
            return Item(test.nodeid, State.BLOCKED, f"NOT JUDGED: {test.reason or 'skipped'}", verdict)
        return Item(test.nodeid, State.NOT_APPLICABLE, test.reason or "skipped", verdict)
    if status == "pending":  # a pending verdict on an item that did not skip: not a pass
        return Item(test.nodeid, State.PENDING, summary, verdict)
    return Item(test.nodeid, State.PASSED, summary or "passed", verdict)


def group(data: ReportData) -> tuple[CriterionResult, ...]:
    """Items by criterion, criteria in the agreement's order, site checks after them."""
    groups: dict[tuple[int | None, str], list[Item]] = {}
    recording = data.provenance.get("mode") == RECORDING
    for test in data.tests:
        groups.setdefault(test.criterion, []).append(classify(test, recording=recording))
    ordered = sorted(groups.items(), key=lambda kv: (kv[0][0] is None, kv[0][0] or 0, kv[0][1]))
    return tuple(CriterionResult(number, title, tuple(items)) for (number, title), items in ordered)


def decide(data: ReportData) -> Decision:
    """The banner of a run; see the module docstring for the rules."""
    criteria = group(data)
    reasons: list[str] = []
    interrupted = data.provenance.get("interrupted")
    if interrupted:
        reasons.append(
            f"INTERRUPTED ({interrupted}): the run was stopped before it finished; its cluster objects were "
            "deleted; below is what had finished"
        )
    elif stopped := data.provenance.get("stopped"):
        reasons.append(f"STOPPED EARLY ({stopped}: -x or --maxfail): the items after that point did not run")
    present = {c.number for c in criteria}
    if present & set(ACCEPTANCE_CRITERIA):
        missing = [n for n in ACCEPTANCE_CRITERIA if n not in present]
        reasons.extend(_missing(missing, data.provenance))
    if not any(c.having(State.PASSED, State.PENDING, State.FAILED, State.BLOCKED) for c in criteria):
        reasons.append("no item was judged" if criteria else "no test ran")
    blocked_or_failed = any(c.having(State.FAILED, State.BLOCKED) for c in criteria)
    if reasons or blocked_or_failed:
        return Decision(Banner.NOT_ACCEPTED, tuple(reasons), criteria)
    pending = [(c, i) for c in criteria for i in c.having(State.PENDING)]
    if pending:
        lines = tuple(f"{c.heading} still open: {i.line}" for c, i in pending)
        return Decision(Banner.PENDING, lines, criteria)
    return Decision(Banner.ACCEPTED, (), criteria)
