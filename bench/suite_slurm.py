"""Benchmark: the healthy suite on Slurm (`--cluster=sim-slurm`) against the same over the emulator and over SSH.

    python bench/suite_slurm.py              # the shipped profiles and baselines, each suite run --repeat times
    python bench/suite_slurm.py --repeat 3

The three profiles simulate the same 16 x 8 x H200 cluster: `sim` through the Kubernetes backend and
its API emulator, `sim-ssh` through a real sshd and Open MPI mpirun, `sim-slurm` through a real
slurmctld and 16 slurmd (munge), every workload an sbatch job awaited with squeue. Prints the wall
time of each run, the medians and the ratios against `sim`; asserts nothing. A cluster whose
packages are missing is skipped, saying what to install. The machine's load average is printed too:
on a shared box it moves the figures more than anything.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the project, and `bench` as a package

from acceptance.sim.slurm.daemons import missing as missing_slurm
from acceptance.sim.ssh.sshd import INSTALL_HINT, missing_tools
from bench.suite_timing import timed_suite

SLURM_HINT = "apt-get install -y --no-install-recommends slurmctld slurmd slurm-client munge"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    if missing_slurm():
        print(f"suite on Slurm: skipped (needs {', '.join(missing_slurm())}: {SLURM_HINT})")
        return 0
    clusters = ["sim", "sim-slurm"] + (["sim-ssh"] if not missing_tools() else [])
    if "sim-ssh" not in clusters:
        print(f"--cluster=sim-ssh: skipped ({INSTALL_HINT})")
    walls: dict[str, list[float]] = {c: [] for c in clusters}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeat):
            for cluster, times in walls.items():
                load = os.getloadavg()[0]
                wall, summary = timed_suite(f"--cluster={cluster}", f"--report-dir={Path(tmp) / f'{cluster}-{i}'}")
                times.append(wall)
                print(f"--cluster={cluster}: {wall:.1f} s wall ({summary}; load average {load:.1f} at start)")
    medians = {c: statistics.median(t) for c, t in walls.items()}
    shown = ", ".join(f"{c} {m:.1f} s" for c, m in medians.items())
    ratios = ", ".join(f"{c}/sim {m / medians['sim']:.2f}" for c, m in medians.items() if c != "sim")
    slurm_vs_ssh = (f", sim-slurm/sim-ssh {medians['sim-slurm'] / medians['sim-ssh']:.2f}"
                    if "sim-ssh" in medians else "")  # fmt: skip
    print(f"median: {shown}; ratio {ratios}{slurm_vs_ssh}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
