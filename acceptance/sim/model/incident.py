"""A fault that strikes in the middle of a training run (fault parameter ``at_step``).

- ``gpu-xid`` (XID 79) at step T on a GPU of the job: the rank on that GPU loses its device and its
  watchdog thread dies with ``CUDA error: unknown error`` at once; every other rank hangs in the
  step's all-reduce until PyTorch's NCCL watchdog fires (``Timeout(ms)=600000``), prints the real
  c10d lines (``[rankN]:[E... ProcessGroupNCCL.cpp:629] [Rank N] Watchdog caught collective
  operation timeout: WorkNCCL(SeqNum=..., OpType=ALLREDUCE, ...) ran for ... milliseconds before
  timing out.`` and the follow-ups) and aborts; then the launcher reports: Open MPI's ``mpirun
  noticed that process rank R with PID P on node H exited on signal 6 (Aborted).``, or torchrun's
  agent lines and one ``ChildFailedError`` summary per node.
- ``nic-degraded``, ``nic-down``, ``gpu-throttle`` at step T: the job runs on, slower from step T.

Without ``at_step`` a fault is present from the start, as before. Every line here is in the
wording PyTorch 2.x prints (the real captures the readers are tested on); the output says it is simulated.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from acceptance.sim.model import pastes
from acceptance.sim.model.cluster import GPUS_PER_NODE, SimCluster
from acceptance.sim.model.faults import Fault, FaultSet

WATCHDOG_TIMEOUT_MS = 600_000
STOPPING = ("gpu-xid",)
SLOWING = ("nic-degraded", "nic-down", "gpu-throttle")
TORCH = "/usr/local/lib/python3.12/dist-packages/torch"
PYTHON = "/usr/bin/python3"


def split(faults: FaultSet) -> tuple[FaultSet, tuple[Fault, ...]]:
    """(faults present from the start, faults that strike at a step)."""
    at_step = tuple(f for f in faults.faults if f.param("at_step") is not None)
    return FaultSet(tuple(f for f in faults.faults if f not in at_step)), at_step


def stopping(mid: Sequence[Fault], nodes: Sequence[str]) -> Fault | None:
    hits = sorted((f for f in mid if f.kind in STOPPING and f.node in nodes), key=lambda f: int(f.param("at_step")))
    return hits[0] if hits else None


def slowdown(
    pre: FaultSet, mid: Sequence[Fault], cluster: SimCluster, nodes: Sequence[str]
) -> tuple[int, float] | None:
    """(first slow step, step-time multiplier from then on) for the slowing faults that strike mid-run."""
    slow = [f for f in mid if f.kind in SLOWING and f.node in nodes]
    if not slow:
        return None
    after = FaultSet((*pre.faults, *slow)).step_time_factor(cluster, nodes)
    return min(int(f.param("at_step")) for f in slow), after / pre.step_time_factor(cluster, nodes)


def _glog(level: str, t: datetime, r: random.Random) -> str:
    """A c10 log line's stamp: its date is month × 100 + day without zero padding (``E626``)."""
    return f"{level}{pastes.c10_date(t.month, t.day)} {t:%H:%M:%S}.{t.microsecond:06d}{r.randrange(1000):03d}"


