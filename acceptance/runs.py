"""The cluster work of one acceptance run, shared by the suite's items.

Items ask for verdicts (`dcgm(node)`, `fabric(name)`); this object submits the
workloads, waits, parses, judges, saves the raw evidence and, when recording,
the pieces of the new baseline. Work that must happen once per run (submitting
every node's DCGM job together) goes through the `RunFolder` that every pytest
process of the run shares, so `-n 4` creates exactly the objects `-n 0` does.
GPU workloads never overlap: the GPUs of a node are held by one workload at a time.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from acceptance.baseline import ClusterConditions, LoadedBaseline
from acceptance.clusters.base import (
    ClusterInventory,
    DcgmWorkload,
    Handle,
    NcclWorkload,
    RunResult,
    SmokeWorkload,
    Workload,
)
from acceptance.clusters.kube import KubeCluster
from acceptance.clusters.kube_manifests import manifest_for
from acceptance.coordinate import RunFolder
from acceptance.errors import AcceptanceError, JobFailed, ParseError
from acceptance.judge import preflight
from acceptance.judge.diagnostics import judge_node, policy_for
from acceptance.judge.fabric import FabricMargins, judge_fabric
from acceptance.judge.verdict import Status, Verdict
from acceptance.profile import Profile
from acceptance.report.folder import ReportFolder
from acceptance.tools import dcgm, nccl
from acceptance.training import LogSources, TrainingLogs, judge_restore, judge_smoke, recorded_step_times
from acceptance.units import format_duration

GPU_LOCK = "gpus"


@dataclass(frozen=True)
class Preflight:
    """Criterion 0's verdicts, and the reason later criteria skip when one of them blocks."""

    verdicts: Mapping[str, Verdict]
    conditions: ClusterConditions | None
    blocking: str | None


