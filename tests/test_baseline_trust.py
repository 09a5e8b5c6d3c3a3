"""The baseline is the signed agreement: an edited, replaced, unsigned or foreign-signed baseline is refused."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from acceptance.baseline import BaselineStore
from acceptance.cli import main
from tests.suite_process import runpytest
from tests.suite_run import SUITE, run_suite, sim_cluster_folder

pytestmark = pytest.mark.slow

ALL_REDUCE = "test_nccl_busbw[all_reduce_perf]"


def _halved(data: dict) -> dict:
    for row in data["results"]["nccl"]["all_reduce_perf"]["rows"]:
        row["oop"]["busbw"] = round(row["oop"]["busbw"] / 2, 2)
    return data


def _judge(pytester: pytest.Pytester, *extra: str) -> pytest.RunResult:
    """A judging run that does not allow unsigned baselines (unlike run_suite's default)."""
    folder = sim_cluster_folder(pytester.path)
    return runpytest(
        pytester,
        str(SUITE), "--cluster=sim", f"--baselines-dir={folder.parent}", "--no-sign", "-p", "no:cacheprovider",
        f"--report-dir={pytester.path / 'report'}", *extra, timeout=300,
    )  # fmt: skip


def test_an_edited_baseline_is_refused_before_anything_runs(pytester: pytest.Pytester) -> None:
    """Halving the handover busbw once turned a -38% fabric into a pass."""
    folder = sim_cluster_folder(pytester.path)
    (baseline,) = BaselineStore(folder).files()
    baseline.write_text(json.dumps(_halved(json.loads(baseline.read_text())), indent=1))
    result = _judge(pytester, "--sim-fault=nic-degraded@sim-node-07", "-k", "all_reduce")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "refused: content does not match the signature" in result.stderr.str()
    assert main(["baseline", "verify", "sim", "--baselines-dir", str(folder.parent)]) == 1


def test_a_copy_under_another_name_is_not_the_agreement(pytester: pytest.Pytester) -> None:
    """A copy named handover-old-copy.json sorted last and became 'latest'."""
    folder = sim_cluster_folder(pytester.path)
    (baseline,) = BaselineStore(folder).files()
    (folder / "handover-old-copy.json").write_text(json.dumps(_halved(json.loads(baseline.read_text()))))
    run = run_suite(pytester, "--sim-fault=nic-degraded@sim-node-07", "-k", "all_reduce")
    assert run.outcomes[ALL_REDUCE] == "failed"
    assert baseline.name in run.suite_properties()["baseline"]
    assert run.suite_properties()["baseline_signature"].startswith(f"baseline {baseline.name} good signature by ")


def test_an_unsigned_baseline_needs_an_explicit_lab_flag_that_the_report_states(pytester: pytest.Pytester) -> None:
    folder = sim_cluster_folder(pytester.path)
    (baseline,) = BaselineStore(folder).files()
    Path(f"{baseline}.sig").unlink()
    refused = _judge(pytester, "-k", "cluster_answers")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    assert "the baseline is not signed" in refused.stderr.str()
    run = run_suite(pytester, "-k", "cluster_answers")
    assert run.result.ret == 0
    assert run.suite_properties()["baseline_signature"].startswith("UNSIGNED baseline")
    run.result.stdout.fnmatch_lines(["baseline signature: UNSIGNED baseline*--allow-unsigned-baseline*"])


def test_a_baseline_signed_by_a_key_the_profile_does_not_list_is_refused(pytester: pytest.Pytester) -> None:
    folder = sim_cluster_folder(pytester.path)
    (baseline,) = BaselineStore(folder).files()
    stranger = pytester.path / "stranger"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(stranger)], check=True)
    Path(f"{baseline}.sig").unlink()
    subprocess.run(["ssh-keygen", "-q", "-Y", "sign", "-n", "recovery-acceptance", "-f", str(stranger), str(baseline)],
                   check=True, capture_output=True)  # fmt: skip
    for extra in ((), ("--allow-unsigned-baseline",)):  # the lab flag allows unsigned, never a foreign signer
        result = _judge(pytester, "-k", "cluster_answers", *extra)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        err = result.stderr.str()
        assert "which is not in" in err
        assert "allowed_signers" in err


def test_a_recorded_baseline_is_signed_and_then_trusted(pytester: pytest.Pytester) -> None:
    folder = sim_cluster_folder(pytester.path, with_baseline=False)
    key = pytester.path / "provider_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    with (folder / "allowed_signers").open("a") as handle:
        handle.write("oncall@provider " + " ".join(key.with_suffix(".pub").read_text().split()[:2]) + "\n")
    result = runpytest(
        pytester,
        str(SUITE), "--cluster=sim", f"--baselines-dir={folder.parent}", f"--sign-key={key}", "-p", "no:cacheprovider",
        f"--report-dir={pytester.path / 'record'}", "--record-baseline", "--force-record=trust test",
        "-k", "preflight", timeout=300,
    )  # fmt: skip
    assert result.ret == 0, result.stdout.str()[-2000:]
    result.stdout.fnmatch_lines(["*new handover baseline recorded and signed (signed by key*"])
    assert main(["baseline", "verify", "sim", "--baselines-dir", str(folder.parent)]) == 0
