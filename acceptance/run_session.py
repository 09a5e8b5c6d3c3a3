"""The state of one acceptance run in one pytest process: settings, context, cluster, folders.

Created in ``pytest_configure`` with ``--cluster``, from the run's `RunOptions`. The controller process (the only one
without pytest-xdist) owns the run: it opens the cluster (starting the simulator for backend
``sim``), creates the shared run folder and the report folder, hands them to xdist workers,
and at the end deletes every cluster object of the run. Workers attach to the same cluster.
"""

from __future__ import annotations

import secrets
import shutil
import tempfile
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from acceptance import __version__, clusters, criteria
from acceptance.baseline import BaselineStore, LoadedBaseline, sha256_of
from acceptance.baseline_trust import check_signer, require_agreement, trust
from acceptance.clusters.base import Cluster
from acceptance.criteria import recording, site
from acceptance.criteria.context import LogSources, ProbationOptions, RunContext
from acceptance.criteria.run import Criteria
from acceptance.criteria.scheduler import ProgressListener
from acceptance.criteria.shared_folder import SharedFolder
from acceptance.criteria.site import SiteCheck
from acceptance.errors import AcceptanceError, BaselineError, RunDeadline
from acceptance.interrupt import SignalCatcher
from acceptance.options import WORKERINPUT_KEY as OPTIONS_KEY
from acceptance.options import RunOptions
from acceptance.profile import Profile, load_profile, refuse_writing_shipped
from acceptance.report.folder import ReportFolder
from acceptance.report.reporting_plugin import ReportingPlugin, worker_report_folder
from acceptance.report.sign import SignOptions, check_signing
from acceptance.units import format_duration

if TYPE_CHECKING:
    from acceptance.report.incident import IncidentOutcome


def new_run_id(now: datetime) -> str:
    return f"ra-{now.astimezone(UTC).strftime('%Y%m%d%H%M%S')}-{secrets.token_hex(2)}"


