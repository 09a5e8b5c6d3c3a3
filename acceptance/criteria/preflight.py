"""Criterion 0: the cluster answers, its node set is the agreed one and Ready, its versions are the agreed ones.

Needs no workload: it reads the cluster's inventory. When it finds the cluster unusable,
the later criteria skip with its reason instead of failing misleadingly.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from acceptance.baseline import ClusterConditions
from acceptance.criteria.parts import BaselinePart
from acceptance.criteria.shared_folder import SharedFolder
from acceptance.errors import AcceptanceError, BaselineError
from acceptance.judge import preflight
from acceptance.judge.verdict import Status, Verdict
from acceptance.profile import Profile

if TYPE_CHECKING:
    from acceptance.criteria.runparts import RunParts

ITEMS = ("cluster", "nodes", "versions", "leftovers")


@dataclass(frozen=True)
class PreflightResult:
    """Criterion 0's verdicts by item, and the reason later criteria skip when one of them blocks."""

    verdicts: Mapping[str, Verdict]
    conditions: ClusterConditions | None
    blocking: str | None


class Preflight:
    """Criterion 0 of one pytest process (each process asks the cluster once)."""

    def __init__(self, run: RunParts) -> None:
        self.run = run
        self._result: PreflightResult | None = None

    def result(self) -> PreflightResult:
        if self._result is None:
            self._result = self._check()
        return self._result

    @property
    def blocking(self) -> str | None:
        return self.result().blocking

    def _check(self) -> PreflightResult:
        ctx, cluster = self.run.context, self.run.cluster
        p = ctx.profile
        try:
            inventory = cluster.inventory()
        except AcceptanceError as exc:
            reason = f"the cluster does not answer: {exc}"
            where = "; ".join(cluster.describe())
            down = Verdict(Status.FAIL, "cluster", f"cluster {p.name}: {reason}; check how it is reached ({where})")
            return PreflightResult({"cluster": down}, None, reason)
        answers = Verdict(
            Status.PASS,
            "cluster",
            f"cluster {p.name} answers ({preflight.platform(inventory.server_version)}, {len(inventory.nodes)} nodes)",
            {"kubernetes_version": inventory.server_version, "nodes_total": len(inventory.nodes)},
        )
        nodes = preflight.judge_nodes(inventory, p.nodes, p.gpus_per_node)
        conditions = preflight.conditions_of(inventory, p.nodes, p.gpus_per_node)
        then = ctx.baseline.baseline.conditions if ctx.baseline else None
        versions = preflight.judge_versions(conditions, then)
        try:
            leftovers = preflight.judge_leftovers(cluster.leftovers())
        except AcceptanceError as exc:
            leftovers = Verdict(Status.ERROR, "leftovers", f"leftovers: cannot list objects ({exc})")
        if ctx.recording:
            self.run.folder.write_part("cluster", "conditions", _conditions_json(conditions))
        verdicts = {"cluster": answers, "nodes": nodes, "versions": versions, "leftovers": leftovers}
        return PreflightResult(verdicts, conditions, None if nodes.passed else nodes.summary)


def _conditions_json(conditions: ClusterConditions) -> dict[str, Any]:
    return {
        "nodes": list(conditions.nodes),
        "kubernetes_version": conditions.kubernetes_version,
        "node_spec": conditions.node_spec.to_json(),
    }


def baseline_part(folder: SharedFolder, profile: Profile) -> BaselinePart:
    """The cluster-wide conditions: node set, Kubernetes version, worker node spec (the same of any profile)."""
    cluster = folder.parts("cluster").get("conditions")
    if cluster is None:
        raise BaselineError("the preflight did not run, so the cluster's conditions are unknown; run the whole suite")
    return BaselinePart(conditions=cluster)
