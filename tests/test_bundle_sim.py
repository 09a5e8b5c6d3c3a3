"""`acceptance bundle` on the simulator: each of the seven fields right for an incident made mid-run."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tarfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from acceptance.baseline import BaselineStore
from acceptance.cli import main
from tests.incident_logs import C10_STAMP, NIC_STEP, NODES, XID_GPU, XID_NODE, XID_STEP, c10_date, plain, write

ROOT = Path(__file__).resolve().parents[1]
BASELINES = ROOT / "baselines"
LOST = NODES.index(XID_NODE) * 8 + XID_GPU


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    return write(tmp_path_factory.mktemp("incident-logs"))


def bundle(tmp: Path, *args: str, name: str = "b") -> tuple[dict, Path]:
    out = tmp / name
    status = main(
        [
            "bundle",
            "--cluster",
            "sim",
            "--baselines-dir",
            str(BASELINES),
            "--reports-dir",
            str(tmp / "reports"),
            "--out",
            str(out),
            *args,
        ]
    )
    assert status == 0
    return json.loads((out / "bundle.json").read_text()), out


def _stamp(text: str, pattern: str) -> datetime:
    found = re.search(pattern, text, re.M)
    assert found, pattern
    return datetime.fromisoformat(found.group(1))


def test_gpu_xid_mid_run_gives_each_of_the_seven_fields(tmp_path, logs) -> None:
    doc, out = bundle(
        tmp_path,
        "--job-logs",
        str(logs["xid"]),
        "--evidence",
        f"{XID_NODE}={logs['dmesg']}",
        f"{XID_NODE}={logs['nvsmi']}",
        "--ticket",
        "INC-7",
        "--no-sign",
    )
    text = plain(logs["xid"].read_text())
    # 1. cluster and node identifiers: the affected node, from the lost rank, the silent rank, torchrun and the Xid
    c = doc["cluster"]
    assert (c["name"], c["provider"], c["node_count"]) == (
        "sim",
        {"cluster_id": "sim-h200-0001", "data_center": "sim-dc-1"},
        16,
    )
    assert [a["node"] for a in c["affected"]] == [XID_NODE]
    assert c["affected"][0]["cluster_node"]
    why = " | ".join(r["detail"] for r in c["affected"][0]["reasons"])
    assert f"rank {LOST}: CUDA error: unknown error" in why
    assert f"rank {LOST} is the one rank of 128 that did not report the watchdog timeout" in why
    assert "torchrun's first root cause: rank 35 exit code -6" in why
    assert "Xid 79 (GPU has fallen off the bus)" in why
    # 2. the window, to the step
    w = doc["window"]
    assert (w["how"], w["last_healthy_step"], w["first_bad_step"]) == ("hang", XID_STEP - 1, XID_STEP)
    last = _stamp(text, rf"^ \[([\d-]+ [\d:]+)\] iteration +{XID_STEP - 1}/")
    assert w["last_healthy_utc"] == last.isoformat() + "Z"
    lost_at = re.search(rf"^\[rank{LOST}\]:\[{C10_STAMP}", text, re.M)
    assert lost_at
    month, day = c10_date(lost_at[1])
    assert w["first_bad_utc"] == f"{last.year}-{month:02d}-{day:02d}T{lost_at[2]}.{lost_at[3]}Z"
    # 3. rank → node map: all 128 ranks, 8 on each node
    r = doc["ranks"]
    assert (r["world_size"], r["mapped"], r["conflicts"]) == (128, 128, [])
    assert r["by_node"] == {n: f"{8 * i}-{8 * i + 7}" for i, n in enumerate(NODES)}
    assert {tuple(e["sources"]) for e in r["entries"]} == {("torchrun",)}
    # 4. NCCL output: the lost rank's error first, then the watchdog timeout on every other rank, deduplicated
    errors = doc["nccl"]["errors"]
    assert [(e["kind"], e["ranks"]) for e in errors[:1]] == [("cuda-error", [LOST])]
    timeout = next(e for e in errors if e["kind"] == "watchdog-timeout")
    assert timeout["ranks"] == [k for k in range(128) if k != LOST]
    assert (timeout["op"], timeout["timeout_ms"]) == ("ALLREDUCE", 600000)
    assert {o["count"] for o in timeout["occurrences"]} == {3}  # the record, the exception, what(): one entry
    assert timeout["first_utc"] > w["first_bad_utc"]
    assert len(timeout["nodes"]) == 16
    assert "NCCL_DEBUG=INFO" in doc["nccl"]["hint"]
    # 5. the step series around the change, CSV and plot
    s = doc["steps"]
    assert (s["csv"], s["plot"], s["last_checkpoint_step"]) == ("steps.csv", "steps.png", 600)
    rows = (out / "steps.csv").read_text().splitlines()
    assert rows[0] == "step,rank,utc,step_time_s"
    assert rows[-1].startswith(f"{XID_STEP - 1},,")
    assert (out / "steps.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # 6. the affected node's kernel Xid lines and nvidia-smi -q
    [node] = doc["node_evidence"]
    assert node["node"] == XID_NODE
    assert [x["xid"] for x in node["xids"]] == [79]
    assert any("Unable to determine the device handle" in line for line in node["nvidia_smi"])
    # 7. change log: against the baseline (no signed acceptance report under this reports folder)
    assert [ref["kind"] for ref in doc["changes"]["references"]] == ["baseline"]
    assert any("no signed, passing acceptance report" in m for m in doc["missing"])
    # severity: down, with its clocks from the bundle's time
    sev = doc["severity"]
    created = datetime.fromisoformat(doc["created_utc"].removesuffix("Z"))
    assert sev["level"] == "down"
    assert sev["joins"] == ["provider on-call engineer", "provider network engineer"]
    assert [(k["name"], k["target"]) for k in sev["clocks"]] == [
        ("respond", "15m"),
        ("restore", "4h"),
        ("resolve", "2d"),
    ]
    assert sev["clocks"][1]["deadline_utc"] == (created + timedelta(hours=4)).isoformat() + "Z"
    md = (out / "bundle.md").read_text()
    assert md.startswith("# Incident INC-7: cluster sim (cluster id sim-h200-0001, data center sim-dc-1)")
    assert "**Severity proposed: down**" in md
    assert f"**Affected: {XID_NODE}**" in md
    assert "SIMULATED" in md
    assert (tmp_path / "b.tar.gz").is_file()


def test_nccl_info_lines_and_a_changed_nccl_version(tmp_path, logs) -> None:
    doc, _ = bundle(tmp_path, "--job-logs", str(logs["xid-info"]), "--no-sign")
    assert {tuple(e["sources"]) for e in doc["ranks"]["entries"]} == {("nccl-info", "torchrun")}
    assert doc["nccl"]["hint"] is None
    assert doc["nccl"]["nccl_versions"] == ["2.27.3"]
    [change] = [c for c in doc["changes"]["items"] if c["what"] == "nccl"]
    shipped = BaselineStore(ROOT / "baselines" / "sim").latest()
    assert (change["then"], change["now"], change["reference"]) == ("2.26.5", "2.27.3", f"baseline {shipped.path.name}")
    age = datetime.now(UTC) - shipped.baseline.agreed_utc
    assert change["within_24h"] is (age <= timedelta(days=1)), "a change is dated by its reference's age"


def test_xid_under_mpirun_names_the_node_from_mpirun_and_the_lost_rank(tmp_path, logs) -> None:
    doc, _ = bundle(tmp_path, "--job-logs", str(logs["xid-mpirun"]), "--no-sign")
    assert [a["node"] for a in doc["cluster"]["affected"]] == [XID_NODE]
    assert doc["window"]["how"] == "hang"
    assert doc["window"]["first_bad_step"] == XID_STEP
    assert doc["severity"]["level"] == "down"
    assert next(e for e in doc["ranks"]["entries"] if e["rank"] == LOST)["sources"] == ["mpirun"]


def test_degraded_nic_mid_run_gives_a_change_point_at_the_step_and_degraded(tmp_path, logs) -> None:
    doc, _ = bundle(tmp_path, "--job-logs", str(logs["nic"]), "--no-sign")
    w = doc["window"]
    assert (w["how"], w["last_healthy_step"], w["first_bad_step"]) == ("change-point", NIC_STEP - 1, NIC_STEP)
    sev = doc["severity"]
    assert sev["level"] == "degraded"
    assert sev["escalation"]["to"] == "down"
    assert "+15" in sev["reason"]
    assert "agreed in the profile" in sev["rule"]
    assert 1.12 < doc["steps"]["median_after_s"] / doc["steps"]["median_before_s"] < 1.19
    assert doc["cluster"]["affected"] == []
    assert any(m.startswith("field 1: no evidence names a node") for m in doc["missing"])


def test_job_on_fewer_ranks_than_the_baseline_is_one_node_out(tmp_path, logs) -> None:
    doc, _ = bundle(tmp_path, "--job-logs", str(logs["reduced"]), "--no-sign")
    assert doc["severity"]["level"] == "node_out"
    assert "120 ranks, fewer than the baseline's full size 128" in doc["severity"]["reason"]
    assert doc["window"]["how"] == "none"


pytestmark_ssh = pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="OpenSSH ssh-keygen is absent")


def _flip(path: Path, offset: int = 40) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x01
    path.write_bytes(bytes(data))


@pytestmark_ssh
def test_signed_bundle_verifies_and_a_tampered_one_fails(tmp_path, logs, capsys) -> None:
    key = tmp_path / "key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "oncall@provider", "-f", str(key)], check=True)
    _, out = bundle(tmp_path, "--job-logs", str(logs["xid"]), "--ticket", "INC-8", "--sign-key", str(key))
    assert (out / "bundle.json.sig").is_file()
    assert (out / "MANIFEST.json.sig").is_file()
    archive = tmp_path / "b.tar.gz"
    assert archive.with_name("b.tar.gz.sig").is_file()
    capsys.readouterr()
    allowed = tmp_path / "allowed_signers"
    allowed.write_text("oncall@provider " + " ".join(key.with_suffix(".pub").read_text().split()[:2]) + "\n")
    assert main(["verify", str(out)]) == 3, "consistent, but without a trust list the signer is UNTRUSTED"
    capsys.readouterr()
    assert main(["verify", str(out), "--allowed-signers", str(allowed)]) == 0
    said = capsys.readouterr().out
    assert "OK   bundle.json: matches bundle.schema.json" in said
    assert "OK   bundle.json: good signature" in said
    assert main(["verify", str(archive), "--allowed-signers", str(allowed)]) == 0
    assert "b.tar.gz:bundle.json: matches bundle.schema.json" in capsys.readouterr().out
    with tarfile.open(archive) as tar:
        assert "b/bundle.md" in tar.getnames()
        assert "b/MANIFEST.json.sig" in tar.getnames()
    _flip(out / "bundle.md")
    assert main(["verify", str(out)]) == 1
    assert "bundle.md: changed since it was listed" in capsys.readouterr().err
    _flip(archive, 200)
    assert main(["verify", str(archive)]) != 0


@pytestmark_ssh
def test_a_changed_bundle_json_fails_its_signature_and_the_manifest(tmp_path, logs, capsys) -> None:
    key = tmp_path / "key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    _, out = bundle(tmp_path, "--job-logs", str(logs["nic"]), "--sign-key", str(key))
    doc = (out / "bundle.json").read_text().replace('"degraded"', '"node_out"', 1)
    (out / "bundle.json").write_text(doc)
    capsys.readouterr()
    assert main(["verify", str(out)]) == 1
    err = capsys.readouterr().err
    assert "FAIL bundle.json: changed since it was listed" in err
    assert "FAIL bundle.json: content does not match the signature" in err


def test_secrets_in_the_logs_never_reach_the_bundle(tmp_path, logs) -> None:
    log = tmp_path / "job.log"
    log.write_text(logs["xid"].read_text() + "export HF_TOKEN=hf_abcdefghijklmnop123456\npassword: hunter2secret\n")
    _, out = bundle(tmp_path, "--job-logs", str(log), "--no-sign")
    for path in out.rglob("*"):
        if path.is_file() and path.suffix != ".png":
            body = path.read_text()
            assert "hf_abcdefghijklmnop123456" not in body, path
            assert "hunter2secret" not in body, path
    assert "HF_TOKEN=[REDACTED]" in next((out / "evidence" / "inputs").iterdir()).read_text()


def _accepted_report(reports: Path, key: Path, command: str) -> Path:
    """A signed, passing acceptance report of cluster sim, made after the shipped baseline (3 h ago, or a
    minute after the baseline when that was agreed more recently), with its smoke run's manifest."""
    from acceptance.report.data import ReportData
    from acceptance.report.finalize import finalize
    from acceptance.report.folder import ReportFolder
    from acceptance.report.sign import SignOptions

    agreed = BaselineStore(ROOT / "baselines" / "sim").latest().baseline.agreed_utc
    end = max(datetime.now(UTC) - timedelta(hours=3), agreed + timedelta(minutes=31))
    assert end < datetime.now(UTC), "the shipped baseline is agreed in the future"
    folder = ReportFolder.create(reports, "sim", end - timedelta(minutes=30))
    junit = folder.path / "junit.xml"
    junit.write_text('<testsuites><testsuite name="pytest" tests="3" failures="0" errors="0"/></testsuites>\n')
    folder.add_yaml(
        "manifests/smoke.yaml",
        {
            "kind": "MPIJob",
            "spec": {
                "mpiReplicaSpecs": {
                    "Launcher": {
                        "template": {
                            "spec": {
                                "containers": [
                                    {
                                        "name": "launcher",
                                        "image": "nvcr.io/nvidia/nemo:25.04",
                                        "command": command.split(),
                                        "env": [{"name": "NCCL_DEBUG", "value": "WARN"}],
                                    }
                                ]
                            }
                        }
                    }
                }
            },
        },
    )
    prov = {
        "cluster": "sim",
        "ticket": "INC-3",
        "start_utc": (end - timedelta(minutes=30)).isoformat(),
        "end_utc": end.isoformat(),
        "conditions": {"driver_version": "570.133.20", "cuda_version": "12.8"},
    }
    result = finalize(folder, junit, ReportData(prov, (), simulated=True), SignOptions(key=key))
    assert result.signing.signed, result.lines()
    return folder.path


