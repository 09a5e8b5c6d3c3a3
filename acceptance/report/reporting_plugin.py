"""The reporting half of a pytest session: a pytest plugin `acceptance/plugin.py` registers, and the
helpers that put a test item's verdicts (recorded by `junit.record_verdict`) on its TestReport.

Hook order (why each hook is where it is):

- `pytest_sessionstart`: suite provenance goes to LogXML as testsuite properties
  (controller only; under pytest-xdist `record_testsuite_property` is a no-op in workers).
- `pytest_runtest_makereport` (module function `on_makereport`, called from the
  plugin's hook wrapper): verdict payloads ride on the TestReport, which xdist
  serialises to the controller.
- `pytest_runtest_logreport` (controller): the run's one `ReportRecorder` collects every TestReport
  (the terminal summary reads the same recorder).
- `pytest_sessionfinish` as a `wrapper=True, trylast=True` hook: the end time is
  added before `yield`; LogXML.pytest_sessionfinish (a plain hook) writes the junit
  file inside the `yield`; after it, `finalize` signs the final bytes. Being the
  innermost wrapper, this runs before the terminal reporter's wrapper prints the
  summary, so `pytest_terminal_summary` can show where the report is.

`ReportingPlugin` is registered on the controller only (`not hasattr(config,
"workerinput")`); workers find the report folder with `worker_report_folder(config)`.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from acceptance.errors import AcceptanceError
from acceptance.judge.verdict import Verdict
from acceptance.report.data import CRITERION_ATTR, ReportRecorder, attach_verdicts
from acceptance.report.ending import session_end
from acceptance.report.finalize import FinalizeResult, finalize
from acceptance.report.folder import ReportFolder
from acceptance.report.junit import VERDICTS_KEY, add_suite_properties, ensure_junit, junit_path, record_error
from acceptance.report.sign import SignOptions

WORKERINPUT_KEY = "acceptance_report_dir"


def on_makereport(item: pytest.Item, report: pytest.TestReport) -> None:
    """Attach the item's verdicts to its call-phase report (from a makereport hook wrapper)."""
    if report.when == "call":
        verdicts: list[Verdict] = item.stash.get(VERDICTS_KEY, [])
        attach_verdicts(report, verdicts)


def before_suite_report(item: pytest.Item, call: pytest.CallInfo[None]) -> None:
    """A suite item whose call ended on a foreseeable error gets its ERROR verdict before its report is made,
    so that the report's properties carry it."""
    if call.when == "call" and call.excinfo is not None and call.excinfo.errisinstance(AcceptanceError):
        record_error(item, call.excinfo.value)


def on_suite_report(
    item: pytest.Item, call: pytest.CallInfo[None], report: pytest.TestReport, site_titles: Mapping[str, str]
) -> None:
    """A suite item's report: its verdicts ride on it, a foreseeable problem reads as one line (not a
    traceback), and a site check's item names its check (`site_titles`: check name → title)."""
    on_makereport(item, report)
    if call.excinfo is not None and call.excinfo.errisinstance(AcceptanceError) and report.failed:
        report.longrepr = f"ERROR: {call.excinfo.value}"
    callspec = getattr(item, "callspec", None)
    if callspec is not None and "site_check" in callspec.params:
        name = callspec.params["site_check"][0]
        setattr(report, CRITERION_ATTR, [None, f"site check {name}: {site_titles.get(name, name)}"])


def worker_report_folder(config: pytest.Config) -> ReportFolder | None:
    """The controller's report folder, seen from an xdist worker (None elsewhere)."""
    workerinput = getattr(config, "workerinput", None)
    if not workerinput or WORKERINPUT_KEY not in workerinput:
        return None
    return ReportFolder(Path(workerinput[WORKERINPUT_KEY]))


class ReportingPlugin:
    """Controller-side reporting: provenance, the recorder, finalize at session end."""

    def __init__(
        self,
        config: pytest.Config,
        folder: ReportFolder,
        sign: SignOptions,
        provenance: Mapping[str, Any],
        *,
        simulated: bool,
        started_utc: datetime | None = None,
        junit_name: str | None = "junit.xml",
        secrets: Mapping[str, str] | None = None,
        allow_unredacted: Sequence[str] = (),
        recorder: ReportRecorder | None = None,
        interrupted_by: Callable[[], str | None] = lambda: None,
    ) -> None:
        """`junit_name`: without `--junitxml`, pytest writes this file in the report folder (None: no junit).
        `recorder`: the run's one recorder, which this plugin feeds; `interrupted_by`: the name of the signal
        that stopped the run, if one did."""
        self.config = config
        self.folder = folder
        self.sign = sign
        self.started = started_utc or datetime.now(UTC)
        self.provenance: dict[str, Any] = {
            **provenance,
            "simulated": simulated,
            "start_utc": self.started.isoformat(timespec="seconds"),
        }
        self.simulated = simulated
        self.secrets = dict(secrets or {})
        self.allow_unredacted = tuple(allow_unredacted)
        self.recorder = recorder if recorder is not None else ReportRecorder()
        self.interrupted_by = interrupted_by
        self.result: FinalizeResult | None = None
        self.error: str | None = None
        if junit_name is not None:
            ensure_junit(config, folder.path / junit_name)

    def note_problems(self, problems: Sequence[str]) -> None:
        """Run-wide problems the report must name (objects a cleanup could not delete): provenance and junit."""
        if problems:
            self.provenance["cleanup"] = "; ".join(problems)
            add_suite_properties(self.config, {"cleanup": "; ".join(problems)})

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        add_suite_properties(self.config, self.provenance)

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput[WORKERINPUT_KEY] = str(self.folder.path)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.recorder.add(report)

    @pytest.hookimpl(wrapper=True, trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> Generator[None, object, object]:
        end = datetime.now(UTC).isoformat(timespec="seconds")
        self.provenance["end_utc"] = end
        add_suite_properties(self.config, {"end_utc": end})
        ended = session_end(session, self.interrupted_by())
        self.provenance.update(ended)  # interrupted, stopped early, the criteria selected: for the decision
        add_suite_properties(self.config, {k: v for k, v in ended.items() if k in ("interrupted", "stopped")})
        outcome = yield  # LogXML.pytest_sessionfinish writes the junit file here
        try:
            data = self.recorder.data(self.provenance, simulated=self.simulated)
            self.result = finalize(
                self.folder,
                junit_path(self.config),
                data,
                self.sign,
                secrets=self.secrets,
                allow_unredacted=self.allow_unredacted,
            )
        except Exception as exc:  # reporting must never change the run's outcome
            self.error = f"the report could not be completed: {exc!r}"
        asked = self.sign.enabled and self.sign.key is not None
        if self.result is not None and self.result.refused is not None:
            self.error = (
                f"the report holds credential-looking values and is NOT signed; the run fails: {self.result.refused}"
            )
            if session.exitstatus == 0:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
        elif asked and (self.result is None or not self.result.signing.signed):
            why = self.result.signing.problem if self.result is not None else self.error
            self.error = f"the report is NOT signed although --sign-key was given: {why}; the run fails"
            if session.exitstatus == 0:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
        return outcome

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.result is None and self.error is None:
            return
        terminalreporter.section("recovery acceptance report")
        for line in self.result.lines() if self.result else []:
            terminalreporter.write_line(line)
        if self.error:
            terminalreporter.write_line(self.error, red=True)
