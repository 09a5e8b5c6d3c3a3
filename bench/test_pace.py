"""What the tests' time scale buys: one healthy `--cluster=sim` suite run at the shipped pace and at the tests'.

Usage: `python bench/test_pace.py [--repeat N]`. Prints, per time scale, the wall seconds and the CPU seconds of the
run's process tree (the CPU stays: only the simulated waiting shrinks), and the ratio of the walls.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.suite_run import SHIPPED_TIME_SCALE, SUITE, TEST_TIME_SCALE, sim_cluster_folder


def children_cpu_s() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def one_run(base: Path, time_scale: float) -> tuple[float, float, str]:
    """(wall s, CPU s, pytest's last line) of one healthy suite run at `time_scale`, in `base`."""
    folder = sim_cluster_folder(base, time_scale=time_scale)
    argv = [sys.executable, "-m", "pytest", str(SUITE), "--cluster=sim", f"--baselines-dir={folder.parent}",
            f"--report-dir={base / 'report'}", "--no-sign", "--allow-unsigned-baseline", "-q",
            "-p", "no:cacheprovider"]  # fmt: skip
    cpu, start = children_cpu_s(), time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, cwd=base, timeout=600, check=False)
    wall = time.perf_counter() - start
    lines = done.stdout.strip().splitlines()
    return wall, children_cpu_s() - cpu, lines[-1] if lines else f"exit {done.returncode}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    walls: dict[float, list[float]] = {}
    for scale in (SHIPPED_TIME_SCALE, TEST_TIME_SCALE):
        for _ in range(args.repeat):
            with tempfile.TemporaryDirectory() as tmp:
                wall, cpu, last = one_run(Path(tmp), scale)
            walls.setdefault(scale, []).append(wall)
            print(f"time_scale {scale:<8g} wall {wall:6.1f} s  cpu {cpu:5.1f} s  {last}")
    shipped, test = min(walls[SHIPPED_TIME_SCALE]), min(walls[TEST_TIME_SCALE])
    print(f"best wall: {shipped:.1f} s at {SHIPPED_TIME_SCALE:g}, {test:.1f} s at {TEST_TIME_SCALE:g}: "
          f"{shipped / test:.1f}x")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
