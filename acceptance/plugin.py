"""pytest hooks of the harness: options, activation, header, fixtures, report wiring.

Without ``--cluster`` nothing is registered: unrelated pytest runs are unchanged.
The state of an active run lives in one `AcceptanceSession`, kept in ``config.stash``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from acceptance import options

if TYPE_CHECKING:
    from acceptance.session import AcceptanceSession
    from acceptance.suite import Suite

SESSION: pytest.StashKey[AcceptanceSession] = pytest.StashKey()
SUITE_DIR = Path(__file__).resolve().parent
SITE_CHECKS_MODULE = SUITE_DIR / "test_site_checks.py"

USAGE = (
    "the acceptance suite needs a cluster: `pytest acceptance/ --cluster=sim` runs it on the embedded "
    "simulated cluster; `--cluster=NAME` tests the cluster of baselines/NAME/cluster.yaml"
)


def pytest_addoption(parser: pytest.Parser) -> None:
    options.add_options(parser)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from acceptance import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    settings = {option.dest: options.resolve(config, option) for option in options.OPTIONS}
    if not settings["cluster"].value:
        if _targets_suite(config):
            raise pytest.UsageError(USAGE)
        return
    from acceptance.session import AcceptanceSession

    session = AcceptanceSession.open(config, settings)
    config.stash[SESSION] = session
    config.pluginmanager.register(ActiveRun(session), "recovery-acceptance-run")
    if session.controller and session.report_folder is not None:
        from acceptance.report.session import ReportingPlugin
        from acceptance.report.sign import SignOptions

        sign = SignOptions.from_options(
            no_sign=session.value("no_sign"), sign_key=session.value("sign_key"), environ=os.environ
        )
        reporting = ReportingPlugin(
            config, session.report_folder, sign, session.provenance(), simulated=session.simulated,
            started_utc=session.context.started,
        )  # fmt: skip
        config.pluginmanager.register(reporting, "recovery-acceptance-report")
        if session.context.baseline is not None:
            session.report_folder.add_file("baseline.json", session.context.baseline.path)


def pytest_unconfigure(config: pytest.Config) -> None:
    session = config.stash.get(SESSION, None)
    if session is not None:
        for problem in session.close():
            print(f"recovery-acceptance: {problem}", file=sys.stderr)


def _targets_suite(config: pytest.Config) -> bool:
    """True when the command line asks pytest to collect the acceptance suite itself."""
    for arg in config.args:
        head = arg.split("::", 1)[0]
        if head == "acceptance" and config.option.pyargs:
            return True
        try:
            path = (config.invocation_params.dir / head).resolve()
        except OSError:
            continue
        if path == SUITE_DIR or SUITE_DIR in path.parents:
            return True
    return False


class ActiveRun:
    """Hooks and fixtures that exist only while a run is active."""

    def __init__(self, session: AcceptanceSession) -> None:
        from acceptance.report.data import ReportRecorder

        self.session = session
        self.recorder = ReportRecorder()
        self.failures: list[str] = []
        self.skips: dict[str, int] = {}
        self.record_message: tuple[str, bool] | None = None

    def pytest_report_header(self) -> list[str]:
        return self.session.header_lines()

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput.update(self.session.workerinput())

    def pytest_ignore_collect(self, collection_path: Path) -> bool | None:
        """The site checks' module exists only when a site added checks."""
        if collection_path == SITE_CHECKS_MODULE and not self.session.site_checks:
            return True
        return None

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        context = self.session.context
        if "dcgm_node" in metafunc.fixturenames:
            metafunc.parametrize("dcgm_node", context.targets)
        if "nccl_test" in metafunc.fixturenames:
            metafunc.parametrize("nccl_test", context.nccl_tests)
        if "site_check" in metafunc.fixturenames:
            from acceptance.criteria import site

            found = site.items(context, self.session.site_checks)
            metafunc.parametrize("site_check", found, ids=[f"{name}:{subject}" for name, subject in found])

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        """Criteria run in their order, preflight first.

        A library's warning (an insecure-TLS notice from the Kubernetes client, a deprecation)
        is shown, never turned into a failed criterion by a strict `filterwarnings = error`.
        """
        from acceptance import criteria

        items.sort(key=lambda item: criteria.order(Path(str(item.path)).stem))
        for item in items:
            if SUITE_DIR in Path(str(item.path)).resolve().parents:
                item.add_marker(pytest.mark.filterwarnings("default"))

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Which criteria this run has, after -k/-m deselection (a later one may wait for an earlier one)."""
        self.session.selected_modules = {
            Path(str(item.path)).stem for item in session.items if SUITE_DIR in Path(str(item.path)).resolve().parents
        }
        self.session.selected_nccl = {
            str(params["nccl_test"])
            for item in session.items
            if "nccl_test" in (params := getattr(getattr(item, "callspec", None), "params", {}))
        }

    @pytest.fixture
    def acceptance(self, request: pytest.FixtureRequest) -> Suite:
        """The run's shared cluster work and the verdict recorder of this test item."""
        from acceptance.suite import Suite

        return Suite(self.session, request.node)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
        """Verdicts ride on the report; a foreseeable problem reads as one line, not a traceback."""
        from acceptance.errors import AcceptanceError
        from acceptance.report.data import CRITERION_ATTR
        from acceptance.report.session import on_makereport

        report = yield
        on_makereport(item, report)
        if call.excinfo is not None and call.excinfo.errisinstance(AcceptanceError) and report.failed:
            report.longrepr = f"ERROR: {call.excinfo.value}"
        callspec = getattr(item, "callspec", None)
        if callspec is not None and "site_check" in callspec.params:
            name = callspec.params["site_check"][0]
            check = next((c for c in self.session.site_checks if c.name == name), None)
            title = check.title if check is not None else name
            setattr(report, CRITERION_ATTR, [None, f"site check {name}: {title}"])
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if not self.session.controller:
            return
        from acceptance.report.data import headline

        self.recorder.add(report)
        name = report.nodeid.split("::")[-1]
        if report.failed:
            self.failures.append(f"{name}: {headline(report) or 'failed'}")
        elif report.skipped and isinstance(report.longrepr, tuple):
            reason = headline(report)
            self.skips[reason] = self.skips.get(reason, 0) + 1

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if not (self.session.controller and self.session.recording):
            return
        if session.testscollected == 0 or self.session.config.option.collectonly:
            return
        from acceptance.errors import AcceptanceError

        try:
            path = self.session.record(self.failures)
            self.record_message = (f"new handover baseline recorded: {path}", True)
            if self.session.report_folder is not None:
                self.session.report_folder.add_file("baseline.json", path)
        except AcceptanceError as exc:
            self.record_message = (str(exc), False)
            if session.exitstatus == 0:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.failures or self.skips:
            from acceptance.report.causes import headline

            terminalreporter.section("acceptance verdicts")
            for line in headline(self.recorder.data({}, simulated=self.session.simulated)):
                terminalreporter.write_line(f"CAUSE {line}", red=True, bold=True)
            for line in self.failures:
                terminalreporter.write_line(f"FAILED {line}", red=True)
            for reason, count in self.skips.items():
                terminalreporter.write_line(f"SKIPPED {count} item{'s' if count > 1 else ''}: {reason}", yellow=True)
        if self.record_message is not None:
            text, ok = self.record_message
            terminalreporter.section("handover baseline")
            terminalreporter.write_line(text, green=ok, red=not ok)
