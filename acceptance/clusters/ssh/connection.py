"""One SSH connection per host, kept for the run: connect and command deadlines, keepalives, a record of each command.

Authentication is OpenSSH's order: the key files of the profile or the ssh config, the
ssh-agent, then the default keys (``~/.ssh/id_*``) when no key was named. A jump host is one
connection shared by every host behind it; its key is checked like theirs.
"""

from __future__ import annotations

import select
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import paramiko

from acceptance.clusters.ssh.hostkeys import KnownHosts, VerifiedKey
from acceptance.clusters.ssh.targets import Endpoint, HostTarget
from acceptance.errors import HostKeyRefused, SshError

KEEPALIVE_S = 15
MAX_OUTPUT = 64 * 1024 * 1024


@dataclass(frozen=True)
class CommandResult:
    """What one remote command did: its exit status (None: it did not finish), output, timings."""

    node: str
    command: str
    exit_code: int | None
    stdout: str
    stderr: str
    started: datetime
    finished: datetime
    timed_out: bool = False

    @property
    def seconds(self) -> float:
        return (self.finished - self.started).total_seconds()


@dataclass
class _Opened:
    client: paramiko.SSHClient
    key: VerifiedKey
    server_version: str
    jump: paramiko.SSHClient | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)


class Connector:
    """Opens and keeps the run's connections; `closing` ends every wait in progress."""

    def __init__(self, known: KnownHosts, connect_timeout_s: float) -> None:
        self.known = known
        self.connect_timeout_s = connect_timeout_s
        self.closing = threading.Event()
        self._jumps: dict[Endpoint, _Opened] = {}
        self._lock = threading.Lock()

    def _connect(self, who: str, endpoint: Endpoint, sock: paramiko.Channel | None) -> _Opened:
        client = self.known.client()
        timeout = self.connect_timeout_s
        keys: Any = list(endpoint.key_files) or None  # paramiko takes a list, its stubs say one path
        try:
            client.connect(
                endpoint.address, endpoint.port, username=endpoint.user, key_filename=keys, allow_agent=True,
                look_for_keys=not endpoint.key_files, timeout=timeout, banner_timeout=timeout, auth_timeout=timeout,
                channel_timeout=timeout, sock=sock,
            )  # fmt: skip
        except HostKeyRefused as exc:
            client.close()
            raise HostKeyRefused(f"{who}: {exc}") from None
        except paramiko.BadHostKeyException as exc:
            client.close()
            raise self.known.refuse_changed(who, endpoint, exc) from None
        except paramiko.AuthenticationException as exc:
            client.close()
            keys = ", ".join(endpoint.key_files) or "the ssh-agent and ~/.ssh/id_*"
            raise SshError(f"{who}: authentication as {endpoint.user} failed ({exc}; tried {keys})") from None
        except (OSError, paramiko.SSHException, EOFError) as exc:
            client.close()
            raise SshError(f"{who}: cannot connect to {endpoint}: {_why(exc)}") from None
        transport = client.get_transport()
        assert transport is not None
        transport.set_keepalive(KEEPALIVE_S)
        key = self.known.verified(endpoint, transport.get_remote_server_key())
        return _Opened(client, key, transport.remote_version)

    def open(self, target: HostTarget) -> _Opened:
        sock = None
        jump = None
        if target.jump is not None:
            jump = self._jump(target.jump)
            transport = jump.client.get_transport()
            if transport is None or not transport.is_active():
                raise SshError(f"{target.node}: the jump host {target.jump} closed the connection")
            try:
                sock = transport.open_channel("direct-tcpip", (target.endpoint.address, target.endpoint.port),
                                              ("127.0.0.1", 0), timeout=self.connect_timeout_s)  # fmt: skip
            except (OSError, paramiko.SSHException) as exc:
                raise SshError(f"{target.node}: the jump host {target.jump} cannot reach {target.endpoint}: "
                               f"{_why(exc)}") from None  # fmt: skip
        opened = self._connect(target.node, target.endpoint, sock)
        opened.jump = jump.client if jump else None
        return opened

    def _jump(self, endpoint: Endpoint) -> _Opened:
        with self._lock:
            found = self._jumps.get(endpoint)
            transport = found.client.get_transport() if found else None
            if found is not None and transport is not None and transport.is_active():
                return found
            opened = self._connect(f"jump host {endpoint.address}", endpoint, None)
            self._jumps[endpoint] = opened
            return opened

    def close(self) -> None:
        self.closing.set()
        with self._lock:
            for opened in self._jumps.values():
                opened.client.close()
            self._jumps.clear()


