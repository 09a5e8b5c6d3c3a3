"""Criterion 3's sequential rule end to end: the smoke job's log streams in and the job is stopped
once step time and loss continuity are decided (issue 28).

The simulated agreement is amended with ``smoke.sequential: {method: mixture}`` the way a real
one would be (`acceptance baseline amend --margins-from-profile`); the shipped baseline keeps the
fixed rule.
"""

from __future__ import annotations

import re
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from acceptance.clusters.ssh.remote import MARKER
from tests.ssh_support import NEEDS_SSHD
from tests.suite_process import runpytest
from tests.suite_run import ROOT, SHIPPED_TIME_SCALE, copy_agreement, demo_key, sim_cluster_folder

pytestmark = pytest.mark.slow

STEP = "test_smoke_step_time"
LOSS = "test_loss_continuity"


def sequential_folder(base: Path) -> tuple[Path, Path]:
    """A copy of the simulated agreement whose latest baseline agrees the sequential rule; and the key."""
    from acceptance.cli import main

    folder = sim_cluster_folder(base, time_scale=SHIPPED_TIME_SCALE)  # the job must run long enough to be stopped
    profile = folder / "cluster.yaml"
    text = profile.read_text()
    assert "\n  restore_step: 1000\n" in text
    profile.write_text(
        text.replace("\n  restore_step: 1000\n", "\n  restore_step: 1000\n  sequential: {method: mixture}\n")
    )
    key = demo_key(base)
    code = main(["baseline", "amend", "sim", "--margins-from-profile", "--reason", "sequential smoke (test)",
                 "--baselines-dir", str(folder.parent), "--sign-key", str(key)])  # fmt: skip
    assert code == 0
    return folder, key


def run(
    pytester: pytest.Pytester, folder: Path, key: Path, report: Path, *args: str, select: str = "smoke or loss"
) -> pytest.RunResult:
    return runpytest(
        pytester,
        str(ROOT / "acceptance"), "--cluster=sim", f"--baselines-dir={folder.parent}", f"--report-dir={report}",
        f"--sign-key={key}", "--allow-unsigned-baseline",
        "-p", "no:cacheprovider", "-k", select, *args, timeout=300,
    )  # fmt: skip


def cases(report: Path) -> dict[str, tuple[str, dict[str, str]]]:
    out = {}
    for case in ET.parse(report / "junit.xml").getroot().iter("testcase"):
        outcome = "failed" if case.find("failure") is not None else "error" if case.find("error") is not None else \
            "skipped" if case.find("skipped") is not None else "passed"  # fmt: skip
        out[case.get("name", "")] = (outcome, {p.get("name", ""): p.get("value", "") for p in case.iter("property")})
    return out


