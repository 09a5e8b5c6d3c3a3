"""Orchestration benchmark: the Kubernetes backend against the API emulator, zero tool time.

    python bench/orchestrate.py                    # 1024 nodes (the issue's figures)
    python bench/orchestrate.py --nodes 256 512 1024 --json bench.json

Per node count N: N DCGM Jobs at once, then one N-worker MPIJob, then N/2 two-node
MPIJobs at once. Reports wall time, API requests per submitted object and peak RSS
(the process holds both the client and the emulator). A last phase runs the same
DCGM jobs with simulated time that makes the run last seconds: the requests per
object must not grow with the run's length (watches, not polling).
"""

from __future__ import annotations

import argparse
import gc
import json
import resource
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from acceptance.clusters.base import NcclWorkload, Workload
from acceptance.clusters.kube.cluster import KubeCluster, dcgm_workloads
from acceptance.clusters.kube.settings import ApiRetry, KubeSettings
from acceptance.sim.kubeapi import EmulatedApi
from acceptance.sim.runtime import Host, NodeSpec, ToolRun

SETTINGS = KubeSettings(
    namespace="recovery-acceptance",
    images={"nccl": "nccl-tests:2.26", "dcgm": "dcgm:4.2.3", "smoke": "nemo:25.04"},
    rdma_resources={"rdma/ib": 8},
    env={"NCCL_IB_HCA": "=mlx5_0"},
    scheduling_timeout_s=120,
    api_retry=ApiRetry(attempts=8, backoff_s=0.05),
)


class ZeroTimeRunner:
    """Tools that print one line and take `duration_s` simulated seconds (0 by default)."""

    def __init__(self, count: int, duration_s: float = 0.0) -> None:
        self.count = count
        self.duration_s = duration_s

    def nodes(self) -> Sequence[NodeSpec]:
        return [
            NodeSpec(f"node-{i:04d}", {"kubernetes.io/hostname": f"node-{i:04d}"}, 8, True, "v1.30.10",
                     "Ubuntu 22.04.5 LTS", "5.15.0", "containerd://1.7.24", {"rdma/ib": 8})
            for i in range(self.count)
        ]  # fmt: skip

    def run(self, argv: Sequence[str], env: Mapping[str, str], node: str, hosts: Sequence[Host]) -> ToolRun:
        return ToolRun(f"{argv[0]} on {node} with {len(hosts)} hosts\n", 0, self.duration_s)


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def phase(
    api: EmulatedApi, kube: KubeCluster, name: str, workloads: list[Workload], deadline_s: float
) -> dict[str, Any]:
    gc.collect()
    before = api.requests_count
    start = time.perf_counter()
    results = kube.run(workloads, deadline_s)
    wall = time.perf_counter() - start
    requests = api.requests_count - before
    bad = [f"{r.workload}: {r.status} {r.reason}" for r in results if not r.ok]
    row = {
        "phase": name,
        "objects": len(workloads),
        "wall_s": round(wall, 2),
        "requests": requests,
        "requests_per_object": round(requests / len(workloads), 2),
        "peak_rss_mib": round(peak_rss_mib(), 1),
        "failed": len(bad),
    }
    print(f"  {name:<34} {len(workloads):>5} objects  {wall:7.2f} s  {requests:>6} requests "
          f"({requests / len(workloads):.2f}/object)  peak RSS {row['peak_rss_mib']:.0f} MiB"
          + (f"  FAILED {len(bad)}: {bad[:2]}" if bad else ""), flush=True)  # fmt: skip
    return row


def bench(nodes: int) -> list[dict[str, Any]]:
    print(f"{nodes} nodes", flush=True)
    rows = []
    names = [f"node-{i:04d}" for i in range(nodes)]
    with EmulatedApi(ZeroTimeRunner(nodes), time_scale=0.0) as api:
        with KubeCluster(SETTINGS, f"bench{nodes}", api.api_client()) as kube:
            t0 = time.perf_counter()
            rows.append(phase(api, kube, "dcgm jobs (all nodes at once)", list(dcgm_workloads(names, 8, 1, 600)), 600))
            everything = NcclWorkload("all-reduce", tuple(names), 8, ("all_reduce_perf",), {}, 600)
            rows.append(phase(api, kube, "one mpijob over all nodes", [everything], 600))
            first = time.perf_counter() - t0
            pairs: list[Workload] = [
                NcclWorkload(f"pair-{i:04d}", (names[2 * i], names[2 * i + 1]), 8, ("all_reduce_perf",), {}, 600)
                for i in range(nodes // 2)
            ]
            rows.append(phase(api, kube, "two-node mpijobs (all at once)", pairs, 600))
        rows.append({"phase": "first part total (dcgm + mpijob)", "nodes": nodes, "wall_s": round(first, 2)})
        print(f"  first part total: {first:.2f} s", flush=True)
        for row in rows:
            row["nodes"] = nodes
    return rows


def no_polling(nodes: int, duration_s: float, time_scale: float) -> list[dict[str, Any]]:
    """Same workloads, instant vs lasting seconds: requests per object must stay put."""
    rows = []
    names = [f"node-{i:04d}" for i in range(nodes)]
    for label, scale in (("instant", 0.0), (f"lasting {duration_s * time_scale:.0f} s", time_scale)):
        with (
            EmulatedApi(ZeroTimeRunner(nodes, duration_s), time_scale=scale) as api,
            KubeCluster(SETTINGS, "poll", api.api_client()) as kube,
        ):
            row = phase(api, kube, f"dcgm x{nodes}, {label}", list(dcgm_workloads(names, 8, 1, 600)), 600)
            row["nodes"] = nodes
            rows.append(row)
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, nargs="+", default=[1024])
    parser.add_argument("--json", type=Path, help="write the rows here")
    parser.add_argument("--skip-polling-check", action="store_true")
    args = parser.parse_args(argv)
    rows: list[dict[str, Any]] = []
    for count in args.nodes:
        rows += bench(count)
    if not args.skip_polling_check:
        print("polling check", flush=True)
        rows += no_polling(64, duration_s=400.0, time_scale=0.0125)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0 if all(r.get("failed", 0) == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
