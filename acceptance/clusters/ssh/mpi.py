"""Open MPI from a head node (pure): hostfile, the launcher's own SSH settings, the mpirun argv, its failures.

``mpirun`` on the head node reaches every other node with OpenSSH, configured by a file the
harness writes into the run folder: the node names of the hostfile map to the addresses of
the profile, host keys are checked strictly against the keys the harness itself verified
(``accept-new`` only under ``--ssh-insecure-accept-new``), and the daemons it starts there
carry the run-id marker through their launch agent. Open MPI 4 (ORTE) and 5 (PRRTE) name
these settings differently; `mpirun_argv` writes the right ones for the version the head
node reports.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from acceptance.clusters.ssh.remote import MARKER, WORKLOAD_MARKER

_VERSION = re.compile(r"\((Open MPI|OpenRTE|PRRTE)\)\s+v?([0-9][0-9.]*\w*)")


@dataclass(frozen=True)
class MpiVersion:
    implementation: str
    version: str

    @property
    def major(self) -> int:
        head = self.version.split(".", 1)[0]
        return int(head) if head.isdigit() else 0

    def __str__(self) -> str:
        return f"{self.implementation} {self.version}"


def parse_mpirun_version(text: str) -> MpiVersion | None:
    """``mpirun (Open MPI) 4.1.4`` → Open MPI 4.1.4; None when the text is not Open MPI's."""
    found = _VERSION.search(text)
    if found is None:
        return None
    implementation = "Open MPI" if found.group(1) in ("Open MPI", "OpenRTE") else found.group(1)
    return MpiVersion(implementation, found.group(2))


def hostfile(nodes: Sequence[str], slots: int) -> str:
    """One line per node, ``NAME slots=N``: Open MPI places exactly `slots` ranks on each."""
    return "".join(f"{node} slots={slots}\n" for node in nodes)


@dataclass(frozen=True)
class LauncherHost:
    """How the head node's ssh reaches one node: the name in the hostfile and its address."""

    name: str
    address: str
    port: int
    user: str


def known_hosts_name(address: str, port: int) -> str:
    """The name OpenSSH looks a host key up by: ``addr`` on port 22, ``[addr]:port`` otherwise."""
    return address if port == 22 else f"[{address}]:{port}"


def known_hosts(keys: Sequence[tuple[str, int, str, str]]) -> str:
    """known_hosts lines from (address, port, key type, base64 key) of keys the harness verified."""
    return "".join(f"{known_hosts_name(a, p)} {kind} {blob}\n" for a, p, kind, blob in keys)


def ssh_config(
    hosts: Sequence[LauncherHost],
    known_hosts_path: str,
    *,
    accept_new: bool,
    identity_file: str | None,
    connect_timeout_s: float,
) -> str:
    """The ssh_config mpirun's ssh is given with ``-F``: no other config, no prompts, strict keys."""
    lines = ["# written by recovery-acceptance for mpirun on the head node"]
    for host in hosts:
        lines += [f"Host {host.name}", f"  HostName {host.address}", f"  Port {host.port}", f"  User {host.user}"]
    lines += [
        "Host *",
        f"  UserKnownHostsFile {known_hosts_path}",
        "  GlobalKnownHostsFile /dev/null",
        f"  StrictHostKeyChecking {'accept-new' if accept_new else 'yes'}",
        "  BatchMode yes",
        f"  ConnectTimeout {max(1, round(connect_timeout_s))}",
        "  ServerAliveInterval 15",
        "  LogLevel ERROR",
    ]
    if identity_file:
        lines += [f"  IdentityFile {identity_file}", "  IdentitiesOnly yes"]
    return "\n".join(lines) + "\n"


