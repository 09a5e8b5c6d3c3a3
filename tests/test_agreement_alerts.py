"""The provider's alert rules, tested with the real `promtool test rules` (issue 27, part 4)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from acceptance.agreement.alerts import AlertInputs, alert_rules, as_document
from acceptance.agreement.coverage import parse as parse_coverage
from acceptance.incident.severity import SeverityPolicy
from acceptance.judge.recurrence_rules import RecurrenceRules, rules_from_profile

PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(
    PROMTOOL is None, reason="promtool not installed (Debian package `prometheus`; .ci/run installs it)"
)
NODE = "gpu-07"
STEP = 'max(job_step_time_seconds{job="gpt"})'
PROGRESS = 'max(job_steps_completed_total{job="gpt"})'
SEVERITY = {
    "levels": {
        "down": {"respond": "15m", "restore": "4h"},
        "degraded": {"respond": "30m", "restore": "8h"},
        "node_out": {"respond": "1h", "restore": "24h"},
    }
}


def inputs(rules: RecurrenceRules | None = None, **kw: Any) -> AlertInputs:
    base: dict[str, Any] = {
        "cluster": "c",
        "rules": rules or RecurrenceRules(),
        "policy": SeverityPolicy.from_profile(SEVERITY),
        "nodes": (NODE, "gpu-08"),
        "step_time": STEP,
        "progress": PROGRESS,
        "baseline_step_s": 1.0,
    }
    return AlertInputs(**{**base, **kw})


def rule(doc: dict[str, Any], name: str) -> dict[str, Any]:
    return next(r for r in doc["groups"][0]["rules"] if r["alert"] == name)


def expected(doc: dict[str, Any], name: str, series_labels: dict[str, str]) -> dict[str, Any]:
    r = rule(doc, name)
    return {"exp_labels": {**series_labels, **r["labels"]}, "exp_annotations": r["annotations"]}


def promtool(tmp_path: Path, a: AlertInputs, series: list[dict[str, str]], checks: list[dict[str, Any]]) -> str:
    """Run `promtool test rules` on the rules of `a`; the output (fails the test when promtool does)."""
    assert PROMTOOL is not None
    (tmp_path / "rules.yaml").write_text(alert_rules(a))
    test = {
        "rule_files": ["rules.yaml"],
        "evaluation_interval": "15s",
        "tests": [{"interval": "15s", "input_series": series, "alert_rule_test": checks}],
    }
    (tmp_path / "test.yaml").write_text(yaml.safe_dump(test, sort_keys=False, width=10_000))
    done = subprocess.run(
        [PROMTOOL, "test", "rules", "test.yaml"], check=False, cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def at(seconds: float) -> str:
    return f"{int(seconds)}s"


def step_series(rise_min: int, rise: float = 0.10, before_min: int = 30) -> dict[str, str]:
    """Step time 1.0 s every 15 s, `rise` above it for `rise_min` minutes from `before_min` in, then 1.0 again."""
    high = f"{1 + rise:g}"
    return {
        "series": 'job_step_time_seconds{job="gpt"}',
        "values": f"1x{before_min * 4 - 1} {high}x{rise_min * 4 - 1} 1x200",
    }


def quiet(name: str, seconds: range) -> list[dict[str, Any]]:
    return [{"eval_time": at(s), "alertname": name, "exp_alerts": []} for s in seconds]


@pytest.mark.heavy
@needs_promtool
def test_14_minutes_of_plus_10_percent_is_not_degraded(tmp_path: Path) -> None:
    # judged every 15 s from the rise to well after it: the rule never fires
    promtool(tmp_path, inputs(), [step_series(14)], quiet("JobStepTimeDegraded", range(1800, 3600, 15)))


@pytest.mark.heavy
@needs_promtool
def test_16_minutes_of_plus_10_percent_is_degraded(tmp_path: Path) -> None:
    a = inputs()
    doc = as_document(a)
    fire = 1800 + 30 + 900  # the smoothed median is above from the third high sample; for: 15m
    checks = [
        {"eval_time": at(fire - 15), "alertname": "JobStepTimeDegraded", "exp_alerts": []},
        {
            "eval_time": at(fire),
            "alertname": "JobStepTimeDegraded",
            "exp_alerts": [expected(doc, "JobStepTimeDegraded", {})],
        },
    ]
    promtool(tmp_path, a, [step_series(16)], checks)
    assert rule(doc, "JobStepTimeDegraded")["labels"]["severity"] == "degraded"
    assert rule(doc, "JobStepTimeDegraded")["annotations"]["respond"] == "30m"


@pytest.mark.heavy
@needs_promtool
def test_a_rise_below_the_agreed_one_never_fires_and_the_profile_moves_the_threshold(tmp_path: Path) -> None:
    promtool(tmp_path, inputs(), [step_series(40, rise=0.09)], quiet("JobStepTimeDegraded", range(1800, 4800, 60)))
    stricter = rules_from_profile({}, {"slower_by": 0.05, "for": "10m"})
    a = inputs(stricter)
    fire = 1800 + 30 + 600
    checks = [
        {"eval_time": at(fire - 15), "alertname": "JobStepTimeDegraded", "exp_alerts": []},
        {
            "eval_time": at(fire),
            "alertname": "JobStepTimeDegraded",
            "exp_alerts": [expected(as_document(a), "JobStepTimeDegraded", {})],
        },
    ]
    promtool(tmp_path, a, [step_series(40, rise=0.09)], checks)


GPU3 = {"Hostname": NODE, "gpu": "3", "UUID": "GPU-3"}


def gpu_series(metric: str, values: str, labels: dict[str, str] = GPU3) -> dict[str, str]:
    text = ",".join(f'{k}="{v}"' for k, v in labels.items())
    return {"series": f"{metric}{{{text}}}", "values": values}


@pytest.mark.heavy
@needs_promtool
def test_an_xid_of_a_listed_code_fires_and_of_an_unlisted_code_not(tmp_path: Path) -> None:
    a = inputs()
    doc = as_document(a)
    other = {**GPU3, "gpu": "4", "UUID": "GPU-4"}
    series = [
        gpu_series("DCGM_FI_DEV_XID_ERRORS", "0x39 79x80"),  # XID 79 from 10m on
        gpu_series("DCGM_FI_DEV_XID_ERRORS", "0x39 13x80", other),  # XID 13: not an agreed recurrence code
    ]
    checks = [
        {"eval_time": "585s", "alertname": "GpuXidRecurrence", "exp_alerts": []},
        {"eval_time": "600s", "alertname": "GpuXidRecurrence", "exp_alerts": [expected(doc, "GpuXidRecurrence", GPU3)]},
        {"eval_time": "645s", "alertname": "GpuXidRecurrence", "exp_alerts": [expected(doc, "GpuXidRecurrence", GPU3)]},
        *quiet("GpuXidRecurrence", range(675, 1800, 60)),  # a latched XID is not a new one
    ]
    promtool(tmp_path, a, series, checks)
    assert rule(doc, "GpuXidRecurrence")["labels"]["severity"] == "node_out"


@pytest.mark.heavy
@needs_promtool
def test_a_gpu_whose_series_stop_while_its_node_reports_fires(tmp_path: Path) -> None:
    a = inputs()
    doc = as_document(a)
    gone = {"Hostname": NODE, "gpu": "1", "UUID": "GPU-1"}
    series = [
        gpu_series("DCGM_FI_DEV_GPU_TEMP", "50x200", {"Hostname": NODE, "gpu": "0", "UUID": "GPU-0"}),
        gpu_series("DCGM_FI_DEV_GPU_TEMP", "50x40 _x160", gone),  # last sample at 600 s
        # a whole node that stops is a gap (criterion 5: INCONCLUSIVE), not a vanished GPU
        gpu_series("DCGM_FI_DEV_GPU_TEMP", "50x40 _x160", {"Hostname": "gpu-08", "gpu": "0", "UUID": "GPU-80"}),
    ]
    checks = [
        {"eval_time": "900s", "alertname": "GpuVanished", "exp_alerts": []},
        {"eval_time": "915s", "alertname": "GpuVanished", "exp_alerts": [expected(doc, "GpuVanished", gone)]},
        {"eval_time": "1800s", "alertname": "GpuVanished", "exp_alerts": [expected(doc, "GpuVanished", gone)]},
    ]
    promtool(tmp_path, a, series, checks)


@pytest.mark.heavy
@needs_promtool
def test_hardware_counters_fire_above_the_agreed_limits_only(tmp_path: Path) -> None:
    a = inputs()
    doc = as_document(a)
    calm = {**GPU3, "gpu": "5", "UUID": "GPU-5"}
    series = [
        gpu_series("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "0+0x40 0+10x40"),  # 40 a minute from 10 m on
        gpu_series("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "0+1x80", calm),  # 4 a minute: within the limit of 8
        gpu_series("DCGM_FI_DEV_ROW_REMAP_FAILURE", "0x40 1x40"),
        gpu_series("DCGM_FI_DEV_ROW_REMAP_FAILURE", "140737488355330x80", calm),  # DCGM's blank: not supported
        gpu_series("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "0x40 64x40"),  # hw_thermal_slowdown from 10 m on
        gpu_series("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "4x80", calm),  # sw_power_cap: not an agreed reason
    ]
    checks = [
        {"eval_time": "600s", "alertname": "GpuPcieReplay", "exp_alerts": []},
        {"eval_time": "660s", "alertname": "GpuPcieReplay", "exp_alerts": [expected(doc, "GpuPcieReplay", GPU3)]},
        {
            "eval_time": "615s",
            "alertname": "GpuRowRemapFailure",
            "exp_alerts": [expected(doc, "GpuRowRemapFailure", GPU3)],
        },
        {"eval_time": "885s", "alertname": "GpuSlowdown", "exp_alerts": []},
        {"eval_time": "900s", "alertname": "GpuSlowdown", "exp_alerts": [expected(doc, "GpuSlowdown", GPU3)]},
        *quiet("GpuRowRemapFailure", range(0, 585, 45)),
        *quiet("GpuSlowdown", range(0, 885, 45)),
    ]
    promtool(tmp_path, a, series, checks)


@pytest.mark.heavy
@needs_promtool
def test_ecc_dbe_nvlink_rates_and_a_hang_fire_as_criterion_5_counts_them(tmp_path: Path) -> None:
    a = inputs()
    doc = as_document(a)
    calm = {**GPU3, "gpu": "5", "UUID": "GPU-5"}
    series = [
        gpu_series("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "0x40 1x40"),  # one double-bit error at 615 s
        gpu_series("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "3x80", calm),  # errors from before: no increase
        gpu_series("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "0+30x80"),  # 120 a minute: above 100
        gpu_series("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "0+20x80", calm),  # 80 a minute
        {"series": 'job_steps_completed_total{job="gpt"}', "values": "0+12x120 1440x200"},  # stuck from 1800 s
    ]
    checks = [
        {"eval_time": "600s", "alertname": "GpuEccDbe", "exp_alerts": []},
        {"eval_time": "615s", "alertname": "GpuEccDbe", "exp_alerts": [expected(doc, "GpuEccDbe", GPU3)]},
        {"eval_time": "900s", "alertname": "GpuNvlinkCrcFlit", "exp_alerts": [expected(doc, "GpuNvlinkCrcFlit", GPU3)]},
        {"eval_time": "3585s", "alertname": "JobHang", "exp_alerts": []},
        {"eval_time": "3600s", "alertname": "JobHang", "exp_alerts": [expected(doc, "JobHang", {})]},
        *quiet("JobHang", range(60, 3585, 300)),
    ]
    promtool(tmp_path, a, series, checks)
    assert rule(doc, "JobHang")["labels"]["severity"] == "down"


def test_every_rule_names_its_level_and_carries_that_level_s_respond_clock() -> None:
    doc = as_document(inputs())
    respond = {"down": "15m", "degraded": "30m", "node_out": "1h"}
    for r in doc["groups"][0]["rules"]:
        level = r["labels"]["severity"]
        assert r["annotations"]["respond"] == respond[level]
        assert r["annotations"]["respond_clock"] == f"respond within {respond[level]}"
    names = [r["alert"] for r in doc["groups"][0]["rules"]]
    assert names[0] == "GpuXidRecurrence"
    assert {"GpuVanished", "JobStepTimeDegraded", "JobHang", "GpuPcieReplay", "GpuEccDbe"} <= set(names)


def test_the_respond_clock_names_the_coverage_hours_and_an_absent_one_is_to_agree() -> None:
    office = parse_coverage({"hours": "Mon-Fri 08:00-18:00", "tz": "Europe/Berlin"})
    policy = SeverityPolicy.from_profile({"levels": {"degraded": {"respond": "30m"}}}, office)
    doc = as_document(inputs(policy=policy))
    said = rule(doc, "JobStepTimeDegraded")["annotations"]
    assert said["respond_clock"] == "respond within 30m in coverage hours Mon-Fri 08:00-18:00 Europe/Berlin"
    assert rule(doc, "GpuXidRecurrence")["annotations"]["respond"] == "to agree"


def test_thresholds_are_criterion_5_s_never_restated() -> None:
    rules = rules_from_profile({"pcie_replays_per_min": 20, "extra_xid_codes": [31], "slowdown": "7m"})
    doc = as_document(inputs(rules))
    assert rule(doc, "GpuPcieReplay")["expr"].endswith("> 20")
    assert "== 31" in rule(doc, "GpuXidRecurrence")["expr"]
    assert rule(doc, "GpuSlowdown")["for"] == "405s"  # 7 min less one scrape interval, as criterion 5 counts


def test_without_a_step_time_series_the_degraded_rule_is_listed_not_invented() -> None:
    text = alert_rules(inputs(step_time=None, progress=None))
    assert "# not written: the degraded rule: the profile names no step-time series" in text
    assert "JobStepTimeDegraded" not in text
    assert "JobHang" not in text


@needs_promtool
def test_the_command_writes_rules_promtool_accepts(tmp_path: Path) -> None:
    from acceptance.cli import main

    out = tmp_path / "rules.yaml"
    assert (
        main(
            [
                "agreement",
                "sim",
                "--baselines-dir",
                str(Path(__file__).resolve().parents[1] / "baselines"),
                "--alert-rules",
                str(out),
            ]
        )
        == 0
    )
    checked = subprocess.run(
        [PROMTOOL or "promtool", "check", "rules", str(out)], check=False, capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS: 14 rules found" in checked.stdout
    assert "baseline handover-" in out.read_text().splitlines()[1]
