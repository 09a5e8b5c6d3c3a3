"""DCGM 4.x diagnostics on a simulated H200 node: which tests a level runs, what each GPU gets.

Levels (DCGM 4.x plugin names): r1 software; r2 adds memory and pcie; r3 adds diagnostic,
nvbandwidth, memory_bandwidth, targeted_stress and targeted_power; r4 adds memtest and
pulse_test. Durations follow the real tool: r1 ~25 s, r2 ~2 min, r3 ~15 min, r4 ~45 min.
Exit status as dcgmi's: 0 all passed, 205 a failure whose error says "isolate the GPU"
(DCGM_ST_NVVS_ISOLATE_ERROR), 226 any other failure (DCGM_ST_NVVS_ERROR).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, replace

from acceptance.errors import UsageError
from acceptance.sim.model.cluster import Node
from acceptance.sim.model.faults import Fault

CATEGORY_ORDER = ("Deployment", "Hardware", "Integration", "Stress")
LEVEL_TESTS: dict[int, tuple[tuple[str, str], ...]] = {
    1: (("Deployment", "software"),),
    2: (("Hardware", "memory"), ("Integration", "pcie")),
    3: (
        ("Hardware", "diagnostic"),
        ("Hardware", "nvbandwidth"),
        ("Stress", "memory_bandwidth"),
        ("Stress", "targeted_stress"),
        ("Stress", "targeted_power"),
    ),
    4: (("Hardware", "memtest"), ("Stress", "pulse_test")),
}
LEVEL_SECONDS = {1: 25.0, 2: 115.0, 3: 900.0, 4: 2700.0}
ISOLATE_EXIT, ERROR_EXIT = 205, 226
SEVERITY_ISOLATE = 2


@dataclass(frozen=True)
class Warning_:
    """One DCGM error entry (`warnings` in JSON): dcgm_errors.h id, category, severity, text."""

    gpu: int | None
    error_id: int
    category: int
    severity: int
    message: str


@dataclass(frozen=True)
class TestResult:
    name: str
    category: str
    status: str  # overall: Pass | Fail | Warn | Skip
    gpus: tuple[str, ...]  # per GPU: Pass | Fail | Skip
    warnings: tuple[Warning_, ...] = ()
    info: tuple[tuple[str, ...], ...] = ()


@dataclass(frozen=True)
class DiagRun:
    level: int
    node: Node
    dcgm_version: str
    driver: str
    tests: tuple[TestResult, ...]
    exit_code: int
    duration_s: float


def tests_for_level(level: int) -> list[tuple[str, str]]:
    if level not in LEVEL_TESTS:
        raise UsageError(f"dcgmi diag: run level must be 1, 2, 3 or 4, not {level}")
    picked = [t for lv in range(1, level + 1) for t in LEVEL_TESTS[lv]]
    return sorted(picked, key=lambda t: CATEGORY_ORDER.index(t[0]))


def _xid(fault: Fault, test: str) -> tuple[str, Warning_]:
    g = fault.index
    if test == "software":
        return "Fail", Warning_(g, 101, 5, SEVERITY_ISOLATE, f"Detected XID {fault.param('xid')} for GPU {g}")
    return "Fail", Warning_(
        g,
        51,
        6,
        3,
        f"GPU {g} Error using CUDA API cudaDeviceGetByPCIBusId Check DCGM and system logs for errors. "
        "Reset GPU. Restart DCGM. Rerun diagnostics.",
    )


def _ecc(fault: Fault, test: str) -> tuple[str, Warning_] | None:
    g = fault.index
    if test == "software":
        text = f"Page Retirement/Row Remap: GPU {g} has uncorrectable memory errors and row remappings are pending"
        return "Fail", Warning_(g, 85, 10, SEVERITY_ISOLATE, text)
    if test in ("memory", "memtest"):
        return "Fail", Warning_(g, 4, 10, SEVERITY_ISOLATE, f"Detected 2 volatile double-bit ECC error(s) in GPU {g}.")
    return None


def _throttle(fault: Fault, test: str, r: random.Random) -> tuple[str, Warning_] | None:
    g = fault.index
    if test == "targeted_power":
        total, start = r.uniform(9, 40), r.uniform(3, 20)
        return "Fail", Warning_(
            g,
            40,
            9,
            4,
            f"Thermal violations totaling {total:.1f} seconds started at {start:.1f} seconds into the test "
            f"for GPU {g} Verify that the cooling on this machine is functional, including external, thermal "
            "material interface, fans, and any other components.",
        )
    if test == "targeted_stress":
        return "Warn", Warning_(g, 10, 9, 1, f"Detected clocks event due to thermal violation for GPU {g}")
    return None


def _info(test: str, gpu: int, r: random.Random) -> tuple[str, ...]:
    if test == "pcie":
        return (
            f"GPU {gpu} GPU to Host bandwidth:\t\t{r.uniform(53.5, 55.5):.2f} GB/s",
            f"GPU {gpu} Host to GPU bandwidth:\t\t{r.uniform(53.5, 55.5):.2f} GB/s",
        )
    if test == "targeted_power":
        return (f"GPU {gpu} power average:\t{r.uniform(690, 700):.0f} W",)
    if test == "memory_bandwidth":
        return (f"GPU {gpu} DRAM bandwidth:\t{r.uniform(4150, 4250):.1f} GB/s",)
    return ()


def run_diag(
    node: Node,
    level: int,
    *,
    faults: Sequence[Fault],
    dcgm_version: str,
    driver: str,
    r: random.Random,
    gpu_ids: Sequence[int] | None = None,
) -> DiagRun:
    """Every level-`level` test on the GPUs of `node` (all, or `gpu_ids` as ``-i`` lists them),
    bent by the faults aimed at this node. Results are positional: ``run.node.gpus[i]`` is GPU i's."""
    if gpu_ids is not None:
        unknown = sorted(set(gpu_ids) - {g.index for g in node.gpus})
        if unknown:
            raise UsageError(f"dcgmi diag: no GPU {unknown} on {node.name} (GPUs 0..{len(node.gpus) - 1})")
        node = replace(node, gpus=tuple(g for g in node.gpus if g.index in set(gpu_ids)))
    position = {g.index: pos for pos, g in enumerate(node.gpus)}
    ngpu = len(node.gpus)
    results = []
    isolate = failed = False
    for category, test in tests_for_level(level):
        gpus = ["Pass"] * ngpu
        overall = "Pass"
        warnings: list[Warning_] = []
        for fault in faults:
            if fault.node != node.name or fault.index not in position:
                continue
            hit: tuple[str, Warning_] | None = None
            if fault.kind == "gpu-xid":
                hit = _xid(fault, test)
            elif fault.kind == "ecc-dbe":
                hit = _ecc(fault, test)
            elif fault.kind == "gpu-throttle":
                hit = _throttle(fault, test, r)
            if hit is None:
                continue
            status, warning = hit
            gpus[position[fault.index]] = "Fail"
            warnings.append(warning)
            overall = "Fail" if status == "Fail" or overall == "Fail" else "Warn"
            failed = True
            isolate = isolate or warning.severity == SEVERITY_ISOLATE
        info = tuple(_info(test, g.index, r) if gpus[pos] == "Pass" else () for pos, g in enumerate(node.gpus))
        results.append(TestResult(test, category, overall, tuple(gpus), tuple(warnings), info))
    exit_code = ISOLATE_EXIT if isolate else ERROR_EXIT if failed else 0
    duration = LEVEL_SECONDS[level] * r.uniform(0.95, 1.08)
    return DiagRun(level, node, dcgm_version, driver, tuple(results), exit_code, duration)
