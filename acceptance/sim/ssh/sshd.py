"""One real OpenSSH ``sshd`` on loopback for the simulated hosts: one listening address per node.

The sessions of each address see the node's name (``SIM_SSH_NODE``), the simulator's folder
(``SIM_SSH_DIR``), the shims first on their ``PATH``, a ``HOME`` and a ``TMPDIR`` of their own
(a fresh host: no login scripts of the machine's user; Open MPI's session files apart, as on
separate machines). Keys are made with ``ssh-keygen``: an ed25519
host key (its public half goes into a known_hosts file, one line per address) and an ed25519
client key that is the only one ``authorized_keys`` accepts. The sshd runs as the user who
runs the suite, who is the only user it lets in; as root, in a PID namespace of its own.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from acceptance.errors import ClusterError, UsageError

INSTALL_HINT = (
    "the simulated SSH cluster needs OpenSSH's sshd and ssh-keygen and Open MPI's mpirun (Debian/Ubuntu: "
    "`apt-get install -y openssh-server openmpi-bin`); `--cluster=sim` needs none of them"
)


def _which_sshd() -> str | None:
    return shutil.which("sshd", path=f"/usr/sbin:/usr/local/sbin:/sbin:{os.environ.get('PATH', '')}")


def missing_tools() -> list[str]:
    """The programs the simulated hosts need (sshd, ssh-keygen, mpirun) that this machine lacks."""
    found = (("sshd", _which_sshd()), ("ssh-keygen", shutil.which("ssh-keygen")), ("mpirun", shutil.which("mpirun")))
    return [name for name, path in found if path is None]


def sshd_path() -> str:
    """The sshd binary (with ssh-keygen and mpirun beside it), or a usage error saying what to install."""
    found, missing = _which_sshd(), missing_tools()
    if found is None or missing:
        raise UsageError(f"{', '.join(missing)} not found: {INSTALL_HINT}")
    return found


def keygen(path: Path, comment: str) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)],
                   check=True, capture_output=True, timeout=30)  # fmt: skip


def sshd_config(folder: Path, port: int, addresses: Mapping[str, str], user: str, path_dirs: Sequence[str]) -> str:
    """sshd_config of the simulated hosts (`addresses`: node → loopback address it listens on)."""
    lines = [
        f"Port {port}",
        *(f"ListenAddress {address}" for address in addresses.values()),
        f"HostKey {folder}/ssh_host_ed25519_key",
        f"AuthorizedKeysFile {folder}/authorized_keys",
        f"PidFile {folder}/sshd.pid",
        f"AllowUsers {user}",
        "StrictModes no",
        "UsePAM no",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "PubkeyAuthentication yes",
        "PermitRootLogin prohibit-password",
        "AllowTcpForwarding yes",
        "X11Forwarding no",
        "PrintMotd no",
        "PrintLastLog no",
        "MaxStartups 512",
        "MaxSessions 256",
        "LogLevel ERROR",
    ]
    path = ":".join(path_dirs)
    for node, address in addresses.items():
        home = folder / "home" / node
        env = f"PATH={path} HOME={home} TMPDIR={home}/tmp SIM_SSH_DIR={folder} SIM_SSH_NODE={node}"
        lines += [f"Match LocalAddress {address}", f"  SetEnv {env}"]
    return "\n".join(lines) + "\n"


def own_process_table() -> list[str]:
    """The prefix that runs sshd in a PID namespace of its own, when this machine allows it (root, unshare).

    The simulated hosts then see their own processes only, as separate machines do (``ps``, the
    harness's process scans), another simulated cluster's are invisible to them, and everything
    their sessions started ends with sshd, the namespace's first process.
    """
    unshare = shutil.which("unshare")
    if os.geteuid() != 0 or unshare is None:
        return []
    prefix = [unshare, "--pid", "--mount", "--fork", "--mount-proc", "--kill-child"]
    try:
        probe = subprocess.run([*prefix, "true"], capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return []
    return prefix if probe.returncode == 0 else []


def start_sshd(
    binary: str, config: Path, log: Path, addresses: Mapping[str, str], port: int
) -> subprocess.Popen[bytes]:
    """Run sshd in the foreground (the watchdog ends it with this process) and wait until every address answers."""
    check = subprocess.run([binary, "-t", "-f", str(config)], capture_output=True, text=True, timeout=30, check=False)
    if check.returncode != 0:
        raise ClusterError(f"sshd refuses its configuration {config}: {check.stderr.strip()}")
    with log.open("ab") as out:
        proc = subprocess.Popen([*own_process_table(), binary, "-D", "-e", "-f", str(config)], stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)  # fmt: skip
    deadline = time.monotonic() + 20
    waiting = set(addresses.values())
    while waiting:
        if proc.poll() is not None:
            raise ClusterError(f"sshd exited {proc.returncode}: {log.read_text(errors='replace').strip()[-500:]}")
        if time.monotonic() > deadline:
            proc.terminate()
            raise ClusterError(f"sshd does not answer on {', '.join(sorted(waiting))} port {port}")
        for address in list(waiting):
            try:
                with socket.create_connection((address, port), timeout=0.5):
                    waiting.discard(address)
            except OSError:
                pass
        time.sleep(0.05)
    return proc
