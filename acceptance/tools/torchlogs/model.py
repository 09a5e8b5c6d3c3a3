"""Records of a PyTorch distributed job's log: NCCL error lines, rank → host facts, torchrun failures."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

# Kinds of error lines, in the order a reader wants them explained.
KINDS = (
    "watchdog-timeout",  # Watchdog caught collective operation timeout: WorkNCCL(...)
    "watchdog-status",  # failure detected by watchdog at work sequence id: N PG status: ...
    "nccl-error",  # NCCL error ...: <reason>, NCCL version X (+ ncclXxxError / Last error: continuation)
    "cuda-error",  # CUDA error: unknown error
    "watchdog-exception",  # Process group watchdog thread terminated with exception: <not a timeout>
    "nccl-warn",  # host:pid:tid [dev] NCCL WARN ...
    "note",  # Some NCCL operations have failed or timed out ... / To avoid data inconsistency ...
    "abort",  # terminate called after throwing an instance of 'c10::DistBackendError'
)


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment else None


@dataclass(frozen=True)
class ErrorLine:
    """One error line (multi-line NCCL messages joined with `` / ``) as it appeared once.

    `text` is the message without rank prefix and timestamp; `template` is `text` with the
    rank and per-rank figures taken out, so the same failure on many ranks groups together.
    `time` is naive and in the log's own clock (None when the line carries no time).
    """

    kind: str
    text: str
    template: str
    rank: int | None
    host: str | None
    time: datetime | None
    line: int
    op: str | None = None
    seq: int | None = None
    timeout_ms: int | None = None
    elapsed_ms: int | None = None
    nccl_version: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind, "text": self.text, "rank": self.rank, "host": self.host, "time": _iso(self.time),
            "line": self.line, "op": self.op, "seq": self.seq, "timeout_ms": self.timeout_ms,
            "elapsed_ms": self.elapsed_ms, "nccl_version": self.nccl_version,
        }  # fmt: skip


@dataclass(frozen=True)
class RankHost:
    """A line that ties a global rank to a host: NCCL INFO, a torchrun failure entry, mpirun's notice."""

    rank: int
    host: str
    source: str
    line: int
    local_rank: int | None = None
    device: int | None = None
    pid: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {"rank": self.rank, "host": self.host, "source": self.source, "line": self.line,
                "local_rank": self.local_rank, "device": self.device, "pid": self.pid}  # fmt: skip


@dataclass(frozen=True)
class ChildFailure:
    """One entry of torchrun's ``ChildFailedError`` summary (``[k]:`` is not the rank)."""

    rank: int | None
    local_rank: int | None
    host: str | None
    exitcode: int | None
    pid: int | None
    time: datetime | None
    root_cause: bool
    script: str | None
    line: int

    @property
    def signal(self) -> int | None:
        """The signal that killed the worker (torchrun reports it as a negative exit code)."""
        return -self.exitcode if self.exitcode is not None and self.exitcode < 0 else None

    def to_json(self) -> dict[str, Any]:
        return {"rank": self.rank, "local_rank": self.local_rank, "host": self.host, "exitcode": self.exitcode,
                "signal": self.signal, "pid": self.pid, "time": _iso(self.time), "root_cause": self.root_cause,
                "script": self.script, "line": self.line}  # fmt: skip


@dataclass(frozen=True)
class AgentLine:
    """A torch.distributed.elastic agent line: a SIGTERM sent, a worker failed."""

    kind: str  # "sigterm" | "worker-failed"
    pid: int | None
    exitcode: int | None
    local_rank: int | None
    time: datetime | None
    line: int


@dataclass(frozen=True)
class TorchLog:
    """What one log says about a distributed job's failure."""

    source: str
    errors: tuple[ErrorLine, ...] = ()
    ranks: tuple[RankHost, ...] = ()
    failures: tuple[ChildFailure, ...] = ()
    agent: tuple[AgentLine, ...] = ()
    world_size: int | None = None
    nccl_versions: tuple[str, ...] = ()
    torch_version: str | None = None
    year: int | None = None
    lines: int = 0
    notes: tuple[str, ...] = field(default_factory=tuple)  # paste damage not undone for certain (wraps, cuts)
    yearless: int = 0  # error lines and agent lines whose time stamp carries no year (dated with `year`)

    @property
    def recognised(self) -> bool:
        return bool(self.errors or self.ranks or self.failures or self.agent or self.world_size)

    @property
    def has_nccl_own_lines(self) -> bool:
        """Whether NCCL itself said something (an INFO/WARN line, an NCCL error), beyond PyTorch's watchdog."""
        return any(e.kind in ("nccl-error", "nccl-warn") for e in self.errors) or any(
            r.source == "nccl-info" for r in self.ranks
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "torchlog",
            "source": self.source,
            "world_size": self.world_size,
            "nccl_versions": list(self.nccl_versions),
            "torch_version": self.torch_version,
            "errors": [e.to_json() for e in self.errors],
            "ranks": [r.to_json() for r in self.ranks],
            "failures": [f.to_json() for f in self.failures],
            "notes": list(self.notes),
        }
