"""The alert rules and criterion 5 agree: one simulated production period through both, the same first time.

The simulator's production period (the series dcgm-exporter and the job would have shown) is judged
by criterion 5 as an hourly run would see it at each moment (the earliest "now" at which the verdict
is FAIL), and the same samples are fed to the generated rules with the real `promtool test rules`:
the rule of the failing signal must not fire one evaluation before that moment and must fire at it.
"""

from __future__ import annotations

import shutil
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from acceptance.agreement.alerts import alert_rules, as_document, rules_of
from acceptance.baseline import BaselineStore
from acceptance.cmd.agreement import inputs
from acceptance.judge.recurrence import judge_hardware, judge_job, judge_probation
from acceptance.judge.recurrence_rules import Window, rules_from_profile
from acceptance.judge.verdict import Status, Verdict
from acceptance.metrics.collect import JobSources, collect_hardware, collect_job
from acceptance.metrics.offline import OfflineSource
from acceptance.profile import Profile, load_profile_file
from acceptance.sim.model.faultspec import SimFaults
from acceptance.sim.model.production import Production
from acceptance.sim.probation import PROGRESS, STEP_TIME, sim_cluster, write_period

PROMTOOL = shutil.which("promtool")
ROOT = Path(__file__).resolve().parents[1]
START = datetime(2026, 12, 1, 3, 0, tzinfo=UTC)
LENGTH_S = 3 * 3600.0
NODES = ("sim-node-07",)
SCRAPE_S = 15.0
FIELDS = ("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER")


def period(tmp_path: Path, faults: tuple[str, ...]) -> tuple[Profile, OfflineSource, float]:
    profile = load_profile_file(ROOT / "baselines" / "sim" / "cluster.yaml")
    cluster = sim_cluster(profile)
    parsed = SimFaults.parse(faults).check([n.name for n in cluster.nodes]).probation
    model = Production(cluster, NODES, START, LENGTH_S, parsed, fields=FIELDS, job_nodes=len(cluster.nodes))
    write_period(model, tmp_path / "period")
    return profile, OfflineSource(tmp_path / "period" / "dumps"), float(model.times[0])


def criterion_5_at(profile: Profile, source: OfflineSource, baseline_s: float | None, now: datetime) -> Verdict:
    """Criterion 5's verdict as a run at `now` sees the window (open until its end)."""
    rules = rules_from_profile(profile.recurrence, profile.severity.get("degraded_rule"))
    window = Window(START, LENGTH_S, now)
    hardware = collect_hardware(source, NODES, window, rules, profile.gpus_per_node, SCRAPE_S)
    job = collect_job(source, JobSources(STEP_TIME, PROGRESS, ()), window, baseline_s, [], SCRAPE_S)
    parts = [judge_hardware(hardware, rules, window), judge_job(job, rules, window)]
    return judge_probation(parts, NODES, rules, window)


def first_fail(profile: Profile, source: OfflineSource, baseline_s: float | None) -> tuple[datetime, Verdict]:
    """The earliest scrape time at which criterion 5 says FAIL (bisection: a FAIL stays a FAIL)."""
    lo, hi = 0, int(LENGTH_S // SCRAPE_S)
    last = criterion_5_at(profile, source, baseline_s, START + timedelta(seconds=hi * SCRAPE_S))
    assert last.status is Status.FAIL, last.summary
    while hi - lo > 1:
        mid = (lo + hi) // 2
        seen = criterion_5_at(profile, source, baseline_s, START + timedelta(seconds=mid * SCRAPE_S))
        if seen.status is Status.FAIL:
            hi, last = mid, seen
        else:
            assert seen.status is Status.PENDING, seen.summary
            lo = mid
    return START + timedelta(seconds=hi * SCRAPE_S), last


def input_series(source: OfflineSource, t0_s: float) -> list[dict[str, str]]:
    """Every sample of the period as promtool input series, time 0 being the period's first scrape."""
    out = []
    for s in source.series:
        slots = np.round((s.times / 1000.0 - t0_s) / SCRAPE_S).astype(int)
        values = ["_"] * (int(slots.max()) + 1)
        for slot, value in zip(slots.tolist(), s.values.tolist(), strict=True):
            values[slot] = repr(float(value))
        labels = ",".join(f'{k}="{v}"' for k, v in s.labels.items())
        out.append({"series": f"{s.metric}{{{labels}}}", "values": " ".join(values)})
    return out


@pytest.mark.heavy
@pytest.mark.skipif(
    PROMTOOL is None, reason="promtool not installed (Debian package `prometheus`; .ci/run installs it)"
)
@pytest.mark.parametrize(
    ("faults", "signal"),
    [(("slowdown-recur@1h+20m",), "step_time"), (("xid-recur@sim-node-07:3@40m",), "xid")],
)
def test_the_rules_fire_when_criterion_5_first_fails(tmp_path: Path, faults: tuple[str, ...], signal: str) -> None:
    profile, source, t0 = period(tmp_path, faults)
    baseline = BaselineStore(profile.path.parent).latest()
    made = inputs(profile, baseline)
    failed_at, verdict = first_fail(profile, source, made.baseline_step_s)
    assert verdict.figures["signal"] == signal

    rule = next(r for r in rules_of(made) if r.signal == signal)
    doc = as_document(made)
    entry = next(r for r in doc["groups"][0]["rules"] if r["alert"] == rule.name)
    labels: dict[str, str] = {}
    if signal == "xid":
        labels = next(
            s.labels for s in source.series if s.metric == "DCGM_FI_DEV_XID_ERRORS" and s.labels.get("gpu") == "3"
        )
    expected = {"exp_labels": {**labels, **entry["labels"]}, "exp_annotations": entry["annotations"]}
    at = failed_at.timestamp() - t0
    checks: list[dict[str, Any]] = [
        {"eval_time": f"{int(at - SCRAPE_S)}s", "alertname": rule.name, "exp_alerts": []},
        {"eval_time": f"{int(at)}s", "alertname": rule.name, "exp_alerts": [expected]},
    ]
    (tmp_path / "rules.yaml").write_text(alert_rules(made))
    test = {
        "rule_files": ["rules.yaml"],
        "evaluation_interval": f"{int(SCRAPE_S)}s",
        "tests": [
            {"interval": f"{int(SCRAPE_S)}s", "input_series": input_series(source, t0), "alert_rule_test": checks}
        ],
    }
    (tmp_path / "test.yaml").write_text(yaml.safe_dump(test, sort_keys=False, width=1 << 30))
    done = subprocess.run(
        [PROMTOOL or "promtool", "test", "rules", "test.yaml"],
        check=False,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, (
        f"criterion 5 first FAIL at {failed_at} ({verdict.summary}):\n{done.stdout}{done.stderr}"
    )
