"""Criterion 1 verdicts: one rule per test, on fixtures in the real formats."""

from __future__ import annotations

import dataclasses

import pytest

from acceptance.cmd.parse_dcgm import read_dcgm
from acceptance.judge.diagnostics import DiagnosticsPolicy, judge_node
from acceptance.judge.verdict import Status
from acceptance.tools.dcgm import DcgmReport
from tests.shared import CORPUS, FIXTURES, needs_shared

POLICY = DiagnosticsPolicy()


def fx(name: str) -> DcgmReport:
    return read_dcgm(FIXTURES / "dcgm" / name)


PASS8 = "dcgm-4.4.1-r3-json-8gpu-h200-pass.json"


def with_test(report: DcgmReport, name: str, **changes: object) -> DcgmReport:
    tests = tuple(dataclasses.replace(t, **changes) if t.name == name else t for t in report.tests)  # type: ignore[arg-type]
    return dataclasses.replace(report, tests=tests)


def test_a_clean_node_passes() -> None:
    v = judge_node("sim-node-03", fx(PASS8), fx(PASS8), 8, POLICY, exit_code=0, level=3, reference_level=3)
    assert v.status is Status.PASS
    assert v.summary.startswith("sim-node-03: 8 GPUs passed 8 tests (software, memory, diagnostic")
    assert v.figures["gpu7.targeted_power"] == "pass"
    assert v.figures["level"] == 3
    assert v.table is not None
    assert len(v.table) == 64


def test_xid_failure_names_gpu_cause_version_and_action() -> None:
    v = judge_node("sim-node-03", fx("dcgm-4.4.1-r3-json-8gpu-xid79-diagnostic-fail-gpu5.json"), fx(PASS8), 8,
                   POLICY, exit_code=205, level=3, reference_level=3)  # fmt: skip
    assert v.status is Status.FAIL
    assert v.summary == (
        "sim-node-03 GPU 5: diagnostic failed (XID 79: GPU has fallen off the bus) — DCGM 4.4.1 r3; "
        "drain the node and open an RMA"
    )
    assert v.figures["gpu5.diagnostic"] == "fail"
    assert v.figures["worst_gpu"] == 5
    assert v.figures["dcgm_version"] == "4.4.1"
    assert any("GPU 5 (serial 1654020000005)" in e and "DCGM_FR_XID_ERROR (101)" in e for e in v.evidence)


def test_same_failure_in_text_output_reads_the_same() -> None:
    v = judge_node("n", fx("dcgm-4.4.1-r3-text-8gpu-xid79-diagnostic-fail-gpu5.txt"), None, 8, POLICY, level=3)
    assert v.summary.startswith("n GPU 5: diagnostic failed (XID 79: GPU has fallen off the bus)")


def test_a_gpu_missing_from_the_output_fails_naming_it() -> None:
    v = judge_node("n", fx("dcgm-4.4.1-r3-json-7of8-gpus-gpu7-absent.json"), fx(PASS8), 8, POLICY)
    assert v.status is Status.FAIL
    assert v.summary.startswith("n GPU 7: missing from the diagnostic output")
    assert v.figures["gpus_seen"] == 7


def test_expected_gpus_as_a_list() -> None:
    v = judge_node("n", fx("dcgm-4.4.1-r3-json-7of8-gpus-gpu7-absent.json"), None, [0, 1, 2, 3, 4, 5, 6], POLICY)
    assert v.status is Status.PASS


def test_a_test_skipped_now_that_passed_at_handover_fails() -> None:
    now = with_test(fx(PASS8), "targeted_stress", status="skip", gpus={g: "skip" for g in range(8)})
    v = judge_node("n", now, fx(PASS8), 8, POLICY)
    assert v.status is Status.FAIL
    assert "targeted_stress skipped now, pass at handover" in v.summary


def test_a_gpu_skipped_now_that_passed_at_handover_fails() -> None:
    gpus = {g: "pass" for g in range(8)} | {3: "skip"}
    now = with_test(fx(PASS8), "memory", gpus=gpus)
    v = judge_node("n", now, fx(PASS8), 8, POLICY)
    assert v.status is Status.FAIL
    assert "memory skipped on GPU 3 now" in v.summary


def test_skips_without_a_handover_are_inconclusive_not_a_pass() -> None:
    skipped = fx(PASS8)
    for name in [t.name for t in skipped.tests if t.name != "software"]:
        skipped = with_test(skipped, name, status="skip", gpus={g: "skip" for g in range(8)})
    assert judge_node("n", skipped, None, 8, POLICY).status is Status.INCONCLUSIVE
    assert judge_node("n", skipped, fx(PASS8), 8, POLICY).status is Status.FAIL


