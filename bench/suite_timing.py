"""One whole suite run in a fresh process, timed: the benchmarks' common measurement."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUN_TIMEOUT_S = 3600.0  # a suite run that takes longer is reported as such, never waited on for ever


def timed_suite(*options: str, cwd: Path = ROOT) -> tuple[float, str]:
    """`pytest acceptance/ --no-sign -q OPTIONS...` from `cwd` (default: the project root): (wall seconds,
    pytest's last line, or the exit status and the output's tail when it has none)."""
    command = [sys.executable, "-m", "pytest", str(ROOT / "acceptance"), "--no-sign", "-q", "-p", "no:cacheprovider",
               *options]  # fmt: skip
    start = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True, check=False, cwd=cwd, timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return time.perf_counter() - start, f"no result within {RUN_TIMEOUT_S:.0f} s"
    wall = time.perf_counter() - start
    last = [line for line in done.stdout.splitlines() if " in " in line and ("passed" in line or "failed" in line)]
    return wall, last[-1].strip("= ") if last else f"exit {done.returncode}: {done.stdout[-500:]}{done.stderr[-500:]}"
