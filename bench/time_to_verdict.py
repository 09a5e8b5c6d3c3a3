"""Benchmark: simulated time to verdict of a whole acceptance, fixed vs sequential smoke, and the
GPU-hours of the cluster it holds, at 16 and 128 nodes.

    python bench/time_to_verdict.py                  # 16 and 128 nodes, 5 seeds each
    python bench/time_to_verdict.py --nodes 16 --seeds 20

The simulator's own tool times (simulated seconds at time scale 1, what a real cluster takes), for
the shipped sim profile's workloads, in the order the suite awaits them (its critical path: the
batches run one after the other, alone on the GPUs): DCGM level 3 (every node at once: the
slowest node), each nccl test of the profile over all nodes, the smoke run, the pre-incident run.
The smoke run's length: ``fixed`` runs the profile's 200 steps; ``sequential`` stops where the
agreed rule (`acceptance.judge.steptime_seq`, mixture, alpha 0.05, 50..200 steps) decides, held
for criterion 4's 50 post-restore steps, judged against a handover run of the same job on the healthy
cluster: the time to that step is the run's start-up plus its logged step times up to it. Healthy
and a throttled GPU (`gpu-throttle` on one GPU of the fifth node) per seed. GPU-hours = nodes x 8 x hours.
Prints a table; asserts nothing. (The harness's own wall time is `bench/prepull.py`'s subject.)
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from acceptance.judge.steptime_seq import SequentialRule, judge_sequential
from acceptance.judge.steptime_series import step_times
from acceptance.profile import SHIPPED_DIR
from acceptance.sim.model.runner import SimRunner
from acceptance.sim.model.scenario import load_scenario
from acceptance.sim.runtime import Host
from acceptance.tools import trainlog

GPUS = 8
HOLD = 50  # criterion 4's check_steps after the restore


def _profile() -> dict[str, object]:
    return dict(yaml.safe_load((SHIPPED_DIR / "sim" / "cluster.yaml").read_text()))


def _runner(nodes: int, seed: int, faults: list[str]) -> SimRunner:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"bench-{nodes}.yaml"
        path.write_text(yaml.safe_dump({"name": f"bench-{nodes}", "nodes": nodes, "nodes_per_leaf": 16,
                                        "seed": seed, "faults": []}))  # fmt: skip
        return SimRunner.from_scenario(load_scenario(path), faults, seed=seed)


def _mpirun(nodes: list[str], argv: list[str]) -> tuple[list[str], list[Host]]:
    hosts = [Host(f"w-{i}", n, GPUS) for i, n in enumerate(nodes)]
    return ["mpirun", "-np", str(GPUS * len(nodes)), "--hostfile", "/etc/mpi/hostfile", *argv], hosts


def _smoke_seconds(
    handover_runner: SimRunner, runner: SimRunner, nodes: list[str], argv: list[str], rule: SequentialRule
) -> tuple[
    float, float, int, str
]:  # fmt: skip
    """(fixed seconds, sequential seconds, steps used, outcome) of one smoke run against a handover run."""
    cmd, hosts = _mpirun(nodes, argv)
    handover = handover_runner.run(cmd, {}, nodes[0], hosts)
    smoke = runner.run(cmd, {}, nodes[0], hosts)
    base_log = trainlog.parse(handover.stdout.splitlines(keepends=True), source="handover")
    log = trainlog.parse(smoke.stdout.splitlines(keepends=True), source="smoke")
    times = step_times(log)
    startup = smoke.duration_s - float(times.sum())
    decision = judge_sequential(step_times(base_log), log, rule, hold_steps=HOLD)
    fixed = startup + float(times.iloc[: rule.max_steps].sum())
    return fixed, startup + float(times.iloc[: decision.steps_used].sum()), decision.steps_used, decision.outcome


def acceptance(nodes: int, seed: int, faults: list[str]) -> dict[str, float | str]:
    """One acceptance's critical path; `faults` name a fault kind, struck at the fifth node's GPU 2."""
    profile = _profile()
    healthy = _runner(nodes, seed, [])
    names = [n.name for n in healthy.nodes()]
    runner = _runner(nodes, seed, [f"{f}@{names[4]}:2" for f in faults])
    dcgm = max(runner.run(["dcgmi", "diag", "-r", "3", "-j"], {}, n, ()).duration_s for n in names)
    nccl = 0.0
    for test in profile["nccl"]["tests"]:  # type: ignore[index]
        cmd, hosts = _mpirun(names, [str(a) for a in test["args"]])
        nccl += runner.run(cmd, {}, names[0], hosts).duration_s
    smoke_spec = profile["smoke"]  # type: ignore[index]
    cmd, hosts = _mpirun(names, [str(a) for a in smoke_spec["pre_incident_command"]])
    pre = runner.run(cmd, {}, names[0], hosts).duration_s
    fixed, sequential, used, outcome = _smoke_seconds(healthy, runner, names, [str(a) for a in smoke_spec["command"]],
                                             SequentialRule())  # fmt: skip
    other = dcgm + nccl + pre
    return {"other": other, "smoke_fixed": fixed, "smoke_seq": sequential, "steps": used,
            "fixed": other + fixed, "sequential": other + sequential, "outcome": outcome}  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[16, 128])
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args()
    print(f"{'nodes':>5} {'case':<9} {'decided':>8} {'steps used':>11} {'smoke fixed':>12} {'smoke seq':>10} "
          f"{'accept fixed':>13} {'accept seq':>11} {'GPU-h fixed':>12} {'GPU-h seq':>10} {'saved':>6}")  # fmt: skip
    for nodes in args.nodes:
        for case, faults in (("healthy", []), ("throttled", ["gpu-throttle"])):
            runs = [acceptance(nodes, 20261129 + s, faults) for s in range(args.seeds)]

            def med(key: str, runs: list[dict[str, float | str]] = runs) -> float:
                return statistics.median(float(r[key]) for r in runs)

            outcomes = "/".join(sorted({str(r["outcome"]) for r in runs}))

            gpu_h = nodes * GPUS / 3600
            print(f"{nodes:>5} {case:<9} {outcomes:>8} {med('steps'):>11.0f} {med('smoke_fixed') / 60:>10.1f} m "
                  f"{med('smoke_seq') / 60:>8.1f} m {med('fixed') / 60:>11.1f} m {med('sequential') / 60:>9.1f} m "
                  f"{med('fixed') * gpu_h:>12.1f} {med('sequential') * gpu_h:>10.1f} "
                  f"{1 - med('sequential') / med('fixed'):>6.1%}")  # fmt: skip
    print(
        f"(median of {args.seeds} seeds; simulated seconds at time scale 1; the critical path DCGM r3, "
        "nccl tests, smoke run, pre-incident run)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
