"""Run the acceptance suite on the simulated cluster with one injected fault and check the verdicts.

Exit 0 when the run failed (exit status 1) and exactly the expected criterion failed; else 1.
Usage: python .ci/fault_check.py --fault nic-degraded@sim-node-07 --expect-failing test_fabric
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fault", required=True)
    parser.add_argument(
        "--expect-failing", required=True, help="suite modules (comma-separated) whose items must fail, and only they"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        junit = Path(tmp) / "junit.xml"
        command = [sys.executable, "-m", "pytest", "acceptance/", "--cluster=sim", f"--sim-fault={args.fault}",
                   f"--junitxml={junit}", f"--report-dir={tmp}/report", "-q", "-p", "no:cacheprovider"]  # fmt: skip
        status = subprocess.run(command, check=False, timeout=900).returncode
        failing = {
            case.get("classname", "")
            for case in ET.parse(junit).getroot().iter("testcase")
            if case.find("failure") is not None or case.find("error") is not None
        }
    modules = {name.rsplit(".", 1)[-1] for name in failing}
    print(f"fault {args.fault}: exit {status}, failing criteria: {sorted(modules) or 'none'}")
    expected = set(args.expect_failing.split(","))
    if status != 1 or modules != expected:
        print(f"expected exit 1 and only {sorted(expected)} failing", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