def mpirun_argv(
    *,
    mpirun: str,
    major: int,
    nprocs: int,
    hostfile_path: str,
    ssh_config_path: str,
    run_id: str,
    workload: str,
    env_names: Sequence[str],
    extra_args: Sequence[str],
    argv: Sequence[str],
    session_dir: str | None = None,
) -> list[str]:
    """``mpirun`` with an explicit rank count and hostfile, the launcher's ssh settings, ``-x`` for each variable.

    The head node launches every daemon itself (no tree spawn: only it is known to reach all
    nodes), and each daemon starts as ``env <markers> orted`` (``prted`` for Open MPI 5).

    `session_dir`: where Open MPI 4's mpirun makes its session directory on the head node. Several
    mpiruns at once there (localization's groups) otherwise race to create the same
    ``$TMPDIR/ompi.<host>.<uid>`` and one fails "mkdir ... File exists" in orte_init (open-mpi/ompi#8510).
    """
    agent_env = f"env {MARKER}={run_id} {WORKLOAD_MARKER}={workload}"
    cmd = [mpirun, "--allow-run-as-root", "-np", str(nprocs), "--hostfile", hostfile_path, "--bind-to", "none"]
    if major >= 5:
        cmd += ["--prtemca", "plm_ssh_args", f"-F {ssh_config_path}",
                "--prtemca", "plm_ssh_no_tree_spawn", "1",
                "--prtemca", "prte_launch_agent", f"{agent_env} prted"]  # fmt: skip
    else:
        cmd += ["--mca", "plm_rsh_args", f"-F {ssh_config_path}",
                "--mca", "plm_rsh_no_tree_spawn", "1",
                "--mca", "orte_launch_agent", f"{agent_env} orted"]  # fmt: skip
        if session_dir is not None:
            cmd += ["--mca", "orte_local_tmpdir_base", session_dir]
    for name in env_names:
        cmd += ["-x", name]
    return [*cmd, *extra_args, *argv]


_NOTICED = re.compile(
    r"(?:mpirun|prterun|prte) noticed that process rank (\d+) with PID (\d+) on node (\S+) exited on signal (\d+)"
    r"(?: \(([^)]*)\))?"
)
_FIRST_FAILED = re.compile(r"Process name:\s*\[\[\d+,\d+\],(\d+)\]\s+Exit code:\s*(-?\d+)")
_SSH_LINE = re.compile(
    r"^(ssh: .*|Host key verification failed\.|.*Permission denied \(.*\)\.?|kex_exchange_identification: .*)$"
)
_PLAIN = (
    "There are not enough slots available in the system",
    "mpirun was unable to launch the specified application",
    "mpirun was unable to find the specified executable file",
    "prterun was unable to launch the specified application",
    "No such file or directory",
)


def launcher_reason(stdout: str, stderr: str, exit_code: int | None) -> str:
    """The launcher's own words for a failed run, in one line ("" when it says nothing of its own).

    ORTE/PRTE's "unable to reliably start one or more daemons" with the ssh line that caused
    it, "Host key verification failed.", a rank that died on a signal, the first rank that
    exited non-zero, too few slots, a program it could not execute.
    """
    text = "\n".join(part for part in (stderr, stdout) if part)
    flat = " ".join(text.split())
    ssh_lines = [line.strip() for line in text.splitlines() if _SSH_LINE.match(line.strip())]
    ssh = f" ({ssh_lines[0]})" if ssh_lines else ""
    for who in ("ORTE", "PRTE"):
        if f"{who} was unable to reliably start one or more daemons" in flat:
            return f"{who} was unable to reliably start one or more daemons{ssh}"
    if ssh_lines:
        return ssh_lines[0]
    noticed = _NOTICED.search(flat)
    if noticed:
        rank, pid, node, signal, name = noticed.groups()
        said = f" ({name})" if name else ""
        return f"rank {rank} (pid {pid}) on node {node} exited on signal {signal}{said}"
    first = _FIRST_FAILED.search(flat)
    if first:
        return f"rank {first.group(1)} exited with code {first.group(2)} and mpirun aborted the job"
    for phrase in _PLAIN:
        at = flat.find(phrase)
        if at >= 0:
            end = flat.find(". ", at)
            return flat[at : end + 1 if end > 0 else at + 160].strip()
    return ""


def env_names(env: Mapping[str, str]) -> list[str]:
    return sorted(env)
