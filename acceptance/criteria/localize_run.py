"""Group tests of a localization as workloads, and what each one measured.

The command of every group test is the failing test's (the baseline's binary, options and
environment), with only its size sweep shortened: `sweep_sizes` message sizes ending at the
failing run's worst size, none below the agreed minimum. The argv is parsed and rendered by
`acceptance.tools.nccl.NcclTest`, never edited as text. A group's result becomes a
`GroupMeasure`: busbw per size, or why there is none, with the nodes whose own CUDA failure the
tool's error lines report.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from acceptance.clusters.base import NcclWorkload, WorkloadResult
from acceptance.criteria.scheduler import Batch
from acceptance.judge.localize_groups import GroupMeasure, PairReference
from acceptance.judge.localize_topology import Topology
from acceptance.tools import nccl


@dataclass(frozen=True)
class GroupCommand:
    """The group tests' command: the failing test's, over a short sweep."""

    test: str
    argv: tuple[str, ...]
    env: Mapping[str, str]
    sizes: tuple[int, ...]
    collective: str

    @classmethod
    def of(cls, test: str, argv: Sequence[str], env: Mapping[str, str], sizes: Sequence[int]) -> GroupCommand:
        parsed = nccl.NcclTest.from_argv(argv, env)
        low, high = min(sizes), max(sizes)
        short = parsed.replaced(minbytes=low, maxbytes=high)
        if parsed.option("stepfactor") is None and len(sizes) > 1:
            short = short.replaced(stepfactor=2, stepbytes=None)
        return cls(test, tuple(short.argv()), dict(env), tuple(sorted(sizes)), parsed.collective)

    def batch(self, key: str, evidence: str, groups: Sequence[tuple[str, ...]], gpus: int, deadline_s: float) -> Batch:
        """One round: a workload per group, named and filed (evidence) ``<key>-g01``, ``<key>-g02`` ..."""
        names = [f"{key}-g{i + 1:02d}" for i in range(len(groups))]
        workloads = {
            name: NcclWorkload(name, tuple(group), gpus, self.argv, self.env, deadline_s)
            for name, group in zip(names, groups, strict=True)
        }
        return Batch(key, evidence, workloads, deadline_s)


def sweep(
    test_argv: Sequence[str], reference: PairReference | None, worst: int | None, count: int, minimum: int
) -> list[int]:
    """`count` sizes of the test's own series (the pair baseline's, when there is one) ending at `worst`."""
    series = list(reference.sizes) if reference is not None else nccl.NcclTest.from_argv(test_argv).sizes()
    series = sorted(s for s in series if s >= minimum) or sorted(series)[-1:]
    if not series:
        return []
    end = len(series) - 1
    if worst is not None:
        end = min(range(len(series)), key=lambda i: (abs(series[i] - worst), -i))
    start = max(0, end - count + 1)
    return series[start : end + 1]


def _hosts_to_nodes(result: WorkloadResult, run: nccl.NcclRun) -> dict[str, str]:
    placement = result.rank_placement({r.rank: r.host for r in run.ranks})
    return {p.host: p.node for p in placement.values() if p.node}


def measure(group: tuple[str, ...], result: WorkloadResult, command: GroupCommand) -> GroupMeasure:
    """What one group test measured: busbw per size, or the failure and the nodes its error lines name."""
    if not result.output.strip():
        return GroupMeasure(group, {}, f"{result.status}: {result.reason or 'no output'}")
    capture = nccl.parse_text(result.output, source=result.workload, collective=command.collective)
    run = next((r for r in capture.runs if r.collective in (None, command.collective)), None)
    if run is None:
        first = capture.errors[0].text if capture.errors else result.reason or "no results"
        return GroupMeasure(group, {}, f"nccl-tests printed no results: {first}")
    if run.status != "ok" or not result.ok:
        hosts = _hosts_to_nodes(result, run)
        named = sorted({hosts.get(_host_of(e.text), "") for e in run.errors if LOCAL_FAILURE in e.text} - {""})
        first = next((e.text for e in run.errors if "Test " in e.text), run.errors[0].text if run.errors else "")
        why = f"run {run.status}, exit {result.exit_code}" + (f": {first}" if first else "")
        return GroupMeasure(group, {}, why, tuple(n for n in named if n in group))
    busbw = {r.size: r.oop.busbw for r in run.rows if r.oop is not None and r.oop.busbw is not None}
    return GroupMeasure(group, busbw)


# A process reports its own GPU failing with this; "Test NCCL failure ... remote process exited" lines
# come from the peers of a failure too, so they name no culprit.
LOCAL_FAILURE = "Test CUDA failure"


def _host_of(text: str) -> str:
    head = text.split(":", 1)[0].strip(" .")
    return head.split()[0] if head else ""


def reference_of(pairs: Mapping[str, Any] | None) -> PairReference | None:
    """The pair baseline of one test, from the baseline's ``results.pairs[test]``."""
    if not pairs:
        return None
    groups = [(bool(g["crossing"]), {int(k): float(v) for k, v in g["busbw"].items()}) for g in pairs["groups"]]
    return PairReference.from_pairs(groups)


def round_rows(topology: Topology, number: int, purpose: str, observations: Sequence[Any]) -> dict[str, Any]:
    """One round as plain data for the report: each group's nodes, their leaves, status, ratio and detail."""
    return {
        "round": number,
        "purpose": purpose,
        "groups": [
            {**o.to_json(), "leaves": [topology.leaf(n) for n in o.nodes], "crossing": topology.crosses(o.nodes)}
            for o in observations
        ],
    }
