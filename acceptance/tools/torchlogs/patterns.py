"""Line shapes of PyTorch c10d / NCCL / torchrun output."""

from __future__ import annotations

import re

# `[rank37]:` (PyTorch 2.x, global rank), or Open MPI --tag-output `[1,37]<stderr>:`.
RANK_PREFIX = re.compile(r"^\[rank(\d+)\]:\s?|^\[\d+,(\d+)\]<std(?:out|err)>:\s?")
# `[E1218 20:27:21.426415540 ProcessGroupNCCL.cpp:629] ` (2.4+), `[E626 06:24:44.903881913 ...] ` (c10's own
# logger prints the date as month x 100 + day, without zero padding) or `[E ProcessGroupNCCL.cpp:481] ` (older).
GLOG_HEADER = re.compile(
    r"^\[([IWEF])(?:(\d{3,4} \d{2}:\d{2}:\d{2}(?:\.\d+)?) )?\s*(\S+?\.(?:cpp|cc|h|hpp|py):\d+)\]\s?"
)
# A shape this reader knows that can start in the middle of a line (text glued in front of it: a tqdm bar
# without its newline, another process's output): `[rankN]:`, a c10d header, an NCCL line.
GLUED = re.compile(
    r"\[rank\d+\]:|\[[IWEF](?:\d{3,4} \d{2}:\d{2}:\d{2}\.\d+ )?\s*\w+\.(?:cpp|cc):\d+\]"
    r"|[\w.-]+:\d+:\d+ \[\d+\] NCCL (?:INFO|WARN) "
)
# `host:pid:tid [dev] NCCL INFO ...`
NCCL_LINE = re.compile(
    r"^(?P<host>[\w.-]+):(?P<pid>\d+):(?P<tid>\d+) \[(?P<dev>\d+)\] (?:[\w./-]+:\d+ )?NCCL (?P<level>INFO|WARN) "
    r"(?P<msg>.*)$"
)
NCCL_RANK = re.compile(r"\bcomm 0x[0-9a-f]+ rank (\d+) n[Rr]anks (\d+)")
INIT_RANK = re.compile(r"ncclCommInitRank\w* comm 0x[0-9a-f]+ rank (\d+) nranks (\d+) cudaDev (\d+)")
NCCL_VERSION = re.compile(r"NCCL version (\d+\.\d+\.\d+)")
TORCH_VERSION = re.compile(r"\b[Tt]orch version:? (\d+\.\d+\.\d+(?:\+cu\d{3}|\+cpu|\+rocm\d+\.\d+)?)")
WORLD_SIZE = re.compile(r"using world size: (\d+)|\b(?:WORLD_SIZE|world_size)[=:]\s*(\d+)|\bworld size (\d+)\b")

# Rank inside the message text: `[Rank 16] `, `[PG ID 1 PG GUID 1 Rank 0] `, `[PG ID 0 PG GUID 0(default_pg) Rank 5] `.
TEXT_RANK = re.compile(r"\[(?:PG ID \d+ PG GUID [^\]]*? )?Rank (\d+)\]\s*")
# Each figure is taken only when the text after it shows it is whole: a record cut at the line's end (a log
# tail, a paste) keeps the figures before the cut and no truncated number.
TIMEOUT = re.compile(
    r"Watchdog caught collective operation timeout: WorkNCCL\(SeqNum=(\d+), OpType=(\w+)(?=[,)])"
    r"(?:, NumelIn=(-?\d+), NumelOut=(-?\d+)(?=[,)]))?(?:, Timeout\(ms\)=(\d+)\))?"
    r"(?: ran for (\d+) milliseconds)?(?: before timing out\.?)?"
)
# The whole record (a line that holds its start without this is cut or wrapped).
TIMEOUT_END = re.compile(r"\) ran for \d+ milliseconds before timing out")
# 2.5+: `failure detected by watchdog at work sequence id: N PG status: last enqueued work: N, last completed work: N`;
# 2.4: `Exception (either an error or timeout) detected by watchdog at work: N, last enqueued NCCL work: N, last
# completed NCCL work: N.` and `Timeout at NCCL work: N, last enqueued NCCL work: N, last completed NCCL work: N.`
STATUS = re.compile(
    r"(?:failure detected by watchdog at work sequence id: (\d+)\s*PG status: last enqueued work: (-?\d+), "
    r"last completed work: (-?\d+)|Exception \(either an error or timeout\) detected by watchdog at work: (\d+), "
    r"last enqueued NCCL work: (-?\d+), last completed NCCL work: (-?\d+)"
    r"|Timeout at NCCL work: (\d+), last enqueued NCCL work: (-?\d+), last completed NCCL work: (-?\d+))"
)
WATCHDOG_EXC = re.compile(r"(?:Process group|NCCL) watchdog thread terminated with exception: (.*)")
NCCL_ERROR = re.compile(r"NCCL error(?: in: \S+?)?[:,]\s*(.*)")
NCCL_CODE = re.compile(r"^(nccl[A-Z]\w*(?:Error|Usage|Argument)|ncclInProgress): (.*)")
CUDA_ERROR = re.compile(r"CUDA error: (.*)")
TERMINATE = re.compile(r"terminate called after throwing an instance of '([^']+)'")
# Ray's terminate handler: `logging.cc:101: Unhandled exception: N3c1016DistBackendErrorE. what(): <text>`.
UNHANDLED = re.compile(r"Unhandled exception: (N(?:\d+\w+?)+E|[\w:]+)\. what\(\): (.*)")
WHAT = re.compile(r"^\s*what\(\):\s+(.*)")
NOTES = (
    "Some NCCL operations have failed or timed out",
    "To avoid data inconsistency, we are taking the entire process down",
    "Stack trace of the failed collective not found",
)
FRAME = re.compile(r"^(?:frame #\d+:|Exception raised from \S+ at )")
# A line that starts a record of its own (never the continuation of a hard-wrapped line).
STARTS = re.compile(
    r"^(?:\[rank\d+\]:|\[[IWEF][\d ]|[\w.-]+:\d+:\d+ \[\d+\] |frame #\d+:|Exception raised from |\s*what\(\):"
    r"|terminate called|[IWEF]\d{4} \d\d:|(?:[A-Z]+:)?torch\.distributed|Traceback |\[\d+\]:|={8}|-{8})"
)

# torch.distributed.elastic agent lines, 2.6 glog style or older logging style.
AGENT_SIGTERM = re.compile(r"Sending process (\d+) closing signal SIG(\w+)")
AGENT_FAILED = re.compile(r"failed \(exitcode: (-?\d+)\) local_rank: (\d+) \(pid: (\d+)\)")

# ChildFailedError summary.
SUMMARY_START = re.compile(r"ChildFailedError:\s*$")
SUMMARY_SCRIPT = re.compile(r"^(\S+) FAILED\s*$")
SUMMARY_ENTRY = re.compile(r"^\[(\d+)\]:\s*$")
SUMMARY_FIELD = re.compile(r"^\s*(time|host|rank|exitcode|error_file|traceback)\s*:\s?(.*)$")
SUMMARY_RANK = re.compile(r"(-?\d+) \(local_rank: (-?\d+)\)")
SUMMARY_EXIT = re.compile(r"(-?\d+) \(pid: (\d+)\)")
