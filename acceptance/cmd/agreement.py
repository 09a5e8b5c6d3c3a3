"""`acceptance agreement NAME --alert-rules FILE`: the provider's Prometheus alerting rules from the agreement.

    acceptance agreement prod-h200 --alert-rules deploy/prometheus/recovery-acceptance.rules.yaml
    promtool check rules deploy/prometheus/recovery-acceptance.rules.yaml

The rules are made from ``baselines/NAME/cluster.yaml`` (criterion 5's ``recurrence:`` rules, the
``severity:`` levels and their respond clocks, ``coverage:``, ``prometheus:`` node label and selector,
``recurrence.job`` series) and the latest baseline (the job's own step-time reference). What the
agreement does not state is listed at the top of the file, never invented. Exit 2 for a bad profile.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from acceptance.agreement.alerts import AlertInputs, alert_rules
from acceptance.baseline import BaselineStore, LoadedBaseline
from acceptance.errors import AcceptanceError
from acceptance.incident.severity import SeverityPolicy
from acceptance.judge.recurrence_rules import rules_from_profile
from acceptance.profile import Profile, load_profile


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("agreement", help="the agreement's Prometheus alerting rules for the provider")
    parser.add_argument("name", help="cluster name (folder under the baselines directory)")
    parser.add_argument("--baselines-dir", type=Path, default=Path("baselines"), metavar="DIR")
    parser.add_argument(
        "--alert-rules",
        type=Path,
        metavar="FILE",
        required=True,
        help="write Prometheus alerting rules that implement the agreement's definitions ('-': stdout)",
    )
    parser.set_defaults(func=_run)


def inputs(profile: Profile, baseline: LoadedBaseline | None) -> AlertInputs:
    """The alert rules' inputs from the profile and its latest baseline (None: there is none)."""
    from acceptance.criteria.recurrence import baseline_step_time

    rules = rules_from_profile(profile.recurrence, profile.severity.get("degraded_rule"))
    policy = SeverityPolicy.from_profile(profile.severity, profile.coverage)
    job = dict(profile.recurrence.get("job") or {})
    notes = []
    if profile.backend == "sim" and not (profile.prometheus or profile.recurrence.get("offline_dumps")):
        from acceptance.sim.probation import PROGRESS, STEP_TIME

        job = {"step_time": STEP_TIME, "progress": PROGRESS, **job}
        notes.append("SIMULATED cluster: the job's series are the simulator's production period")
    results = dict(baseline.baseline.data["results"]) if baseline is not None else None
    prom = profile.prometheus
    return AlertInputs(
        cluster=profile.name,
        rules=rules,
        policy=policy,
        nodes=profile.nodes,
        node_label=str(prom.get("node_label", "Hostname")),
        selector=str(prom.get("selector", "")),
        step_time=job.get("step_time"),
        progress=job.get("progress"),
        baseline_step_s=baseline_step_time(results),
        notes=tuple(notes),
    )


def _run(args: argparse.Namespace) -> int:
    profile = load_profile(args.name, args.baselines_dir)
    baseline: LoadedBaseline | None
    try:
        baseline = BaselineStore(profile.path.parent).latest()
    except AcceptanceError as exc:
        print(f"acceptance agreement: {exc}; the degraded rule needs the baseline's step time", file=sys.stderr)
        baseline = None
    made = inputs(profile, baseline)
    header = [
        f"Prometheus alerting rules of the agreement for cluster {profile.name}, made by `acceptance agreement`",
        f"from {profile.path}" + (f" and baseline {baseline.path.name} (sha256 {baseline.sha256})" if baseline else ""),
        "the same rules and thresholds criterion 5 judges with; clocks in " + made.policy.coverage.describe(),
    ]
    text = alert_rules(made, header)
    if str(args.alert_rules) == "-":
        sys.stdout.write(text)
        return 0
    args.alert_rules.parent.mkdir(parents=True, exist_ok=True)
    args.alert_rules.write_text(text, encoding="utf-8")
    print(f"alert rules: {args.alert_rules} ({text.count('- alert:')} rules)")
    return 0