@dataclass(frozen=True)
class Job:
    """Where the job's ranks run: node i of `nodes` holds ranks 8i..8i+7 and is reached as `hosts[i]`."""

    nodes: tuple[str, ...]
    hosts: tuple[str, ...]
    launcher: str  # "mpirun" | "torchrun" | "python"

    @property
    def world(self) -> int:
        return len(self.nodes) * GPUS_PER_NODE

    def pid(self, rank: int) -> int:
        return 41000 + 37 * (rank // GPUS_PER_NODE) + rank % GPUS_PER_NODE


def nccl_info_lines(job: Job, nccl: str, cuda: str, seed: int) -> list[str]:
    """NCCL_DEBUG=INFO start-up lines that tie each rank to its host (one communicator)."""
    comm_id = random.Random(seed).getrandbits(64)
    out = []
    for rank in range(job.world):
        host, local, pid = job.hosts[rank // GPUS_PER_NODE], rank % GPUS_PER_NODE, job.pid(rank)
        pre = f"{host}:{pid}:{pid + 55} [{local}] NCCL INFO"
        comm = 0x55D0C8000000 + 0x1000 * rank
        if rank == 0:
            out.append(f"{host}:{pid}:{pid} [0] NCCL INFO NCCL version {nccl}+cuda{cuda}")
        out += [
            f"{pre} comm 0x{comm:x} rank {rank} nRanks {job.world} nNodes {len(job.nodes)} localRanks "
            f"{GPUS_PER_NODE} localRank {local} MNNVL 0",
            f"{pre} ncclCommInitRankConfig comm 0x{comm:x} rank {rank} nranks {job.world} cudaDev {local} nvmlDev "
            f"{local} busId {local:x}000 commId 0x{comm_id:x} - Init COMPLETE",
        ]
    return out


def _frames(kind: str) -> list[str]:
    if kind == "cuda":
        return [
            f"Exception raised from c10_cuda_check_implementation at {TORCH}/c10/cuda/CUDAException.cpp:43 "
            "(most recent call first):",
            f"frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7f3a1c3e31b6 in {TORCH}/lib/"
            "libc10.so)",
            f"frame #1: c10d::ProcessGroupNCCL::WorkNCCL::finishedGPUExecutionInternal() const + 0x52 (0x7f39c9"
            f"a2c0b2 in {TORCH}/lib/libtorch_cuda.so)",
            f"frame #2: c10d::ProcessGroupNCCL::watchdogHandler() + 0x213 (0x7f39c9a3f1d3 in {TORCH}/lib/"
            "libtorch_cuda.so)",
            "",
        ]
    return [
        f"Exception raised from checkTimeout at {TORCH}/csrc/distributed/c10d/ProcessGroupNCCL.cpp:632 "
        "(most recent call first):",
        f"frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7f3a1c3e31b6 in {TORCH}/lib/"
        "libc10.so)",
        f"frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::duration<long, "
        f"std::ratio<1l, 1000l> > >) + 0x2b4 (0x7f39c9a3ec74 in {TORCH}/lib/libtorch_cuda.so)",
        f"frame #2: c10d::ProcessGroupNCCL::watchdogHandler() + 0x890 (0x7f39c9a407d0 in {TORCH}/lib/libtorch_cuda.so)",
        "",
    ]


def hang_lines(
    job: Job, fault: Fault, step: int, started: datetime, seed: int, shape: pastes.Shape | None = None
) -> tuple[list[str], int, float]:
    """What the job prints after `fault` strikes in step `step` (which began at `started`).

    Returns (lines in time order, the launcher's exit status, seconds from `started` to the end).
    `shape` glues the lost rank's first line behind a progress bar (``tqdm``) and pastes the
    torchrun summary of its node from the root cause down (``mid_entry``).
    """
    shape = shape or pastes.Shape()
    r = random.Random(seed)
    pos = job.nodes.index(str(fault.node))
    lost = pos * GPUS_PER_NODE + fault.index
    seq = step * 6 + 4  # the step's gradient all-reduce: 6 collectives per step, the 5th
    numel = 134_217_728
    events: list[tuple[datetime, list[str]]] = []
    t_lost = started + timedelta(seconds=0.35 + r.uniform(0, 0.3))
    head = f"[rank{lost}]:[{_glog('E', t_lost, r)} ProcessGroupNCCL.cpp:1895]"
    pg = f"[PG ID 0 PG GUID 0(default_pg) Rank {lost}]"
    bar = pastes.tqdm_bar(37, 64, 1.84) if shape.tqdm else ""
    events.append((t_lost, [
        f"{bar}{head} {pg} Process group watchdog thread terminated with exception: CUDA error: unknown error",
        f"[rank{lost}]:CUDA kernel errors might be asynchronously reported at some other API call, so the "
        "stacktrace below might be incorrect.",
        f"[rank{lost}]:For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
        f"[rank{lost}]:Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
        "", *_frames("cuda"),
        "terminate called after throwing an instance of 'c10::DistBackendError'",
        f"  what():  {pg} Process group watchdog thread terminated with exception: CUDA error: unknown error",
    ]))  # fmt: skip
    if job.launcher == "mpirun":  # Open MPI aborts the whole job as soon as one process dies
        events.append((t_lost + timedelta(seconds=1.2), _mpirun_notice(job, lost)))
        return [line for _, block in events for line in block], 134, (t_lost - started).total_seconds() + 2.0
    t_fire = started + timedelta(milliseconds=WATCHDOG_TIMEOUT_MS)
    aborted: dict[int, datetime] = {}
    for rank in range(job.world):
        if rank == lost:
            continue
        t = t_fire + timedelta(seconds=r.uniform(0.05, 0.9))
        ran = int((t - started).total_seconds() * 1000)
        work = (f"WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn={numel}, NumelOut={numel}, "
                f"Timeout(ms)={WATCHDOG_TIMEOUT_MS}) ran for {ran} milliseconds before timing out.")  # fmt: skip
        pre = f"[rank{rank}]:[{_glog('E', t, r)} ProcessGroupNCCL.cpp"
        pg = f"[PG ID 0 PG GUID 0(default_pg) Rank {rank}]"
        events.append((t, [f"{pre}:629] [Rank {rank}] Watchdog caught collective operation timeout: {work}"]))
        t2 = t + timedelta(milliseconds=r.uniform(40, 70))
        aborted[rank] = t2
        events.append((t2, [
            f"{pre}:2168] {pg}  failure detected by watchdog at work sequence id: {seq} PG status: last enqueued "
            f"work: {seq + 1}, last completed work: {seq - 1}",
            f"{pre}:667] Stack trace of the failed collective not found, potentially because FlightRecorder is "
            "disabled. You can enable it by setting TORCH_NCCL_TRACE_BUFFER_SIZE to a non-zero value.",
            f"{pre}:681] [Rank {rank}] Some NCCL operations have failed or timed out. Due to the asynchronous nature "
            "of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.",
            f"{pre}:695] [Rank {rank}] To avoid data inconsistency, we are taking the entire process down.",
            f"{pre}:1895] {pg} Process group watchdog thread terminated with exception: [Rank {rank}] Watchdog "
            f"caught collective operation timeout: {work}",
            *_frames("timeout"),
            "terminate called after throwing an instance of 'c10::DistBackendError'",
            f"  what():  {pg} Process group watchdog thread terminated with exception: [Rank {rank}] Watchdog "
            f"caught collective operation timeout: {work}",
        ]))  # fmt: skip
    if job.launcher == "torchrun":
        events += _torchrun(job, lost, t_lost, aborted, r, mid_entry=shape.mid_entry)
    events.sort(key=lambda e: e[0])
    end = max(t for t, _ in events)
    return [line for _, block in events for line in block], 1 if job.launcher == "torchrun" else 134, \
        (end - started).total_seconds() + 1.0  # fmt: skip


def _mpirun_notice(job: Job, rank: int) -> list[str]:
    rule = "-" * 74
    host = job.hosts[rank // GPUS_PER_NODE]
    return [rule, "Primary job  terminated normally, but 1 process returned", "a non-zero exit code. Per "
            "user-direction, the job has been aborted.", rule, rule,
            f"mpirun noticed that process rank {rank} with PID {job.pid(rank)} on node {host} exited on signal 6 "
            "(Aborted).", rule]  # fmt: skip


def _torchrun(job: Job, lost: int, t_lost: datetime, aborted: Mapping[int, datetime],
              r: random.Random, *, mid_entry: bool = False) -> list[tuple[datetime, list[str]]]:  # fmt: skip
    """Each node's elastic agent: SIGTERM to the rest of its workers, then its ChildFailedError summary.

    `mid_entry`: the lost rank's node's part is pasted from its ``Root Cause`` entry down.
    """
    out: list[tuple[datetime, list[str]]] = []
    api = f"{TORCH}/distributed/elastic/multiprocessing/api.py"
    for i, host in enumerate(job.hosts):
        ranks = range(i * GPUS_PER_NODE, (i + 1) * GPUS_PER_NODE)
        mine = lost in ranks
        root = lost if mine else min(ranks, key=lambda k: aborted[k])
        when = (t_lost if mine else aborted[root]) + timedelta(seconds=r.uniform(0.5, 1.5))
        agent = 3100 + i
        stamp = f"{when:%m%d %H:%M:%S}.{when.microsecond:06d}"
        others = [k for k in ranks if k != root]
        lines = [f"W{stamp} {agent} {api}:897] Sending process {job.pid(k)} closing signal SIGTERM" for k in others]
        lines.append(f"E{stamp} {agent} {api}:869] failed (exitcode: -6) local_rank: {root % GPUS_PER_NODE} "
                     f"(pid: {job.pid(root)}) of binary: {PYTHON}")  # fmt: skip
        lines += ["torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ", "=" * 60,
                  "pretrain_gpt.py FAILED", "-" * 60, "Failures:"]  # fmt: skip
        for n, k in enumerate(others, 1):
            lines += _entry(n, when, host, k, -15 if mine else -6, job.pid(k))
        cause = ["Root Cause (first observed failure):", *_entry(0, when, host, root, -6, job.pid(root)), "=" * 60]
        out.append((when, cause if mine and mid_entry else [*lines, "-" * 60, *cause]))
    return out


def _entry(n: int, when: datetime, host: str, rank: int, code: int, pid: int) -> list[str]:
    return [
        f"[{n}]:",
        f"  time      : {when:%Y-%m-%d_%H:%M:%S}",
        f"  host      : {host}",
        f"  rank      : {rank} (local_rank: {rank % GPUS_PER_NODE})",
        f"  exitcode  : {code} (pid: {pid})",
        "  error_file: <N/A>",
        f"  traceback : Signal {-code} ({'SIGABRT' if code == -6 else 'SIGTERM'}) received by PID {pid}",
    ]


def job_for(nodes: Sequence[str], hosts: Mapping[str, str] | None, launcher: str) -> Job:
    return Job(tuple(nodes), tuple((hosts or {}).get(n, n) for n in nodes), launcher)