@pytestmark_ssh
def test_change_log_against_the_latest_signed_acceptance_report(tmp_path, logs) -> None:
    key = tmp_path / "key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    folder = _accepted_report(tmp_path / "reports", key, "python pretrain_gpt.py --train-iters 1200")
    doc, _ = bundle(tmp_path, "--job-logs", str(logs["xid-info"]), "--no-sign")
    refs = doc["changes"]["references"]
    assert (refs[0]["kind"], refs[0]["path"]) == ("report", str(folder))
    assert refs[0]["verified"] == "true"
    assert not any("no signed, passing acceptance report" in m for m in doc["missing"])
    # the report does not know NCCL, so the NCCL change is dated by the (older) baseline
    age = datetime.now(UTC) - BaselineStore(ROOT / "baselines" / "sim").latest().baseline.agreed_utc
    assert [(c["what"], c["within_24h"]) for c in doc["changes"]["items"]] == [("nccl", age <= timedelta(days=1))]
    assert f"cuda 12.8 (as in acceptance report {folder.name})" in doc["changes"]["unchanged"]


def test_around_keeps_the_steps_near_the_incident(tmp_path, logs) -> None:
    text = plain(logs["xid"].read_text())
    last = _stamp(text, rf"^ \[([\d-]+ [\d:]+)\] iteration +{XID_STEP - 1}/")
    near, _ = bundle(
        tmp_path,
        "--job-logs",
        str(logs["xid"]),
        "--around",
        (last + timedelta(hours=1)).isoformat() + "Z",
        "--no-sign",
        name="near",
    )
    assert (near["window"]["how"], near["window"]["first_bad_step"]) == ("hang", XID_STEP)
    far, _ = bundle(
        tmp_path,
        "--job-logs",
        str(logs["xid"]),
        "--around",
        (last + timedelta(days=30)).isoformat(),
        "--no-sign",
        name="far",
    )
    assert far["window"]["how"] == "errors-only"
    assert far["steps"]["rows"] == 0
