"""Failure lines around nccl-tests: its own, NCCL's WARN lines, and the launchers' (mpirun, srun, PALS).

A run that dies before nccl-tests prints its header leaves only these lines, so they are
what the on-call reads first. `classify(line)` says whether a foreign line reports a
failure, of which kind, and which host it names:

* ``test``: nccl-tests' own `HOST: Test NCCL|CUDA failure …`, ` .. HOST pid N: Test failure …`,
  `HOST: Test timeout (Ns) …`;
* ``nccl``: `HOST:PID:TID [DEV] file.cc:LINE NCCL WARN …`;
* ``launcher``: Open MPI/PRRTE (`mpirun|prterun detected …`, `… noticed that process rank N …
  on node H exited`, `ORTE was unable to reliably start …`, signal backtraces `[H:PID] *** …`),
  ssh (`ssh: connect to host H …`), Slurm (`srun: error: H: task N: …`), PALS/Cray
  (`start failed on H: …`, `CXI alloc failed …`, `H: rank N died from signal …`) and MPICH/Hydra
  (`application called MPI_Abort`, `BAD TERMINATION …`).

Pure: text in, (kind, host) out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

TEST, NCCL, LAUNCHER = "test", "nccl", "launcher"

_TEST = re.compile(
    r"(?P<h1>\S+): Test (?:NCCL|CUDA) failure |\s*\.\. (?P<h2>\S+) pid \d+: Test failure |(?P<h3>\S+): Test timeout \("
)
_WARN = re.compile(r"(?P<host>[^\s:\[]+):\d+:\d+ \[[^\]]*\].* NCCL WARN ")

#: (pattern, whether it names the host in its group `host`); searched anywhere in the line (glued output)
_LAUNCHER: tuple[tuple[re.Pattern[str], bool], ...] = (
    (
        re.compile(
            r"\b(?:mpirun|prterun|orterun|mpiexec) noticed that process rank \d+ with PID \d+ on node (?P<host>\S+)"
        ),
        True,
    ),
    (
        re.compile(
            r"\b(?:mpirun|prterun|orterun|mpiexec) has exited due to process rank \d+ with PID \d+ "
            r"on\s+node (?P<host>\S+)"
        ),
        True,
    ),
    (
        re.compile(r"\b(?:mpirun|prterun|orterun|mpiexec) detected that one or more processes exited with non-zero"),
        False,
    ),
    (re.compile(r"\b(?:mpirun|prterun|orterun|mpiexec) (?:noticed|has exited)"), False),
    (re.compile(r"Primary job\s+terminated normally, but \d+ process(?:es)? returned"), False),
    (re.compile(r"\b(?:ORTE|PRTE) (?:was unable to reliably start|has lost communication)"), False),
    (re.compile(r"MPI_ABORT was invoked on rank \d+"), False),
    (
        re.compile(
            r"\[(?P<host>[^\s:\]]+):\d+\] "
            r"(?:\*\*\* Process received signal|Signal: |\*\*\* An error occurred|.*aborting the MPI job)"
        ),
        True,
    ),
    (re.compile(r"\bssh: connect to host (?P<host>\S+) port \d+: "), True),
    (re.compile(r"\bssh: Could not resolve hostname (?P<host>[^\s:]+)"), True),
    (re.compile(r"^Host key verification failed\.|^Permission denied \(publickey|orted: command not found"), False),
    (re.compile(r"\bsrun: error: Node failure on (?P<host>\S+)"), True),
    (re.compile(r"\bsrun: error: (?P<host>[^\s:]+): tasks? [\d,\-]+: "), True),
    (re.compile(r"\bslurmstepd: error: \*\*\* (?:STEP|JOB) \S+ ON (?P<host>\S+) CANCELLED"), True),
    (re.compile(r"\bsrun: (?:error: |Job step aborted|Force Terminated)"), False),
    (re.compile(r"\bstart failed on (?P<host>[^\s:]+): "), True),
    (re.compile(r"^(?P<host>[^\s:]+): rank \d+ (?:died from signal|exited with code) "), True),
    (re.compile(r"\bCXI alloc failed on "), False),
    (re.compile(r"application called MPI_Abort|BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES"), False),
    (re.compile(r"=\s+PID \d+ RUNNING AT (?P<host>\S+)"), True),
)
#: words a launcher line holds, one of them at least (lower case): a cheap test before the patterns above
_HINTS = (
    "noticed", "exited", "terminated", "unable", "lost comm", "abort", "signal", "ssh", "denied",
    "verification", "orted", "srun", "slurm", "start failed", "died", "cxi", "running at", "error occurred",
)  # fmt: skip
#: any of `_HINTS`, one search instead of a test per word
_HINT = re.compile("|".join(re.escape(word) for word in _HINTS))
#: the dashed rule that opens and closes an Open MPI help box
BOX_RULE = re.compile(r"^-{20,}\s*$")


@dataclass(frozen=True)
class Failure:
    """What a failure line is and the host it names (None when it names none)."""

    kind: str
    host: str | None


def classify(line: str) -> Failure | None:
    """The failure a foreign line reports, or None for any other line."""
    if "Test " in line:
        m = _TEST.match(line)
        if m:
            return Failure(TEST, m.group("h1") or m.group("h2") or m.group("h3"))
    if " NCCL WARN " in line:
        m = _WARN.search(line)
        return Failure(NCCL, m.group("host") if m else None)
    if _HINT.search(line.lower()) is None:
        return None
    for pattern, named in _LAUNCHER:
        m = pattern.search(line)
        if m:
            return Failure(LAUNCHER, m.group("host") if named else None)
    return None
