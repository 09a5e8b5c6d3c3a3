"""What the HTML report needs, as JSON-safe data that crosses pytest-xdist.

Verdicts are made in worker processes; the report is written by the controller.
The plugin attaches each test's verdicts to its TestReport as a plain-data
attribute (`attach_verdicts`), which pytest-xdist serialises with the report; the
controller feeds every TestReport it logs to a `ReportRecorder`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from acceptance.criteria import by_module
from acceptance.judge.verdict import Verdict
from acceptance.report.junit import table_rows

# Attribute of a TestReport that carries verdict payloads (plain data, xdist-safe).
VERDICTS_ATTR = "acceptance_verdicts"

# Attribute of a TestReport that names its criterion when the module does not (site checks).
CRITERION_ATTR = "acceptance_criterion"


def _plain(value: Any) -> Any:
    """A JSON-safe copy: numpy/pandas scalars to Python, NaN/inf to None."""
    if hasattr(value, "item") and not isinstance(value, list | tuple | dict | str):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def verdict_payload(verdict: Verdict) -> dict[str, Any]:
    """A Verdict as JSON-safe data (the table as column names plus rows)."""
    rows = table_rows(verdict)
    columns = [str(c) for c in rows[0]] if rows else []
    if not rows and verdict.table is not None:
        columns = [str(c) for c in verdict.table.columns]
    payload = {
        "status": verdict.status.value,
        "subject": verdict.subject,
        "summary": verdict.summary,
        "figures": _plain(verdict.flat_figures()),
        "evidence": list(verdict.evidence),
        "table": {"columns": columns, "rows": [[_plain(row[c]) for c in row] for row in rows]},
    }
    if verdict.details:
        payload["details"] = _plain(dict(verdict.details))
    return payload


def attach_verdicts(report: Any, verdicts: Sequence[Verdict]) -> None:
    """Put verdict payloads on a TestReport (call from `pytest_runtest_makereport`)."""
    setattr(report, VERDICTS_ATTR, [verdict_payload(v) for v in verdicts])


def criterion_of(nodeid: str) -> tuple[int | None, str]:
    """The criterion a test belongs to, from its module name; (None, module) when unknown."""
    module = nodeid.split("::", 1)[0].rsplit("/", 1)[-1].removesuffix(".py")
    found = by_module(module)
    return (found.number, found.title) if found is not None else (None, module)


@dataclass(frozen=True)
class TestRecord:
    """One test item: its overall outcome, one-line reason and verdicts."""

    __test__ = False  # not a pytest test class

    nodeid: str
    outcome: str  # passed | failed | skipped | error
    duration_s: float = 0.0
    reason: str = ""
    verdicts: tuple[dict[str, Any], ...] = ()
    named_criterion: tuple[int | None, str] | None = None

    @property
    def criterion(self) -> tuple[int | None, str]:
        return self.named_criterion or criterion_of(self.nodeid)


@dataclass(frozen=True)
class ReportData:
    """Everything the HTML report shows: provenance and every test with its verdicts."""

    provenance: Mapping[str, Any] = field(default_factory=dict)
    tests: tuple[TestRecord, ...] = ()
    simulated: bool = False

    def verdicts(self) -> list[dict[str, Any]]:
        return [v for test in self.tests for v in test.verdicts]

    def to_json(self) -> dict[str, Any]:
        return {
            "provenance": _plain(dict(self.provenance)),
            "simulated": self.simulated,
            "tests": [
                {
                    "nodeid": t.nodeid,
                    "outcome": t.outcome,
                    "duration_s": t.duration_s,
                    "reason": t.reason,
                    "verdicts": list(t.verdicts),
                    **({"criterion": list(t.named_criterion)} if t.named_criterion else {}),
                }
                for t in self.tests
            ],
        }

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> ReportData:
        tests = tuple(
            TestRecord(
                nodeid=str(t["nodeid"]),
                outcome=str(t["outcome"]),
                duration_s=float(t.get("duration_s", 0.0)),
                reason=str(t.get("reason", "")),
                verdicts=tuple(t.get("verdicts", ())),
                named_criterion=(t["criterion"][0], str(t["criterion"][1])) if t.get("criterion") else None,
            )
            for t in obj.get("tests", ())
        )
        return cls(dict(obj.get("provenance", {})), tests, bool(obj.get("simulated", False)))


def headline(report: Any) -> str:
    """A TestReport's one line: the skip reason, or the failure's message without pytest's prefixes
    (a verdict's summary for a suite item), or the last line of a traceback."""
    if report.outcome == "skipped" and isinstance(report.longrepr, tuple):
        return str(report.longrepr[2]).removeprefix("Skipped: ")
    crash = getattr(getattr(report.longrepr, "reprcrash", None), "message", None)
    if crash:
        first = next((line for line in str(crash).splitlines() if line.strip()), "")
        return first.removeprefix("Failed: ").removeprefix("FAIL: ")
    text = str(report.longrepr or "").strip().splitlines()
    return text[-1] if text else ""


class ReportRecorder:
    """Collects TestReports on the controller (`pytest_runtest_logreport`) into ReportData, and keeps the
    terminal's tally: one line per failed report, skip reasons counted, each module's latest call verdict."""

    def __init__(self) -> None:
        self._tests: dict[str, dict[str, Any]] = {}
        self._failures: list[str] = []
        self._skips: dict[str, int] = {}
        self._call_verdicts: dict[str, dict[str, Any] | None] = {}  # module → first verdict of its latest call

    @property
    def failures(self) -> list[str]:
        """``item: reason`` of every failed report, in the order they came."""
        return list(self._failures)

    @property
    def skips(self) -> dict[str, int]:
        """How many items skipped for each reason."""
        return dict(self._skips)

    def latest_call_verdict(self, modules: Collection[str]) -> dict[str, Any] | None:
        """The first verdict of the latest call report of one of `modules` (None: none, or it had no verdict)."""
        return next((v for m, v in reversed(self._call_verdicts.items()) if m in modules), None)

    def add(self, report: Any) -> None:
        self._tally(report)
        entry = self._tests.setdefault(
            report.nodeid, {"outcome": "passed", "duration_s": 0.0, "reason": "", "verdicts": []}
        )
        entry["duration_s"] += float(getattr(report, "duration", 0.0) or 0.0)
        entry["verdicts"].extend(getattr(report, VERDICTS_ATTR, None) or [])
        named = getattr(report, CRITERION_ATTR, None)
        if named:
            entry["criterion"] = (named[0], str(named[1]))
        if report.when == "call" and report.outcome != "passed":
            entry["outcome"], entry["reason"] = report.outcome, headline(report)
        elif report.when != "call" and report.outcome == "failed":
            entry["outcome"], entry["reason"] = "error", headline(report)
        elif report.when == "setup" and report.outcome == "skipped":
            entry["outcome"], entry["reason"] = "skipped", headline(report)
        if report.outcome == "passed" and report.when == "call" and getattr(report, "wasxfail", None):
            entry["outcome"] = "xpassed"

    def _tally(self, report: Any) -> None:
        path, name = report.nodeid.split("::")[0], report.nodeid.split("::")[-1]
        if report.when == "call":
            module = path.rsplit("/", 1)[-1].removesuffix(".py")
            self._call_verdicts.pop(module, None)  # re-inserted last: the latest call comes last
            self._call_verdicts[module] = next(iter(getattr(report, VERDICTS_ATTR, None) or ()), None)
        if report.outcome == "failed":
            self._failures.append(f"{name}: {headline(report) or 'failed'}")
        elif report.outcome == "skipped" and isinstance(report.longrepr, tuple):
            reason = headline(report)
            self._skips[reason] = self._skips.get(reason, 0) + 1

    def data(self, provenance: Mapping[str, Any], *, simulated: bool) -> ReportData:
        tests = tuple(
            TestRecord(nodeid, e["outcome"], e["duration_s"], e["reason"], tuple(e["verdicts"]), e.get("criterion"))
            for nodeid, e in self._tests.items()
        )
        return ReportData(dict(provenance), tests, simulated)


def dumps(data: ReportData) -> str:
    return json.dumps(data.to_json(), indent=2, sort_keys=False, allow_nan=False)


def iter_tables(
    verdicts: Iterable[Mapping[str, Any]], required: set[str]
) -> Iterable[tuple[Mapping[str, Any], list[dict[str, Any]]]]:
    """Verdicts whose table has every `required` column, with the table as row dicts."""
    for verdict in verdicts:
        table = verdict.get("table") or {}
        columns = list(table.get("columns", []))
        if required <= set(columns):
            yield verdict, [dict(zip(columns, row, strict=False)) for row in table.get("rows", [])]
