"""nccl-tests 2.17+ text as the root rank prints it, plus NCCL's own lines and failure lines.

Widths and spellings follow nccl-tests 2.17.3+ (`getFloatStr` bounded floats, `#wrong` as
`%6g`, two blanks between columns), as the parser in `acceptance.tools.nccl` reads them. The only
addition is one comment line after the `# nThread` line saying the run is simulated,
where real option-dependent comment lines (`# Blocking Enabled: ...`) also appear.
"""

from __future__ import annotations

import math
import random
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from acceptance.sim.model.ncclargs import NcclArgs
from acceptance.sim.model.ncclperf import Row, bus_factor

CAPTION = (
    "#                                                              out-of-place"
    "                       in-place          "
)
COLUMNS = (
    "#       size         count      type   redop    root     time   algbw   busbw  #wrong"
    "     time   algbw   busbw  #wrong "
)
UNITS = (
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)       "
    "      (us)  (GB/s)  (GB/s)         "
)
OPEN_MPI_ABORT = """\
-------------------------------------------------------
Primary job  terminated normally, but 1 process returned
a non-zero exit code. Per user-direction, the job has been aborted.
-------------------------------------------------------
--------------------------------------------------------------------------
mpirun detected that one or more processes exited with non-zero status, thus causing
the job to be terminated. The first process to do so was:

  Process name: [[{jobid},1],{rank}]
  Exit code:    {code}
--------------------------------------------------------------------------"""
TEST_NCCL_ERROR, TEST_CUDA_ERROR = 3, 2


@dataclass(frozen=True)
class Proc:
    """One MPI process (or the single process of a plain run): where it runs and its ranks' devices."""

    hostname: str
    node: str
    pid: int
    first_rank: int
    devices: tuple[int, ...]


def fstr(value: float, width: int) -> str:
    """nccl-tests' width-bounded float: loses decimals as it grows, then switches to %.1e."""
    before = int(math.log10(value)) if value >= 1 else 0
    if before + 1 > width:
        return f"{value:.1e}".rjust(width)
    decimals = max(0, min(2, width - before - 2))
    return f"{value:{width}.{decimals}f}"


def version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in version.split(".") if x.isdigit())


def header(args: NcclArgs, nccl_tests: str, nccl_code: int, seed: int) -> list[str]:
    step = f"{args.step_factor}(factor)" if args.step_factor else f"{args.step_bytes}(bytes)"
    params = (
        f"# nThread {args.nthreads} nGpus {args.ngpus} minBytes {args.min_bytes} maxBytes {args.max_bytes} "
        f"step: {step} warmup iters: {args.warmup} iters: {args.iters} agg iters: {args.agg} "
        f"validation: {args.check} graph: {args.graph}"
    )
    if version_tuple(nccl_tests) >= (2, 18, 2):
        params += " unalign: 0"
    lines = [
        f"# nccl-tests version {nccl_tests} nccl-headers={nccl_code} nccl-library={nccl_code}",
        f"# Collective test starting: {args.program}",
        params,
    ]
    if args.blocking:
        lines.append("# Blocking Enabled: wait for completion and barrier after each collective ")
    lines.append(f"# SIMULATED (recovery-acceptance sim, seed {seed}): not a measurement")
    return [*lines, "#", "# Using devices"]


def rank_lines(procs: Sequence[Proc], gpu_name: str, busids: Sequence[str]) -> list[str]:
    out = []
    for p in procs:
        for k, dev in enumerate(p.devices):
            out.append(
                f"#  Rank {p.first_rank + k:2d} Group  0 Pid {p.pid:6d} on {p.hostname:>10} "
                f"device {dev:2d} [{busids[dev % len(busids)]}] {gpu_name}"
            )
    return out


def _row_text(args: NcclArgs, row: Row, nranks: int) -> tuple[str, float]:
    coll = args.collective
    redop = row.op if coll in ("all_reduce", "reduce_scatter", "reduce") else "none"
    if coll == "sendrecv":
        redop = "sum"
    root = args.root if coll in ("broadcast", "reduce") else -1
    factor = bus_factor(coll, nranks)
    parts = [f"{row.size:12d}  {row.count:12d}  {row.dtype:>8}  {redop:>6}  {root:>6}"]
    bus_sum = 0.0
    for half, t in (("oop", row.oop_us), ("ip", row.ip_us)):
        algbw = row.size / (t * 1e3)
        busbw = algbw * factor
        bus_sum += busbw
        wrong = "0" if args.check and not (half == "ip" and coll in ("sendrecv", "alltoall")) else "N/A"
        parts.append(f"  {fstr(t, 7)}  {fstr(algbw, 6)}  {fstr(busbw, 6)}  {wrong:>6}")
    return "".join(parts), bus_sum


