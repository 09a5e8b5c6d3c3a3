"""Line shapes of PyTorch c10d / NCCL / torchrun output (see ../shared/corpus-wave2/README.md §1)."""

from __future__ import annotations

import re

# `[rank37]:` (PyTorch 2.x, global rank), or Open MPI --tag-output `[1,37]<stderr>:`.
RANK_PREFIX = re.compile(r"^\[rank(\d+)\]:\s?|^\[\d+,(\d+)\]<std(?:out|err)>:\s?")
# `[E1218 20:27:21.426415540 ProcessGroupNCCL.cpp:629] ` (2.x) or `[E ProcessGroupNCCL.cpp:481] ` (1.x).
GLOG_HEADER = re.compile(r"^\[([IWEF])(?:(\d{4} \d{2}:\d{2}:\d{2}(?:\.\d+)?) )?\s*(\S+?\.(?:cpp|cc|h|hpp|py):\d+)\]\s?")
# `host:pid:tid [dev] NCCL INFO ...`
NCCL_LINE = re.compile(
    r"^(?P<host>[\w.-]+):(?P<pid>\d+):(?P<tid>\d+) \[(?P<dev>\d+)\] NCCL (?P<level>INFO|WARN) (?P<msg>.*)$"
)
NCCL_RANK = re.compile(r"\bcomm 0x[0-9a-f]+ rank (\d+) n[Rr]anks (\d+)")
INIT_RANK = re.compile(r"ncclCommInitRank\w* comm 0x[0-9a-f]+ rank (\d+) nranks (\d+) cudaDev (\d+)")
NCCL_VERSION = re.compile(r"NCCL version (\d+\.\d+\.\d+)")
TORCH_VERSION = re.compile(r"\b[Tt]orch version:? (\d+\.\d+\.\d+(?:\+cu\d{3}|\+cpu|\+rocm\d+\.\d+)?)")
WORLD_SIZE = re.compile(r"using world size: (\d+)|\b(?:WORLD_SIZE|world_size)[=:]\s*(\d+)|\bworld size (\d+)\b")

# Rank inside the message text: `[Rank 16] `, `[PG ID 1 PG GUID 1 Rank 0] `, `[PG ID 0 PG GUID 0(default_pg) Rank 5] `.
TEXT_RANK = re.compile(r"\[(?:PG ID \d+ PG GUID [^\]]*? )?Rank (\d+)\]\s*")
TIMEOUT = re.compile(
    r"Watchdog caught collective operation timeout: WorkNCCL\(SeqNum=(\d+), OpType=(\w+)"
    r"(?:, NumelIn=(-?\d+), NumelOut=(-?\d+))?, Timeout\(ms\)=(\d+)\) ran for (\d+) milliseconds before timing out\.?"
)
STATUS = re.compile(
    r"failure detected by watchdog at work sequence id: (\d+)\s*PG status: last enqueued work: (-?\d+), "
    r"last completed work: (-?\d+)"
)
WATCHDOG_EXC = re.compile(r"(?:Process group|NCCL) watchdog thread terminated with exception: (.*)")
NCCL_ERROR = re.compile(r"NCCL error(?: in: \S+?)?[:,]\s*(.*)")
NCCL_CODE = re.compile(r"^(nccl[A-Z]\w*(?:Error|Usage|Argument)|ncclInProgress): (.*)")
CUDA_ERROR = re.compile(r"CUDA error: (.*)")
TERMINATE = re.compile(r"terminate called after throwing an instance of '([^']+)'")
WHAT = re.compile(r"^\s*what\(\):\s+(.*)")
NOTES = (
    "Some NCCL operations have failed or timed out",
    "To avoid data inconsistency, we are taking the entire process down",
    "Stack trace of the failed collective not found",
)
FRAME = re.compile(r"^(?:frame #\d+:|Exception raised from \S+ at )")

# torch.distributed.elastic agent lines, 2.6 glog style or older logging style.
AGENT_SIGTERM = re.compile(r"Sending process (\d+) closing signal SIG(\w+)")
AGENT_FAILED = re.compile(r"failed \(exitcode: (-?\d+)\) local_rank: (\d+) \(pid: (\d+)\)")

# ChildFailedError summary.
SUMMARY_START = re.compile(r"ChildFailedError:\s*$")
SUMMARY_SCRIPT = re.compile(r"^(\S+) FAILED\s*$")
SUMMARY_ENTRY = re.compile(r"^\[(\d+)\]:\s*$")
SUMMARY_FIELD = re.compile(r"^\s+(time|host|rank|exitcode|error_file|traceback)\s*:\s?(.*)$")
SUMMARY_RANK = re.compile(r"(-?\d+) \(local_rank: (-?\d+)\)")
SUMMARY_EXIT = re.compile(r"(-?\d+) \(pid: (\d+)\)")
