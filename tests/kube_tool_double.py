"""A test double for the *tools* the emulator runs (dcgmi, mpirun + nccl-tests), never for the API.

The Kubernetes API in these tests is the real emulator over HTTP; only what a
container prints is canned here, deterministic in (argv, node, hosts).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from acceptance.sim.runtime import Host, NodeSpec, ToolRun


def node_names(count: int) -> list[str]:
    return [f"gpu-{i:04d}" for i in range(1, count + 1)]


@dataclass
class CannedRunner:
    """`count` nodes of `gpus` GPUs; dcgmi passes (fails on `failing_nodes`), mpirun lists its ranks."""

    count: int = 16
    gpus: int = 8
    duration_s: float = 60.0
    failing_nodes: frozenset[str] = frozenset()
    calls: list[tuple[tuple[str, ...], str, tuple[Host, ...]]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def nodes(self) -> Sequence[NodeSpec]:
        return [
            NodeSpec(
                name=name,
                labels={
                    "kubernetes.io/hostname": name,
                    "nvidia.com/gpu.product": "NVIDIA-H200",
                    "nvidia.com/gpu.count": str(self.gpus),
                    "nvidia.com/cuda.driver-version.full": "570.124.06",
                    "nvidia.com/cuda.runtime-version.full": "12.8",
                },
                gpus=self.gpus,
                ready=True,
                kubelet_version="v1.30.10",
                os_image="Ubuntu 22.04.5 LTS",
                kernel_version="5.15.0-131-generic",
                container_runtime_version="containerd://1.7.24",
                rdma_resources={"rdma/ib": 8},
            )
            for name in node_names(self.count)
        ]

    def run(self, argv: Sequence[str], env: Mapping[str, str], node: str, hosts: Sequence[Host]) -> ToolRun:
        with self._lock:
            self.calls.append((tuple(argv), node, tuple(hosts)))
        if argv and argv[0] == "explode":
            raise ValueError("the simulator does not know this command")
        if argv and argv[0] == "dcgmi":
            status = "Fail" if node in self.failing_nodes else "Pass"
            doc = {"DCGM Diagnostic": {"test_categories": [{"category": "Hardware", "tests": [
                {"name": "memory", "results": [{"gpu_id": str(g), "status": status} for g in range(self.gpus)]}]}]},
                "node": node}  # fmt: skip
            return ToolRun(json.dumps(doc) + "\n", 1 if status == "Fail" else 0, self.duration_s)
        if argv and argv[0] == "mpirun":
            lines = [f"# argv {' '.join(argv)}"]
            rank = 0
            for host in hosts:
                for dev in range(host.slots):
                    lines.append(f"#  Rank {rank:2d} Group  0 Pid {1000 + rank} on {host.hostname} device {dev}")
                    rank += 1
            lines.append(f"# NCCL_IB_HCA={env.get('NCCL_IB_HCA', '')}")
            if "--fail" in argv:
                lines.append("all-reduce-worker-3: Test NCCL failure common.cu:1279 'unhandled system error'")
                return ToolRun("\n".join(lines) + "\n", 1, self.duration_s)
            lines.append("# Avg bus bandwidth    : 360.5")
            return ToolRun("\n".join(lines) + "\n", 0, self.duration_s)
        return ToolRun(f"ran {' '.join(argv)} on {node}\n", 0, self.duration_s)
