"""Fabric localization: when a fabric item fails, name the bad node, link or switch.

Once per run (the run folder's `once`, so with pytest-xdist too, and with several failing fabric
items): the first failing nccl test in the baseline's order is re-run on disjoint groups of nodes
in parallel, one `Batch` per round through the run's `Scheduler` (under the GPU lock, cleaned up
like every workload), with the baseline's binary and environment and a short sweep ending at its
worst size. The pure planner (`acceptance.judge.localize`) picks the groups and concludes; the
groups are judged against the pair baseline recorded at handover and the round's other groups.
The whole search has a deadline (``localize.deadline``), each round its own. Off with
``localize: {enabled: false}``. Adds to a new baseline: the pair baseline of each nccl test.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from acceptance import criteria
from acceptance.criteria.localize_result import LocalizeResult
from acceptance.criteria.localize_run import GroupCommand, measure, reference_of, round_rows, sweep
from acceptance.criteria.parts import BaselinePart
from acceptance.criteria.shared_folder import SharedFolder
from acceptance.errors import AcceptanceError, UsageError
from acceptance.judge.localize import Conclusion, Problem, Round, drive
from acceptance.judge.localize_groups import Observation, observe_round
from acceptance.judge.localize_plan import pair_set
from acceptance.judge.localize_topology import Topology
from acceptance.judge.verdict import Status, Verdict
from acceptance.profile import LocalizeSettings, Profile

if TYPE_CHECKING:
    from acceptance.criteria.runparts import RunParts

KEY = "localize"
NO_PAIRS = "the round's median per size (the baseline has no pair baseline)"
DIAGNOSTICS = criteria.module(1)


class Localize:
    """Localization of one pytest process (see the module docstring)."""

    def __init__(self, run: RunParts) -> None:
        self.run = run
        self._topology: Topology | None = None

    @property
    def settings(self) -> LocalizeSettings:
        return self.run.context.profile.localize

    def for_failure(self, name: str) -> LocalizeResult | None:
        """The run's one localization, asked for by failing fabric item `name`; None when turned off."""
        ctx = self.run.context
        if not self.settings.enabled or ctx.recording:
            return None
        wait = self.settings.deadline_s + ctx.gpu_budget_s
        doc = self.run.folder.once(KEY, lambda: self._guarded(name), timeout_s=wait)
        return LocalizeResult.from_json(doc)

    def _guarded(self, trigger: str) -> dict[str, Any]:
        """The search as plain data; a problem (labels missing, a cluster error) is its conclusion, not a crash."""
        try:
            return self._first_failure(trigger).to_json()
        except AcceptanceError as exc:
            why = f"localization could not run: {exc}"
            conclusion = Conclusion((), why, (), 0, 0, confirmed=False)
            return LocalizeResult(trigger, conclusion, (), 0.0, (), "nothing", "unknown", why).to_json()

    def _first_failure(self, trigger: str) -> LocalizeResult:
        """Localize with the first failing test of the baseline's order (the same whichever item asks)."""
        tests = self.run.context.nccl_tests
        selected = self.run.nccl_selected
        for name in tests[: tests.index(trigger) + 1] if trigger in tests else (trigger,):
            if selected is not None and name not in selected and name != trigger:
                continue
            judged = self.run.fabric.judged(name)
            if judged.status is Status.FAIL:
                worst = judged.figures.get("worst_size")
                hints = {n: f"named by {name}'s error lines" for n in self.run.fabric.failing_nodes(name)}
                return self.search(name, worst=int(worst) if isinstance(worst, int) else None, hints=hints)
        return self.search(trigger)

    def topology(self) -> tuple[Topology, dict[str, str]]:
        """The fabric's topology (labels named in the profile, or its listing) and the nodes that cannot run."""
        p = self.run.context.profile
        inventory = self.run.cluster.inventory()
        unavailable = {}
        for node in p.nodes:
            info = inventory.node(node)
            if info is None:
                unavailable[node] = "not in the cluster"
            elif not info.ready or info.unschedulable:
                unavailable[node] = "NotReady" if not info.ready else "cordoned"
        if self._topology is None:
            t = self.settings.topology
            listed = [n for n in p.nodes if n not in unavailable]
            if t.leaves:
                self._topology = Topology.from_listing(p.nodes, t.leaves, t.spines).restricted(listed)
            elif t.leaf_label:
                labels = {n: dict(info.labels) for n in listed if (info := inventory.node(n)) is not None}
                self._topology = Topology.from_labels(labels, t.leaf_label, t.spine_label)
            else:
                self._topology = Topology.flat(listed)
        return self._topology, unavailable

    def _known(self) -> dict[str, str]:
        """Nodes DCGM failed earlier in this run (criterion 1), with its one-line finding."""
        if DIAGNOSTICS not in self.run.selected:
            return {}
        out = {}
        for node in self.run.context.targets:
            verdict = self.run.diagnostics.verdict(node)
            if not verdict.passed:
                out[node] = f"DCGM {verdict.status.value}: {verdict.summary.split(' — ')[0]}"
        return out

    def search(
        self,
        test: str,
        *,
        nodes: Sequence[str] | None = None,
        worst: int | None = None,
        triggered: bool = True,
        hints: Mapping[str, str] | None = None,
    ) -> LocalizeResult:
        """Plan, run and judge rounds until a conclusion or the deadline."""
        ctx, s = self.run.context, self.settings
        started = time.monotonic()
        topology, unavailable = self.topology()
        chosen = tuple(nodes or ctx.profile.nodes)
        unknown = [n for n in chosen if n not in ctx.profile.nodes]
        if unknown:
            raise UsageError(f"not in the node set of {ctx.profile.path}: {', '.join(unknown)}")
        argv, env, _ = self.run.fabric.command(test)
        pairs = ctx.baseline.baseline.data["results"].get("pairs", {}).get(test) if ctx.baseline else None
        reference = reference_of(pairs)
        sizes = sweep(argv, reference, worst, s.sweep_sizes, ctx.margins.busbw_min_size)
        command = GroupCommand.of(test, argv, env, sizes)
        down = {n: why for n, why in unavailable.items() if n in chosen}
        able = tuple(n for n in chosen if n not in down)
        problem = Problem(
            nodes=able, topology=topology.restricted(able), unavailable=down,
            known={**self._known(), **(hints or {})}, triggered=triggered, max_rounds=s.max_rounds,
        )  # fmt: skip
        rounds: list[dict[str, Any]] = []
        halted: list[str] = []

        def run_round(step: Round) -> Sequence[Observation]:
            left = s.deadline_s - (time.monotonic() - started)
            batch = command.batch(f"loc-r{step.number}", "localize", step.groups, ctx.profile.gpus_per_node,
                                  max(1.0, min(s.round_timeout_s, left)))  # fmt: skip
            results = self.run.scheduler.results(batch)
            subjects = list(batch.workloads)
            found = [results[k] for k in subjects]
            if all(not r.output.strip() and r.status in ("error", "unschedulable") for r in found):
                halted.append(f"round {step.number} could not run on the cluster: {found[0].reason}")
            measures = [measure(g, r, command) for g, r in zip(step.groups, found, strict=True)]
            judged = observe_round(step.number, measures, problem.topology, ctx.margins.busbw_tolerance, reference)
            rounds.append(round_rows(problem.topology, step.number, step.purpose, judged))
            return judged

        def stop() -> str | None:
            if halted:
                return halted[-1]
            if time.monotonic() - started > s.deadline_s:
                return f"the search's deadline ({s.deadline_s:.0f} s) passed after {len(rounds)} rounds"
            return None

        conclusion, _ = drive(problem, run_round, stop)
        where = "the pair baseline recorded at handover" if reference is not None else NO_PAIRS
        seconds = time.monotonic() - started
        result = LocalizeResult(test, conclusion, tuple(rounds), seconds, tuple(sizes), where, topology.source,
                                stop() or "")  # fmt: skip
        if self.run.evidence is not None:
            self.run.evidence.folder.add_json("localize.json", result.to_json())
        return result

    # --- at handover ------------------------------------------------------------------------

    def record_pairs(self, name: str, argv: Sequence[str], env: Mapping[str, str]) -> Verdict | None:
        """Measure the pair baseline of test `name` (``--record-baseline``); a failing verdict when it cannot."""
        ctx = self.run.context
        if not self.settings.enabled:
            return None
        topology, unavailable = self.topology()
        nodes = [n for n in ctx.profile.nodes if n not in unavailable]
        groups = pair_set(topology, nodes)
        parsed = _series(argv, ctx.margins.busbw_min_size)
        command = GroupCommand.of(name, argv, env, parsed)
        p = ctx.profile
        batch = command.batch(f"pairs-{name}", "pairs", groups, p.gpus_per_node, p.nccl_timeout_s)
        results = self.run.scheduler.results(batch)
        rows, problems = [], []
        for subject, group in zip(batch.workloads, groups, strict=True):
            m = measure(group, results[subject], command)
            if m.failure or not m.busbw:
                problems.append(f"{'+'.join(group)}: {m.failure or 'no busbw'}")
                continue
            busbw = {str(k): v for k, v in m.busbw.items()}
            rows.append({"nodes": list(group), "leaves": list(topology.leaves_of(group)),
                         "crossing": topology.crosses(group), "busbw": busbw})  # fmt: skip
        if problems or not rows:
            first = problems[0] if problems else "no pairs"
            figures = {"pairs": len(groups), "pairs_failed": len(problems)}
            return Verdict(
                Status.FAIL, name, f"{name}: pair baseline not recordable: {first}", figures, tuple(problems)
            )
        self.run.folder.write_part("pairs", name, {"argv": list(command.argv), "env": dict(env),
                                                   "sizes": list(command.sizes), "groups": rows})  # fmt: skip
        return None


def _series(argv: Sequence[str], minimum: int) -> list[int]:
    from acceptance.tools.nccl import NcclTest

    sizes = NcclTest.from_argv(argv).sizes()
    return [s for s in sizes if s >= minimum] or sizes[-1:]


def baseline_part(folder: SharedFolder, profile: Profile) -> BaselinePart:
    """The pair baseline of every nccl test (only when localization is on)."""
    if not profile.localize.enabled:
        return BaselinePart()
    parts = folder.parts("pairs")
    missing = tuple(f"pair baseline of {name}" for name in profile.test_names if name not in parts)
    return BaselinePart(results={"pairs": parts} if parts else {}, missing=missing)
