"""pytest hooks of the harness: options, activation, header, fixtures, report wiring.

Without ``--cluster`` nothing is registered: unrelated pytest runs are unchanged.
The state of an active run lives in one `AcceptanceSession`, kept in ``config.stash``.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Generator
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

import pytest

from acceptance import criteria, options
from acceptance.report.outcomes import PREFLIGHT_SKIP

if TYPE_CHECKING:
    from acceptance.report.incident import IncidentOutcome
    from acceptance.report.sign import SignOptions
    from acceptance.session import AcceptanceSession
    from acceptance.suite import Suite

SESSION: pytest.StashKey[AcceptanceSession] = pytest.StashKey()
SUITE_DIR = Path(__file__).resolve().parent
SITE_CHECKS_MODULE = SUITE_DIR / f"{criteria.of_phase('site')[0].module}.py"

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
    from acceptance.report.sign import SignOptions, check_signing
    from acceptance.session import AcceptanceSession

    sign = SignOptions.from_options(
        no_sign=settings["no_sign"].value, sign_key=settings["sign_key"].value, environ=os.environ
    )
    if sign.key is not None and not hasattr(config, "workerinput"):
        problem = check_signing(sign)  # asked for a signature: know now, not after a six-hour run
        if problem:
            raise pytest.UsageError(f"--sign-key: {problem}")
    session = AcceptanceSession.open(config, settings)
    config.stash[SESSION] = session
    active = ActiveRun(session, sign)
    config.pluginmanager.register(active, "recovery-acceptance-run")
    if session.controller:
        active.catch_signals()
        from acceptance.progress.plugin import ProgressPlugin

        every = float(settings["progress_every"].value)
        config.pluginmanager.register(ProgressPlugin(config, session, every), "recovery-acceptance-progress")
    if session.controller and session.report_folder is not None:
        from acceptance.report.session import ReportingPlugin

        reporting = ReportingPlugin(
            config, session.report_folder, sign, session.provenance(), simulated=session.simulated,
            started_utc=session.context.started, secrets=session.context.profile.secret_values(),
            allow_unredacted=tuple(settings["allow_unredacted"].value),
        )  # fmt: skip
        config.pluginmanager.register(reporting, "recovery-acceptance-report")
        if session.context.baseline is not None:
            session.report_folder.add_file("baseline.json", session.context.baseline.path)


def pytest_unconfigure(config: pytest.Config) -> None:
    active = config.pluginmanager.get_plugin("recovery-acceptance-run")
    if isinstance(active, ActiveRun):
        active.restore_signals()
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

    def __init__(self, session: AcceptanceSession, sign: SignOptions) -> None:
        self.session = session
        self.sign = sign
        from acceptance.report.data import ReportRecorder

        self.recorder = ReportRecorder()
        self.failures: list[str] = []
        self.skips: dict[str, int] = {}
        self.record_message: tuple[str, bool] | None = None
        self.interrupted_by: str | None = None
        self.ended: dict[str, Any] = {}  # how the session ended, for the decision (report/ending.py)
        self._previous: dict[int, Any] = {}
        self.incident: IncidentOutcome | None = None
        self.probation: dict[str, Any] | None = None  # criterion 5's verdict payload, for the incident's resolution
        self.cleanup_problems: list[str] = []  # what the run's cleanup could not delete

    def catch_signals(self) -> None:
        """SIGINT and SIGTERM end the run the same way: objects deleted, an INTERRUPTED report signed."""
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in (signal.SIGINT, signal.SIGTERM):
            self._previous[sig] = signal.signal(sig, self._on_signal)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.interrupted_by = signal.Signals(signum).name
        raise KeyboardInterrupt(self.interrupted_by)

    def restore_signals(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()

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
        from acceptance.report.session import on_makereport, record_error

        if call.when == "call" and call.excinfo is not None and call.excinfo.errisinstance(AcceptanceError):
            record_error(item, call.excinfo.value)  # before the report is made: its properties carry the ERROR
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
        if report.when == "call" and Path(report.nodeid.split("::")[0]).stem in criteria.modules_of("probation"):
            from acceptance.report.data import VERDICTS_ATTR

            self.probation = next(iter(getattr(report, VERDICTS_ATTR, None) or ()), None)
        if report.failed:
            self.failures.append(f"{name}: {headline(report) or 'failed'}")
        elif report.skipped and isinstance(report.longrepr, tuple):
            reason = headline(report)
            self.skips[reason] = self.skips.get(reason, 0) + 1

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        for problem in self.session.finish_background():
            print(f"recovery-acceptance: {problem}", file=sys.stderr)
        if not self.session.controller:
            return
        from acceptance.report.session import note_run_problems

        # delete everything first (within the cleanup's deadline), then the report says what had finished and
        # what was left; after the summary nothing waits on the cluster
        self.cleanup_problems = self.session.close_cluster_work()
        note_run_problems(self.session.config, self.cleanup_problems)
        from acceptance.report.ending import session_end

        self.ended = session_end(session, self.interrupted_by)
        if session.exitstatus == pytest.ExitCode.INTERRUPTED:
            return
        unusable = sum(n for reason, n in self.skips.items() if reason.startswith(PREFLIGHT_SKIP))
        if unusable and session.exitstatus == 0:
            # the preflight's own items may be deselected (-k fabric): an unusable cluster still fails the run
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if session.testscollected and not self.session.config.option.collectonly:
            self._incident(session, session.exitstatus)
        if not self.session.recording:
            return
        if session.testscollected == 0 or self.session.config.option.collectonly:
            return
        from acceptance.baseline_trust import sign_baseline
        from acceptance.errors import AcceptanceError

        try:
            path = self.session.record(self.failures)
            signed = sign_baseline(path, self.sign)
            if signed.signed:
                self.record_message = (f"new handover baseline recorded and signed ({signed.describe()}): {path}", True)
            else:
                self.record_message = (
                    f"new handover baseline recorded UNSIGNED ({signed.describe()}): {path}; later runs refuse it "
                    "unless --allow-unsigned-baseline; sign it with `ssh-keygen -Y sign -n recovery-acceptance -f KEY "
                    "FILE`",
                    False,
                )
                if self.sign.key is not None and session.exitstatus == 0:
                    session.exitstatus = pytest.ExitCode.TESTS_FAILED
            if self.session.report_folder is not None:
                self.session.report_folder.add_file("baseline.json", path)
        except AcceptanceError as exc:
            self.record_message = (str(exc), False)
            if session.exitstatus == 0:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def _incident(self, session: pytest.Session, exitstatus: int) -> None:
        """--ticket with an incident bundle: capacity restored (this run's pass) against the restore clock."""
        from datetime import UTC, datetime

        from acceptance.report.junit import add_suite_properties

        passed = exitstatus == 0 and session.testsfailed == 0
        self.incident = self.session.incident(passed, datetime.now(UTC), self.probation)
        if self.incident is not None:
            add_suite_properties(self.session.config, dict(self.incident.properties))

    @pytest.hookimpl(tryfirst=True)  # the verdict leads, before the report's own section
    def pytest_terminal_summary(self, terminalreporter: Any, exitstatus: int) -> None:
        from acceptance.report.decision import Banner, decide

        ended = dict(self.ended)
        if exitstatus == pytest.ExitCode.INTERRUPTED:
            ended.setdefault("interrupted", self.interrupted_by or "KeyboardInterrupt")
        provenance = {"mode": self.session.context.mode, **ended}
        data = self.recorder.data(provenance, simulated=self.session.simulated)
        if data.tests or self.failures or self.skips:
            decision = decide(data)
            colour = {Banner.ACCEPTED: "green", Banner.NOT_ACCEPTED: "red", Banner.PENDING: "yellow"}[decision.banner]
            terminalreporter.section("acceptance verdicts")
            terminalreporter.write_line(decision.line(), bold=True, **{colour: True})
        if self.failures or self.skips:
            from acceptance.report.causes import headline

            for line in headline(data):
                terminalreporter.write_line(f"CAUSE {line}", red=True, bold=True)
            for line in self.failures:
                terminalreporter.write_line(f"FAILED {line}", red=True)
            for reason, count in self.skips.items():
                terminalreporter.write_line(f"SKIPPED {count} item{'s' if count > 1 else ''}: {reason}", yellow=True)
            if any(reason.startswith(PREFLIGHT_SKIP) for reason in self.skips):
                terminalreporter.write_line("NOT ACCEPTED: the cluster is unusable (see the preflight); the run fails",
                                            red=True)  # fmt: skip
        for line in self.cleanup_problems:
            terminalreporter.write_line(f"CLEANUP {line}", red=True)
        if self.incident is not None:
            terminalreporter.section("incident")
            for line in self.incident.lines:
                terminalreporter.write_line(line, green=self.incident.ok, red=not self.incident.ok)
        if self.record_message is not None:
            text, ok = self.record_message
            terminalreporter.section("handover baseline")
            terminalreporter.write_line(text, green=ok, red=not ok)
