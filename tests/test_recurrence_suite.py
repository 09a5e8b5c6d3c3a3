"""Criterion 5 through the plugin: `pytest acceptance/test_recurrence.py --cluster=sim --ticket=...` as on-call runs it.

The simulated probation backfills a real Prometheus itself; the verdict reaches junit and the
signed report with its plot. Kept lean: one acceptance run, then one probation run per case.
"""

from __future__ import annotations

import re
import shutil
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml

from acceptance.cli import main
from tests.probation_support import Scenario, Served, acceptance_report, demo_signer, serve
from tests.suite_process import runpytest
from tests.suite_run import SUITE, sim_cluster_folder

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="ssh-keygen (openssh-client) is not installed"),
]
needs_prometheus = pytest.mark.skipif(shutil.which("prometheus") is None, reason="prometheus is not installed")
RECURRENCE = str(SUITE / "test_recurrence.py")


def run(pytester: pytest.Pytester, *args: str, env_path: str | None = None) -> tuple[pytest.RunResult, Path]:
    junit = pytester.path / f"junit-{len(list(pytester.path.glob('junit-*.xml')))}.xml"
    if env_path is not None:
        pytester._monkeypatch.setenv("PATH", env_path)  # a machine without some tools
    result = runpytest(
        pytester,
        "--cluster=sim",
        f"--baselines-dir={sim_cluster_folder(pytester.path).parent}",
        f"--junitxml={junit}",
        "-p",
        "no:cacheprovider",
        *args,
        timeout=300,
    )
    return result, junit


def case(junit: Path) -> tuple[str, dict[str, str], str]:
    """(outcome, properties, message) of the one test case."""
    found = next(ET.parse(junit).getroot().iter("testcase"))
    props = {p.get("name", ""): p.get("value", "") for p in found.iter("property")}
    for tag in ("failure", "error", "skipped"):
        node = found.find(tag)
        if node is not None:
            return tag, props, node.get("message", "")
    return "passed", props, ""


@pytest.fixture
def key(pytester: pytest.Pytester) -> Path:
    """A key the profile's allowed_signers lists (the simulator's demo key): it signs the acceptance reports."""
    return demo_signer(pytester.path / "keys")


@needs_prometheus
def test_acceptance_then_its_probation_on_the_simulator(pytester: pytest.Pytester, key: Path) -> None:
    """The report of a real acceptance run starts the window; the simulated probation passes and is reported."""
    accepted, _ = run(
        pytester, str(SUITE / "test_preflight.py"), "--returned-node=sim-node-07", "--ticket=INC-5", f"--sign-key={key}"
    )
    assert accepted.ret == 0, accepted.stdout.str()[-2000:]
    probation = pytester.path / "probation-report"
    result, junit = run(pytester, RECURRENCE, "--ticket=INC-5", f"--sign-key={key}", f"--report-dir={probation}")
    assert result.ret == 0, result.stdout.str()[-3000:]
    outcome, props, _ = case(junit)
    assert outcome == "passed"
    assert props["verdict"] == "pass"
    assert props["nodes"] == "sim-node-07"
    assert props["simulated_window"] == "true"
    assert re.match(r"no recurrence on sim-node-07 over 1d \(\S+–\S+\): 0 XID, DBE not collected", props["summary"])
    assert props["summary"].endswith("SIMULATED window, taken as elapsed")
    assert props["acceptance_report"].startswith(str(pytester.path / "reports" / "sim"))
    html = (probation / "report.html").read_text()
    section = html[html.index('id="probation"') :]
    assert section.split("<h2", 1)[0].count("data:image/png;base64,") == 1
    allowed = pytester.path / "baselines" / "sim" / "allowed_signers"
    assert main(["verify", str(probation), "--allowed-signers", str(allowed)]) == 0


@needs_prometheus
def test_simulated_xid_fails_with_signal_node_gpu_and_time_in_junit(pytester: pytest.Pytester, key: Path) -> None:
    passed = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=5)
    report = acceptance_report(pytester.path / "accepted", key, passed_at=passed)
    result, junit = run(
        pytester, RECURRENCE, f"--probation-from={report}", "--sim-fault=xid-recur@sim-node-07:3@6h", "--no-sign"
    )
    assert result.ret == 1
    outcome, props, message = case(junit)
    assert outcome == "failure"
    assert (props["verdict"], props["signal"], props["node"], props["gpu"]) == ("fail", "xid", "sim-node-07", "3")
    when = datetime.fromisoformat(props["time"].replace("Z", "+00:00"))
    assert timedelta(0) <= when - (passed + timedelta(hours=6)) <= timedelta(seconds=15)
    assert props["value"] == "79"
    assert "recurrence XID 79 (GPU has fallen off the bus) on sim-node-07 GPU 3" in message
    result.stdout.fnmatch_lines(["*FAILED test_no_recurrence: recurrence XID 79*"])


def test_tampered_acceptance_report_is_refused(pytester: pytest.Pytester, key: Path) -> None:
    report = acceptance_report(pytester.path / "accepted", key, passed_at=datetime.now(UTC) - timedelta(hours=1))
    manifest = report / "MANIFEST.json"
    manifest.write_text(
        manifest.read_text().replace('"returned_nodes": "sim-node-07"', '"returned_nodes": "sim-node-01"')
    )
    result, junit = run(pytester, RECURRENCE, f"--probation-from={report}", "--no-sign")
    assert result.ret == 1
    outcome, props, message = case(junit)
    assert outcome == "failure"
    assert props["verdict"] == "fail"
    assert props["report_refused"] == "true"
    assert "acceptance report refused" in message
    assert "MANIFEST.json: content does not match the signature" in message


@pytest.fixture
def open_window(pytester: pytest.Pytester) -> Iterator[tuple[Served, datetime]]:
    passed = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=2)
    scenario = Scenario("open", ("sim-node-07",), passed, 2.5 * 3600)
    with serve(pytester.path / "served", [scenario]) as served:
        yield served, passed


@needs_prometheus
def test_open_window_is_pending_a_skip_with_verdict_pending(
    pytester: pytest.Pytester, key: Path, open_window: tuple[Served, datetime]
) -> None:
    """The profile names a real Prometheus: the window is judged in wall-clock time, so it is still open."""
    served, passed = open_window
    report = acceptance_report(pytester.path / "accepted", key, passed_at=passed)
    profile = sim_cluster_folder(pytester.path) / "cluster.yaml"
    doc = yaml.safe_load(profile.read_text())
    doc["prometheus"] = {"url": served.url}
    job = {"step_time": 'max(job_step_time_seconds{job="gpt-prod"})', "logs": [str(p) for p in served.logs["open"]]}
    doc["recurrence"] = {"job": job}
    profile.write_text(yaml.safe_dump(doc, sort_keys=False))
    result, junit = run(pytester, RECURRENCE, f"--probation-from={report}", "--no-sign")
    assert result.ret == 0, result.stdout.str()[-3000:]
    outcome, props, message = case(junit)
    assert outcome == "skipped"
    assert props["verdict"] == "pending"
    assert message.startswith("PENDING: window open on sim-node-07: 2h")
    assert 21.9 * 3600 <= int(props["remaining_s"]) <= 22 * 3600
    result.stdout.fnmatch_lines(["*SKIPPED 1 item: PENDING: window open on sim-node-07*"])
