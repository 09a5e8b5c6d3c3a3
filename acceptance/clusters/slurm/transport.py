"""Where Slurm's commands run: on this machine, or on the login node over the SSH backend's transport.

Both run one shell command line and give its exit status and output (`Answer`); a command that does not
finish within its timeout is an `Answer` with `timed_out` (the caller says which command, with its output).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from acceptance.errors import AcceptanceError, ClusterError


@dataclass(frozen=True)
class Answer:
    command: str
    exit_code: int | None
    stdout: str
    stderr: str
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out

    def said(self, limit: int = 600) -> str:
        """The command and what it printed, in one line for a verdict's evidence."""
        text = (self.stderr.strip() or self.stdout.strip()).replace("\n", " | ")
        how = "did not finish in time" if self.timed_out else f"exited {self.exit_code}"
        return f"`{self.command[:1000]}` {how}: {text[:limit] or 'no output'}"


class Transport(Protocol):
    where: str

    def run(self, command: str, timeout_s: float) -> Answer: ...

    def close(self) -> None: ...


class LocalTransport:
    """Commands in a local bash, with `env` added to this process's environment (``SLURM_CONF``, PATH ...);
    with `inherit` False, `env` alone (a simulated cluster's commands see nothing of this process's)."""

    where = "this machine"

    def __init__(self, env: Mapping[str, str] | None = None, *, inherit: bool = True) -> None:
        self.env = {**(os.environ if inherit else {}), **(env or {})}

    def run(self, command: str, timeout_s: float) -> Answer:
        try:
            done = subprocess.run(["bash", "-c", command], env=self.env, capture_output=True, text=True,
                                  timeout=timeout_s, check=False, stdin=subprocess.DEVNULL)  # fmt: skip
        except subprocess.TimeoutExpired as exc:
            out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else exc.stdout or ""
            err = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else exc.stderr or ""
            return Answer(command, None, out, err, timed_out=True)
        except OSError as exc:
            raise ClusterError(f"cannot run bash here: {exc}") from None
        return Answer(command, done.returncode, done.stdout, done.stderr)

    def close(self) -> None:
        return None


class LoginTransport:
    """Commands on the login node, over one kept SSH connection (known_hosts checked strictly, never auto-added)."""

    def __init__(self, login: str, *, connect_timeout_s: float = 15.0, accept_new: bool = False) -> None:
        from acceptance.clusters.ssh.hostset import HostSet
        from acceptance.clusters.ssh.settings import SshSettings

        self.where = f"login node {login}"
        settings = SshSettings(hosts={"login": login}, user=None, port=None, key=None, known_hosts=None,
                               head_node="login", connect_timeout_s=connect_timeout_s)  # fmt: skip
        self.hosts = HostSet(settings, ("login",), accept_new=accept_new)

    def run(self, command: str, timeout_s: float) -> Answer:
        try:
            result = self.hosts.connections["login"].run(command, timeout_s)
        except AcceptanceError as exc:
            raise ClusterError(f"{self.where}: {exc}") from None
        return Answer(command, result.exit_code, result.stdout, result.stderr, timed_out=result.timed_out)

    def close(self) -> None:
        self.hosts.close()
