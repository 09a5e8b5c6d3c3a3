"""Benchmark: render a 1024-node nccl-tests output (8,192 rank lines) and 1024 DCGM reports.

    python bench/sim_render.py [--repeat 3]

Prints the best wall time of each step; the target is well under a second each.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from acceptance.sim.model.runner import SimRunner
from acceptance.sim.model.scenario import Scenario
from acceptance.sim.runtime import Host


def best_of(repeat: int, fn: Callable[[], object]) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    runner = SimRunner.from_scenario(Scenario(name="scale-1024", nodes=1024, nodes_per_leaf=16))
    hosts = [Host(f"nccl-worker-{i}", n.name, 8) for i, n in enumerate(runner.cluster.nodes)]
    argv = ["mpirun", "-np", "8192", "all_reduce_perf", "-b", "8", "-e", "16G", "-f", "2", "-g", "1"]

    seconds, run = best_of(args.repeat, lambda: runner.run(argv, {}, "launcher", hosts))
    text = run.stdout  # type: ignore[attr-defined]
    ranks = sum(line.startswith("#  Rank") for line in text.splitlines())
    print(f"nccl-tests 1024 nodes: {ranks} rank lines, {len(text) / 1e6:.2f} MB in {seconds * 1e3:.1f} ms")

    info_s, info = best_of(1, lambda: runner.run(argv, {"NCCL_DEBUG": "INFO"}, "launcher", hosts))
    lines = info.stdout.count("\n")  # type: ignore[attr-defined]
    print(f"nccl-tests 1024 nodes with NCCL_DEBUG=INFO: {lines} lines in {info_s * 1e3:.1f} ms")

    names = [n.name for n in runner.cluster.nodes]
    for flag, label in ((["-j"], "JSON"), ([], "text")):
        dcgm = ["dcgmi", "diag", "-r", "3", *flag]
        seconds, _ = best_of(args.repeat, lambda dcgm=dcgm: [runner.run(dcgm, {}, n, []) for n in names])
        print(f"DCGM r3 {label}: 1024 reports in {seconds * 1e3:.1f} ms ({seconds / 1024 * 1e6:.0f} us each)")


if __name__ == "__main__":
    main()
