"""Wall-clock time of each logged training step, from lines that carry both a date-time and a step.

Megatron prints ``[2026-11-23 09:12:03] iteration      700/    1200 | ...``; torchtitan and
Python-logging frameworks print ``2025-01-02 10:11:12,345 - root - INFO - step: 700 ...``. The
step-time *values* come from the training-log parser (`acceptance.tools.trainlog`); this only
dates the steps, so that a change in the series becomes a UTC window.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from acceptance.tools import logtime
from acceptance.tools.pasteprefix import strip_prefix
from acceptance.tools.torchlogs.patterns import RANK_PREFIX

_STEP = re.compile(r"\b(?:iteration|global_step|step)\s*[:=]?\s*(\d+)(?:\s*/\s*\d+)?")


@dataclass(frozen=True)
class StepStamp:
    step: int
    time: datetime
    rank: int | None
    line: int


def step_times(text: str) -> list[StepStamp]:
    """Every (step, time) a log states, in log order; naive times, in the log's own clock."""
    out: list[StepStamp] = []
    for number, raw in enumerate(text.splitlines(), 1):
        if "step" not in raw and "iteration" not in raw:
            continue
        rank = None
        prefix = RANK_PREFIX.match(strip_prefix(raw))  # `[rank3]:` behind indentation, quote marks, Ray ...
        if prefix:
            rank = int(prefix.group(1) or prefix.group(2))
        step = _STEP.search(raw)
        if not step:
            continue
        head = raw[: step.start()]
        time = logtime.parse_iso(head)
        if time is not None:
            out.append(StepStamp(int(step.group(1)), time, rank, number))
    return out
