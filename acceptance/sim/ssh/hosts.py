"""Simulated bare-metal hosts: the simulator, its shims and one real sshd on loopback, for one run.

`SimulatedHosts.start` makes a private folder (keys, known_hosts, sshd_config, shims, the
simulator's socket, an empty ssh client config), serves the simulator from a thread and starts
sshd listening on one loopback address per node (a ``node-down`` node's address is left out:
connections to it are refused, as to a host that is off). A watchdog process ends it all if
this process dies without closing it. `attach` opens the folder another process started.
"""

from __future__ import annotations

import getpass
import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from acceptance.errors import ClusterError
from acceptance.sim.model.runner import SimRunner
from acceptance.sim.ports import reserve
from acceptance.sim.ssh import sshd, watchdog
from acceptance.sim.ssh.server import SimServer
from acceptance.sim.ssh.shims import write_shims

SYSTEM_PATH = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")


@dataclass
class SimulatedHosts:
    """The hosts of one simulated SSH cluster (see module docstring)."""

    folder: Path
    addresses: Mapping[str, str]
    port: int
    user: str
    server: SimServer | None = None
    sshd: subprocess.Popen[bytes] | None = None
    watchdog: subprocess.Popen[bytes] | None = None

    @property
    def key(self) -> Path:
        return self.folder / "client_ed25519_key"

    @property
    def known_hosts(self) -> Path:
        return self.folder / "known_hosts"

    @property
    def ssh_config(self) -> Path:
        return self.folder / "ssh_config"

    @property
    def run_dir(self) -> Path:
        """Where the hosts keep the harness's run folders (each simulated cluster its own)."""
        return self.folder / "runs"

    @classmethod
    def start(cls, runner: SimRunner, addresses: Mapping[str, str], time_scale: float) -> SimulatedHosts:
        binary = sshd.sshd_path()
        if os.geteuid() == 0 and not Path("/run/sshd").is_dir():  # the privilege separation folder root's sshd needs
            Path("/run/sshd").mkdir(mode=0o755, parents=True, exist_ok=True)
        folder = Path(tempfile.mkdtemp(prefix="ra-sim-ssh-"))
        folder.chmod(0o755)  # sessions chdir into homes below it
        user = getpass.getuser()
        hosts = cls(folder, dict(addresses), reserve(1)[0], user)
        try:
            hosts._prepare(runner)
            hosts.server = SimServer(folder, runner, time_scale)
            hosts.server.start()
            hosts.watchdog = subprocess.Popen(
                [sys.executable, "-I", "-S", watchdog.__file__, str(os.getpid()), str(folder)],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
            )  # fmt: skip
            up = {n: a for n, a in addresses.items() if runner.faults.node_ready(n)}
            config = folder / "sshd_config"
            bin_dir = str(folder / "bin")
            config.write_text(sshd.sshd_config(folder, hosts.port, up, user, (bin_dir, *SYSTEM_PATH)))
            hosts.sshd = sshd.start_sshd(binary, config, folder / "sshd.log", up, hosts.port)
            (folder / watchdog.DAEMON_PID).write_text(f"{hosts.sshd.pid}\n")
        except BaseException:
            hosts.close()
            raise
        return hosts

    def _prepare(self, runner: SimRunner) -> None:
        try:
            sshd.keygen(self.folder / "ssh_host_ed25519_key", "recovery-acceptance simulated host")
            sshd.keygen(self.key, "recovery-acceptance")
        except (OSError, subprocess.SubprocessError) as exc:
            raise ClusterError(f"ssh-keygen failed in {self.folder}: {exc}") from None
        (self.folder / "authorized_keys").write_text(Path(f"{self.key}.pub").read_text())
        kind, blob = Path(f"{self.folder}/ssh_host_ed25519_key.pub").read_text().split()[:2]
        self.known_hosts.write_text("".join(f"[{a}]:{self.port} {kind} {blob}\n" for a in self.addresses.values()))
        self.ssh_config.write_text("# the simulated hosts use no ssh client configuration of the machine\n")
        for node in self.addresses:
            (self.folder / "home" / node / "tmp").mkdir(parents=True, exist_ok=True)
        (self.folder / "rendezvous").mkdir()
        write_shims(self.folder, runner.versions.os_image, runner.versions.dcgm)

    @classmethod
    def attach(cls, folder: Path, addresses: Mapping[str, str], port: int) -> SimulatedHosts:
        """The hosts another process of this run started (for an xdist worker)."""
        if not (folder / watchdog.DAEMON_PID).is_file():
            raise ClusterError(f"the simulated hosts of this run are gone ({folder})")
        return cls(folder, dict(addresses), port, getpass.getuser())

    def close(self) -> None:
        """Stop what this process started: the simulator, sshd, the sessions' processes, the folder."""
        if self.server is not None:
            self.server.close()
            self.server = None
        if self.sshd is not None:
            self.sshd.kill()  # in its own PID namespace this ends every process of the hosts' sessions too
            self.sshd.wait(timeout=30)
            self.sshd = None
        if self.watchdog is not None:
            watchdog.end(str(self.folder))
            self.watchdog.wait(timeout=10)
            self.watchdog = None
