"""PyTorch c10d (ProcessGroupNCCL) watchdog lines in rank logs: timeouts and watchdog-terminated NCCL errors.

Pure: text in, records out. PyTorch 2.x prefixes a line with ``[rankN]:[E1218 20:27:21.426415540
ProcessGroupNCCL.cpp:629]`` (glog: no year, so the caller gives a `reference` time and the year
that puts the line nearest to it is taken); 1.x writes ``[E ProcessGroupNCCL.cpp:852]`` with no
time at all (`time` is None). The same record repeated inside an exception's text
(``... terminated with exception: [Rank 0] Watchdog caught ...``, ``what():  ...``) is counted once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

_PREFIX = re.compile(r"^\[rank(\d+)\]:\[[IWEF](\d{2})(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?\s")
_TIMEOUT = re.compile(
    r"\[Rank (\d+)\] Watchdog caught collective operation timeout: WorkNCCL\(SeqNum=(\d+), OpType=(\w+)"
    r".*?Timeout\(ms\)=(\d+)\) ran for (\d+) milliseconds"
)
_TERMINATED = re.compile(
    r"^(?:\[rank\d+\]:)?\[[EF][^\]]*ProcessGroupNCCL\.cpp:\d+\] \[Rank (\d+)\] NCCL watchdog "
    r"thread terminated with exception: (.*)$"
)
_REPEAT = re.compile(r"terminated with exception: \[Rank \d+\] Watchdog caught|^\s*what\(\):")


@dataclass(frozen=True)
class WatchdogEvent:
    """One watchdog record: a collective that timed out, or the watchdog ending on an NCCL error."""

    line: int
    kind: str  # "timeout" | "nccl-error"
    rank: int | None
    time: datetime | None
    text: str
    op: str | None = None
    seq: int | None = None
    timeout_ms: int | None = None
    ran_ms: int | None = None


def _time(match: re.Match[str], reference: datetime | None) -> datetime | None:
    if reference is None:
        return None
    month, day, hour, minute, second = (int(match.group(i)) for i in range(2, 7))
    micros = int((match.group(7) or "0")[:6].ljust(6, "0"))
    best = None
    for year in (reference.year - 1, reference.year, reference.year + 1):
        try:
            when = datetime(year, month, day, hour, minute, second, micros, tzinfo=UTC)
        except ValueError:
            continue
        if best is None or abs(when - reference) < abs(best - reference):
            best = when
    return best


def parse_watchdog(text: str, reference: datetime | None = None) -> list[WatchdogEvent]:
    """Every watchdog timeout and watchdog-terminated NCCL error, in log order (times in UTC near `reference`)."""
    out: list[WatchdogEvent] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if "atchdog" not in line or _REPEAT.search(line):
            continue
        prefix = _PREFIX.match(line)
        when = _time(prefix, reference) if prefix else None
        timeout = _TIMEOUT.search(line)
        if timeout is not None:
            rank, seq, op, limit, ran = timeout.groups()
            out.append(
                WatchdogEvent(number, "timeout", int(rank), when, line.strip(), op, int(seq), int(limit), int(ran))
            )
            continue
        ended = _TERMINATED.match(line)
        if ended is not None:
            out.append(WatchdogEvent(number, "nccl-error", int(ended.group(1)), when, line.strip()))
    return out


__all__ = ["WatchdogEvent", "parse_watchdog"]
