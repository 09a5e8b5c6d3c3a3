"""An ``NCCL_DEBUG=INFO`` capture of a big torchrun job, written as one log per node (for bench/incident.py).

Every rank prints NCCL's init lines for three communicators (world, tensor-parallel, data-parallel): the
version banner, bootstrap and net lines, ``ncclCommInitRank ... Init START/COMPLETE``, the ``comm 0x...
rank R nRanks N`` line, trees and one ``Channel`` line per channel and peer: most of the ~1,200 lines a
rank prints. Then training steps on rank 0, a watchdog timeout on every rank of one node and the follow-up
lines on all others, the elastic agent's SIGTERM lines and its ChildFailedError summary per node.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

CHANNELS = 32


def _rank_init(host: str, node: int, local: int, nodes: int, gpus: int, pid: int) -> Iterator[str]:
    rank, world = node * gpus + local, nodes * gpus
    head = f"{host}:{pid}:{pid}"
    dev = f"[{local}]"
    yield f"{head} {dev} NCCL INFO cudaDriverVersion 12040"
    yield f"{head} {dev} NCCL INFO Bootstrap : Using eth0:10.{node // 250}.{node % 250}.{local + 10}<0>"
    yield f"{head} {dev} NCCL INFO NET/Plugin: No plugin found (libnccl-net.so)"
    if rank == 0:
        yield f"{head} {dev} NCCL INFO NCCL version 2.21.5+cuda12.4"
    tid = pid + 77
    head = f"{host}:{pid}:{tid}"
    yield f"{head} {dev} NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [2]mlx5_2:1/IB ; OOB eth0"
    yield f"{head} {dev} NCCL INFO Using non-device net plugin version 0"
    yield f"{head} {dev} NCCL INFO Using network IB"
    for name, size, me, peers in (
        ("world", world, rank, world),
        ("tp", gpus, local, gpus),
        ("dp", nodes, node, nodes),
    ):
        comm = f"0x55d{(rank * 3 + len(name)) & 0xFFFFFF:06x}0"
        yield (
            f"{head} {dev} NCCL INFO ncclCommInitRank comm {comm} rank {me} nranks {size} cudaDev {local} "
            f"nvmlDev {local} busId {local + 1}c000 commId 0x8e5b3a2c{len(name):08x} - Init START"
        )
        yield f"{head} {dev} NCCL INFO Setting affinity for GPU {local} to ffff,ffffffff"
        yield (
            f"{head} {dev} NCCL INFO comm {comm} rank {me} nRanks {size} nNodes {max(1, size // gpus)} "
            f"localRanks {min(size, gpus)} localRank {local} MNNVL 0"
        )
        yield f"{head} {dev} NCCL INFO Trees [0] {(me + 1) % peers}/-1/-1->{me}->{(me - 1) % peers} [1] -1/-1/-1"
        yield f"{head} {dev} NCCL INFO P2P Chunksize set to 131072"
        for channel in range(CHANNELS):
            for kind in ("send", "recv"):
                for step in range(1, 7):
                    peer = (me + step) % peers
                    via = "P2P/CUMEM/read" if name == "tp" else f"NET/IB/{channel % 4}/GDRDMA"
                    yield (
                        f"{head} {dev} NCCL INFO Channel {channel:02d}/0 : {me}[{local}] -> {peer}[{peer % gpus}] "
                        f"[{kind}] via {via}"
                    )
        yield f"{head} {dev} NCCL INFO Connected all rings"
        yield f"{head} {dev} NCCL INFO Connected all trees"
        yield f"{head} {dev} NCCL INFO threadThresholds 8/8/64 | 65536/8/64 | 512 | 512"
        yield f"{head} {dev} NCCL INFO {CHANNELS} coll channels, 0 collnet channels, {CHANNELS} p2p channels"
        yield (
            f"{head} {dev} NCCL INFO ncclCommInitRank comm {comm} rank {me} nranks {size} cudaDev {local} "
            f"nvmlDev {local} busId {local + 1}c000 commId 0x8e5b3a2c{len(name):08x} - Init COMPLETE"
        )


def node_log(node: int, nodes: int, gpus: int = 8, bad_node: int = 5) -> Iterator[str]:
    """One node's log, line by line (no newline)."""
    host = f"gpu-node-{node:04d}"
    for local in range(gpus):
        yield from _rank_init(host, node, local, nodes, gpus, 4000 + local)
    if node == 0:
        for step in range(1, 301):
            yield (
                f"[rank0]: [2026-06-26 06:{step // 60:02d}:{step % 60:02d}] iteration {step:8d}/    1000 | "
                f"consumed samples: {step * 1024:12d} | elapsed time per iteration (ms): 1002.3 | lm loss: 3.21E+00 |"
            )
    for local in range(gpus):
        rank = node * gpus + local
        stamp = f"E626 06:24:44.{903881913 + rank:09d}"
        if node == bad_node:
            yield (
                f"[rank{rank}]:[{stamp} ProcessGroupNCCL.cpp:1484] [PG ID 0 PG GUID 0(default_pg) Rank {rank}] "
                "Process group watchdog thread terminated with exception: CUDA error: unspecified launch failure"
            )
            continue
        yield (
            f"[rank{rank}]:[{stamp} ProcessGroupNCCL.cpp:616] [Rank {rank}] Watchdog caught collective operation "
            f"timeout: WorkNCCL(SeqNum=301, OpType=ALLREDUCE, NumelIn=262144, NumelOut=262144, Timeout(ms)=600000) "
            f"ran for 600081 milliseconds before timing out."
        )
        yield (
            f"[rank{rank}]:[{stamp} ProcessGroupNCCL.cpp:2168] [PG ID 0 PG GUID 0(default_pg) Rank {rank}]  failure "
            "detected by watchdog at work sequence id: 301 PG status: last enqueued work: 301, last completed work: 300"
        )
    agent = 3000
    for local in range(gpus):
        yield (
            f"W0626 06:24:46.{351000 + local:06d} {agent} site-packages/torch/distributed/elastic/multiprocessing/"
            f"api.py:897] Sending process {4000 + local} closing signal SIGTERM"
        )
    rule = "=" * 60
    yield "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: "
    yield rule
    yield "pretrain_gpt.py FAILED"
    yield "-" * 60
    yield "Failures:"
    yield "  <NO_OTHER_FAILURES>"
    yield "-" * 60
    yield "Root Cause (first observed failure):"
    yield "[0]:"
    yield "  time      : 2026-06-26_06:24:46"
    yield f"  host      : {host}"
    yield f"  rank      : {node * gpus} (local_rank: 0)"
    yield "  exitcode  : -6 (pid: 4000)"
    yield "  error_file: <N/A>"
    yield "  traceback : Signal 6 (SIGABRT) received by PID 4000"
    yield rule


def write(folder: Path, nodes: int, gpus: int = 8) -> tuple[int, int]:
    """One ``gpu-node-NNNN.log`` per node under `folder`; (lines, bytes) written."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = size = 0
    for node in range(nodes):
        text = "\n".join(node_log(node, nodes, gpus)) + "\n"
        (folder / f"gpu-node-{node:04d}.log").write_text(text)
        lines += text.count("\n")
        size += len(text)
    return lines, size
