"""The state of one acceptance run: profile, baseline, run id, cluster, reports.

Created in ``pytest_configure`` with ``--cluster``. The controller process (the only
process without pytest-xdist) owns the run: it starts the simulated cluster when the
backend is ``sim``, creates the shared run folder and the report folder, hands them to
xdist workers, and at the end deletes every cluster object of the run.
"""

from __future__ import annotations

import dataclasses
import secrets
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from acceptance import __version__
from acceptance.baseline import BaselineStore, LoadedBaseline, sha256_of
from acceptance.clusters.kube import KubeCluster
from acceptance.clusters.kube_settings import KubeSettings
from acceptance.coordinate import RunFolder
from acceptance.errors import AcceptanceError
from acceptance.options import Setting
from acceptance.profile import Profile, load_profile
from acceptance.report.folder import ReportFolder
from acceptance.report.session import worker_report_folder
from acceptance.runs import Runs
from acceptance.sim.embedded import SimulatedCluster
from acceptance.training import LogSources


def new_run_id(now: datetime) -> str:
    return f"ra-{now.astimezone(UTC).strftime('%Y%m%d%H%M%S')}-{secrets.token_hex(2)}"


@dataclass
class AcceptanceSession:
    """Everything one run of the suite needs, in one pytest process."""

    config: pytest.Config
    settings: Mapping[str, Setting]
    profile: Profile
    baseline: LoadedBaseline | None
    run_id: str
    started: datetime
    run_folder: RunFolder
    report_folder: ReportFolder | None
    kube: KubeSettings
    controller: bool
    sim: SimulatedCluster | None = None
    selected_modules: set[str] = field(default_factory=set)
    _cluster: KubeCluster | None = None
    _runs: Runs | None = None

    @classmethod
    def open(cls, config: pytest.Config, settings: Mapping[str, Setting]) -> AcceptanceSession:
        workerinput: dict[str, Any] | None = getattr(config, "workerinput", None)
        baselines_dir: Path = settings["baselines_dir"].value
        if not baselines_dir.is_absolute():
            baselines_dir = config.invocation_params.dir / baselines_dir
        try:
            profile = load_profile(settings["cluster"].value, baselines_dir)
            profile.check_returned_nodes(settings["returned_nodes"].value)
            baseline = None
            if not settings["record_baseline"].value:
                baseline = BaselineStore(profile.path.parent).latest()
            kube = KubeSettings.from_mapping(profile.kube, source=str(profile.path))
        except AcceptanceError as exc:
            raise pytest.UsageError(str(exc)) from None
        if workerinput is not None and "acceptance_run_id" in workerinput:
            return cls._as_worker(config, settings, profile, baseline, kube, workerinput)
        started = datetime.now(UTC)
        sim = None
        if profile.backend == "sim":
            try:
                sim = SimulatedCluster.start(profile, settings["sim_faults"].value)
            except AcceptanceError as exc:
                raise pytest.UsageError(str(exc)) from None
            kube = dataclasses.replace(kube, kubeconfig=str(sim.kubeconfig), context=None)
        elif settings["sim_faults"].value:
            raise pytest.UsageError(f"--sim-fault needs a simulated cluster; {profile.name} uses {profile.backend}")
        report_dir: Path | None = settings["report_dir"].value
        if report_dir is not None:
            report_folder = ReportFolder.at(config.invocation_params.dir / report_dir)
        else:
            report_folder = ReportFolder.create(config.invocation_params.dir / "reports", profile.name, started)
        return cls(
            config=config,
            settings=settings,
            profile=profile,
            baseline=baseline,
            run_id=new_run_id(started),
            started=started,
            run_folder=RunFolder(Path(tempfile.mkdtemp(prefix="acceptance-run-"))),
            report_folder=report_folder,
            kube=kube,
            controller=True,
            sim=sim,
        )

    @classmethod
    def _as_worker(
        cls,
        config: pytest.Config,
        settings: Mapping[str, Setting],
        profile: Profile,
        baseline: LoadedBaseline | None,
        kube: KubeSettings,
        workerinput: Mapping[str, Any],
    ) -> AcceptanceSession:
        if workerinput.get("acceptance_kubeconfig"):
            kube = dataclasses.replace(kube, kubeconfig=workerinput["acceptance_kubeconfig"], context=None)
        return cls(
            config=config,
            settings=settings,
            profile=profile,
            baseline=baseline,
            run_id=workerinput["acceptance_run_id"],
            started=datetime.fromisoformat(workerinput["acceptance_started"]),
            run_folder=RunFolder(Path(workerinput["acceptance_run_folder"])),
            report_folder=worker_report_folder(config),
            kube=kube,
            controller=False,
        )

    def workerinput(self) -> dict[str, str]:
        """What an xdist worker needs to join this run."""
        return {
            "acceptance_run_id": self.run_id,
            "acceptance_run_folder": str(self.run_folder.path),
            "acceptance_kubeconfig": self.kube.kubeconfig or "",
            "acceptance_started": self.started.isoformat(),
        }

    def value(self, dest: str) -> Any:
        return self.settings[dest].value

    @property
    def recording(self) -> bool:
        return self.baseline is None

    @property
    def simulated(self) -> bool:
        return self.profile.backend == "sim"

    @property
    def targets(self) -> tuple[str, ...]:
        """Nodes whose GPUs are diagnosed: the returned ones, or every node at handover."""
        chosen: tuple[str, ...] = self.value("returned_nodes")
        return chosen or self.profile.nodes

    @property
    def nccl_tests(self) -> tuple[str, ...]:
        """Judging: the tests of the baseline (its commands); recording: the profile's."""
        if self.baseline is not None:
            return self.baseline.baseline.nccl_names
        return self.profile.test_names

    def cluster(self) -> KubeCluster:
        if self._cluster is None:
            self._cluster = KubeCluster(self.kube, self.run_id)
        return self._cluster

    def runs(self) -> Runs:
        if self._runs is None:
            self._runs = Runs(
                self.profile,
                self.baseline,
                self.cluster(),
                self.run_folder,
                self.report_folder,
                dcgm_selected="test_gpu_diagnostics" in self.selected_modules,
                log_sources=LogSources(
                    smoke=self.value("smoke_log"),
                    pre_incident=self.value("pre_incident_log"),
                    restore_step=self.value("restore_step"),
                ),
            )
            self._runs.set_targets(self.targets)
        return self._runs

    def provenance(self) -> dict[str, Any]:
        p = self.profile
        out: dict[str, Any] = {
            "cluster": p.name,
            "backend": p.backend,
            "ticket": self.value("ticket") or "",
            "run_id": self.run_id,
            "harness_version": __version__,
            "profile": str(p.path),
            "profile_sha256": sha256_of(p.path),
            "returned_nodes": ",".join(self.targets),
            "mode": "record-baseline" if self.recording else "judge",
        }
        if self.baseline is not None:
            out["baseline"] = str(self.baseline.path)
            out["baseline_sha256"] = self.baseline.sha256
            c = self.baseline.baseline.conditions
            out["conditions"] = {
                "nodes": len(c.nodes),
                "kubernetes_version": c.kubernetes_version or "",
                **{k: v for k, v in c.node_spec.to_json().items() if v is not None},
            }
        if self.sim is not None:
            out["sim_faults"] = ",".join(self.value("sim_faults")) or "none"
            out["sim_seed"] = self.profile.sim.seed if self.profile.sim else ""
        return out

    def header_lines(self) -> list[str]:
        p = self.profile
        lines = [
            f"recovery-acceptance {__version__}: cluster {p.name} (backend {p.backend}), run {self.run_id}",
            f"profile: {p.path}",
        ]
        if self.sim is not None:
            faults = ", ".join(self.value("sim_faults")) or "none"
            lines.append(f"SIMULATED cluster: Kubernetes API emulator at {self.sim.api.url}; faults: {faults}")
        if self.baseline is not None:
            lines.append(f"baseline: {self.baseline.path} sha256:{self.baseline.sha256}")
        else:
            lines.append("baseline: none loaded (recording a new handover baseline)")
        returned = ", ".join(self.value("returned_nodes")) or f"all {len(p.nodes)} nodes"
        lines.append(f"returned nodes: {returned}; ticket: {self.value('ticket') or '-'}")
        if self.report_folder is not None and self.controller:
            lines.append(f"report folder: {self.report_folder.path}")
        origins = [
            f"{dest}={s.value!r} ({s.origin})"
            for dest, s in self.settings.items()
            if s.origin != "default" and dest != "cluster"
        ]
        if origins:
            lines.append("settings: " + ", ".join(origins))
        return lines

    def close(self) -> list[str]:
        """Release what the run holds; the controller deletes every object of the run. Returns problems."""
        problems: list[str] = []
        if self.controller:
            try:
                self.cluster().cleanup()
            except AcceptanceError as exc:
                problems.append(f"cleanup of run {self.run_id} incomplete: {exc}")
            if self.sim is not None:
                self.sim.close()
            shutil.rmtree(self.run_folder.path, ignore_errors=True)
        return problems
