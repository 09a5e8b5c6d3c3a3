"""Signatures: real OpenSSH signs our reports and verifies them, and so does `acceptance verify`."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from acceptance.cmd import verify as verify_cmd
from acceptance.judge.verdict import Status, Verdict
from acceptance.report.data import ReportData, TestRecord, verdict_payload
from acceptance.report.finalize import finalize
from acceptance.report.folder import ReportFolder
from acceptance.report.manifest import MANIFEST_NAME, read_manifest
from acceptance.report.sign import NAMESPACE, SignOptions, sign_files
from acceptance.report.sshsig import parse_signature
from acceptance.report.verify import verify

pytestmark = pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="OpenSSH ssh-keygen is absent")

IDENTITY = "alice@example.org"
JUNIT = (
    '<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests"><testsuite name="pytest" '
    'errors="0" failures="0" skipped="0" tests="1"><testcase classname="t" name="test_a">'
    '<properties><property name="verdict" value="pass"/></properties></testcase></testsuite></testsuites>'
)


def _keygen(path: Path, comment: str = IDENTITY) -> Path:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)], check=True)
    return path


@pytest.fixture
def key(tmp_path: Path) -> Path:
    return _keygen(tmp_path / "id_ed25519")


@pytest.fixture
def allowed_signers(tmp_path: Path, key: Path) -> Path:
    kind, blob = key.with_suffix(".pub").read_text().split()[:2]
    path = tmp_path / "allowed_signers"
    path.write_text(f"{IDENTITY} {kind} {blob}\n")
    return path


def _data() -> ReportData:
    verdict = Verdict(Status.PASS, "gpu-07", "all 8 GPUs pass", {"node": "gpu-07", "gpus": 8})
    test = TestRecord(
        "acceptance/test_gpu_diagnostics.py::test_dcgm[gpu-07]",
        "passed",
        1.0,
        "",
        (verdict_payload(verdict),),
    )
    return ReportData({"cluster": "sim", "ticket": "INC-1"}, (test,), simulated=True)


def _report(tmp_path: Path, options: SignOptions) -> tuple[Path, Path]:
    """A finalized report folder and the junit written outside it (as with --junitxml=elsewhere)."""
    junit = tmp_path / "out" / "INC-1.xml"
    junit.parent.mkdir()
    junit.write_text(JUNIT)
    folder = ReportFolder.create(tmp_path / "reports", "sim", datetime(2026, 11, 30, 1, 2, 3, tzinfo=UTC))
    folder.add_text("evidence/dcgm-gpu-07.json", '{"DCGM Diagnostic": {}}\n')
    folder.add_json("evidence/rank-node-map.json", {"0": "gpu-01", "8": "gpu-07"})
    result = finalize(folder, junit, _data(), options)
    assert not result.problems
    return folder.path, junit


def _stock_verify(path: Path, allowed: Path, identity: str = IDENTITY) -> subprocess.CompletedProcess[bytes]:
    with path.open("rb") as data:
        return subprocess.run(
            [
                "ssh-keygen",
                "-Y",
                "verify",
                "-f",
                str(allowed),
                "-I",
                identity,
                "-n",
                NAMESPACE,
                "-s",
                f"{path}.sig",
            ],
            stdin=data,
            capture_output=True,
            check=False,
        )


def test_stock_openssh_accepts_junit_and_manifest_signatures(tmp_path, key, allowed_signers):
    folder, junit = _report(tmp_path, SignOptions(key=key))
    assert folder.name == "20261130T010203Z"
    for signed in (junit, folder / junit.name, folder / MANIFEST_NAME):
        done = _stock_verify(signed, allowed_signers)
        assert done.returncode == 0, done.stderr
        assert b"Good" in done.stdout


def test_manifest_lists_every_file_with_sha256_and_size(tmp_path, key):
    folder, _ = _report(tmp_path, SignOptions(key=key))
    manifest = read_manifest(folder / MANIFEST_NAME)
    listed = {entry["path"] for entry in manifest["files"]}
    on_disk = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}
    assert listed == on_disk - {MANIFEST_NAME, MANIFEST_NAME + ".sig"}
    assert {"INC-1.xml", "INC-1.xml.sig", "report.html", "report-data.json"} <= listed
    assert manifest["signing"]["signed"] is True
    assert manifest["signing"]["fingerprint"].startswith("SHA256:")


def test_verify_folder_against_allowed_signers(tmp_path, key, allowed_signers):
    folder, _ = _report(tmp_path, SignOptions(key=key))
    result = verify(folder, allowed_signers)
    assert result.exit_status == 0, result.lines()
    assert any(IDENTITY in line for line in result.lines())
    assert not any("NOT checked" in line for line in result.lines())


def test_verify_without_trust_list_names_the_key_as_untrusted_and_does_not_succeed(tmp_path, key):
    """A report re-signed with any key would match its own signature: without a trust list that is no pass."""
    folder, junit = _report(tmp_path, SignOptions(key=key))
    fingerprint = subprocess.run(
        ["ssh-keygen", "-l", "-f", str(key)], capture_output=True, text=True, check=True
    ).stdout.split()[1]
    for target in (folder, junit):
        result = verify(target)
        assert result.exit_status == 3, result.lines()
        lines = result.lines()
        assert f"UNTRUSTED signer {fingerprint}" in "\n".join(lines)
        assert lines[-1] == "consistent, signer UNTRUSTED"


def _flip_byte(path: Path, offset: int = 10) -> None:
    data = bytearray(path.read_bytes())
    data[offset] = ord("X") if data[offset] != ord("X") else ord("Y")
    path.write_bytes(bytes(data))


def test_a_changed_junit_byte_fails_both_verifiers(tmp_path, key, allowed_signers):
    folder, junit = _report(tmp_path, SignOptions(key=key))
    for target in (junit, folder / junit.name):
        _flip_byte(target, 60)
        assert _stock_verify(target, allowed_signers).returncode != 0
    result = verify(folder, allowed_signers)
    assert result.exit_status == 1
    failures = [line for line in result.lines() if line.startswith("FAIL")]
    assert any(line.startswith(f"FAIL {junit.name}: changed") for line in failures), failures
    single = verify(junit, allowed_signers)
    assert single.exit_status == 1
    assert "changed after signing" in "\n".join(single.lines())


def test_a_changed_manifest_entry_fails_both_verifiers(tmp_path, key, allowed_signers):
    folder, _ = _report(tmp_path, SignOptions(key=key))
    manifest = folder / MANIFEST_NAME
    text = manifest.read_text()
    entry = json.loads(text)["files"][0]
    digit = "0" if entry["sha256"][0] != "0" else "1"
    manifest.write_text(text.replace(entry["sha256"], digit + entry["sha256"][1:]))
    assert _stock_verify(manifest, allowed_signers).returncode != 0
    result = verify(folder, allowed_signers)
    assert result.exit_status == 1
    assert any(line.startswith(f"FAIL {MANIFEST_NAME}: content does not match") for line in result.lines())
    assert any(line.startswith(f"FAIL {entry['path']}: changed") for line in result.lines())


def test_every_listed_file_is_covered_by_the_manifest(tmp_path, key, allowed_signers):
    folder, _ = _report(tmp_path, SignOptions(key=key))
    for entry in read_manifest(folder / MANIFEST_NAME)["files"]:
        path = folder / entry["path"]
        original = path.read_bytes()
        _flip_byte(path, min(10, len(original) - 1))
        result = verify(folder, allowed_signers)
        assert result.exit_status == 1, entry["path"]
        assert any(line.startswith(f"FAIL {entry['path']}:") for line in result.lines()), result.lines()
        path.write_bytes(original)
    assert verify(folder, allowed_signers).exit_status == 0


def test_added_and_removed_files_are_named(tmp_path, key):
    folder, _ = _report(tmp_path, SignOptions(key=key))
    (folder / "evidence" / "late.txt").write_text("added later")
    (folder / "evidence" / "rank-node-map.json").unlink()
    lines = verify(folder).lines()
    assert any(line.startswith("FAIL evidence/late.txt: not listed") for line in lines), lines
    assert any(line.startswith("FAIL evidence/rank-node-map.json: missing") for line in lines), lines


def test_a_key_outside_the_allowed_signers_is_refused_with_its_fingerprint(tmp_path, key, allowed_signers):
    other = _keygen(tmp_path / "mallory", "mallory@example.org")
    folder, junit = _report(tmp_path, SignOptions(key=other))
    info = parse_signature((folder / f"{MANIFEST_NAME}.sig").read_text())
    result = verify(folder, allowed_signers)
    assert result.exit_status == 1
    assert any(info.fingerprint in line and "not in" in line for line in result.lines()), result.lines()
    assert _stock_verify(junit, allowed_signers).returncode != 0
    named = verify(junit, allowed_signers, identity=IDENTITY)
    assert named.exit_status == 1
    assert "does not allow" in "\n".join(named.lines())


def test_another_namespace_is_refused_and_named(tmp_path, key):
    target = tmp_path / "file.xml"
    target.write_text(JUNIT)
    subprocess.run(
        ["ssh-keygen", "-q", "-Y", "sign", "-n", "file", "-f", str(key), str(target)],
        check=True,
        capture_output=True,
    )
    result = verify(target)
    assert result.exit_status == 1
    assert "namespace 'file'" in "\n".join(result.lines())


def test_sshsig_fingerprint_matches_ssh_keygen(tmp_path, key):
    target = tmp_path / "f.txt"
    target.write_text("x")
    outcome = sign_files([target], SignOptions(key=key))
    assert outcome.signed, outcome.describe()
    info = parse_signature((tmp_path / "f.txt.sig").read_text())
    assert info.namespace == NAMESPACE
    assert info.key_type == "ssh-ed25519"
    assert info.fingerprint == outcome.fingerprint


def test_no_key_and_no_agent_still_writes_an_unsigned_report(tmp_path):
    folder, junit = _report(tmp_path, SignOptions(key=None, agent_socket=None))
    assert not (folder / f"{MANIFEST_NAME}.sig").exists()
    assert not junit.with_name(junit.name + ".sig").exists()
    manifest = read_manifest(folder / MANIFEST_NAME)
    assert manifest["signing"]["signed"] is False
    assert "--sign-key" in manifest["signing"]["reason"]
    html = (folder / "report.html").read_text()
    assert "unsigned: no signing key" in html
    result = verify(folder)
    assert result.exit_status == 1
    assert "not signed" in "\n".join(result.lines())
    assert "--sign-key" in "\n".join(result.lines())


def test_no_sign_says_so_in_html_and_manifest(tmp_path, key):
    folder, _ = _report(tmp_path, SignOptions(enabled=False, key=key))
    assert not list(folder.glob("*.sig"))
    assert "--no-sign" in read_manifest(folder / MANIFEST_NAME)["signing"]["reason"]
    assert "unsigned: signing was turned off with --no-sign" in (folder / "report.html").read_text()


def test_a_key_with_a_passphrase_and_no_agent_says_to_use_the_agent(tmp_path):
    key = tmp_path / "locked"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "secret-pass", "-f", str(key)], check=True)
    target = tmp_path / "f.txt"
    target.write_text("x")
    outcome = sign_files([target], SignOptions(key=key, timeout_s=20))
    assert not outcome.signed
    assert "has a passphrase: add it to the ssh-agent" in outcome.describe()


def test_a_missing_key_file_is_a_clear_message(tmp_path):
    outcome = sign_files([], SignOptions(key=tmp_path / "nope"))
    assert not outcome.signed
    assert outcome.describe() == f"unsigned: signing key {tmp_path / 'nope'} does not exist"


@pytest.fixture
def agent(tmp_path: Path):
    if shutil.which("ssh-agent") is None or shutil.which("ssh-add") is None:
        pytest.skip("ssh-agent is absent")
    short = Path(tempfile.mkdtemp(prefix="ra-agent-"))  # unix socket paths must stay under ~100 bytes
    sock = short / "agent.sock"
    proc = subprocess.Popen(["ssh-agent", "-D", "-a", str(sock)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while not sock.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    yield str(sock)
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=10)
    shutil.rmtree(short, ignore_errors=True)


def test_the_ssh_agent_signs_without_a_key_path(tmp_path, agent, allowed_signers, key):
    env = {**os.environ, "SSH_AUTH_SOCK": agent}
    subprocess.run(["ssh-add", "-q", str(key)], env=env, check=True, capture_output=True)
    key.unlink()  # the private key is only in the agent now
    options = SignOptions.from_options(no_sign=False, sign_key=None, environ={"SSH_AUTH_SOCK": agent})
    folder, junit = _report(tmp_path, options)
    assert _stock_verify(junit, allowed_signers).returncode == 0
    assert verify(folder, allowed_signers).exit_status == 0
    assert "ssh-agent key" in (folder / "report.html").read_text()
    # --sign-key may also name the public half of a key the agent holds.
    target = tmp_path / "g.txt"
    target.write_text("y")
    outcome = sign_files([target], SignOptions(key=key.with_suffix(".pub"), agent_socket=agent))
    assert outcome.signed, outcome.describe()
    assert _stock_verify(target, allowed_signers).returncode == 0


def test_an_empty_agent_is_a_clear_message(tmp_path, agent):
    outcome = sign_files([], SignOptions(agent_socket=agent))
    assert not outcome.signed
    assert "offers no key" in outcome.describe()


def _cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="acceptance")
    verify_cmd.register(parser.add_subparsers())
    args = parser.parse_args(argv)
    return int(args.func(args))


def test_cli_exit_statuses(tmp_path, key, allowed_signers, capsys):
    folder, junit = _report(tmp_path, SignOptions(key=key))
    assert _cli(["verify", str(folder), "--allowed-signers", str(allowed_signers), "--identity", IDENTITY]) == 0
    assert "verified" in capsys.readouterr().out
    assert _cli(["verify", str(junit) + ".sig"]) == 3
    _flip_byte(junit, 60)
    assert _cli(["verify", str(junit)]) == 1
    assert "changed after signing" in capsys.readouterr().err
    assert _cli(["verify", str(tmp_path / "absent.xml")]) == 2
    (folder / f"{MANIFEST_NAME}.sig").write_text("not a signature\n")
    assert _cli(["verify", str(folder)]) == 2
    assert "BEGIN SSH SIGNATURE" in capsys.readouterr().err
    (folder / MANIFEST_NAME).write_text("{broken")
    assert _cli(["verify", str(folder / MANIFEST_NAME)]) == 2


@pytest.mark.parametrize("listed", ["../../../../etc/hostname", "/etc/passwd", "evidence/link-out"])
def test_a_manifest_entry_outside_the_report_folder_is_refused(tmp_path, key, allowed_signers, listed):
    """Entries naming files outside the folder were hashed and reported "verified"."""
    import hashlib

    folder, _ = _report(tmp_path, SignOptions(key=key))
    if listed == "evidence/link-out":
        (folder / listed).symlink_to("/etc/hostname")
    outside = Path("/etc/hostname") if listed != "/etc/passwd" else Path("/etc/passwd")
    manifest = json.loads((folder / MANIFEST_NAME).read_text())
    data = outside.read_bytes()
    manifest["files"].append({"path": listed, "sha256": hashlib.sha256(data).hexdigest(), "size": len(data)})
    (folder / MANIFEST_NAME).write_text(json.dumps(manifest, indent=2))
    assert sign_files([folder / MANIFEST_NAME], SignOptions(key=key)).signed, "re-signed by the trusted key itself"
    result = verify(folder, allowed_signers)
    assert result.exit_status == 1
    (refused,) = [c for c in result.checks if c.subject == listed]
    assert not refused.ok
    assert refused.detail.startswith("refused: ")


def test_verify_takes_the_trust_list_of_a_clusters_profile(tmp_path, key, capsys):
    """With the profile at hand, its allowed_signers is the trust list: a report signed by another key fails."""
    from tests.suite_run import sim_cluster_folder

    folder, _ = _report(tmp_path, SignOptions(key=key))
    base = sim_cluster_folder(tmp_path).parent
    assert _cli(["verify", str(folder), "--cluster", "sim", "--baselines-dir", str(base)]) == 1
    assert "which is not in" in capsys.readouterr().err
    with (base / "sim" / "allowed_signers").open("a") as handle:
        handle.write("oncall@provider " + " ".join(key.with_suffix(".pub").read_text().split()[:2]) + "\n")
    assert _cli(["verify", str(folder), "--cluster", "sim", "--baselines-dir", str(base)]) == 0