def assert_stopped_once_decided(
    result: pytest.RunResult, report: Path, allowed_signers: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A healthy 200-step smoke run judged by the sequential rule: passed, stopped once decided (50 steps at
    least), its log up to the stop kept as evidence, loss continuity judged on it, and the report verifies."""
    from acceptance.cli import main

    assert result.ret == 0, result.stdout.str()[-3000:]
    found = cases(report)
    outcome, props = found[STEP]
    assert outcome == "passed", props
    used = int(props["steps_used"])
    assert 50 <= used < 200, props
    assert props["stop_reason"] == f"decided PASS after {used} of at most 200 steps; the job was stopped then"
    assert found[LOSS][0] == "passed"
    log = next((report / "outputs" / "training").glob("smoke*")).read_text()
    assert used <= len(re.findall(r"iteration\s+(\d+)/", log)) < 200
    capsys.readouterr()
    assert main(["verify", str(report), "--allowed-signers", str(allowed_signers)]) == 0, capsys.readouterr()


def test_a_healthy_smoke_run_is_stopped_once_decided_and_its_report_verifies(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    from acceptance.cli import main

    folder, key = sequential_folder(pytester.path)
    report = pytester.path / "report"
    result = run(pytester, folder, key, report)
    assert result.ret == 0, result.stdout.str()[-3000:]
    found = cases(report)
    outcome, props = found[STEP]
    assert outcome == "passed"
    used = int(props["steps_used"])
    assert 50 <= used < 200, props
    assert re.fullmatch(rf"decided PASS after {used} of at most 200 steps; the job was stopped then",
                        props["stop_reason"]), props["stop_reason"]  # fmt: skip
    assert props["job_stopped"] == "true"
    assert props["decided_by"] == "sequence"
    assert found[LOSS][0] == "passed", "criterion 4 had its own 50 post-restore steps"
    # the job printed fewer than its 200 steps: it was stopped, and its log up to then is the evidence
    log = next((report / "outputs" / "training").glob("smoke*"))
    iterations = re.findall(r"iteration\s+(\d+)/", log.read_text())
    assert used <= len(iterations) < 200, len(iterations)
    assert "after training is done" not in log.read_text()
    capsys.readouterr()
    assert main(["verify", str(report), "--allowed-signers", str(folder / "allowed_signers")]) == 0, capsys.readouterr()


def test_a_throttled_gpu_fails_the_smoke_run_early(pytester: pytest.Pytester) -> None:
    folder, key = sequential_folder(pytester.path)
    report = pytester.path / "report"
    # criterion 3 alone: loss continuity is not judged here, and its pre-incident job would only add its time
    run(pytester, folder, key, report, "--sim-fault=gpu-throttle@sim-node-05:2", select="smoke")
    found = cases(report)
    assert set(found) == {STEP}
    outcome, props = found[STEP]
    assert outcome == "failed"
    used = int(props["steps_used"])
    assert used < 200
    assert props["stop_reason"].startswith(f"decided FAIL after {used} of at most 200 steps"), props
    assert float(props["ratio"]) > 1.05


@NEEDS_SSHD
def test_over_ssh_a_healthy_smoke_run_is_stopped_once_decided_and_no_process_is_left(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    from acceptance.cli import main

    folder = pytester.path / "baselines" / "sim-ssh"
    folder.mkdir(parents=True)
    text = (ROOT / "baselines" / "sim-ssh" / "cluster.yaml").read_text()
    for i in range(1, 17):  # addresses of its own: another run of the shipped profile may be on the machine
        text = text.replace(f"sim-node-{i:02d}: 127.0.0.{10 + i}\n", f"sim-node-{i:02d}: 127.0.0.{170 + i}\n")
    assert "\n  restore_step: 1000\n" in text
    (folder / "cluster.yaml").write_text(
        text.replace("\n  restore_step: 1000\n", "\n  restore_step: 1000\n  sequential: {method: mixture}\n")
    )
    copy_agreement(folder, shipped_cluster="sim-ssh")
    key = demo_key(pytester.path)
    assert main(["baseline", "amend", "sim-ssh", "--margins-from-profile", "--reason", "sequential smoke (test)",
                 "--baselines-dir", str(folder.parent), "--sign-key", str(key)]) == 0  # fmt: skip
    report = pytester.path / "report"
    result = runpytest(
        pytester,
        str(ROOT / "acceptance"), "--cluster=sim-ssh", f"--baselines-dir={folder.parent}", f"--report-dir={report}",
        f"--sign-key={key}", "--allow-unsigned-baseline", "-p", "no:cacheprovider", "-k", "smoke or loss",
        timeout=300,
    )  # fmt: skip
    assert_stopped_once_decided(result, report, folder / "allowed_signers", capsys)
    # no process of the run is left on this machine (the simulated hosts' sessions are its processes)
    suite = ET.parse(report / "junit.xml").getroot().find("testsuite")
    assert suite is not None
    run_id = next(p.get("value") for p in suite.iter("property") if p.get("name") == "run_id")
    ps = subprocess.run(["ps", "-e", "-ww", "-o", "pid=,args=", "e"], capture_output=True, text=True, check=True)
    assert not [line for line in ps.stdout.splitlines() if f"{MARKER}={run_id}" in line]
