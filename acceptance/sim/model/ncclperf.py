"""Latency-bandwidth model of nccl-tests on H200 nodes (NVSwitch inside, 8 x 400 Gb/s IB between).

Peak bus bandwidth at large sizes (GB/s), healthy, 8 ranks per node:

================  =============================  ==========================================
collective        one node                        N nodes (ring; per-node line rate 400 GB/s)
================  =============================  ==========================================
all_reduce        480 NVLS (default), 365 Ring    368 @2, 355 @4, 342 @8, 330 @16, 315 @32, 300 @>=64
all_gather        362                             0.97 x all_reduce
reduce_scatter    362                             0.97 x all_reduce
broadcast/reduce  360                             0.95 x all_reduce
alltoall          345                             ~46 per GPU NIC, scaled by the off-node share
sendrecv          370                             46 (the node-crossing pair sets the pace)
================  =============================  ==========================================

With fewer than 8 ranks per node the inter-node figures scale with the rails in use.
Time of one operation = latency + size/algbw_peak + a ramp that halves efficiency at
`half` bytes; latency grows with node count. Noise: one run-to-run factor (0.4%) and a
per-row jitter from 5% at tiny sizes (2.7% at 64 KiB, 0.5% at 1 MiB) down to 0.2% at large ones.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from acceptance.sim.model.cluster import GPU_FREE_BYTES, GPUS_PER_NODE
from acceptance.sim.model.faults import Fabric
from acceptance.sim.model.ncclargs import NcclArgs
from acceptance.tools.nccl import REDOPS, TYPE_SIZES

_INTER_CURVE = ((1, 368.0), (2, 355.0), (3, 342.0), (4, 330.0), (5, 315.0), (6, 300.0), (10, 296.0))
_INTRA = {
    "all_gather": 362.0,
    "reduce_scatter": 362.0,
    "alltoall": 345.0,
    "broadcast": 360.0,
    "reduce": 360.0,
    "sendrecv": 370.0,
}
NIC_GBS = 46.0  # achievable per 400 Gb/s rail
# `-d all` order, and how fast reductions run per type relative to float (H200 sample, 2.18.3)
TYPE_ORDER = ("int8", "uint8", "int32", "uint32", "int64", "uint64", "half", "float", "double", "bfloat16",
              "f8e4m3", "f8e5m2")  # fmt: skip
TYPE_SPEED = {"int8": 0.80, "uint8": 0.80, "int32": 0.93, "uint32": 0.93, "int64": 0.90, "uint64": 0.90,
              "half": 0.99, "bfloat16": 0.99, "double": 0.95, "f8e4m3": 0.75, "f8e5m2": 0.75}  # fmt: skip
# `-o all` order: NCCL's built-in reductions (PreMulSum takes a scalar; the simulated tool skips it)
OP_ORDER = tuple(op for op in REDOPS if op != "mulsum")


@dataclass(frozen=True)
class Row:
    size: int
    count: int
    oop_us: float
    ip_us: float
    dtype: str = "float"
    op: str = "sum"


def bus_factor(collective: str, nranks: int) -> float:
    if nranks <= 1:
        return 0.0 if collective in ("all_reduce", "all_gather", "reduce_scatter", "alltoall") else 1.0
    if collective == "all_reduce":
        return 2 * (nranks - 1) / nranks
    if collective in ("all_gather", "reduce_scatter", "alltoall"):
        return (nranks - 1) / nranks
    return 1.0


def _interp_log2(nodes: int) -> float:
    x = math.log2(max(nodes, 2))
    for (x0, y0), (x1, y1) in itertools.pairwise(_INTER_CURVE):
        if x <= x1:
            return y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    return _INTER_CURVE[-1][1]


def peak_busbw(collective: str, nodes: int, ranks_per_node: int, algo: str | None) -> float:
    """Healthy large-message bus bandwidth (GB/s) for this shape."""
    if nodes <= 1:
        if collective == "all_reduce":
            nvls = algo is None or "nvls" in algo.lower()
            return 480.0 if nvls and ranks_per_node >= 4 else 365.0
        return _INTRA[collective]
    rails = min(ranks_per_node, GPUS_PER_NODE) / GPUS_PER_NODE
    ring = _interp_log2(nodes) * rails
    if collective == "all_reduce":
        return ring
    if collective in ("all_gather", "reduce_scatter"):
        return 0.97 * ring
    if collective in ("broadcast", "reduce"):
        return 0.95 * ring
    if collective == "sendrecv":
        return NIC_GBS * (1 - 0.01 * math.log2(nodes))
    # alltoall: each GPU's off-node share goes through its own rail
    nranks = nodes * ranks_per_node
    off_node = (nodes - 1) / nodes
    algbw = NIC_GBS * (1 - 0.015 * math.log2(nodes)) / off_node
    return algbw * bus_factor("alltoall", nranks)


def latency_us(collective: str, nodes: int, nranks: int) -> float:
    base = {"all_reduce": 14.0, "alltoall": 16.0, "sendrecv": 7.0}.get(collective, 10.0)
    if nodes <= 1:
        return base + 0.4 * nranks
    lat = base + 8.0 + 5.0 * math.log2(nodes) + 0.045 * nodes
    if collective == "alltoall":
        lat += 0.25 * nranks
    return lat


def sizes(args: NcclArgs, max_bytes: int) -> list[int]:
    out: list[int] = []
    size = args.min_bytes
    while size <= max_bytes and len(out) < 4096:
        out.append(size)
        size = size * args.step_factor if args.step_factor else size + args.step_bytes
        if size == 0:
            break
    return out


def memory_cap(args: NcclArgs) -> int | None:
    """maxBytes nccl-tests falls back to when the buffers would not fit (None: no reduction)."""
    cap = (GPU_FREE_BYTES - (1 << 30)) // (3 if args.check else 2)
    return cap if args.max_bytes > cap else None


def count_and_size(collective: str, size: int, nranks: int, type_size: int) -> tuple[int, int]:
    """(printed count, printed size) the way nccl-tests rounds per-rank chunks to 16 bytes."""
    count = size // type_size
    if collective in ("all_gather", "reduce_scatter", "alltoall"):
        per_rank = (count // max(nranks, 1)) & -max(16 // type_size, 1)
        return per_rank, per_rank * max(nranks, 1) * type_size
    return count, count * type_size


def simulate_rows(
    args: NcclArgs,
    *,
    nodes: int,
    ranks_per_node: int,
    env: Mapping[str, str],
    fabric: Fabric,
    r: random.Random,
    max_bytes: int,
) -> list[Row]:
    nranks = nodes * ranks_per_node
    peak = peak_busbw(args.collective, nodes, ranks_per_node, env.get("NCCL_ALGO")) * fabric.factor
    factor = bus_factor(args.collective, nranks) or 1.0
    algbw = peak / factor  # GB/s == bytes per ns == 1e3 bytes per us
    lat = latency_us(args.collective, nodes, nranks)
    half = (16 << 20) if nodes <= 1 else (48 << 20)
    run = math.exp(r.gauss(0.0, 0.004))
    rows = []
    reducing = args.collective in ("all_reduce", "reduce_scatter", "reduce")
    for dtype in TYPE_ORDER if args.dtype == "all" else (args.dtype,):
        speed = TYPE_SPEED.get(dtype, 1.0) if reducing else 1.0
        for op in OP_ORDER if args.op == "all" else (args.op,):
            for requested in sizes(args, max_bytes):
                count, size = count_and_size(args.collective, requested, nranks, TYPE_SIZES[dtype])
                sigma = 0.002 + 0.05 / (1 + size / (64 << 10)) + fabric.jitter
                bw = algbw * speed * 1e3
                ideal = lat + size / bw + (half / bw) * size / (size + half)
                oop = ideal * run * math.exp(r.gauss(0.0, sigma))
                ip = ideal * run * math.exp(r.gauss(0.0, sigma))
                rows.append(Row(size, count, oop, ip, dtype, op))
    return rows


def run_seconds(args: NcclArgs, rows: Sequence[Row], nranks: int) -> float:
    """Simulated wall time of the sweep: init, warm-up and timed iterations, data checks."""
    total = 2.5 + 0.004 * nranks
    for row in rows:
        per_op = (row.oop_us + row.ip_us) / 2 * 1e-6
        total += per_op * (args.warmup + args.iters * args.agg) * 2
        if args.check:
            total += 2 * (per_op + row.size / 200e9 + 0.002)
    return total