def _why(exc: BaseException) -> str:
    if isinstance(exc, paramiko.ssh_exception.NoValidConnectionsError) and exc.errors:
        return _why(next(iter(exc.errors.values())))
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, socket.timeout | TimeoutError):
        return "timed out"
    if isinstance(exc, socket.gaierror):
        return f"unknown host ({exc.strerror})"
    return str(exc) or type(exc).__name__


class Connection:
    """The run's connection to one host (opened on first use, reopened once if it dropped)."""

    def __init__(self, target: HostTarget, connector: Connector) -> None:
        self.target = target
        self.connector = connector
        self._opened: _Opened | None = None
        self._lock = threading.Lock()
        self.ever_connected = False

    @property
    def node(self) -> str:
        return self.target.node

    def ensure(self) -> _Opened:
        with self._lock:
            transport = self._opened.client.get_transport() if self._opened else None
            if self._opened is None or transport is None or not transport.is_active():
                if self.connector.closing.is_set():
                    raise SshError(f"{self.node}: the run is closing")
                self._opened = self.connector.open(self.target)
                self.ever_connected = True
            return self._opened

    @property
    def key(self) -> VerifiedKey | None:
        return self._opened.key if self._opened else None

    @property
    def server_version(self) -> str:
        return self._opened.server_version if self._opened else ""

    def run(self, command: str, timeout_s: float, on_stdout: Callable[[bytes], None] | None = None) -> CommandResult:
        """Run `command` (through the user's login shell, as sshd does); stop reading at the deadline."""
        opened = self.ensure()
        started, start = datetime.now(UTC), time.monotonic()
        transport = opened.client.get_transport()
        if transport is None:
            raise SshError(f"{self.node}: the connection is closed")
        try:
            channel = transport.open_session(timeout=self.connector.connect_timeout_s)
            channel.exec_command(command)
        except (OSError, paramiko.SSHException, EOFError) as exc:
            raise SshError(f"{self.node}: cannot run a command: {_why(exc)}") from None
        out, err = bytearray(), bytearray()
        timed_out = False
        try:
            while True:
                while channel.recv_ready():
                    chunk = channel.recv(65536)
                    out += chunk[: max(0, MAX_OUTPUT - len(out))]
                    if on_stdout is not None:
                        on_stdout(chunk)
                while channel.recv_stderr_ready():
                    err += channel.recv_stderr(65536)[: max(0, MAX_OUTPUT - len(err))]
                drained = not channel.recv_ready() and not channel.recv_stderr_ready()
                # the exit status can arrive before the last of the output has been decrypted into the
                # buffers: the command's output is whole only at the channel's EOF (or its close)
                if drained and (channel.closed or (channel.eof_received and channel.exit_status_ready())):
                    break
                if time.monotonic() - start > timeout_s:
                    timed_out = True
                    break
                if self.connector.closing.is_set():
                    break
                select.select([channel], [], [], 0.1)
        finally:
            code = channel.recv_exit_status() if channel.exit_status_ready() else None
            code = None if code == -1 else code  # -1: the server sent a signal, not an exit status
            channel.close()
        return CommandResult(self.node, command, code, out.decode("utf-8", "replace"),
                             err.decode("utf-8", "replace"), started, datetime.now(UTC), timed_out)  # fmt: skip

    def close(self) -> None:
        with self._lock:
            if self._opened is not None:
                self._opened.client.close()
                self._opened = None
