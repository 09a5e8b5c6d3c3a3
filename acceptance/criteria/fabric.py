"""Criterion 2: nccl-tests across the full node set match the handover baseline within the agreed margin.

Workloads: one nccl-tests run per test, over every node of the agreement, after the DCGM
diagnostics. The command comes from the baseline (the profile's only when recording), so a
changed profile cannot silently change what is compared; the margins come from the
baseline too (`RunContext.margins`). Adds to a new baseline: each clean run and its conditions.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from acceptance.clusters.base import NcclWorkload, WorkloadResult
from acceptance.criteria.no_result import no_output, nothing_to_judge
from acceptance.criteria.parts import BaselinePart
from acceptance.criteria.scheduler import Batch
from acceptance.criteria.shared_folder import SharedFolder
from acceptance.errors import UsageError
from acceptance.judge.fabric import implausible, judge_fabric
from acceptance.judge.verdict import Status, Verdict
from acceptance.links import NodeLinks, busbw_bound
from acceptance.profile import Profile
from acceptance.tools import nccl
from acceptance.tools.nccl.checks import command_mismatch

if TYPE_CHECKING:
    from acceptance.criteria.runparts import RunParts


class Fabric:
    """Criterion 2 of one pytest process."""

    def __init__(self, run: RunParts) -> None:
        self.run = run
        self._judged: dict[str, Verdict] = {}

    def command(self, name: str) -> tuple[tuple[str, ...], dict[str, str], list[str]]:
        """argv, env and notes of a test: the baseline's when judging, the profile's when recording."""
        ctx = self.run.context
        profile = ctx.profile
        spec = profile.nccl_test(name) if name in profile.test_names else None
        if ctx.baseline is None:
            if spec is None:
                raise UsageError(f"{profile.path}: no nccl test named {name!r}")
            return spec.args, dict(spec.env), []
        recorded = ctx.baseline.baseline.nccl_conditions(name)
        if recorded is None or "argv" not in recorded:
            raise UsageError(
                f"the baseline {ctx.baseline.path.name} has no nccl test {name!r}; record a baseline that has it"
            )
        argv, env = tuple(recorded["argv"]), dict(recorded.get("env") or {})
        notes = []
        if spec is not None and (tuple(spec.args) != argv or dict(spec.env) != env):
            notes.append(
                f"the profile now says `{' '.join(spec.args)}`; the baseline's command `{' '.join(argv)}` was run"
            )
        return argv, env, notes

    def batch(self, name: str) -> Batch:
        p = self.run.context.profile
        argv, env, _ = self.command(name)
        workload = NcclWorkload(f"nccl-{name}", p.nodes, p.gpus_per_node, argv, env, p.nccl_timeout_s)
        return Batch(f"nccl-{name}", "nccl", {name: workload}, p.nccl_timeout_s)

    def verdict(self, name: str) -> Verdict:
        """The item's verdict; a failing one carries the run's localization (`acceptance.criteria.localize`)."""
        verdict = self.judged(name)
        if verdict.status is Status.FAIL:
            found = self.run.localize.for_failure(name)
            if found is not None:
                verdict = found.attach(verdict)
        return verdict

    def judged(self, name: str) -> Verdict:
        """The run of test `name` judged against the baseline (once per process)."""
        if name not in self._judged:
            self._judged[name] = self._judge(name)
        return self._judged[name]

    def failing_nodes(self, name: str) -> list[str]:
        """Nodes whose own CUDA failure the failing run's error lines report (``host: Test CUDA failure ...``)."""
        result = self.run.scheduler.results(self.batch(name))[name]
        capture = nccl.parse_text(result.output, source=f"{name}:launcher log")
        out: set[str] = set()
        for run in capture.runs:
            hosts = {p.host: p.node for p in result.rank_placement({r.rank: r.host for r in run.ranks}).values()}
            for error in run.errors:
                host = (
                    error.text.split(":", 1)[0].strip(" .").split(" ")[0] if "Test CUDA failure" in error.text else ""
                )
                if hosts.get(host):
                    out.add(str(hosts[host]))
        return sorted(out)

    def _judge(self, name: str) -> Verdict:
        ctx = self.run.context
        argv, env, notes = self.command(name)
        nccl_env = {k: v for k, v in self.run.cluster.workload_env().items() if k.startswith("NCCL_")}
        test = nccl.NcclTest.from_argv(argv, {**nccl_env, **env})
        self.run.diagnostics.finish_first()
        result = self.run.scheduler.results(self.batch(name))[name]
        if nothing_to_judge(result):
            return no_output(name, result, "check the nodes, the image and the MPI operator")
        capture = nccl.parse_text(result.output, source=f"{name}:launcher log", collective=test.collective)
        run = next((r for r in capture.runs if r.collective in (None, test.collective)), None)
        if run is None:
            return _died_before_header(name, capture, result)
        self._save_placement(name, result, run)
        conditions = dataclasses.replace(nccl.NcclConditions.of(run, test), image=result.image or None,
                                         launch=result.launch or None)  # fmt: skip
        refused = refusal(name, run, test, ctx.profile.links, conditions.node_count, recording=ctx.baseline is None)
        if refused is not None:
            return refused
        if ctx.baseline is None:
            if run.status == "ok" and capture.status == "ok":
                self.run.folder.write_part("nccl", name, {
                    "conditions": {"argv": list(argv), "env": env, **conditions.to_json()},
                    "run": run.to_json(),
                })  # fmt: skip
                pairs = self.run.localize.record_pairs(name, argv, env)
                if pairs is not None:
                    return pairs
            return _recorded(name, run, capture.status)
        recorded = {k: v for k, v in (ctx.baseline.baseline.nccl_conditions(name) or {}).items()
                    if k not in ("argv", "env")}  # fmt: skip
        reference = ctx.baseline.baseline.nccl_run(name)
        assert reference is not None
        verdict = judge_fabric(
            run,
            conditions,
            nccl.NcclRun.from_json(reference),
            nccl.NcclConditions.from_json(recorded),
            ctx.margins,
            ctx.profile.links,
        )
        if notes:
            verdict = Verdict(verdict.status, verdict.subject, verdict.summary, verdict.figures,
                              (*verdict.evidence, *notes), verdict.table)  # fmt: skip
        return verdict

    def _save_placement(self, name: str, result: WorkloadResult, run: nccl.NcclRun) -> None:
        if self.run.evidence is None:
            return
        placement = result.rank_placement({r.rank: r.host for r in run.ranks})
        rows = [
            {"rank": r.rank, "host": r.host, "pod": r.pod, "node": r.node,
             "device": rank.device, "busid": rank.busid, "gpu": rank.gpu}
            for rank in run.ranks
            for r in (placement[rank.rank],)
        ]  # fmt: skip
        self.run.evidence.placement(name, rows)


