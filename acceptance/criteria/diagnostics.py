"""Criterion 1: every GPU of each returned node passes DCGM diagnostics.

Workloads: one ``dcgmi diag -r LEVEL -j`` per target node, all submitted together and
awaited together, once per run. Each item judges its own node against the node's
handover report. Adds to a new baseline: each node's report and the DCGM level and version.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from acceptance import criteria
from acceptance.clusters.base import DcgmWorkload
from acceptance.criteria.no_result import no_output, nothing_to_judge
from acceptance.criteria.parts import BaselinePart
from acceptance.criteria.scheduler import Batch, BatchResults
from acceptance.criteria.shared_folder import SharedFolder
from acceptance.errors import ParseError
from acceptance.judge.diagnostics import judge_node, policy_for
from acceptance.judge.verdict import Status, Verdict
from acceptance.profile import Profile
from acceptance.tools import dcgm

if TYPE_CHECKING:
    from acceptance.criteria.runparts import RunParts

MODULE = criteria.module(1)


def command(profile: Profile) -> dcgm.DcgmDiag:
    embedded = profile.dcgm_host_engine == "embedded"
    return dcgm.DcgmDiag(
        level=profile.dcgm_level, timeout_s=profile.dcgm_timeout_s, host=None if embedded else profile.dcgm_host_engine
    )


def workload(profile: Profile, node: str) -> DcgmWorkload:
    """`dcgmi diag` needs a host engine: started in the pod ("embedded"), or the one the profile names."""
    diag = command(profile)
    argv = tuple(diag.argv())
    if diag.host is None:  # embedded (`command` names no host engine): start one in the pod.
        # The engine's banner must not precede dcgmi's JSON; dcgmi's exit status is the pod's.
        argv = ("bash", "-c", f"nv-hostengine >/dev/null && exec {shlex.join(argv)}")
    return DcgmWorkload(f"dcgm-{node}", node, profile.gpus_per_node, argv, profile.dcgm_timeout_s)


class Diagnostics:
    """Criterion 1 of one pytest process."""

    def __init__(self, run: RunParts) -> None:
        self.run = run

    def batch(self) -> Batch:
        """Every target node's diagnostic, with the later criteria's images pulled alongside (`criteria.prepull`)."""
        p = self.run.context.profile
        workloads = {n: workload(p, n) for n in self.run.context.targets}
        return Batch("dcgm", "dcgm", workloads, p.dcgm_timeout_s, note=command(p).progress_note(),
                     alongside=self.run.prepull.batch())  # fmt: skip

    def results(self) -> BatchResults:
        return self.run.scheduler.results(self.batch())

    def finish_first(self) -> None:
        """When this run diagnoses GPUs, that happens before another workload takes them."""
        if MODULE in self.run.selected and self.run.context.targets:
            self.results()

    def verdict(self, node: str) -> Verdict:
        ctx = self.run.context
        p = ctx.profile
        result = self.results()[node]
        if nothing_to_judge(result):
            return no_output(f"{node} DCGM diagnostic", result, "check the node and rerun the diagnostic")
        try:
            report = dcgm.parse(result.output, source=f"{node}:dcgmi diag")
        except ParseError as exc:
            return Verdict(Status.ERROR, node, f"{node}: DCGM output not understood ({exc}); see the evidence folder")
        reference = reference_level = reference_image = None
        if ctx.baseline is not None:
            found = ctx.baseline.baseline.dcgm_report(node)
            reference = dcgm.DcgmReport.from_json(found) if found else None
            conditions = ctx.baseline.baseline.dcgm_conditions or {}
            reference_level = int(conditions["level"]) if conditions.get("level") else None
            reference_image = conditions.get("image") or None
        verdict = judge_node(
            node, report, reference, p.gpus_per_node, policy_for(p.dcgm_warning_policy), result.exit_code,
            level=p.dcgm_level, reference_level=reference_level, image=result.image or None,
            reference_image=reference_image,
        )  # fmt: skip
        if ctx.recording:
            part = {"report": report.to_json(), "level": p.dcgm_level, "image": result.image or None}
            self.run.folder.write_part("dcgm", node, part)
        return verdict


def baseline_part(folder: SharedFolder, profile: Profile) -> BaselinePart:
    """Each node's DCGM report, and the DCGM level and version they share."""
    parts = folder.parts("dcgm")

    def common(values: Iterable[Any]) -> Any:
        found = set(values)
        return found.pop() if len(found) == 1 else None

    conditions = (
        {"dcgm_version": common(part["report"].get("dcgm_version") for part in parts.values()),
         "level": common(part.get("level") for part in parts.values()),
         "image": common(part.get("image") for part in parts.values())}
        if parts
        else None
    )  # fmt: skip
    return BaselinePart(
        conditions={"dcgm": conditions},
        results={"dcgm": {node: part["report"] for node, part in parts.items()}},
        missing=tuple(f"DCGM on {node}" for node in profile.nodes if node not in parts),
    )
