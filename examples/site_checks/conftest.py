"""A site's own check in the acceptance suite: InfiniBand loopback bandwidth of every rail of every node.

Pass this folder to pytest beside the suite, and its hooks join the run::

    pytest acceptance/ examples/site_checks/ --cluster=sim
    pytest acceptance/ examples/site_checks/ --cluster=sim --sim-fault=nic-degraded@sim-node-07

Each node is one item, ``test_site_check[ib_write_bw:NODE]``, run after the agreement's
criteria: one job per node runs perftest's ``ib_write_bw`` in loopback on each rail, all
nodes at once, alone on the NICs. A rail passes at >= 95 % of what it measured at handover
(kept in the baseline by ``keep``), or at >= 90 % of its line rate when the baseline has
no figure for it. The verdicts get junit properties, evidence files and report rows like
every criterion. The second hook writes each failing verdict as one JSON line to the file
named by ``$SITE_ALERTS`` (a stand-in for paging the on-call).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from typing import Any

import pytest

from acceptance.clusters.base import NodeWorkload, Workload, WorkloadResult
from acceptance.criteria.context import RunContext
from acceptance.criteria.site import SiteCheck
from acceptance.judge.verdict import Status, Verdict

RAILS = 8
LINE_RATE_GBPS = 400.0
OF_HANDOVER = 0.95
OF_LINE_RATE = 0.90
IMAGE = "nccl"  # a profile image that has perftest (name yours under kube.images)
_DEVICE = re.compile(r"Device\s+:\s+(mlx5_\d+)")
_ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s*$")


def parse_ib_write_bw(text: str) -> dict[str, float]:
    """Average Gb/s of each device's last result row (``--report_gbits``)."""
    out: dict[str, float] = {}
    device = None
    for line in text.splitlines():
        found = _DEVICE.search(line)
        if found:
            device = found.group(1)
        row = _ROW.match(line)
        if row and device is not None:
            out[device] = float(row.group(4))
    return out


class IbLoopback(SiteCheck):
    name = "ib_write_bw"
    title = "InfiniBand loopback bandwidth of every rail"
    deadline_s = 300.0

    def workloads(self, context: RunContext) -> Mapping[str, Workload]:
        tests = [
            f"ib_write_bw -d mlx5_{k} -F --report_gbits -D 2 & sleep 1; "
            f"ib_write_bw -d mlx5_{k} -F --report_gbits -D 2 localhost"
            for k in range(RAILS)
        ]
        argv = ("bash", "-c", "; ".join(tests))
        return {
            node: NodeWorkload(f"ib-loopback-{node}", node, argv, IMAGE, gpus=0, rdma=True, deadline_s=self.deadline_s)
            for node in context.targets
        }

    def judge(
        self, subject: str, result: WorkloadResult, reference: Mapping[str, Any] | None, context: RunContext
    ) -> Verdict:
        measured = parse_ib_write_bw(result.output)
        missing = [f"mlx5_{k}" for k in range(RAILS) if f"mlx5_{k}" not in measured]
        figures: dict[str, float | int | str] = {f"gbps[{d}]": v for d, v in sorted(measured.items())}
        if missing or not result.ok:
            said = next((line.strip() for line in result.output.splitlines() if "Couldn't" in line), result.reason)
            return Verdict(
                Status.FAIL, subject,
                f"{subject}: ib_write_bw gave no result for {', '.join(missing) or 'some rails'} "
                f"(exit {result.exit_code}: {said or 'no output'})",
                figures,
            )  # fmt: skip
        slow = []
        for device, gbps in sorted(measured.items()):
            then = (reference or {}).get(device)
            floor = then * OF_HANDOVER if then else LINE_RATE_GBPS * OF_LINE_RATE
            if gbps < floor:
                against = f"{then:.1f} at handover" if then else f"{LINE_RATE_GBPS:.0f} Gb/s line rate"
                slow.append(f"{device} at {gbps:.1f} Gb/s vs {against}")
        figures["rails_slow"] = len(slow)
        if slow:
            return Verdict(Status.FAIL, subject, f"{subject}: {'; '.join(slow)}", figures)
        low = min(measured.values())
        return Verdict(Status.PASS, subject, f"{subject}: all {RAILS} rails ≥ {low:.1f} Gb/s in loopback", figures)

    def keep(self, subject: str, result: WorkloadResult) -> Mapping[str, Any] | None:
        measured = parse_ib_write_bw(result.output)
        return measured if len(measured) == RAILS else None


def pytest_acceptance_site_checks(context: RunContext) -> list[SiteCheck]:
    return [IbLoopback()]


def pytest_acceptance_verdict(item: pytest.Item, verdict: Verdict) -> None:
    alerts = os.environ.get("SITE_ALERTS")
    if alerts and not verdict.passed:
        with open(alerts, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"item": item.nodeid, "status": verdict.status.value, "summary": verdict.summary}))
            handle.write("\n")
