"""The shell the harness sends to a host (pure: same input, same text).

Every process the harness starts on a host carries two environment variables, the run-id
marker `MARKER` and the workload `WORKLOAD_MARKER`, and runs in a folder
``<run_dir>/<run-id>/<workload>/`` that holds its script, its output, its exit status and the
pid of its session; ``<run_dir>/<run-id>/lease`` holds, in the host's clock (epoch seconds),
until when the run holds its lease (`lease_lines`, renewed while the run is alive). Children
inherit the marker (``mpirun``'s remote daemons get it through their launch agent), so the
processes of a run are found by reading ``/proc/*/environ``, never by name, and a run that
crashed is cleaned up by its id. Scripts are POSIX ``sh`` and sent as ``sh -c '...'`` whatever
the user's login shell is.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

MARKER = "RECOVERY_ACCEPTANCE_RUN_ID"
WORKLOAD_MARKER = "RECOVERY_ACCEPTANCE_WORKLOAD"
STATUS_TAG = "@recovery-acceptance-status"
LEASE_FILE = "lease"
KILL_GRACE_S = 5.0
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def safe_name(text: str) -> str:
    """A folder name from a run id or workload name (no slashes, no spaces, never empty)."""
    return _UNSAFE.sub("-", text).strip("-.") or "x"


def run_folder(run_dir: str, run_id: str) -> str:
    return f"{run_dir.rstrip('/')}/{safe_name(run_id)}"


def workload_folder(run_dir: str, run_id: str, workload: str) -> str:
    return f"{run_folder(run_dir, run_id)}/{safe_name(workload)}"


def lease_lines(run_dir: str, run_id: str, seconds: float) -> str:
    """sh: write (or renew) the run's lease on this host: now + `seconds`, by the host's own clock."""
    folder = shlex.quote(run_folder(run_dir, run_id))
    return (f"mkdir -p {folder} && (umask 077; echo $(( $(date +%s) + {max(1, round(seconds))} )) > "
            f"{folder}/{LEASE_FILE}.tmp) && mv -f {folder}/{LEASE_FILE}.tmp {folder}/{LEASE_FILE}\n")  # fmt: skip


def sh(script: str) -> str:
    """The remote command that runs `script` with ``sh``, whatever the login shell is."""
    return f"sh -c {shlex.quote(script)}"


def _literal_regex(text: str) -> str:
    """`text` as a grep basic regex that does not match its own quoted form (``r[a]-...``)."""
    escaped = re.sub(r"([.[\]*^$\\])", r"\\\1", text)
    return f"[{escaped[0]}]{escaped[1:]}" if escaped and escaped[0].isalnum() else escaped


def marker_pids(run_id: str, workload: str | None = None) -> str:
    """sh: the pids whose environment holds the run's marker (and the workload's, when given)."""
    run = f"grep -l -s -a -z -x {shlex.quote(f'{MARKER}=' + _literal_regex(run_id))} /proc/[0-9]*/environ"
    if workload is not None:
        only = shlex.quote(f"{WORKLOAD_MARKER}=" + _literal_regex(workload))
        run = f'files=$({run}); [ -z "$files" ] || grep -l -s -a -z -x {only} $files'
    return f"{{ {run}; }} 2>/dev/null | sed -n 's,^/proc/\\([0-9]*\\)/environ$,\\1,p' | grep -v -x \"$$\""


def launch_script(
    folder: str,
    run_id: str,
    workload: str,
    script: str,
    env: Mapping[str, str],
    deadline_s: float,
    files: Mapping[str, str] | None = None,
) -> str:
    """Start `script` detached in its own session under the markers; print its pid.

    The workload outlives the SSH channel (output, exit status and pid go to files in
    `folder`), and `timeout` ends it at its deadline even if the harness is gone.
    """
    lines = [
        "set -e",
        "umask 077",
        f"D={shlex.quote(folder)}",
        'mkdir -p "$D"',
        'cd "$D"',
        'if [ -e pid ]; then echo "recovery-acceptance: $D was started before (pid $(cat pid))" >&2; exit 3; fi',
    ]
    for name, content in sorted({**(files or {}), "run.sh": script}.items()):
        lines.append(f"printf '%s' {shlex.quote(content)} > {shlex.quote(safe_name(name))}")
    wrap = (
        "echo $$ > pid.tmp && mv pid.tmp pid\n"
        f"timeout -k {int(KILL_GRACE_S) * 2} {max(1, round(deadline_s))} sh ./run.sh > out 2> err < /dev/null\n"
        "echo $? > rc.tmp && mv rc.tmp rc\n"
    )
    lines.append(f"printf '%s' {shlex.quote(wrap)} > wrap.sh")
    for name, value in [(MARKER, run_id), (WORKLOAD_MARKER, workload), *sorted(env.items())]:
        lines.append(f"{name}={shlex.quote(value)}; export {name}")
    lines += [
        "setsid sh ./wrap.sh > /dev/null 2>&1 < /dev/null &",
        "i=0; while [ ! -e pid ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done",
        '[ -e pid ] || { echo "recovery-acceptance: the workload did not start in $D" >&2; exit 4; }',
        "cat pid",
    ]
    return "\n".join(lines) + "\n"


def wait_script(folder: str, poll_s: float = 0.2) -> str:
    """Wait for the workload of `folder` to end; print its stdout and stderr, then a status line on stderr."""
    return "\n".join([
        f"D={shlex.quote(folder)}",
        f'cd "$D" 2>/dev/null || {{ echo "{STATUS_TAG} gone: $D does not exist" >&2; exit 0; }}',
        'pid=$(cat pid 2>/dev/null)',
        f'while [ ! -e rc ] && [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; do sleep {poll_s}; done',
        "cat out 2>/dev/null",
        "cat err >&2 2>/dev/null",
        f'if [ -e rc ]; then echo "{STATUS_TAG} rc=$(cat rc)" >&2; else echo "{STATUS_TAG} killed" >&2; fi',
    ]) + "\n"  # fmt: skip


def follow_script(folder: str, poll_s: float = 0.2) -> str:
    """Print the workload's stdout as it grows, until it has ended (its exit status written, or its
    session gone), then what is left of it; nothing when its folder does not exist."""
    return "\n".join([
        f"D={shlex.quote(folder)}",
        'cd "$D" 2>/dev/null || exit 0',
        "n=0",
        "while :; do",
        '  e=0; [ -e rc ] && e=1; pid=$(cat pid 2>/dev/null); [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || e=1',
        "  s=$(wc -c < out 2>/dev/null || echo 0)",
        '  if [ "$s" -gt "$n" ]; then tail -c +$((n+1)) out | head -c $((s-n)); n=$s; fi',
        '  [ "$e" = 1 ] && break',
        f"  sleep {poll_s}",
        "done",
    ]) + "\n"  # fmt: skip


def kill_script(run_id: str, run_dir: str, workload: str | None = None, grace_s: float = KILL_GRACE_S) -> str:
    """End the processes of a run (or of one workload of it): TERM, up to `grace_s`, then KILL.

    Removes the run's folder when the whole run is ended; prints what is still alive after
    all (``left PID ARGS``), which should be nothing.
    """
    tries = max(1, int(grace_s / 0.2))
    found = marker_pids(run_id, workload)
    lines = [
        f"p=$({found} | tr '\\n' ' ')",
        '[ -z "${p% }" ] || kill -TERM $p 2>/dev/null || true',
        f'i=0; while [ -n "${{p% }}" ] && [ $i -lt {tries} ]; do sleep 0.2; p=$({found} | tr "\\n" " "); '
        "i=$((i+1)); done",
        '[ -z "${p% }" ] || kill -KILL $p 2>/dev/null || true',
        '[ -z "${p% }" ] || sleep 0.3',
    ]
    if workload is None:
        lines.append(f"rm -rf {shlex.quote(run_folder(run_dir, run_id))}")
    lines += [
        f"p=$({found} | tr '\\n' ' ')",
        '[ -z "${p% }" ] || ps -o pid=,args= -p "$(echo $p | tr " " ",")" | sed "s/^ */left /"',
        "exit 0",
    ]
    return "\n".join(lines) + "\n"


def scan_script(run_dir: str) -> str:
    """List every process with a run marker (pid, run id, age, command) and every run folder (age)."""
    return "\n".join([
        "echo @now; date +%s",
        "echo @markers",
        f"grep -a -s -z -o -H '^{MARKER}=.*' /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n'",
        "echo @ps",
        "ps -e -o pid=,etimes=,args= 2>/dev/null",
        "echo @folders",
        f"for d in {shlex.quote(run_dir.rstrip('/'))}/*/; do [ -d \"$d\" ] && stat -c '%Y %n' \"$d\"; done 2>/dev/null",
        "echo @leases",
        f"for f in {shlex.quote(run_dir.rstrip('/'))}/*/{LEASE_FILE}; do [ -f \"$f\" ] && "
        "printf '%s %s\\n' \"$(head -c 32 \"$f\")\" \"$f\"; done 2>/dev/null",
        "exit 0",
    ]) + "\n"  # fmt: skip


@dataclass(frozen=True)
class RemoteProcess:
    pid: int
    run_id: str
    age_s: float | None
    args: str


@dataclass(frozen=True)
class RunFolderEntry:
    run_id: str
    path: str
    age_s: float | None


@dataclass(frozen=True)
class RunLease:
    """A run's lease file on one host: seconds left (negative: expired), by the host's clock."""

    run_id: str
    remaining_s: float


@dataclass(frozen=True)
class Scan:
    processes: tuple[RemoteProcess, ...]
    folders: tuple[RunFolderEntry, ...]
    leases: tuple[RunLease, ...] = ()

    def run_ids(self) -> set[str]:
        return {p.run_id for p in self.processes} | {f.run_id for f in self.folders}


def parse_scan(text: str) -> Scan:
    """The output of `scan_script` as records."""
    sections: dict[str, list[str]] = {}
    current = ""
    for line in text.splitlines():
        if line.startswith("@") and line[1:] in ("now", "markers", "ps", "folders", "leases"):
            current = line[1:]
            sections[current] = []
        elif current and line.strip():
            sections[current].append(line)
    now_lines = sections.get("now") or []
    now = int(now_lines[0]) if now_lines and now_lines[0].strip().isdigit() else None
    runs: dict[int, str] = {}
    for line in sections.get("markers", []):
        found = re.match(rf"^/proc/(\d+)/environ:{MARKER}=(.*)$", line)
        if found:
            runs[int(found.group(1))] = found.group(2)
    processes = []
    for line in sections.get("ps", []):
        parts = line.split(None, 2)
        if len(parts) >= 2 and parts[0].isdigit() and int(parts[0]) in runs:
            age = float(parts[1]) if parts[1].isdigit() else None
            processes.append(RemoteProcess(int(parts[0]), runs[int(parts[0])], age, parts[2] if len(parts) > 2 else ""))
    folders = []
    for line in sections.get("folders", []):
        stamp, _, path = line.partition(" ")
        name = path.rstrip("/").rsplit("/", 1)[-1]
        age = float(now - int(stamp)) if now is not None and stamp.isdigit() else None
        folders.append(RunFolderEntry(name, path.rstrip("/"), age))
    leases = []
    for line in sections.get("leases", []):
        stamp, _, path = line.partition(" ")
        parts = path.rstrip("/").split("/")
        if now is not None and stamp.isdigit() and len(parts) >= 2:  # an unreadable lease holds nothing
            leases.append(RunLease(parts[-2], float(int(stamp) - now)))
    return Scan(tuple(sorted(processes, key=lambda p: p.pid)), tuple(sorted(folders, key=lambda f: f.path)),
                tuple(sorted(leases, key=lambda r: r.run_id)))  # fmt: skip


@dataclass(frozen=True)
class WaitOutput:
    """What `wait_script` printed: the workload's stdout and stderr, and its exit status (None: killed)."""

    stdout: str
    stderr: str
    exit_code: int | None
    gone: bool = False


def parse_wait(stdout: str, stderr: str) -> WaitOutput:
    lines = stderr.splitlines(keepends=True)
    for i in range(len(lines) - 1, -1, -1):
        if lines[i].startswith(STATUS_TAG):
            status = lines[i][len(STATUS_TAG) :].strip()
            rest = "".join(lines[:i])
            if status.startswith("rc="):
                value = status[3:].strip()
                return WaitOutput(stdout, rest, int(value) if value.lstrip("-").isdigit() else None)
            return WaitOutput(stdout, rest, None, gone=status.startswith("gone"))
    return WaitOutput(stdout, stderr, None)


def exec_line(argv: Sequence[str]) -> str:
    """A script line that replaces the shell with `argv` (so the workload's pid is the script's)."""
    return f"exec {shlex.join(argv)}\n"
