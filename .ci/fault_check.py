"""Run the acceptance suite on the simulated cluster with injected faults and check the verdicts.

For each fault, the run must exit 1 and exactly the expected suite modules must fail.
Exit 0 when every check holds. Usage: `python .ci/fault_check.py [--fault SPEC --expect-failing MODULES]`.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

# An injected fault and the suite modules that must fail with it (and only they).
FAULT_CHECKS: tuple[tuple[str, str], ...] = (
    ("nic-degraded@sim-node-07", "test_fabric,test_smoke_step"),
    ("gpu-xid@sim-node-03:5", "test_gpu_diagnostics,test_fabric,test_smoke_step,test_loss_continuity"),
    ("bad-restore", "test_loss_continuity"),
)


def check(fault: str, expect: str) -> bool:
    with tempfile.TemporaryDirectory() as tmp:
        junit = Path(tmp) / "junit.xml"
        command = [sys.executable, "-m", "pytest", "acceptance/", "--cluster=sim", f"--sim-fault={fault}",
                   f"--junitxml={junit}", f"--report-dir={tmp}/report", "-q", "-p", "no:cacheprovider"]  # fmt: skip
        status = subprocess.run(command, check=False, timeout=900, stdout=subprocess.DEVNULL).returncode
        failing = {
            case.get("classname", "").rsplit(".", 1)[-1]
            for case in ET.parse(junit).getroot().iter("testcase")
            if case.find("failure") is not None or case.find("error") is not None
        }
    expected = set(expect.split(","))
    ok = status == 1 and failing == expected
    verdict = "ok  " if ok else "FAIL"
    print(f"{verdict} fault {fault}: exit {status}, failing {sorted(failing)}, expected {sorted(expected)}")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fault", help="one fault to check instead of the built-in list")
    parser.add_argument("--expect-failing", help="with --fault: suite modules (comma-separated) that must fail")
    args = parser.parse_args()
    checks = [(args.fault, args.expect_failing)] if args.fault else list(FAULT_CHECKS)
    results = [check(fault, expect) for fault, expect in checks]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