@dataclass
class AcceptanceSession:
    """Everything one run of the suite needs, in one pytest process."""

    config: pytest.Config
    options: RunOptions
    sign: SignOptions
    context: RunContext
    cluster: Cluster
    run_folder: SharedFolder
    report_folder: ReportFolder | None
    controller: bool
    site_checks: tuple[SiteCheck, ...] = ()
    selected_modules: set[str] = field(default_factory=set)
    selected_nccl: set[str] = field(default_factory=set)
    progress: ProgressListener | None = None  # the terminal display, in the one process that shows it
    signals: SignalCatcher = field(default_factory=SignalCatcher)  # the controller's SIGINT and SIGTERM
    _run: Criteria | None = None
    _cleanup: list[str] | None = None  # what the one cleanup of the run reported (None: not done yet)

    @classmethod
    def open(cls, config: pytest.Config, options: RunOptions, sign: SignOptions) -> AcceptanceSession:
        """Load the agreement and open the profile's cluster; any foreseeable problem is a usage error."""
        workerinput: dict[str, Any] | None = getattr(config, "workerinput", None)
        worker = workerinput is not None and "acceptance_run_id" in workerinput
        baselines_dir = options.baselines_dir
        if not baselines_dir.is_absolute():
            baselines_dir = config.invocation_params.dir / baselines_dir
        if worker:
            assert workerinput is not None
            run_id = workerinput["acceptance_run_id"]
            started = datetime.fromisoformat(workerinput["acceptance_started"])
        else:
            started = datetime.now(UTC)
            run_id = new_run_id(started)
        try:
            assert options.cluster is not None, "an AcceptanceSession is opened only with --cluster"
            profile = load_profile(options.cluster, baselines_dir)
            profile.check_returned_nodes(options.returned_nodes)
            if options.record_baseline:
                refuse_writing_shipped(profile.path.parent, "--record-baseline")
                if not worker:
                    _refuse_disallowed_signer(profile, sign)
            baseline = None if options.record_baseline else _latest(profile.path.parent)
            trusted = None if baseline is None else trust(
                baseline, profile, allow_unsigned=options.allow_unsigned_baseline
            )  # fmt: skip
            if trusted is not None and baseline is not None:
                require_agreement(trusted, profile, baseline)  # agreement.require: both, before anything starts
            context = RunContext.create(
                profile, baseline, returned_nodes=options.returned_nodes, run_id=run_id, started=started,
                ticket=options.ticket,
                logs=LogSources(options.smoke_log, options.pre_incident_log, options.restore_step),
                force_record=options.force_record, baseline_trust=trusted.line if trusted else "",
                agreement=trusted.agreement if trusted else "",
                probation=_probation(config, options),
            )  # fmt: skip
            found = config.hook.pytest_acceptance_site_checks(context=context)
            checks = tuple(check for checks_of_one in found for check in checks_of_one or ())
            site.items(context, checks)  # refuse nameless or doubled checks before anything starts
            if worker:
                assert workerinput is not None
                folder, report = SharedFolder(Path(workerinput["acceptance_run_folder"])), worker_report_folder(config)
                cluster = clusters.open(profile, run_id, attach=dict(workerinput["acceptance_cluster"]))
            else:
                report = _report_folder(config, options.report_dir, profile.name, started)
                cluster = clusters.open(profile, run_id, faults=options.sim_faults,
                                        ssh_accept_new=options.ssh_insecure_accept_new)  # fmt: skip
                folder = SharedFolder(Path(tempfile.mkdtemp(prefix="acceptance-run-")))
        except AcceptanceError as exc:
            raise pytest.UsageError(str(exc)) from None
        controller = not worker
        return cls(config, options, sign, context, cluster, folder, report, controller, checks)

    def workerinput(self) -> dict[str, Any]:
        """What an xdist worker needs to join this run."""
        return {
            "acceptance_run_id": self.context.run_id,
            "acceptance_run_folder": str(self.run_folder.path),
            "acceptance_cluster": self.cluster.attach_info(),
            "acceptance_started": self.context.started.isoformat(),
            OPTIONS_KEY: self.options.to_plain(),
        }

    @property
    def interrupted_by(self) -> str | None:
        """The signal that stopped the run, if one did."""
        return self.signals.caught

    def parameters(self, fixturenames: Sequence[str]) -> Iterator[tuple[str, Sequence[Any], list[str] | None]]:
        """(argument, values, ids) of each parameter of the suite that a test function asks for."""
        context = self.context
        if "dcgm_node" in fixturenames:
            yield "dcgm_node", context.targets, None
        if "nccl_test" in fixturenames:
            yield "nccl_test", context.nccl_tests, None
        if "site_check" in fixturenames:
            found = site.items(context, self.site_checks)
            yield "site_check", found, [f"{name}:{subject}" for name, subject in found]

    def select(self, items: Iterable[pytest.Item], suite_dir: Path) -> None:
        """Which criteria and nccl-tests this run has, after -k/-m deselection (from `pytest_collection_finish`)."""
        items = list(items)
        self.selected_modules = {
            Path(str(item.path)).stem for item in items if suite_dir in Path(str(item.path)).resolve().parents
        }
        self.selected_nccl = {
            str(params["nccl_test"])
            for item in items
            if "nccl_test" in (params := getattr(getattr(item, "callspec", None), "params", {}))
        }

    @property
    def site_titles(self) -> dict[str, str]:
        return {check.name: check.title for check in self.site_checks}

    @property
    def recording(self) -> bool:
        return self.context.recording

    @property
    def simulated(self) -> bool:
        return self.context.simulated

    def check_deadline(self) -> None:
        """RunDeadline once the run's deadline (`RunContext.deadline`) has passed: no item starts work after it."""
        deadline = self.context.deadline
        if datetime.now(UTC) >= deadline:
            took = (deadline - self.context.started).total_seconds()
            raise RunDeadline(f"the run's deadline passed at {deadline:%Y-%m-%dT%H:%M:%SZ}, {format_duration(took)} "
                              "after its start (the profile's run.deadline)")  # fmt: skip

    def run(self) -> Criteria:
        """This process's criteria (created at the first item, after collection)."""
        if self._run is None:
            self._run = Criteria(
                self.context, self.cluster, self.run_folder, self.report_folder,
                selected=frozenset(self.selected_modules), site_checks=self.site_checks,
                nccl_selected=frozenset(self.selected_nccl), progress=self.progress,
            )  # fmt: skip
        return self._run

    def record(self, failures: list[str]) -> Path:
        """Write the new handover baseline from what the run's items kept (BaselineError when refused)."""
        parts = recording.parts_of(
            self.context, self.run_folder, [site.baseline_part(self.run_folder, [c.name for c in self.site_checks])]
        )
        return recording.record(self.context, parts, failures, when=datetime.now(UTC), simulated=self.simulated)

    def provenance(self) -> dict[str, Any]:
        ctx = self.context
        p = ctx.profile
        out: dict[str, Any] = {
            "cluster": p.name,
            "backend": p.backend,
            "ticket": ctx.ticket or "",
            "run_id": ctx.run_id,
            "harness_version": __version__,
            "profile": str(p.path),
            "profile_sha256": sha256_of(p.path),
            "returned_nodes": ",".join(ctx.targets),
            "mode": ctx.mode,
            "margins_from": ctx.margins_from,
            "margins": ctx.margins.to_json(),
        }
        if ctx.margin_notes:
            out["margins_differ"] = dict(ctx.margin_notes)
        if ctx.baseline is not None:
            out["baseline"] = str(ctx.baseline.path)
            out["baseline_sha256"] = ctx.baseline.sha256
            out["baseline_signature"] = ctx.baseline_trust
            if ctx.agreement:
                out["agreement"] = ctx.agreement
            c = ctx.baseline.baseline.conditions
            out["conditions"] = {
                "nodes": len(c.nodes),
                "kubernetes_version": c.kubernetes_version or "",
                **{k: v for k, v in c.node_spec.to_json().items() if v is not None},
            }
        if self.options.ssh_insecure_accept_new:
            out["ssh_host_keys"] = (
                "WARNING: NOT VERIFIED: --ssh-insecure-accept-new accepted host keys that known_hosts does not list"
            )
        if ctx.simulated:
            out["sim_faults"] = str(self.options.sim_faults) or "none"
            out["sim_seed"] = p.sim.seed if p.sim else ""
        return out

    def header_lines(self) -> list[str]:
        ctx = self.context
        p = ctx.profile
        lines = [
            f"recovery-acceptance {__version__}: cluster {p.name} (backend {p.backend}), run {ctx.run_id}",
            f"profile: {p.path}",
            *self.cluster.describe(),
        ]
        if ctx.baseline is not None:
            lines.append(f"baseline: {ctx.baseline.path} sha256:{ctx.baseline.sha256}")
            lines.append(f"baseline signature: {ctx.baseline_trust}")
            if ctx.agreement:
                lines.append(f"agreement: {ctx.agreement}")
        else:
            lines.append("baseline: none loaded (recording a new handover baseline with the profile's margins)")
        lines.extend(f"MARGIN DIFFERS: {note}" for note in ctx.margin_notes.values())
        returned = ", ".join(self.options.returned_nodes) or f"all {len(p.nodes)} nodes"
        lines.append(f"returned nodes: {returned}; ticket: {ctx.ticket or '-'}")
        if self.report_folder is not None and self.controller:
            lines.append(f"report folder: {self.report_folder.path}")
        changed = self.options.changed()
        if changed:
            lines.append("settings: " + ", ".join(changed))
        return lines

    def finish_background(self, timeout_s: float = 5.0) -> list[str]:
        """Before the report is written: background batches of this process end, or file no evidence."""
        return self._run.scheduler.close(timeout_s) if self._run is not None else []

    def close_cluster_work(self) -> list[str]:
        """Delete every object of the run now (the controller only; done once, bounded by the backend's
        cleanup deadline). Returns problems: what may remain, and how to remove it later."""
        if not self.controller:
            return []
        if self._cleanup is None:
            try:
                with warnings.catch_warnings():  # a library's warning (insecure TLS) is shown, never the cleanup's end
                    warnings.simplefilter("default")
                    self.cluster.cleanup()
                self._cleanup = []
            except AcceptanceError as exc:
                name = self.context.profile.name
                self._cleanup = [f"cleanup of run {self.context.run_id} incomplete: {exc}; "
                                 f"`acceptance cleanup --cluster {name}` removes what is left"]  # fmt: skip
        return list(self._cleanup)

    def incident(
        self, passed: bool, at: datetime, probation: Mapping[str, Any] | None = None
    ) -> IncidentOutcome | None:
        """For a run with --ticket: the ticket's incident bundle against this run (capacity restored at `at`;
        for a run of criterion 5 alone, resolved when its window passed)."""
        ticket = self.context.ticket
        if not ticket or not self.controller or self.recording:
            return None
        from acceptance.report.incident import resolve_outcome, restore_outcome

        roots = [self.config.invocation_params.dir / "reports"]
        if self.report_folder is not None and self.report_folder.path.parent.parent not in roots:
            roots.append(self.report_folder.path.parent.parent)
        if self.selected_modules == criteria.modules_of("probation"):
            return resolve_outcome(roots, ticket, probation)
        return restore_outcome(roots, ticket, passed, at)

    def close(self) -> list[str]:
        """Release what the run holds; the controller deletes every object of the run. Returns problems."""
        self.signals.restore()
        problems: list[str] = []
        try:
            if self._run is not None:
                self._run.close()
            done = self._cleanup is not None  # said already, in the summary
            problems = [] if done else self.close_cluster_work()
        finally:
            self.cluster.close()
            if self.controller:
                shutil.rmtree(self.run_folder.path, ignore_errors=True)
        return problems


