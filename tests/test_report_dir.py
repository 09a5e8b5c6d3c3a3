"""The report folder and the signing key are checked before anything runs; a report is never merged into another."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.suite_process import runpytest
from tests.suite_run import SUITE, sim_cluster_folder

pytestmark = pytest.mark.slow


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    base = sim_cluster_folder(pytester.path).parent
    return runpytest(
        pytester, str(SUITE), "--cluster=sim", f"--baselines-dir={base}", "-p", "no:cacheprovider", *args, timeout=120
    )


def test_a_report_folder_that_holds_files_is_refused(pytester: pytest.Pytester) -> None:
    old = pytester.path / "old-report"
    old.mkdir()
    (old / "outputs.log").write_text("an earlier run's evidence\n")
    result = _run(pytester, f"--report-dir={old}", "--no-sign")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--report-dir*old-report: the folder is not empty*never merged into another*"])
    assert sorted(p.name for p in old.iterdir()) == ["outputs.log"]


@pytest.mark.parametrize("where", ["file", "under-a-file"])
def test_a_report_folder_that_cannot_be_made_is_a_usage_error(pytester: pytest.Pytester, where: str) -> None:
    blocker = pytester.path / "blocker"
    blocker.write_text("not a folder\n")
    target = blocker if where == "file" else blocker / "report"
    result = _run(pytester, f"--report-dir={target}", "--no-sign")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "is a file, not a folder" in result.stderr.str()
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()


def _keygen(path: Path, passphrase: str = "") -> Path:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", passphrase, "-f", str(path)], check=True)
    return path


@pytest.mark.parametrize("case", ["missing", "directory", "public-without-agent", "not-a-key", "passphrase"])
def test_a_signing_key_that_cannot_sign_stops_the_run_before_it_starts(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    keys = pytester.path / "keys"
    keys.mkdir()
    key = {
        "missing": keys / "nothing",
        "directory": keys,
        "public-without-agent": Path(f"{_keygen(keys / 'k')}.pub"),
        "not-a-key": keys / "notes.txt",
        "passphrase": _keygen(keys / "locked", passphrase="s3cret-phrase"),
    }[case]
    if case == "not-a-key":
        key.write_text("hello\n")
    report = pytester.path / "report"
    result = _run(pytester, f"--report-dir={report}", f"--sign-key={key}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()[-2000:]
    err = result.stderr.str()
    assert "--sign-key: " in err
    expected = {
        "missing": "does not exist",
        "directory": "is a directory, not a key file",
        "public-without-agent": "is a public key: its private key must be in a running ssh-agent",
        "not-a-key": "is not an SSH key that ssh-keygen can read",
        "passphrase": "has a passphrase: add it to the ssh-agent (ssh-add KEY)",
    }[case]
    assert expected in err
    assert not report.exists() or not any(report.iterdir()), "nothing ran"
