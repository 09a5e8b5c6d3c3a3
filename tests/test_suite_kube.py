"""The suite against a Kubernetes API it does not own: `acceptance sim serve` in another process.

This is how a provider runs it (backend `kube`, a kubeconfig), so Ctrl-C must leave nothing behind.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.served import kube_profile, labelled_objects, served_cluster
from tests.suite_process import run_pytest
from tests.suite_run import copy_agreement, demo_key

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Path]:
    """A standalone emulated cluster; yields its kubeconfig."""
    with served_cluster(tmp_path, "--time-scale", "0.02") as kubeconfig:
        yield kubeconfig


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_an_interrupt_during_diagnostics_deletes_everything_then_signs_an_interrupted_report(
    served: Path, tmp_path: Path, sig: signal.Signals
) -> None:
    """SIGTERM once left objects and wrote no report; SIGINT's report did not say it was interrupted."""
    folder = kube_profile(tmp_path, served)
    key = demo_key(tmp_path)  # --record-baseline refuses, before the run, a key allowed_signers does not list
    report = tmp_path / "report"
    log = tmp_path / "pytest.out"
    with log.open("w") as handle:
        proc = subprocess.Popen(
            [sys.executable, "-m", "pytest", str(ROOT / "acceptance"), "--cluster=remote", "--record-baseline",
             f"--baselines-dir={folder.parent}", f"--report-dir={report}", f"--sign-key={key}",
             "-p", "no:cacheprovider", "-v"],
            stdout=handle, stderr=subprocess.STDOUT, cwd=tmp_path, env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )  # fmt: skip
    try:
        # until the DCGM jobs exist (the run's lease ConfigMap comes first, seconds before them on a loaded machine)
        deadline = time.monotonic() + 120
        while not any(name.startswith("job/dcgm-") for name in labelled_objects(served)):
            assert proc.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.2)
        proc.send_signal(sig)
        assert proc.wait(timeout=120) == pytest.ExitCode.INTERRUPTED, log.read_text()[-3000:]
    finally:
        if proc.poll() is None:  # the test failed first: no run left behind for the worker's next test
            proc.kill()
            proc.wait(timeout=30)
    assert labelled_objects(served) == [], log.read_text()[-3000:]
    assert "KeyboardInterrupt" in log.read_text()
    assert not list(folder.glob("handover-*.json")), "an interrupted run records nothing"
    name = sig.name
    assert f'name="interrupted" value="{name}"' in (report / "junit.xml").read_text()
    assert f"INTERRUPTED ({name})" in (report / "report.html").read_text()
    assert f"NOT ACCEPTED: INTERRUPTED ({name}): the run was stopped before it finished" in log.read_text()
    # the criteria after the interruption were selected: not judged, not "a partial selection"
    assert "not judged: the run was interrupted before they finished" in log.read_text()
    assert "partial selection" not in log.read_text()
    assert "not judged: the run was interrupted before they finished" in (report / "report.html").read_text()
    assert '<div class="verdict not-accepted" id="verdict">' in (report / "report.html").read_text()
    allowed = tmp_path / "allowed_signers"
    public = (ROOT / "fixtures" / "keys" / "sim-baseline-demo-key.pub").read_text().split()[:2]
    allowed.write_text("oncall@provider " + " ".join(public) + "\n")
    verified = subprocess.run(
        [sys.executable, "-m", "acceptance", "verify", str(report), "--allowed-signers", str(allowed)],
        capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_a_killed_run_leaves_objects_that_preflight_reports_and_cleanup_removes(served: Path, tmp_path: Path) -> None:
    """Once its lease has run out, a killed run's objects are leftovers: preflight names them and
    `acceptance cleanup` removes them (a live run's objects are kept: tests/test_kube_e2e.py)."""
    folder = kube_profile(tmp_path, served, lease="3s")
    common = [f"--baselines-dir={folder.parent}", "--no-sign", "-p", "no:cacheprovider", "--record-baseline"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest", str(ROOT / "acceptance"), "--cluster=remote", *common,
         f"--report-dir={tmp_path / 'report-1'}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp_path,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while not labelled_objects(served):
        assert time.monotonic() < deadline
        time.sleep(0.2)
    proc.kill()  # no chance to clean up, as in a crash
    proc.wait(timeout=30)
    left = labelled_objects(served)
    assert left
    assert any(name.startswith("configmap/ra-lease-") for name in left), "the run held a lease"
    time.sleep(4)  # the lease runs out

    second = run_pytest([str(ROOT / "acceptance"), "--cluster=remote", *common,
                         f"--report-dir={tmp_path / 'report-2'}", "-k", "leftover"], tmp_path)  # fmt: skip
    assert second.returncode == 1
    assert "objects of earlier runs remain" in second.stdout
    assert "acceptance cleanup --cluster" in second.stdout

    cleanup = subprocess.run(
        [sys.executable, "-m", "acceptance", "cleanup", "--cluster", "remote", "--baselines-dir", str(folder.parent)],
        capture_output=True, text=True, cwd=tmp_path, check=False, timeout=300,
    )  # fmt: skip
    assert cleanup.returncode == 0, cleanup.stderr
    deadline = time.monotonic() + 60
    while labelled_objects(served):
        assert time.monotonic() < deadline, labelled_objects(served)
        time.sleep(0.2)


def test_a_client_warning_is_shown_not_turned_into_a_failed_criterion(served: Path, tmp_path: Path) -> None:
    """An insecure-TLS kubeconfig makes urllib3 warn on every request; the criteria still judge the cluster."""
    config = yaml.safe_load(served.read_text())
    for cluster in config["clusters"]:
        cluster["cluster"].pop("certificate-authority-data", None)
        cluster["cluster"].pop("certificate-authority", None)
        cluster["cluster"]["insecure-skip-tls-verify"] = True
    insecure = tmp_path / "insecure-kubeconfig"
    insecure.write_text(yaml.safe_dump(config))
    folder = kube_profile(tmp_path, insecure)
    result = run_pytest([str(ROOT / "acceptance"), "--cluster=remote", "--record-baseline",
                         f"--baselines-dir={folder.parent}", f"--report-dir={tmp_path / 'report'}", "--no-sign",
                         "-p", "no:cacheprovider", "-k", "preflight"], tmp_path)  # fmt: skip
    assert "4 passed" in result.stdout, result.stdout[-3000:]
    assert "InsecureRequestWarning" in result.stdout
    assert "no clean result for" in result.stdout, "a partial run records no baseline"


def all_objects(kubeconfig: Path) -> list[str]:
    """Every Job, MPIJob and pod in every namespace, labelled or not."""
    from kubernetes import client, config

    api = config.new_client_from_config(config_file=str(kubeconfig))
    core, batch, custom = client.CoreV1Api(api), client.BatchV1Api(api), client.CustomObjectsApi(api)
    names = [f"pod/{p.metadata.name}" for p in core.list_pod_for_all_namespaces().items]
    names += [f"job/{j.metadata.name}" for j in batch.list_job_for_all_namespaces().items]
    mpijobs = custom.list_cluster_custom_object("kubeflow.org", "v2beta1", "mpijobs")
    return names + [f"mpijob/{m['metadata']['name']}" for m in mpijobs["items"]]


def test_an_ssh_profile_never_falls_back_to_the_kubernetes_cluster_at_hand(served: Path, tmp_path: Path) -> None:
    """backend ssh, KUBECONFIG at a live cluster: refusing hosts fail the run, zero objects there (it once ran kube)."""
    folder = kube_profile(tmp_path, served)
    data = yaml.safe_load((folder / "cluster.yaml").read_text())
    data["backend"] = "ssh"
    del data["kube"]["kubeconfig"]
    closed = _closed_port()
    data["ssh"] = {"user": "ops", "port": closed,
                   "hosts": {n: f"127.0.0.{i + 1}" for i, n in enumerate(data["nodes"]["names"], 1)}}  # fmt: skip
    (tmp_path / "known_hosts").write_text("")
    data["ssh"]["known_hosts"] = str(tmp_path / "known_hosts")
    (folder / "cluster.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    env = {**os.environ, "KUBECONFIG": str(served)}
    for extra in (["--record-baseline"], []):  # at handover, then judging against a copy of the sim baseline
        if not extra:
            copy_agreement(folder)
        proc = run_pytest([str(ROOT / "acceptance"), "--cluster=remote", f"--baselines-dir={tmp_path / 'baselines'}",
                           "-p", "no:cacheprovider", "--no-sign", f"--report-dir={tmp_path / f'report-{len(extra)}'}",
                           *extra], tmp_path, env=env, timeout=120)  # fmt: skip
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert "the cluster does not answer: no host answers (sim-node-01: unreachable over SSH" in proc.stdout
        assert "connection refused" in proc.stdout
        assert "Traceback" not in proc.stderr
        assert all_objects(served) == []


def _closed_port() -> int:
    """A port nothing listens on, and none of our daemons is given for a while (outside the ephemeral range)."""
    from acceptance.sim.ports import reserve

    return reserve(1)[0]