class Runs:
    """What one pytest process does on the cluster for the suite."""

    def __init__(
        self,
        profile: Profile,
        baseline: LoadedBaseline | None,
        cluster: KubeCluster,
        folder: RunFolder,
        evidence: ReportFolder | None,
        dcgm_selected: bool,
        log_sources: LogSources | None = None,
    ) -> None:
        self.profile = profile
        self.baseline = baseline
        self.cluster = cluster
        self.folder = folder
        self.evidence = evidence
        self.dcgm_selected = dcgm_selected
        self._preflight: Preflight | None = None
        self._dcgm_results: dict[str, RunResult] = {}
        self.training = TrainingLogs(profile, log_sources or LogSources(None, None, None), self._train_once)

    @property
    def recording(self) -> bool:
        return self.baseline is None

    # ------------------------------------------------------------ criterion 0

    def preflight(self) -> Preflight:
        if self._preflight is None:
            self._preflight = self._run_preflight()
        return self._preflight

    def _run_preflight(self) -> Preflight:
        p = self.profile
        try:
            inventory: ClusterInventory = self.cluster.inventory()
        except AcceptanceError as exc:
            reason = f"the cluster does not answer: {exc}"
            down = Verdict(
                Status.FAIL, "cluster", f"cluster {p.name}: {reason}; check the kubeconfig and the API server"
            )
            return Preflight({"cluster": down}, None, reason)
        answers = Verdict(
            Status.PASS,
            "cluster",
            f"cluster {p.name} answers (Kubernetes {inventory.server_version}, {len(inventory.nodes)} nodes)",
            {"kubernetes_version": inventory.server_version, "nodes_total": len(inventory.nodes)},
        )
        nodes = preflight.judge_nodes(inventory, p.nodes, p.gpus_per_node)
        conditions = preflight.conditions_of(inventory, p.nodes, p.gpus_per_node)
        then = self.baseline.baseline.conditions if self.baseline else None
        versions = preflight.judge_versions(conditions, then)
        try:
            leftovers = preflight.judge_leftovers(self.cluster.leftovers())
        except AcceptanceError as exc:
            leftovers = Verdict(Status.ERROR, "leftovers", f"leftovers: cannot list objects ({exc})")
        blocking = None if nodes.passed else nodes.summary
        if self.recording:
            self.folder.write_part("cluster", "conditions", _conditions_json(conditions))
        verdicts = {"cluster": answers, "nodes": nodes, "versions": versions, "leftovers": leftovers}
        return Preflight(verdicts, conditions, blocking)

    # ------------------------------------------------------------ criterion 1

    def dcgm_workloads(self) -> list[DcgmWorkload]:
        """`dcgmi diag` needs a host engine: started in the pod ("embedded"), or one the profile names."""
        p = self.profile
        embedded = p.dcgm_host_engine == "embedded"
        diag = dcgm.DcgmDiag(
            level=p.dcgm_level, timeout_s=p.dcgm_timeout_s, host=None if embedded else p.dcgm_host_engine
        )
        argv = tuple(diag.argv())
        if embedded:  # the engine's banner must not precede dcgmi's JSON; dcgmi's exit status is the pod's
            argv = ("bash", "-c", f"nv-hostengine >/dev/null && exec {shlex.join(argv)}")
        return [DcgmWorkload(f"dcgm-{node}", node, p.gpus_per_node, argv, p.dcgm_timeout_s) for node in self.targets()]

    def targets(self) -> tuple[str, ...]:
        """The nodes whose GPUs are diagnosed: the returned ones, or all at handover."""
        return self._targets

    def set_targets(self, nodes: Sequence[str]) -> None:
        self._targets = tuple(nodes)

    def _handles(self, workloads: Sequence[Workload], key: str) -> dict[str, Handle]:
        """Submit `workloads` together, once per run; every process gets the same handles."""

        def submit() -> dict[str, Any]:
            handles = self.cluster.submit(workloads)
            return {"submitted": handles[0].submitted.isoformat() if handles else ""}

        done = self.folder.once(key, submit)
        submitted = datetime.fromisoformat(done["submitted"]) if done["submitted"] else datetime.now(UTC)
        out = {}
        for workload in workloads:
            manifest = manifest_for(self.cluster.settings, self.cluster.run_id, workload)
            kind, name = manifest["kind"], manifest["metadata"]["name"]
            out[workload.name] = Handle(workload, ((kind, name),), (manifest,), submitted)
        return out

    def dcgm_result(self, node: str) -> RunResult:
        """This node's DCGM result: every node's job is submitted and awaited together, once per run."""
        if not self._dcgm_results:
            paths = self.folder.once("dcgm", self._dcgm_batch, timeout_s=self.profile.dcgm_timeout_s + 600)
            self._dcgm_results = {n: RunResult.from_json(json.loads(Path(p).read_text())) for n, p in paths.items()}
        return self._dcgm_results[node]

    def _dcgm_batch(self) -> dict[str, str]:
        """Submit all DCGM jobs, await them together, keep each result in the run folder (node → file)."""
        workloads = self.dcgm_workloads()
        with self.folder.lock(GPU_LOCK, timeout_s=self.profile.dcgm_timeout_s + 600):
            try:
                handles = self._handles(workloads, "submit-dcgm")
                results = self.cluster.wait([handles[w.name] for w in workloads], self.profile.dcgm_timeout_s)
            except AcceptanceError as exc:  # the cluster failed us: every node's item says so
                now = datetime.now(UTC)
                results = [
                    RunResult(w.name, "dcgm", "", None, "error", str(exc), now, now, {}, (), (), "") for w in workloads
                ]
        paths = {}
        for workload, result in zip(workloads, results, strict=True):
            self._save_result(f"dcgm/{workload.node}", result)
            path = self.folder.path / f"dcgm-{workload.node}.result.json"
            path.write_text(json.dumps(result.to_json()))
            paths[workload.node] = str(path)
        return paths

    def dcgm(self, node: str) -> Verdict:
        p = self.profile
        result = self.dcgm_result(node)
        if not result.output.strip():
            return _no_output(f"{node} DCGM diagnostic", result, "check the node and rerun the diagnostic")
        try:
            report = dcgm.parse(result.output, source=f"{node}:dcgmi diag")
        except ParseError as exc:
            return Verdict(Status.ERROR, node, f"{node}: DCGM output not understood ({exc}); see the evidence folder")
        reference = None
        reference_level = None
        if self.baseline is not None:
            found = self.baseline.baseline.dcgm_report(node)
            reference = dcgm.DcgmReport.from_json(found) if found else None
            conditions = self.baseline.baseline.dcgm_conditions
            reference_level = int(conditions["level"]) if conditions and conditions.get("level") else None
        policy = policy_for(p.dcgm_warning_policy)
        verdict = judge_node(
            node, report, reference, p.gpus_per_node, policy, result.exit_code,
            level=p.dcgm_level, reference_level=reference_level,
        )  # fmt: skip
        if self.recording:
            self.folder.write_part("dcgm", node, {"report": report.to_json(), "level": p.dcgm_level})
        return verdict

    def wait_for_dcgm(self) -> None:
        """Let every node's DCGM job finish before another workload takes the GPUs."""
        if self.dcgm_selected and self.targets():
            self.dcgm_result(self.targets()[0])

    # ------------------------------------------------------------ criterion 2

    def nccl_command(self, name: str) -> tuple[tuple[str, ...], dict[str, str], list[str]]:
        """argv, env and notes for a test: from the baseline when judging, from the profile when recording."""
        spec = self.profile.nccl_test(name) if name in self.profile.test_names else None
        if self.baseline is None:
            assert spec is not None
            return spec.args, dict(spec.env), []
        recorded = self.baseline.baseline.nccl_conditions(name)
        if recorded is None or "argv" not in recorded:
            raise AcceptanceError(
                f"the baseline {self.baseline.path.name} has no nccl test {name!r}; record a baseline that has it"
            )
        argv, env = tuple(recorded["argv"]), dict(recorded.get("env") or {})
        notes = []
        if spec is not None and (tuple(spec.args) != argv or dict(spec.env) != env):
            notes.append(
                f"the profile now says `{' '.join(spec.args)}`; the baseline's command `{' '.join(argv)}` was run"
            )
        return argv, env, notes

    def fabric(self, name: str) -> Verdict:
        p = self.profile
        argv, env, notes = self.nccl_command(name)
        nccl_env = {k: v for k, v in self.cluster.settings.env.items() if k.startswith("NCCL_")}
        test = nccl.NcclTest.from_argv(argv, {**nccl_env, **env})
        workload = NcclWorkload(f"nccl-{name}", p.nodes, p.gpus_per_node, argv, env, p.nccl_timeout_s)
        self.wait_for_dcgm()
        with self.folder.lock(GPU_LOCK, timeout_s=p.nccl_timeout_s * 4):
            handle = self._handles([workload], f"submit-nccl-{name}")[workload.name]
            (result,) = self.cluster.wait([handle], p.nccl_timeout_s)
        self._save_result(f"nccl/{name}", result)
        subject = name
        if not result.output.strip():
            return _no_output(f"{subject}", result, "check the nodes, the image and the MPI operator")
        capture = nccl.parse_text(result.output, source=f"{name}:launcher log", collective=test.collective)
        run = next((r for r in capture.runs if r.collective in (None, test.collective)), None)
        if run is None:
            errors = "; ".join(f"line {e.line}: {e.text}" for e in capture.errors[:3]) or result.reason
            return Verdict(
                Status.FAIL,
                subject,
                f"{subject}: nccl-tests printed no results ({errors}); exit {result.exit_code}",
                {"exit_code": result.exit_code, "status": capture.status},
                tuple(f"line {e.line}: {e.text}" for e in capture.errors),
            )
        self._save_placement(name, result, run)
        conditions = nccl.NcclConditions.of(run, test)
        if self.baseline is None:
            if run.status == "ok":
                self.folder.write_part("nccl", name, {
                    "conditions": {"argv": list(argv), "env": env, **conditions.to_json()},
                    "run": run.to_json(),
                })  # fmt: skip
            return _recorded_fabric(subject, run, capture.status)
        recorded = dict(self.baseline.baseline.nccl_conditions(name) or {})
        recorded.pop("argv", None)
        recorded.pop("env", None)
        reference_json = self.baseline.baseline.nccl_run(name)
        assert reference_json is not None
        margins = FabricMargins(p.margins.busbw_tolerance, p.margins.busbw_min_size)
        verdict = judge_fabric(
            run,
            conditions,
            nccl.NcclRun.from_json(reference_json),
            nccl.NcclConditions.from_json(recorded),
            margins,
        )
        if notes:
            verdict = Verdict(verdict.status, verdict.subject, verdict.summary, verdict.figures,
                              (*verdict.evidence, *notes), verdict.table)  # fmt: skip
        return verdict

    # ------------------------------------------------------------ criteria 3 and 4

    def _train_once(self, key: str, workload: SmokeWorkload) -> str:
        """Run a training workload once per run (after DCGM, alone on the GPUs); its log text."""

        def run() -> dict[str, Any]:
            self.wait_for_dcgm()
            with self.folder.lock(GPU_LOCK, timeout_s=workload.deadline_s * 4):
                (result,) = self.cluster.wait(self.cluster.submit([workload]), workload.deadline_s)
            self._save_result(f"training/{key}", result)
            log = self.folder.path / f"train-{key}.log"
            log.write_text(result.output)
            return {"log": str(log), "ok": result.ok, "status": result.status, "reason": result.reason,
                    "exit_code": result.exit_code, "tail": result.log_tail}  # fmt: skip

        slack = self.profile.dcgm_timeout_s + self.profile.nccl_timeout_s * len(self.profile.nccl_tests) + 600
        done = self.folder.once(f"train-{key}", run, timeout_s=workload.deadline_s * 2 + slack)
        if not done["ok"]:
            why = done["reason"] or f"exit {done['exit_code']}"
            tail = done["tail"].strip().splitlines()[-1:] if done["tail"] else []
            raise JobFailed(f"the {key} run of the job {done['status']} ({why}){': ' + tail[0] if tail else ''}")
        return Path(done["log"]).read_text()

    def smoke_step_time(self) -> Verdict:
        try:
            smoke = self.training.smoke()
        except JobFailed as exc:
            return Verdict(Status.FAIL, "smoke step time", f"smoke step time: {exc}; see the evidence folder")
        if self.baseline is None:
            sample = recorded_step_times(smoke)
            self.folder.write_part("smoke", "steps", sample)
            n = len(sample["step"])
            return Verdict(Status.PASS, "smoke step time", f"smoke step time: {n} steps recorded for the baseline",
                           {"steps_recorded": n})  # fmt: skip
        recorded = self.baseline.baseline.data["results"].get("smoke")
        if not recorded:
            return Verdict(
                Status.ERROR, "smoke step time",
                f"smoke step time: the baseline {self.baseline.path.name} has no step-time sample; record one",
            )  # fmt: skip
        steps = recorded.get("step") or list(range(1, len(recorded["step_time_s"]) + 1))
        reference = pd.Series(recorded["step_time_s"], index=pd.Index(steps, dtype="int64"), name="step_time_s")
        return judge_smoke(reference, smoke, self.profile)

    def loss_continuity(self) -> Verdict:
        try:
            before, after = self.training.pre_incident(), self.training.smoke()
        except JobFailed as exc:
            return Verdict(Status.FAIL, "loss continuity", f"loss continuity: {exc}; see the evidence folder")
        return judge_restore(before, after, self.training.restore_step, self.profile)

    # ------------------------------------------------------------ evidence

    def _save_result(self, stem: str, result: RunResult) -> None:
        if self.evidence is None:
            return
        self.evidence.add_text(f"outputs/{stem}.log", result.output)
        self.evidence.add_yaml(f"manifests/{stem}.yaml", [dict(m) for m in result.manifests])
        self.evidence.add_json(f"events/{stem}.json", [dict(e) for e in result.events])
        self.evidence.add_json(f"results/{stem}.json", {
            "workload": result.workload, "kind": result.kind, "status": result.status, "reason": result.reason,
            "exit_code": result.exit_code, "placement": dict(result.placement),
            "started": result.started.isoformat() if result.started else None,
            "finished": result.finished.isoformat() if result.finished else None,
        })  # fmt: skip

    def _save_placement(self, name: str, result: RunResult, run: nccl.NcclRun) -> None:
        if self.evidence is None:
            return
        placement = result.rank_placement({r.rank: r.host for r in run.ranks})
        rows = [
            {"rank": r.rank, "host": r.host, "pod": r.pod, "node": r.node,
             "device": rank.device, "busid": rank.busid, "gpu": rank.gpu}
            for rank in run.ranks
            for r in (placement[rank.rank],)
        ]  # fmt: skip
        self.evidence.add_json(f"placement/{name}.json", rows)