def refusal(
    name: str, run: nccl.NcclRun, test: nccl.NcclTest, links: NodeLinks | None, nodes: int | None, recording: bool
) -> Verdict | None:
    """FAIL for a run that is not what its command measures: its header's sweep is another command's, or (when
    recording a baseline; the judge checks it itself) a busbw is more than the links can carry."""
    mismatch = command_mismatch(run.params, test.sizes())
    if mismatch is not None:
        return Verdict(Status.FAIL, name, f"{name}: {mismatch}", {"status": run.status}, (mismatch,))
    refused = implausible(name, run, busbw_bound(links, nodes)) if recording and run.status == "ok" else None
    if refused is None:
        return None
    return Verdict(refused.status, refused.subject, f"{refused.summary}; not recordable as a baseline",
                   refused.figures, refused.evidence)  # fmt: skip


def _died_before_header(name: str, capture: nccl.NcclCapture, result: WorkloadResult) -> Verdict:
    """No report at all: quote the first line in which nccl-tests, NCCL or the launcher says why, and its host."""
    first = nccl.first_failure(capture.errors)
    figures: dict[str, Any] = {"exit_code": result.exit_code, "status": capture.status}
    if first is not None:
        where = f" on {first.host}" if first.host else ""
        summary = f"{name}: the run died before nccl-tests printed its header{where} — line {first.line}: {first.text}"
        if first.host:
            figures["failing_host"] = first.host
    else:
        errors = "; ".join(f"line {e.line}: {e.text}" for e in capture.errors[:3]) or result.reason
        summary = f"{name}: nccl-tests printed no results ({errors})"
    hosts = sorted({e.host for e in capture.errors if e.host})
    if hosts:
        figures["failing_hosts"] = ",".join(hosts)
    evidence = tuple(f"line {e.line}: {e.text}" + (f" [{e.host}]" if e.host else "") for e in capture.errors)
    return Verdict(Status.FAIL, name, f"{summary}; exit {result.exit_code}", figures, evidence)


def _recorded(subject: str, run: nccl.NcclRun, status: str) -> Verdict:
    rows = [r for r in run.rows if r.oop is not None]
    largest = max(rows, key=lambda r: r.size) if rows else None
    figures: dict[str, Any] = {"status": status, "sizes": len(rows), "avg_busbw": run.avg_busbw}
    if status != "ok" or run.status != "ok":
        errors = tuple(f"line {e.line}: {e.text}" for e in run.errors)
        return Verdict(Status.FAIL, subject, f"{subject}: run {run.status}; not recordable as a baseline", figures,
                       errors)  # fmt: skip
    best = f"; busbw {largest.oop.busbw} GB/s at {nccl.fmt_bytes(largest.size)}" if largest and largest.oop else ""
    return Verdict(Status.PASS, subject, f"{subject}: clean run recorded for the baseline{best}", figures)


def baseline_part(folder: SharedFolder, profile: Profile) -> BaselinePart:
    """Each nccl test's clean run, and the conditions it ran under (exact argv and env among them)."""
    parts = folder.parts("nccl")
    return BaselinePart(
        conditions={"nccl": {name: part["conditions"] for name, part in parts.items()}},
        results={"nccl": {name: part["run"] for name, part in parts.items()}},
        missing=tuple(name for name in profile.test_names if name not in parts),
    )
