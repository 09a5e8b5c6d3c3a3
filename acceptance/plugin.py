"""pytest hooks of the harness: options, activation, header, fixtures, report wiring.

Without ``--cluster`` nothing is registered: unrelated pytest runs are unchanged. The options are
resolved once (`RunOptions`), the state of an active run lives in one `AcceptanceSession`, both in
``config.stash``; what the hooks do is done by the session and report code they call.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from acceptance import criteria, hookspecs
from acceptance.options import MISSING_CLUSTER, RunOptions, add_options, targets_suite

if TYPE_CHECKING:
    from acceptance.conclusion import Conclusion
    from acceptance.report.reporting_plugin import ReportingPlugin
    from acceptance.run_session import AcceptanceSession
    from acceptance.suite import Suite

SESSION: pytest.StashKey[AcceptanceSession] = pytest.StashKey()
SUITE_DIR = Path(__file__).resolve().parent
SITE_CHECKS_MODULE = SUITE_DIR / f"{criteria.of_phase('site')[0].module}.py"


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    options = RunOptions.of(config)
    if not options.cluster:
        if targets_suite(config, SUITE_DIR):
            raise pytest.UsageError(MISSING_CLUSTER)
        return
    from acceptance.run_session import open_session

    session, reporting = open_session(config, options, os.environ)
    config.stash[SESSION] = session
    config.pluginmanager.register(SuiteHooks(session, reporting), "recovery-acceptance-run")
    if reporting is not None:  # the controller
        from acceptance.progress.plugin import ProgressPlugin

        session.signals.install()
        progress = ProgressPlugin(config, session, float(options.progress_every))
        config.pluginmanager.register(progress, "recovery-acceptance-progress")
        config.pluginmanager.register(reporting, "recovery-acceptance-report")


def pytest_unconfigure(config: pytest.Config) -> None:
    session = config.stash.get(SESSION, None)
    if session is not None:
        for problem in session.close():
            print(f"recovery-acceptance: {problem}", file=sys.stderr)


class SuiteHooks:
    """The hooks and fixture that exist only while a run is active (`reporting`: the controller's report)."""

    def __init__(self, session: AcceptanceSession, reporting: ReportingPlugin | None) -> None:
        self.session = session
        self.reporting = reporting
        self.conclusion: Conclusion | None = None

    def pytest_report_header(self) -> list[str]:
        return self.session.header_lines()

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput.update(self.session.workerinput())

    def pytest_ignore_collect(self, collection_path: Path) -> bool | None:
        """The site checks' module exists only when a site added checks."""
        return True if collection_path == SITE_CHECKS_MODULE and not self.session.site_checks else None

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        for name, values, ids in self.session.parameters(metafunc.fixturenames):
            metafunc.parametrize(name, values, ids=ids)

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        """Criteria run in their order, preflight first; a library's warning is shown, never a failed criterion."""
        items.sort(key=lambda item: criteria.order(Path(str(item.path)).stem))
        for item in items:
            if SUITE_DIR in Path(str(item.path)).resolve().parents:
                item.add_marker(pytest.mark.filterwarnings("default"))

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Which criteria this run has, after -k/-m deselection (a later one may wait for an earlier one)."""
        self.session.select(session.items, SUITE_DIR)

    @pytest.fixture
    def acceptance(self, request: pytest.FixtureRequest) -> Suite:
        """The run's shared cluster work and the verdict recorder of this test item."""
        from acceptance.suite import Suite

        return Suite(self.session, request.node)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
        """Verdicts ride on the report; a foreseeable problem reads as one line, not a traceback."""
        from acceptance.report.reporting_plugin import before_suite_report, on_suite_report

        before_suite_report(item, call)
        report = yield
        on_suite_report(item, call, report, self.session.site_titles)
        return report

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        for problem in self.session.finish_background():
            print(f"recovery-acceptance: {problem}", file=sys.stderr)
        if self.reporting is not None:
            from acceptance.conclusion import conclude

            self.conclusion = conclude(self.session, session, self.reporting)

    @pytest.hookimpl(tryfirst=True)  # the verdict leads, before the report's own section
    def pytest_terminal_summary(self, terminalreporter: Any, exitstatus: int) -> None:
        if self.reporting is not None:
            from acceptance.report.terminal import write_summary

            write_summary(terminalreporter, self.reporting.recorder, self.conclusion, self.session.context,
                          exitstatus=exitstatus, interrupted_by=self.session.interrupted_by)  # fmt: skip