def open_session(
    config: pytest.Config, options: RunOptions, environ: Mapping[str, str]
) -> tuple[AcceptanceSession, ReportingPlugin | None]:
    """The run's session in this process and, on the controller, its reporting plugin (to register)."""
    sign = SignOptions.from_options(no_sign=options.no_sign, sign_key=options.sign_key, environ=environ)
    if sign.key is not None and not hasattr(config, "workerinput"):
        problem = check_signing(sign)  # asked for a signature: know now, not after a six-hour run
        if problem:
            raise pytest.UsageError(f"--sign-key: {problem}")
    session = AcceptanceSession.open(config, options, sign)
    if not session.controller or session.report_folder is None:
        return session, None
    context = session.context
    reporting = ReportingPlugin(
        config, session.report_folder, sign, session.provenance(), simulated=session.simulated,
        started_utc=context.started, secrets=context.profile.secret_values(),
        allow_unredacted=options.allow_unredacted, interrupted_by=lambda: session.interrupted_by,
    )  # fmt: skip
    if context.baseline is not None:
        session.report_folder.add_file("baseline.json", context.baseline.path)
    return session, reporting


def _probation(config: pytest.Config, options: RunOptions) -> ProbationOptions:
    here = config.invocation_params.dir
    found = options.probation_from
    return ProbationOptions(here / found if found is not None else None, here / "reports")


def _refuse_disallowed_signer(profile: Profile, sign: SignOptions) -> None:
    """A baseline signed by a key the profile does not allow would block every later run: know before recording."""
    problem = check_signer(sign, profile.allowed_signers)
    if problem:
        raise BaselineError(f"--record-baseline: the new baseline would be refused by every run: {problem}")


def _latest(folder: Path) -> LoadedBaseline:
    return BaselineStore(folder).latest()


def _report_folder(config: pytest.Config, report_dir: Path | None, cluster: str, started: datetime) -> ReportFolder:
    if report_dir is not None:
        return ReportFolder.at(config.invocation_params.dir / report_dir)
    return ReportFolder.create(config.invocation_params.dir / "reports", cluster, started)
