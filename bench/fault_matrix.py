"""The fault-injection matrix over more seeds than the tests run: runs tried, wrong verdicts, hangs, objects left.

Usage: `python bench/fault_matrix.py [--seeds N] [--heavy]`. Each seed cycles through healthy / a degraded NIC / a
GPU with an XID, with SIGINT or SIGTERM at a random moment on every third, and an object deleted
under the run on every fifth (see tests/fault_matrix.py for the faults and the rules). `--heavy` runs
the heavy single-fault cases instead (90 % errors, 3 % black holes), with how long each process
lived after its last line of output.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fault_matrix import HEAVY, Case, run_case, summary

HARDWARE = (None, "nic-degraded@sim-node-07", "gpu-xid@sim-node-07:2")


def cases(seeds: int) -> list[Case]:
    out = []
    for seed in range(1, seeds + 1):
        interrupt = ("SIGINT", "SIGTERM")[seed % 2] if seed % 3 == 0 else None
        delete = seed % 5 == 0 and interrupt is None
        out.append(Case(seed, HARDWARE[seed % 3], interrupt, delete, 0.02 if delete else 0.002))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=12)
    parser.add_argument("--heavy", action="store_true", help="the heavy single-fault cases of tests/fault_matrix.py")
    args = parser.parse_args()
    outcomes = []
    with tempfile.TemporaryDirectory() as tmp:
        for case in HEAVY if args.heavy else cases(args.seeds):
            outcome = run_case(case, Path(tmp) / case.name)
            state = "HUNG" if outcome.hung else f"exit {outcome.exit_code}"
            print(f"{case.name:45s} {state:8s} {outcome.wall_s:6.1f} s  verdicts {sorted(outcome.verdicts.values())}"
                  f"  wrong {outcome.wrong}  left {outcome.objects_left}"
                  f"  ended {outcome.exit_after_output_s or 0.0:.1f} s after its last line")  # fmt: skip
            outcomes.append(outcome)
    print(summary(outcomes))
    bad = any(o.wrong or o.hung or o.objects_left for o in outcomes)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
