"""Each input of a bundle (a log file, a pod's log, a kernel log, a kubectl paste), read by every parser.

An input is whatever the user hands in; what it is comes from its content, not its name: a
file may hold a training log with NCCL errors, launcher lines and a torchrun summary at once.
Pure: text in, `Parsed` out; a text no parser recognises is kept with a problem saying so.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
import pandas as pd

from acceptance.errors import ParseError
from acceptance.tools import kernel, kubectl, launcher, nvsmi, torchlogs, trainlog
from acceptance.tools.kernel import KernelLog
from acceptance.tools.kubectl import KubectlText
from acceptance.tools.launcher import LauncherEvent
from acceptance.tools.nvsmi import NvsmiReport
from acceptance.tools.torchlogs import StepStamp, TorchLog


@dataclass(frozen=True)
class Input:
    """`label`: the file path or ``pod/<name>``; `host`: the machine it belongs to, when known."""

    label: str
    text: str
    host: str | None = None
    origin: str = "file"  # "file" | "pod" | "evidence"
    mtime: datetime | None = None  # the file's modification time (naive UTC), when it is a file
    path: str | None = None  # a file not read yet (`text` empty until then): read, parsed and copied one by one


@dataclass(frozen=True)
class Parsed:
    label: str
    host: str | None
    origin: str
    sha256: str
    lines: int
    torch: TorchLog
    launcher: tuple[LauncherEvent, ...] = ()
    kernel: KernelLog | None = None
    nvsmi: NvsmiReport | None = None
    kubectl: KubectlText | None = None
    steps: pd.DataFrame | None = None  # step, step_time_s, rank (None where the log has none)
    stamps: tuple[StepStamp, ...] = ()
    saves: tuple[int, ...] = ()  # steps at which a checkpoint was saved
    train_iters: int | None = None
    problems: tuple[str, ...] = field(default_factory=tuple)
    year_from: str = ""  # where the year of its year-less time stamps (c10d, glog, syslog) came from

    @property
    def kinds(self) -> tuple[str, ...]:
        found = []
        if self.steps is not None:
            found.append("training-log")
        if self.torch.recognised:
            found.append("pytorch-nccl")
        if self.launcher:
            found.append("launcher")
        if self.kernel is not None:
            found.append("kernel-log")
        if self.nvsmi is not None:
            found.append("nvidia-smi")
        if self.kubectl is not None:
            found.append("kubectl")
        return tuple(found)


def _steps(text: str, label: str) -> tuple[pd.DataFrame | None, tuple[int, ...], str | None]:
    try:
        log = trainlog.parse(text.splitlines(keepends=True), label)
    except ParseError:
        return None, (), None
    frame = log.frame()
    if "step_time_s" not in frame or frame.empty:
        return None, tuple(e.step for e in log.events_of("checkpoint_save") if e.step is not None), log.format
    keep = frame[["step", "step_time_s", *(["rank"] if "rank" in frame else [])]].copy()
    keep = keep[np.isfinite(keep["step_time_s"].astype(float))]
    saves = tuple(sorted({e.step for e in log.events_of("checkpoint_save") if e.step is not None}))
    return keep.reset_index(drop=True), saves, log.format


def parse_input(item: Input, *, year: int | None = None, year_from: str = "") -> Parsed:
    """Run every parser over one input; keep what each recognised (`year_from`: where `year` came from)."""
    text = item.text
    torch = torchlogs.parse(text, item.label, year=year)
    k = kernel.parse(text, item.label, year=year)
    smi = nvsmi.parse(text, item.label)
    kc = kubectl.parse(text, item.label) if kubectl.may_recognise(text) else None
    steps, saves, _ = _steps(text, item.label)
    stamps = tuple(torchlogs.step_times(text)) if steps is not None else ()
    events = tuple(launcher.parse(text, item.label))
    parsed = Parsed(
        label=item.label,
        host=item.host or (k.hosts[0] if k.hosts else None),
        origin=item.origin,
        sha256=hashlib.sha256(text.encode("utf-8", "replace")).hexdigest(),
        lines=text.count("\n") + (0 if text.endswith("\n") or not text else 1),
        torch=torch,
        launcher=events,
        kernel=k if k.recognised else None,
        nvsmi=smi if smi.recognised else None,
        kubectl=kc if kc is not None and kc.recognised else None,
        steps=steps,
        stamps=stamps,
        saves=saves,
        train_iters=_train_iters(text) if steps is not None else None,
        year_from=year_from,
    )
    if not parsed.kinds:
        problem = (
            "empty"
            if not text.strip()
            else "nothing recognised (not a training, NCCL, launcher, kernel, nvidia-smi or kubectl output)"
        )
        return Parsed(**{**parsed.__dict__, "problems": (problem,)})
    return parsed


def _train_iters(text: str) -> int | None:
    match = re.search(r"iteration\s+\d+/\s*(\d+)\s*\|", text)
    return int(match.group(1)) if match else None