def table(
    args: NcclArgs,
    rows: Sequence[Row],
    nranks: int,
    reduced_to: int | None,
    before_header: Sequence[str] = (),
) -> list[str]:
    """From the end of the rank list to the end of the report; `before_header`: NCCL's own lines."""
    lines = []
    if reduced_to is not None:
        lines += ["#", f"# Reducing maxBytes to {reduced_to} due to memory limitation"]
    lines += [*before_header, "#", CAPTION, COLUMNS, UNITS]
    total = 0.0
    for row in rows:
        text, bus = _row_text(args, row, nranks)
        lines.append(text)
        total += bus
    avg = total / (2 * len(rows)) if rows else 0.0
    lines += [
        "# Out of bounds values : 0 OK",
        f"# Avg bus bandwidth    : {avg:g} ",
        "#",
        f"# Collective test concluded: {args.program}",
        "#",
        "",
    ]
    return lines


def info_lines(
    procs: Sequence[Proc],
    *,
    nranks: int,
    nnodes: int,
    nccl: str,
    cuda_code: int,
    seed: int,
    rails_down: Mapping[str, Collection[int]] | None = None,
) -> list[str]:
    """A compact NCCL_DEBUG=INFO start-up transcript: every process, every rank, in a plausible order."""
    cuda = f"{cuda_code // 1000}.{cuda_code % 1000 // 10}"
    out = []
    comm_id = random.Random(seed).getrandbits(64)
    for p in procs:
        ip = f"10.244.{p.pid % 250}.{(p.pid // 250) % 250 + 2}"
        pre = f"{p.hostname}:{p.pid}:{p.pid} [{p.devices[0]}] NCCL INFO"
        out += [
            f"{pre} Bootstrap: Using eth0:{ip}<0>",
            f"{pre} cudaDriverVersion {cuda_code}",
            f"{pre} NCCL version {nccl}+cuda{cuda}",
        ]
        for k, dev in enumerate(p.devices):
            rank = p.first_rank + k
            pre = f"{p.hostname}:{p.pid}:{p.pid + 40 + k} [{dev}] NCCL INFO"
            down = (rails_down or {}).get(p.node, ())
            up = [i for i in range(8) if i not in down]
            rails = " ".join(f"[{n}]mlx5_{i}:1/IB" for n, i in enumerate(up))
            comm = 0x55D0C8000000 + 0x1000 * rank
            out += [
                f"{pre} NET/IB : Using {rails} ; OOB eth0:{ip}<0>",
                f"{pre} Using network IB",
                f"{pre} ncclCommInitRankConfig comm 0x{comm:x} rank {rank} nranks {nranks} cudaDev {dev} "
                f"nvmlDev {dev} busId {dev:x}000 commId 0x{comm_id:x} - Init START",
                f"{pre} comm 0x{comm:x} rank {rank} nRanks {nranks} nNodes {nnodes} localRanks "
                f"{len(p.devices) if nnodes > 1 else nranks} localRank {k} MNNVL 0",
                f"{pre} ncclCommInitRankConfig comm 0x{comm:x} rank {rank} nranks {nranks} cudaDev {dev} "
                f"nvmlDev {dev} busId {dev:x}000 commId 0x{comm_id:x} - Init COMPLETE",
            ]
    return out


def xid_failure(procs: Sequence[Proc], node: str, gpu: int, mpirun: bool, r: random.Random) -> tuple[list[str], int]:
    """Failure lines when a GPU of `node` has fallen off the bus (XID 79) during NCCL init."""
    on_node = [p for p in procs if p.node == node]
    r.shuffle(on_node)
    lines, first = [], None
    for p in on_node:
        if gpu in p.devices:
            lines.append(f"{p.hostname}: Test CUDA failure common.cu:1008 'unknown error'")
            code = TEST_CUDA_ERROR
        else:
            lines.append(
                f"{p.hostname}: Test NCCL failure common.cu:1279 "
                "'remote process exited or there was a network error / '"
            )
            code = TEST_NCCL_ERROR
        lines.append(f" .. {p.hostname} pid {p.pid}: Test failure common.cu:1100")
        if first is None:
            first = (p.first_rank, code)
    rank, code = first if first else (0, TEST_CUDA_ERROR)
    if mpirun:
        lines += OPEN_MPI_ABORT.format(jobid=r.randrange(1000, 65000), rank=rank, code=code).splitlines()
    return lines, code
