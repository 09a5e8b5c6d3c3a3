"""`nox -s tests` measures what the xdist workers' tests run in the package, not only what it imports.

The workers import the plugin's tree before their first test (tests/conftest.py); done at their configuration,
before pytest-cov starts a worker's coverage, none of the lines the tests then ran in those modules was counted.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.shared import ROOT
from tests.suite_process import own_session_env

pytestmark = pytest.mark.heavy  # a pytest of its own with two xdist workers, each importing the plugin's tree


def test_under_two_workers_the_lines_the_tests_run_are_measured(tmp_path: Path) -> None:
    report = tmp_path / "coverage.json"
    env = own_session_env(tmp_path)
    argv = [sys.executable, "-m", "pytest", "tests/test_report_decision.py", "-n", "2", "-q", "-p", "no:cacheprovider",
            "--cov=acceptance.report.decision", f"--cov-report=json:{report}",
            f"--basetemp={tmp_path / 'tmp'}"]  # fmt: skip
    ran = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr[-2000:]
    measured = json.loads(report.read_text())["files"]["acceptance/report/decision.py"]["summary"]
    # its own tests run nearly every line of it (98% in one process); its import alone is about 64%
    assert measured["percent_covered"] > 90, measured