def _conditions_json(conditions: ClusterConditions) -> dict[str, Any]:
    return {
        "nodes": list(conditions.nodes),
        "kubernetes_version": conditions.kubernetes_version,
        "node_spec": conditions.node_spec.to_json(),
    }


def _no_output(subject: str, result: RunResult, todo: str) -> Verdict:
    took = ""
    if result.started and result.finished:
        took = f" after {format_duration((result.finished - result.started).total_seconds())}"
    status = Status.ERROR if result.status in ("unschedulable", "timeout", "error") else Status.FAIL
    return Verdict(
        status,
        subject,
        f"{subject}: {result.status}{took}: {result.reason or 'no output'}; {todo}",
        {"status": result.status, "exit_code": result.exit_code},
        tuple(e.get("message", "") for e in result.events if e.get("type") == "Warning")
        + ((result.log_tail,) if result.log_tail else ()),
    )


def _recorded_fabric(subject: str, run: nccl.NcclRun, status: str) -> Verdict:
    rows = [r for r in run.rows if r.oop is not None]
    largest = max(rows, key=lambda r: r.size) if rows else None
    figures: dict[str, Any] = {"status": status, "sizes": len(rows), "avg_busbw": run.avg_busbw}
    if status != "ok" or run.status != "ok":
        errors = tuple(f"line {e.line}: {e.text}" for e in run.errors)
        return Verdict(
            Status.FAIL,
            subject,
            f"{subject}: run {run.status}; not recordable as a baseline",
            figures,
            errors,
        )
    best = f"; busbw {largest.oop.busbw} GB/s at {nccl.fmt_bytes(largest.size)}" if largest and largest.oop else ""
    return Verdict(Status.PASS, subject, f"{subject}: clean run recorded for the baseline{best}", figures)
