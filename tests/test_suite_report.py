"""A --cluster=sim run leaves a signed junit, a signed manifest and an HTML report, verifiable by anyone."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from acceptance.cli import main
from tests.suite_process import runpytest
from tests.suite_run import sim_cluster_folder

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="ssh-keygen (openssh-client) is not installed"),
]


def keypair(folder: Path) -> tuple[Path, Path]:
    key = folder / "signer"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "oncall@provider", "-f", str(key)], check=True)
    allowed = folder / "allowed_signers"
    allowed.write_text(f"oncall@provider {(folder / 'signer.pub').read_text().strip()}\n")
    return key, allowed


def stock_verify(allowed: Path, file: Path) -> subprocess.CompletedProcess[bytes]:
    with file.open("rb") as data:
        return subprocess.run(
            ["ssh-keygen", "-Y", "verify", "-f", str(allowed), "-I", "oncall@provider", "-n", "recovery-acceptance",
             "-s", f"{file}.sig"],
            stdin=data, capture_output=True, check=False,
        )  # fmt: skip


def test_sim_run_report_is_signed_complete_and_tamper_evident(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    key, allowed = keypair(pytester.path)
    report = pytester.path / "report"
    result = runpytest(
        pytester,
        str(Path(__file__).resolve().parents[1] / "acceptance"),
        "--cluster=sim",
        f"--baselines-dir={sim_cluster_folder(pytester.path).parent}",
        f"--report-dir={report}",
        f"--sign-key={key}",
        "--ticket=INC-1234",
        "-p",
        "no:cacheprovider",
        timeout=300,
    )
    assert result.ret == 0, result.stdout.str()[-3000:]
    for name in ("junit.xml", "junit.xml.sig", "MANIFEST.json", "MANIFEST.json.sig", "report.html", "baseline.json"):
        assert (report / name).is_file(), name
    assert list((report / "outputs" / "nccl").glob("*.log"))
    assert list((report / "placement").glob("*.json"))
    manifest = (report / "manifests" / "nccl" / "all_reduce_perf.yaml").read_text()
    assert "automountServiceAccountToken: false" in manifest, "evidence must show what was submitted"
    html = (report / "report.html").read_text()
    assert "SIMULATED" in html
    assert html.count("data:image/png;base64,") >= 4, "a busbw plot per collective"

    junit = (report / "junit.xml").read_text()
    assert 'name="ticket" value="INC-1234"' in junit
    assert 'name="simulated" value="true"' in junit
    assert re.search(r'name="baseline_sha256" value="[0-9a-f]{64}"', junit)

    assert main(["verify", str(report), "--allowed-signers", str(allowed), "--identity", "oncall@provider"]) == 0
    assert stock_verify(allowed, report / "junit.xml").returncode == 0
    assert stock_verify(allowed, report / "MANIFEST.json").returncode == 0

    for path in report.rglob("*"):
        if path.is_file() and path.suffix in {".json", ".xml", ".yaml", ".log", ".html"}:
            text = path.read_text(errors="replace")
            assert "Bearer " not in text, path
            assert not re.search(r"^\s*token:\s*\S", text, re.MULTILINE), path

    original = (report / "junit.xml").read_bytes()
    tampered = bytearray(original)
    tampered[tampered.index(b"INC-1234")] = ord("X")
    (report / "junit.xml").write_bytes(bytes(tampered))
    assert stock_verify(allowed, report / "junit.xml").returncode != 0
    assert main(["verify", str(report), "--allowed-signers", str(allowed)]) == 1

    (report / "junit.xml").write_bytes(original)
    capsys.readouterr()
    log = next((report / "outputs" / "nccl").glob("*.log"))
    log.write_text(log.read_text().replace("0", "1", 1))
    assert main(["verify", str(report), "--allowed-signers", str(allowed)]) == 1
    assert log.name in capsys.readouterr().err
