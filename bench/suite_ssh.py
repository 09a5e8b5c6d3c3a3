"""Benchmark: the healthy suite over SSH (`--cluster=sim-ssh`) against the same over the emulator (`--cluster=sim`).

    python bench/suite_ssh.py              # the shipped profiles and baselines, each suite run --repeat times
    python bench/suite_ssh.py --repeat 3

Both profiles simulate the same 16 x 8 x H200 cluster; the SSH run adds a real sshd, one SSH
connection per host, detached processes on the hosts and real Open MPI mpirun launching 128 ranks
per MPI run. Prints the wall time of each run, the medians and their ratio; asserts nothing.
The machine's load average is printed too: on a shared box it moves the figures more than anything.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the project, and `bench` as a package

from acceptance.sim.ssh.sshd import INSTALL_HINT, missing_tools
from bench.suite_timing import timed_suite


def run(cluster: str, report: Path) -> tuple[float, str]:
    return timed_suite(f"--cluster={cluster}", f"--report-dir={report}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    if missing_tools():
        print(f"suite over SSH: skipped ({INSTALL_HINT})")
        return 0
    walls: dict[str, list[float]] = {"sim": [], "sim-ssh": []}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeat):
            for cluster, times in walls.items():
                load = os.getloadavg()[0]
                wall, summary = run(cluster, Path(tmp) / f"{cluster}-{i}")
                times.append(wall)
                print(f"--cluster={cluster}: {wall:.1f} s wall ({summary}; load average {load:.1f} at start)")
    sim, ssh = statistics.median(walls["sim"]), statistics.median(walls["sim-ssh"])
    print(f"median: sim {sim:.1f} s, sim-ssh {ssh:.1f} s, ratio sim-ssh/sim {ssh / sim:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
