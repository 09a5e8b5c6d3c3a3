"""The baseline is the agreement: margins come from it, a profile edit cannot move them, an amendment can."""

from __future__ import annotations

from pathlib import Path

import pytest

from acceptance.baseline import BaselineStore
from tests.suite_run import demo_key, run_suite, sim_cluster_folder

pytestmark = pytest.mark.slow

ALL_REDUCE = "test_nccl_busbw[all_reduce_perf]"


def _loosen_profile(pytester: pytest.Pytester) -> Path:
    folder = sim_cluster_folder(pytester.path)
    path = folder / "cluster.yaml"
    path.write_text(path.read_text().replace("busbw_tolerance: 0.05", "busbw_tolerance: 0.5"))
    return folder


def test_a_profile_edit_after_handover_cannot_turn_a_slow_fabric_into_a_pass(pytester: pytest.Pytester) -> None:
    _loosen_profile(pytester)
    run = run_suite(pytester, "--sim-fault=nic-degraded@sim-node-07", "-k", "all_reduce")
    assert run.outcomes[ALL_REDUCE] == "failed"
    props = run.properties(ALL_REDUCE)
    assert (props["margin"], props["margin_direction"]) == ("0.05", "below")
    note = "busbw tolerance 50% in cluster.yaml, 5% agreed at handover (baseline sha256 "
    assert "MARGIN DIFFERS: " + note in run.result.stdout.str()
    assert note in run.suite_properties()["margins_differ.busbw_tolerance"]
    assert run.suite_properties()["margins_from"] == "baseline"
    assert note in (run.report_dir / "report.html").read_text()


def test_an_amended_baseline_is_a_new_file_and_its_margins_are_then_used(pytester: pytest.Pytester) -> None:
    from acceptance.cli import main

    folder = _loosen_profile(pytester)
    old = BaselineStore(folder).latest()
    assert main(["baseline", "amend", "sim", "--margins-from-profile", "--reason", "agreed after re-cabling",
                 "--baselines-dir", str(folder.parent), "--sign-key", str(demo_key(pytester.path))]) == 0  # fmt: skip
    assert old.path.is_file()
    run = run_suite(pytester, "--sim-fault=nic-degraded@sim-node-07", "-k", "all_reduce")
    assert run.outcomes[ALL_REDUCE] == "passed", run.message(ALL_REDUCE)
    assert run.properties(ALL_REDUCE)["margin"] == "0.5"
    assert "MARGIN DIFFERS" not in run.result.stdout.str()
    assert "margins_differ.busbw_tolerance" not in run.suite_properties()


def test_a_changed_image_or_dcgm_level_is_not_comparable_not_broken_hardware(pytester: pytest.Pytester) -> None:
    """A new nccl-tests image tag went unnoticed; DCGM level 2 after a level-3 handover read as broken GPUs."""
    folder = sim_cluster_folder(pytester.path)
    for old in folder.glob("handover-*.json"):
        old.unlink()
    recorded = run_suite(pytester, "-k", "all_reduce or sim-node-01 or preflight", "--record-baseline",
                         "--force-record=images and levels only")  # fmt: skip
    assert recorded.result.ret == 0, recorded.result.stdout.str()[-2000:]
    conditions = BaselineStore(folder).latest().baseline.data["conditions"]
    image = conditions["nccl"]["all_reduce_perf"]["image"]
    assert image.startswith("ghcr.io/coreweave/nccl-tests@sha256:"), "recorded with the digest the cluster reports"
    assert conditions["dcgm"]["image"].startswith("nvcr.io/nvidia/cloud-native/dcgm@sha256:")
    profile = folder / "cluster.yaml"
    text = profile.read_text()
    profile.write_text(text.replace("nccl2.26.2-1-0708d2e", "nccl2.26.2-1-rebuilt").replace("level: 3", "level: 2"))
    run = run_suite(pytester, "-k", "all_reduce or sim-node-01")
    assert run.outcomes[ALL_REDUCE] == "failed"
    assert run.properties(ALL_REDUCE)["verdict"] == "not-comparable"
    message = run.message(ALL_REDUCE)
    assert "not comparable with the handover baseline: image ghcr.io/coreweave/nccl-tests@sha256:" in message
    assert f"now, {image} at handover" in message
    dcgm = "test_dcgm_diagnostics[sim-node-01]"
    assert run.properties(dcgm)["verdict"] == "not-comparable"
    assert "DCGM level -r 2 now, -r 3 at handover" in run.message(dcgm)
