"""Launcher errors: Open MPI ``mpirun``/``prterun``, Slurm ``srun``, the DeepSpeed runner, and ssh.

Shapes:

- ``ssh: connect to host <host> port 22: Connection refused`` before ORTE's
  ``ORTE was unable to reliably start one or more daemons.`` help block;
- ``mpirun|prterun noticed that process rank N with PID P on node H exited on signal S (Name).``,
  hard-wrapped in pastes (lines are joined before matching);
- signal backtraces ``[host:pid] *** Process received signal ***`` / ``[host:pid] Signal: Aborted (6)``
  (another host's stderr can be spliced into a frame line);
- ``srun: error: <host>: task <n>: Terminated|Exited with exit code <c>``, ``srun: error: Node failure on
  <host>``, ``srun: Job step aborted ...``, ``srun: Force Terminated StepId=...`` (the first ``srun:`` line
  can be glued to the previous text);
- DeepSpeed: ``[launch.py:319:sigkill_handler] Killing subprocess <pid>`` and
  ``[launch.py:325:sigkill_handler] [...argv...] exits with return code = -6``.

The façade of `acceptance.tools.launcher`. Pure: text in, `LauncherEvent`s out, in log order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from acceptance.tools import logtime
from acceptance.tools.pasteprefix import strip_prefix

__all__ = ["KINDS", "LauncherEvent", "parse"]

KINDS = ("ssh-failed", "daemons-failed", "rank-exited", "signal", "task-failed", "node-failure", "step-aborted",
         "launcher-exit")  # fmt: skip

_SSH = re.compile(
    r"ssh: (?:connect to host (\S+) port \d+: (.+)|Could not resolve hostname (\S+): (.+))"
    r"|^(Host key verification failed\.|Permission denied \(publickey[^)]*\)\.)"
)
_DAEMONS = re.compile(
    r"ORTE was unable to reliably start one or more daemons|PRTE has lost communication with a remote daemon"
)
_NOTICED = re.compile(
    r"(mpirun|prterun|mpiexec) noticed that process rank (\d+) with PID (\d+) on node (\S+) exited on signal (\d+)"
    r"(?: \(([^)]+)\))?|(mpirun|prterun|mpiexec) noticed that process rank (\d+) with PID (\d+) on node (\S+) "
    r"exited with (?:non-zero )?(?:exit )?status (-?\d+)"
)
_SIGNAL = re.compile(r"\[([\w.-]+):(\d+)\] Signal: (\w[\w ]*?) \((\d+)\)")
_SRUN_TASK = re.compile(
    r"srun: error: ([\w.-]+): tasks? ([\d,-]+): (Terminated|Exited with exit code (-?\d+)|Killed|.+)"
)
_SRUN_NODE = re.compile(r"srun: error: Node failure on ([\w.-]+)")
_SRUN_STEP = re.compile(r"srun: (?:Job step aborted: .*|Force Terminated (StepId=\S+)|launch/slurm: _step_signal: "
                        r"Terminating (StepId=\S+))")  # fmt: skip
# Words one of which every line the patterns know contains (a cheap test before the regexes).
_WORDS = ("ssh", "Host key", "Permission denied", "ORTE", "PRTE", "noticed that", "Signal:", "srun:", "sigkill_handler")
_DS_EXIT = re.compile(r"\[launch\.py:\d+:sigkill_handler\] .*exits with return code = (-?\d+)")


@dataclass(frozen=True)
class LauncherEvent:
    """One launcher statement; `host` is the machine it names (None when it names none)."""

    kind: str
    host: str | None
    text: str
    line: int
    rank: int | None = None
    task: str | None = None
    pid: int | None = None
    signal: int | None = None
    exit_code: int | None = None
    time: datetime | None = None

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "host": self.host, "text": self.text, "line": self.line, "rank": self.rank,
                "task": self.task, "pid": self.pid, "signal": self.signal, "exit_code": self.exit_code,
                "time": self.time.isoformat() if self.time else None}  # fmt: skip


def _joined(lines: list[str]) -> list[tuple[int, str]]:
    """Lines with a hard-wrapped ``... exited on`` / ``signal 6 (Aborted).`` sentence put back together."""
    out: list[tuple[int, str]] = []
    i = 0
    while i < len(lines):
        text = lines[i].rstrip("\r\n")
        if " noticed that process rank " in text and i + 1 < len(lines) and not _NOTICED.search(text):
            text = f"{text.rstrip()} {strip_prefix(lines[i + 1]).strip()}"
            out.append((i + 1, text))
            i += 2
            continue
        out.append((i + 1, text))
        i += 1
    return out


def parse(text: str, source: str = "<text>") -> list[LauncherEvent]:
    """Every launcher statement of `text`; an empty list for text without any."""
    events: list[LauncherEvent] = []
    words = tuple(word for word in _WORDS if word in text)  # one scan of the whole text per word, at C speed
    if not words:
        return events
    signalled: set[tuple[str, str]] = set()
    last_ssh: str | None = None
    lines = text.splitlines()
    for number, raw in _joined(lines) if " noticed that process rank " in text else enumerate(lines, 1):
        if not any(word in raw for word in words):
            continue
        time = logtime.parse_iso(raw[:40]) if raw.startswith("[") else None
        line = strip_prefix(raw)  # indentation, quote marks, line numbers, Ray and collector prefixes
        if (ssh := _SSH.search(line)) is not None:
            host = ssh.group(1) or ssh.group(3)
            last_ssh = host
            events.append(LauncherEvent("ssh-failed", host, line.strip(), number, time=time))
        elif _DAEMONS.search(line):
            events.append(LauncherEvent("daemons-failed", last_ssh, line.strip(), number, time=time))
        elif (noticed := _NOTICED.search(line)) is not None:
            g = noticed.groups()
            if g[0]:
                events.append(LauncherEvent("rank-exited", g[3], noticed.group(0), number, rank=int(g[1]),
                                            pid=int(g[2]), signal=int(g[4])))  # fmt: skip
            else:
                events.append(LauncherEvent("rank-exited", g[9], noticed.group(0), number, rank=int(g[7]),
                                            pid=int(g[8]), exit_code=int(g[10])))  # fmt: skip
        elif (sig := _SIGNAL.search(line)) is not None and (sig.group(1), sig.group(2)) not in signalled:
            signalled.add((sig.group(1), sig.group(2)))
            events.append(LauncherEvent("signal", sig.group(1), sig.group(0), number, pid=int(sig.group(2)),
                                        signal=int(sig.group(4))))  # fmt: skip
        elif (node := _SRUN_NODE.search(line)) is not None:
            events.append(LauncherEvent("node-failure", node.group(1), node.group(0), number))
        elif (task := _SRUN_TASK.search(line)) is not None:
            code = task.group(4)
            events.append(LauncherEvent("task-failed", task.group(1), task.group(0), number, task=task.group(2),
                                        exit_code=int(code) if code is not None else None))  # fmt: skip
        elif (step := _SRUN_STEP.search(line)) is not None:
            events.append(LauncherEvent("step-aborted", None, step.group(0), number))
        elif (ds := _DS_EXIT.search(line)) is not None:
            code = int(ds.group(1))
            events.append(LauncherEvent("launcher-exit", None, f"DeepSpeed launcher: a worker exits with return code "
                                        f"{code}", number, exit_code=code, signal=-code if code < 0 else None,
                                        time=time))  # fmt: skip
    return events