def test_overall_fail_with_every_gpu_row_pass_fails_the_node() -> None:
    v = judge_node("n", fx("dcgm-4.5.0-r3-json-8gpu-overall-fail-every-gpu-row-pass.json"), None, 8, POLICY)
    assert v.status is Status.FAIL
    assert "nvbandwidth failed with no GPU row failing (MCUTIL for GPU 0" in v.summary


@needs_shared
def test_overall_fail_without_any_gpu_row_fails_the_node() -> None:
    report = read_dcgm(CORPUS / "dcgm" / "dcgm-4.4.1-r2-text-v100-pcie-fail-internal-error-elided.txt")
    v = judge_node("v100-node", report, None, [], POLICY)
    assert v.status is Status.FAIL
    assert v.summary.startswith("v100-node: pcie failed with no GPU row failing (There was an internal error")


def test_warnings_are_recorded_and_do_not_fail_unless_their_severity_says_so() -> None:
    thermal = judge_node("n", fx("dcgm-4.4.1-r3-text-8gpu-thermal-warn-targeted-power-gpu6.txt"), None, 8, POLICY)
    assert thermal.status is Status.PASS
    assert any(e.startswith("recorded warning, targeted_power GPU 6: Clocks event") for e in thermal.evidence)
    reset = fx("dcgm-4.4.1-r3-json-8gpu-pass-with-reset-severity-warning-gpu2.json")
    v = judge_node("n", reset, None, 8, POLICY)
    assert v.status is Status.FAIL
    assert v.summary.startswith("n GPU 2: targeted_power pass but Detected 3 pending row remappings")
    assert "reset the GPU and rerun" in v.summary
    lenient = DiagnosticsPolicy(fail_severities=frozenset({2}))
    assert judge_node("n", reset, None, 8, lenient).status is Status.PASS


def test_the_profiles_warning_thresholds_map_to_dcgm_severities() -> None:
    """`fail_on_warning_severity` in the profile: the default (isolate) fails a reset-severity warning."""
    from acceptance.judge.diagnostics import policy_for

    reset = fx("dcgm-4.4.1-r3-json-8gpu-pass-with-reset-severity-warning-gpu2.json")
    thermal = fx("dcgm-4.4.1-r3-text-8gpu-thermal-warn-targeted-power-gpu6.txt")
    assert judge_node("n", reset, None, 8, policy_for("isolate")).status is Status.FAIL
    assert judge_node("n", reset, None, 8, policy_for("reset")).status is Status.FAIL
    assert judge_node("n", reset, None, 8, policy_for("none")).status is Status.PASS
    assert judge_node("n", thermal, None, 8, policy_for("isolate")).status is Status.PASS
    assert judge_node("n", thermal, None, 8, policy_for("any")).status is Status.FAIL


def test_dcgm3_handover_against_dcgm4_run_matches_by_normalized_names() -> None:
    """3.3.9 text at handover, 4.4.1 JSON now: same tests under their 4.x names, the change stated."""
    v = judge_node("n", fx(PASS8), fx("dcgm-3.3.9-r3-text-8gpu-pass.txt"), 8, POLICY, level=3, reference_level=3)
    assert v.status is Status.PASS
    assert v.summary.endswith("— DCGM 4.4.1 r3 (3.3.9 at handover)")
    assert "DCGM 4.4.1 now, 3.3.9 at handover: tests matched by their DCGM 4.x names" in v.evidence
    assert v.figures["handover_dcgm_version"] == "3.3.9"


def test_a_failure_against_a_dcgm3_handover_is_still_a_failure() -> None:
    v = judge_node("n", fx("dcgm-4.4.1-r3-json-8gpu-nvlink-down-pcie-fail-gpu1.json"),
                   fx("dcgm-3.3.9-r3-text-8gpu-pass.txt"), 8, POLICY, level=3, reference_level=3)  # fmt: skip
    assert v.status is Status.FAIL
    assert v.summary.startswith("n GPU 1: pcie failed (GPU 1's NvLink link 4 is currently down")
    assert "NVLink" in v.summary


def test_a_handover_test_that_no_longer_exists_is_named() -> None:
    """3.2.6 ran `sm_stress`; 4.4.1 at the same level does not: named, not silently passed or failed."""
    handover = fx("dcgm-3.2.6-r3-json-8gpu-h100-pass-gpu_ids-sm-stress.json")
    v = judge_node("n", fx(PASS8), handover, 8, POLICY, level=3, reference_level=3)
    assert v.status is Status.PASS
    assert any(e.startswith("handover test sm_stress (DCGM 3.2.6) is not in DCGM 4.4.1's run") for e in v.evidence)
    strict = DiagnosticsPolicy(fail_on_retired_test=True)
    assert judge_node("n", fx(PASS8), handover, 8, strict, level=3, reference_level=3).status is Status.FAIL


