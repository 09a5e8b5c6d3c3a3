"""Where each node is reached: the profile's ``ssh:`` section over the user's OpenSSH client config.

Precedence follows OpenSSH's (the command line wins over the config file): a port written
with the host (``10.0.0.7:2222``) > ``ssh.port`` > the config's ``Port`` > 22; ``ssh.user`` >
``User`` > the local user; ``ssh.key`` > ``IdentityFile``; ``ssh.jump`` > ``ProxyJump``. The
config is read with paramiko's own parser (``Host`` patterns, ``HostName``, ``%h`` tokens).
A ``ProxyCommand`` or a jump chain cannot be honoured and stops the run rather than being
skipped (that would connect some other way than the user configured).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import paramiko

from acceptance.clusters.ssh.mpi import known_hosts_name
from acceptance.clusters.ssh.settings import SshSettings
from acceptance.errors import UsageError


@dataclass(frozen=True)
class Endpoint:
    """One SSH server as the harness connects to it."""

    address: str
    port: int
    user: str
    key_files: tuple[str, ...] = ()

    @property
    def known_hosts_name(self) -> str:
        return known_hosts_name(self.address, self.port)

    def __str__(self) -> str:
        return f"{self.user}@{self.address} port {self.port}"


@dataclass(frozen=True)
class HostTarget:
    """A node of the agreement and how it is reached (directly, or through `jump`)."""

    node: str
    endpoint: Endpoint
    jump: Endpoint | None = None

    def describe(self) -> str:
        via = f" via {self.jump}" if self.jump else ""
        return f"{self.node} ({self.endpoint}{via})"


def split_address(text: str) -> tuple[str, int | None]:
    """``host``, ``host:22``, ``[fe80::1]:22``, ``fe80::1`` → (host, port or None)."""
    text = text.strip()
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
        return host, int(port) if port.isdigit() else None
    if text.count(":") == 1:
        host, _, port = text.partition(":")
        if not port.isdigit():
            raise UsageError(f"ssh host {text!r}: expected HOST or HOST:PORT")
        return host, int(port)
    return text, None


def _split_jump(text: str) -> tuple[str | None, str, int | None]:
    user, _, hostport = text.rpartition("@")
    host, port = split_address(hostport)
    return user or None, host, port


def load_config(path: Path | None) -> paramiko.SSHConfig:
    """The OpenSSH client config `path` (or ``~/.ssh/config`` when it exists; else an empty one)."""
    explicit = path is not None
    path = path or Path.home() / ".ssh" / "config"
    if not path.is_file():
        if explicit:
            raise UsageError(f"ssh.config: {path} does not exist")
        return paramiko.SSHConfig.from_text("")
    try:
        return paramiko.SSHConfig.from_path(str(path))
    except (OSError, paramiko.ssh_exception.ConfigParseError) as exc:
        raise UsageError(f"ssh.config {path}: cannot read it ({exc})") from None


def _endpoint(
    name: str,
    port: int | None,
    config: paramiko.SSHConfig,
    *,
    user: str | None,
    default_port: int | None,
    key: Path | None,
    local_user: str,
    what: str,
) -> tuple[Endpoint, str | None]:
    found = config.lookup(name)
    if found.get("proxycommand"):
        raise UsageError(
            f"{what}: the ssh config gives {name} a ProxyCommand, which this harness cannot honour; "
            "use ProxyJump or ssh.jump"
        )
    try:
        config_port = int(found["port"]) if "port" in found else None
    except ValueError:
        raise UsageError(f"{what}: the ssh config's Port for {name} is {found['port']!r}, not a number") from None
    keys = (str(key),) if key is not None else tuple(found.get("identityfile") or ())
    endpoint = Endpoint(
        address=str(found.get("hostname", name)),
        port=port or default_port or config_port or 22,
        user=user or found.get("user") or local_user,
        key_files=keys,
    )
    return endpoint, found.get("proxyjump")


def resolve_targets(
    settings: SshSettings, nodes: Sequence[str], config: paramiko.SSHConfig, local_user: str
) -> dict[str, HostTarget]:
    """node → HostTarget for every node of the agreement (and the head node)."""
    wanted = list(dict.fromkeys([*nodes, settings.head_node]))
    out: dict[str, HostTarget] = {}
    for node in wanted:
        address = settings.hosts.get(node)
        if address is None:
            raise UsageError(f"ssh.hosts has no address for node {node}")
        host, port = split_address(address)
        endpoint, proxy_jump = _endpoint(host, port, config, user=settings.user, default_port=settings.port,
                                         key=settings.key, local_user=local_user, what=f"ssh.hosts.{node}")  # fmt: skip
        jump_text = settings.jump or (None if proxy_jump in (None, "none") else proxy_jump)
        jump = None
        if jump_text:
            if "," in jump_text:
                raise UsageError(
                    f"ssh jump {jump_text!r} for {node}: a chain of jump hosts is not supported; name one bastion"
                )
            juser, jhost, jport = _split_jump(jump_text)
            jump, _ = _endpoint(jhost, jport, config, user=juser or settings.user, default_port=None,
                                key=settings.key, local_user=local_user, what="ssh.jump")  # fmt: skip
        out[node] = HostTarget(node, endpoint, jump)
    return out
