"""The production period after an acceptance: what dcgm-exporter and the job would have shown, scrape by scrape.

Pure: a seeded model, text out. For every GPU of the given nodes, dcgm-exporter's series with
its real metric names, types, help texts and labels (``gpu``, ``UUID``, ``pci_bus_id``,
``device``, ``modelName``, ``Hostname``, ``DCGM_FI_DRIVER_VERSION``) every `scrape_s`; the
production job's step time (``job_step_time_seconds``) and step counter
(``job_steps_completed_total``); the job's rank logs (NCCL watchdog lines after an XID); and
the cluster events of a NotReady node. Fields follow dcgm-exporter's default counters unless
more are asked for (ECC and clock-event fields are off there). Faults: `production_faults`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cached_property

import numpy as np

from acceptance.sim.model.cluster import GPU_NAME, SimCluster, derive_seed
from acceptance.sim.model.production_faults import RecurrenceFault

# dcgm-exporter fields the model can send: (prometheus type, help text of the counters file, integer?)
FIELDS: dict[str, tuple[str, str, bool]] = {
    "DCGM_FI_DEV_GPU_TEMP": ("gauge", "GPU temperature (in C).", True),
    "DCGM_FI_DEV_POWER_USAGE": ("gauge", "Power draw (in W).", False),
    "DCGM_FI_DEV_GPU_UTIL": ("gauge", "GPU utilization (in %).", True),
    "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": ("counter", "Total number of PCIe retries.", True),
    "DCGM_FI_DEV_XID_ERRORS": ("gauge", "Value of the last XID error encountered.", True),
    "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS": ("counter", "Number of remapped rows for uncorrectable errors", True),
    "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS": ("counter", "Number of remapped rows for correctable errors", True),
    "DCGM_FI_DEV_ROW_REMAP_FAILURE": ("gauge", "Whether remapping of rows has failed", True),
    "DCGM_FI_DEV_CLOCKS_EVENT_REASONS": ("gauge", "Current clock event reasons (bitmask).", True),
    "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": ("counter", "Total number of double-bit volatile ECC errors.", True),
}
DEFAULT_FIELDS: tuple[str, ...] = (
    "DCGM_FI_DEV_GPU_TEMP",
    "DCGM_FI_DEV_POWER_USAGE",
    "DCGM_FI_DEV_GPU_UTIL",
    "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
    "DCGM_FI_DEV_XID_ERRORS",
    "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
    "DCGM_FI_DEV_ROW_REMAP_FAILURE",
)
JOB = "gpt-prod"
STEP_TIME_METRIC = "job_step_time_seconds"
STEPS_METRIC = "job_steps_completed"
WATCHDOG_AFTER_S = 600.0  # NCCL's default collective timeout
XID_CODE = 79
SLOW_FACTOR = 1.12
PCIE_PER_MIN = 40.0
HW_THERMAL = 0x40
SW_POWER_CAP = 0x4


@dataclass(frozen=True)
class Production:
    """The simulated production period of `nodes` from `start` for `length_s` (plus a margin either side)."""

    cluster: SimCluster
    nodes: tuple[str, ...]
    start: datetime
    length_s: float
    faults: tuple[RecurrenceFault, ...] = ()
    scrape_s: float = 15.0
    fields: tuple[str, ...] = DEFAULT_FIELDS
    job_nodes: int = 16
    before_s: float = 600.0
    after_s: float = 180.0
    _cache: dict[str, object] = field(default_factory=dict, compare=False, repr=False)

    @cached_property
    def times(self) -> np.ndarray:
        """Scrape times (Unix seconds), aligned to the scrape interval as Prometheus aligns a target's scrapes."""
        step = int(self.scrape_s)
        first = (int(self.start.timestamp() - self.before_s) // step + 1) * step
        last = int(self.start.timestamp() + self.length_s + self.after_s)
        return np.arange(first, last + 1, step, dtype=np.int64)

    @cached_property
    def offsets(self) -> np.ndarray:
        """Seconds since the window's start, per scrape."""
        return self.times - self.start.timestamp()

    def _during(self, fault: RecurrenceFault) -> np.ndarray:
        return (self.offsets >= fault.offset_s) & (self.offsets < fault.offset_s + fault.duration_s)

    def _hits(self, kind: str, node: str | None = None, gpu: int | None = None) -> list[RecurrenceFault]:
        out = []
        for f in self.faults:
            if f.kind != kind:
                continue
            if node is not None and f.node is not None and f.node != node:
                continue
            target_gpu = f.gpu if f.gpu is not None else 0
            if gpu is not None and f.node is not None and target_gpu != gpu:
                continue
            out.append(f)
        return out

    def _target(self, fault: RecurrenceFault) -> tuple[str, int]:
        return fault.node or self.nodes[0], fault.gpu if fault.gpu is not None else 0

    def _on(self, kind: str, node: str, gpu: int) -> list[RecurrenceFault]:
        return [f for f in self.faults if f.kind == kind and self._target(f) == (node, gpu)]

    def node_present(self, node: str) -> np.ndarray:
        present = np.ones(len(self.times), dtype=bool)
        for fault in self._hits("scrape-gap"):
            if fault.node in (None, node):
                present &= ~self._during(fault)
        return present

    def gpu_series(self, node: str, index: int) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """Each field's values at every scrape, and where the GPU's series exist."""
        n = len(self.times)
        r = np.random.default_rng(derive_seed(self.cluster.seed, "production", node, index))
        present = self.node_present(node)
        xids = self._on("xid-recur", node, index)
        values: dict[str, np.ndarray] = {}
        temp = 52 + index * 0.6 + r.normal(0, 1.2, n)
        clocks = np.where(r.random(n) < 0.02, SW_POWER_CAP, 0).astype(float)
        for fault in self._on("slowdown-recur", node, index):
            hot = self._during(fault)
            temp = np.where(hot, temp + 31, temp)
            clocks = np.where(hot, HW_THERMAL, clocks)
        values["DCGM_FI_DEV_GPU_TEMP"] = np.round(temp)
        values["DCGM_FI_DEV_POWER_USAGE"] = np.round(612 + r.normal(0, 14, n), 3)
        values["DCGM_FI_DEV_GPU_UTIL"] = np.clip(np.round(98 + r.normal(0, 1.5, n)), 0, 100)
        replays = np.full(n, float(r.integers(0, 4)))
        for fault in self._on("pcie-replay-recur", node, index):
            per_scrape = PCIE_PER_MIN * self.scrape_s / 60.0
            replays = replays + np.cumsum(np.where(self._during(fault), per_scrape, 0.0))
        values["DCGM_FI_DEV_PCIE_REPLAY_COUNTER"] = replays
        xid = np.zeros(n)
        for fault in xids:
            xid = np.where(self.offsets >= fault.offset_s, XID_CODE, xid)
            present &= self.offsets < fault.offset_s + 60  # fallen off the bus: the exporter loses the GPU
        values["DCGM_FI_DEV_XID_ERRORS"] = xid
        values["DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS"] = np.zeros(n)
        values["DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS"] = np.full(n, float(r.integers(0, 3)))
        values["DCGM_FI_DEV_ROW_REMAP_FAILURE"] = np.zeros(n)
        values["DCGM_FI_DEV_CLOCKS_EVENT_REASONS"] = clocks
        values["DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"] = np.zeros(n)
        return values, present

    def job_series(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(step time in seconds, steps completed, present) at every scrape: the model of the job's exporter."""
        n = len(self.times)
        r = np.random.default_rng(derive_seed(self.cluster.seed, "production-job"))
        base = 1.2 * (1 + 0.03 * np.log2(max(self.job_nodes, 1) / 16))
        step = base * (1 + r.normal(0, 0.012, n))
        step = np.where(r.random(n) < 1 / 80, step + 3.5, step)  # the step that saved a checkpoint
        for fault in self._hits("slowdown-recur"):
            step = np.where(self._during(fault), step * SLOW_FACTOR, step)
        present = np.ones(n, dtype=bool)
        for fault in self._hits("scrape-gap"):
            if fault.node is None:
                present &= ~self._during(fault)
        moving = np.ones(n, dtype=bool)
        for fault in self._hits("xid-recur"):
            moving &= self.offsets < fault.offset_s
            present &= self.offsets < fault.offset_s + WATCHDOG_AFTER_S + 60
        stuck = np.maximum.accumulate(np.where(moving, np.arange(n), 0))
        step = step[stuck]
        steps = np.floor(np.cumsum(np.where(moving, self.scrape_s / step, 0.0))) + 240_000
        return step, steps, present

    def _labels(self, node: str, index: int) -> str:
        gpu = self.cluster.node(node).gpus[index]
        return (
            f'gpu="{index}",UUID="{gpu.uuid}",pci_bus_id="{gpu.pci_bus_id}",device="nvidia{index}",'
            f'modelName="{GPU_NAME}",Hostname="{node}",'
            f'DCGM_FI_DRIVER_VERSION="{self.cluster.versions.driver}"'
        )

    def openmetrics(self, nodes: Sequence[str] | None = None, job: bool = True) -> Iterator[str]:
        """An OpenMetrics exposition of the period (of `nodes`, and of the job when asked), in chunks."""
        stamps = [str(t) for t in self.times.tolist()]
        wanted = tuple(nodes) if nodes is not None else self.nodes
        per_gpu = {
            (node, g): self.gpu_series(node, g) for node in wanted for g in range(len(self.cluster.node(node).gpus))
        }
        for name in self.fields:
            kind, help_text, integer = FIELDS[name]
            yield f"# HELP {name} {help_text}\n# TYPE {name} {kind}\n"
            for (node, g), (values, present) in per_gpu.items():
                yield _lines(f"{name}{{{self._labels(node, g)}}} ", values[name], present, stamps, integer)
        if job:
            step, steps, present = self.job_series()
            labels = f'job="{JOB}",cluster="{self.cluster.nodes[0].name.rsplit("-", 2)[0]}"'
            yield f"# HELP {STEP_TIME_METRIC} Duration of the last training step.\n"
            yield f"# TYPE {STEP_TIME_METRIC} gauge\n# UNIT {STEP_TIME_METRIC} seconds\n"
            yield _lines(f"{STEP_TIME_METRIC}{{{labels}}} ", np.round(step, 4), present, stamps, False)
            yield f"# HELP {STEPS_METRIC} Training steps completed.\n# TYPE {STEPS_METRIC} counter\n"
            yield _lines(f"{STEPS_METRIC}_total{{{labels}}} ", steps, present, stamps, True)
        yield "# EOF\n"

    def rank_logs(self) -> dict[str, str]:
        """Per node, its ranks' log lines: the process group's start, NCCL watchdog timeouts after an XID."""
        out: dict[str, str] = {}
        size = len(self.nodes) * 8
        begin = (self.start - timedelta(seconds=self.before_s)).astimezone(UTC)
        for n, node in enumerate(self.nodes):
            out[node] = "".join(
                f"[rank{n * 8 + k}]:[I{begin:%m%d %H:%M:%S}.{begin.microsecond:06d}000 ProcessGroupNCCL.cpp:936] "
                f"[PG ID 0 PG GUID 0 Rank {n * 8 + k}] ProcessGroupNCCL initialization options: size: {size}, "
                f"global rank: {n * 8 + k}, TIMEOUT(ms): 600000\n"
                for k in range(len(self.cluster.node(node).gpus))
            )
        for fault in self._hits("xid-recur"):
            when = self.start + timedelta(seconds=fault.offset_s + WATCHDOG_AFTER_S)
            seq = 240_000 + int(fault.offset_s / 1.2) * 4
            for n, node in enumerate(self.nodes):
                for local in range(len(self.cluster.node(node).gpus)):
                    rank = n * 8 + local
                    stamp = (when + timedelta(milliseconds=81 + 7 * local)).astimezone(UTC)
                    out[node] += (
                        f"[rank{rank}]:[E{stamp:%m%d %H:%M:%S}.{stamp.microsecond:06d}000 ProcessGroupNCCL.cpp:629] "
                        f"[Rank {rank}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, "
                        "OpType=ALLREDUCE, NumelIn=262144000, NumelOut=262144000, Timeout(ms)=600000) ran for "
                        f"{600081 + local} milliseconds before timing out.\n"
                    )
        return out

    def cluster_events(self) -> list[tuple[datetime, str, str, str]]:
        """(time, node, reason, message) of the period's node events (a NotReady node and its return)."""
        out = []
        for fault in self._hits("node-notready-recur"):
            node = fault.node or self.nodes[0]
            down = self.start + timedelta(seconds=fault.offset_s)
            out.append((down, node, "NodeNotReady", f"Node {node} status is now: NodeNotReady"))
            out.append(
                (down + timedelta(seconds=fault.duration_s), node, "NodeReady", f"Node {node} status is now: NodeReady")
            )
        return sorted(out)


_INT_TEXT: dict[float, str] = {}


def _lines(prefix: str, values: np.ndarray, present: np.ndarray, stamps: list[str], integer: bool) -> str:
    """The sample lines of one series (only where it is present)."""
    idx = np.flatnonzero(present)
    if not len(idx):
        return ""
    picked = values[idx]
    if integer:
        texts = [_INT_TEXT.get(v) or _INT_TEXT.setdefault(v, str(int(v))) for v in picked.tolist()]
    else:
        texts = [f"{v:.6f}" for v in picked.tolist()]
    return "".join([f"{prefix}{v} {stamps[i]}\n" for v, i in zip(texts, idx.tolist(), strict=True)])