def test_a_handover_test_missing_at_the_same_version_fails() -> None:
    now = dataclasses.replace(fx(PASS8), tests=tuple(t for t in fx(PASS8).tests if t.name != "memory_bandwidth"))
    v = judge_node("n", now, fx(PASS8), 8, POLICY, level=3, reference_level=3)
    assert v.status is Status.FAIL
    assert "memory_bandwidth ran at handover and is missing now at -r 3" in v.summary


@pytest.mark.parametrize("code", [1, 203, 255])
def test_a_diagnostic_that_did_not_run_is_an_error_never_a_pass(code: int) -> None:
    v = judge_node("n", fx(PASS8), fx(PASS8), 8, POLICY, exit_code=code)
    assert v.status is Status.ERROR
    assert "did not complete" in v.summary


@pytest.mark.parametrize(
    "name", ["dcgm-4.4.1-json-runtime-error.json", "dcgm-4.4.1-r3-text-unable-to-complete-timeout.txt"]
)
def test_unable_to_complete_is_an_error(name: str) -> None:
    v = judge_node("n", fx(name), fx(PASS8), 8, POLICY, exit_code=241)
    assert v.status is Status.ERROR
    assert "A timeout occurred" in v.summary


def test_exit_226_with_a_clean_output_fails() -> None:
    v = judge_node("n", fx(PASS8), None, 8, POLICY, exit_code=226)
    assert v.status is Status.FAIL
    assert "dcgmi exited 226" in v.summary


@needs_shared
def test_persistence_mode_is_a_node_setting_not_an_rma() -> None:
    report = read_dcgm(CORPUS / "dcgm" / "dcgm-4.2.3-r1-json-gb10-software-fail-persistence-mode.json")
    v = judge_node("spark", report, None, 1, POLICY, exit_code=226, level=1)
    assert v.status is Status.FAIL
    assert v.summary.endswith("— DCGM 4.2.3 r1; fix the node setting and rerun the diagnostic")


def test_ecc_and_row_remap_on_dcgm3_json_lead_with_the_gpu_and_rma() -> None:
    v = judge_node("n", fx("dcgm-3.3.9-r3-json-4gpu-ecc-dbe-row-remap-failure-gpu2.json"), None, 4, POLICY)
    assert v.status is Status.FAIL
    assert v.summary.startswith("n GPU 2: ")
    assert v.summary.endswith("drain the node and open an RMA")
    assert v.figures["failures"] == 2


def test_verdict_is_pure_and_repeatable() -> None:
    a = judge_node("n", fx("dcgm-4.4.1-r4-json-1gpu-eud-fail.json"), None, 1, POLICY, level=4)
    b = judge_node("n", fx("dcgm-4.4.1-r4-json-1gpu-eud-fail.json"), None, 1, POLICY, level=4)
    assert a == b
    assert a.summary.startswith("n GPU 0: eud failed (EUD test failed for GPU 0")


def test_a_missing_gpu_is_named_with_its_handover_serial() -> None:
    v = judge_node("n", fx("dcgm-4.4.1-r3-json-7of8-gpus-gpu7-absent.json"), fx(PASS8), 8, POLICY)
    assert "n GPU 7 (serial 1654020000007 at handover): missing from the diagnostic output" in v.evidence


def test_a_replaced_gpu_is_recorded() -> None:
    from acceptance.tools.dcgm import GpuDevice

    now = fx(PASS8)
    now = dataclasses.replace(now, devices={**now.devices, 3: GpuDevice(serial="NEW0003", device_id="2335")})
    v = judge_node("n", now, fx(PASS8), 8, POLICY)
    assert v.status is Status.PASS
    assert "GPU 3 serial NEW0003 now, 1654020000003 at handover (replaced)" in v.evidence


def test_an_all_skip_run_against_an_all_skip_handover_is_still_not_a_pass() -> None:
    skipped = fx(PASS8)
    for name in [t.name for t in skipped.tests if t.name != "software"]:
        skipped = with_test(skipped, name, status="skip", gpus={g: "skip" for g in range(8)})
    assert judge_node("n", skipped, skipped, 8, POLICY).status is Status.INCONCLUSIVE


def test_a_different_level_than_at_handover_is_not_comparable_not_broken_hardware() -> None:
    """Level 2 after a level-3 handover once failed every node with hardware advice for the tests it skips."""
    level2 = dataclasses.replace(
        fx(PASS8), tests=tuple(t for t in fx(PASS8).tests if t.name in ("software", "memory", "pcie"))
    )
    for now, level in ((level2, 2), (fx(PASS8), 4)):
        v = judge_node("n", now, fx(PASS8), 8, POLICY, exit_code=0, level=level, reference_level=3)
        assert v.status is Status.NOT_COMPARABLE
        assert f"DCGM level -r {level} now, -r 3 at handover" in v.summary
        assert f"level -r {level} now, -r 3 at handover: another level runs other tests" in v.evidence[0]
