"""Host keys: checked strictly against known_hosts, never added behind the user's back.

An unknown key and a changed key are refused with the host, the key type and the SHA256
fingerprint of what the server offered, and how to accept it after checking the fingerprint
out of band (``ssh-keyscan``). Only ``--ssh-insecure-accept-new`` accepts an unknown key
(like OpenSSH's ``StrictHostKeyChecking=accept-new``, in memory for this run: the file is
never written); a changed key is refused even then.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

import paramiko

from acceptance.clusters.ssh.targets import Endpoint, split_address
from acceptance.errors import HostKeyRefused, UsageError


@dataclass(frozen=True)
class VerifiedKey:
    """The host key a connection was made with, and how it was trusted."""

    key_type: str
    fingerprint: str
    base64: str
    trusted_by: str  # "known_hosts <path>" or "accepted unverified (--ssh-insecure-accept-new)"

    def as_dict(self) -> dict[str, str]:
        return {"type": self.key_type, "fingerprint": self.fingerprint, "trusted_by": self.trusted_by}


def keyscan_type(key_type: str) -> str:
    """The ``ssh-keyscan -t`` name of a key type (``ssh-ed25519`` → ``ed25519``)."""
    if "ed25519" in key_type:
        return "ed25519"
    if key_type.startswith("ecdsa"):
        return "ecdsa"
    return "rsa"


def keyscan_hint(endpoint: Endpoint, key_type: str, known_hosts: Path) -> str:
    port = f" -p {endpoint.port}" if endpoint.port != 22 else ""
    return f"ssh-keyscan -t {keyscan_type(key_type)}{port} {endpoint.address} >> {known_hosts}"


def unknown_message(who: str, endpoint: Endpoint, key: paramiko.PKey, known_hosts: Path) -> str:
    return (
        f"host key of {who} is not known: {endpoint.known_hosts_name} offers {key.get_name()} {key.fingerprint}, "
        f"which {known_hosts} does not list; check that fingerprint out of band (on the console: "
        f"ssh-keygen -lf /etc/ssh/ssh_host_{keyscan_type(key.get_name())}_key.pub), then accept it with "
        f"`{keyscan_hint(endpoint, key.get_name(), known_hosts)}`"
    )


def changed_message(who: str, endpoint: Endpoint, got: paramiko.PKey, expected: paramiko.PKey, known: Path) -> str:
    name = endpoint.known_hosts_name
    return (
        f"host key of {who} has CHANGED: {name} offers {got.get_name()} {got.fingerprint}, {known} lists "
        f"{expected.get_name()} {expected.fingerprint}. A reinstalled host or someone in the middle: check the new "
        f"fingerprint out of band, then replace the entry (`ssh-keygen -R '{name}' -f {known}` and "
        f"`{keyscan_hint(endpoint, got.get_name(), known)}`)"
    )


class KnownHosts:
    """The known_hosts file of the run (the profile's, or the user's), read once, never written."""

    def __init__(self, path: Path | None, *, accept_new: bool = False) -> None:
        explicit = path is not None
        self.path = path or Path.home() / ".ssh" / "known_hosts"
        self.accept_new = accept_new
        self.keys = paramiko.HostKeys()
        self.accepted: dict[str, VerifiedKey] = {}
        self._lock = threading.Lock()
        if self.path.is_file():
            try:
                self.keys.load(str(self.path))
            except (OSError, paramiko.SSHException) as exc:
                raise UsageError(f"ssh.known_hosts {self.path}: cannot read it ({exc})") from None
        elif explicit:
            raise UsageError(
                f"ssh.known_hosts: {self.path} does not exist; create it from keys checked out of band, "
                f"e.g. `ssh-keyscan -t ed25519 HOST >> {self.path}`"
            )

    def client(self) -> paramiko.SSHClient:
        """A client that knows these keys and refuses (or, with accept-new, records) any other."""
        client = paramiko.SSHClient()
        for name, entries in self.keys.items():
            for kind, key in entries.items():
                client.get_host_keys().add(name, kind, key)
        client.set_missing_host_key_policy(_Policy(self))
        return client

    def verified(self, endpoint: Endpoint, key: paramiko.PKey) -> VerifiedKey:
        with self._lock:
            accepted = self.accepted.get(endpoint.known_hosts_name)
        if accepted is not None and accepted.fingerprint == key.fingerprint:
            return accepted
        return VerifiedKey(key.get_name(), key.fingerprint, key.get_base64(), f"known_hosts {self.path}")

    def refuse_changed(self, who: str, endpoint: Endpoint, exc: paramiko.BadHostKeyException) -> HostKeyRefused:
        return HostKeyRefused(changed_message(who, endpoint, exc.key, exc.expected_key, self.path))


class _Policy(paramiko.MissingHostKeyPolicy):
    def __init__(self, known: KnownHosts) -> None:
        self.known = known

    def missing_host_key(self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey) -> None:
        address, port = split_address(hostname)  # known_hosts' ``host`` or ``[host]:port``
        endpoint = Endpoint(address, port or 22, "")
        if not self.known.accept_new:
            raise HostKeyRefused(unknown_message(hostname, endpoint, key, self.known.path))
        record = VerifiedKey(key.get_name(), key.fingerprint, key.get_base64(),
                             "accepted unverified (--ssh-insecure-accept-new)")  # fmt: skip
        with self.known._lock:
            self.known.accepted[hostname] = record
        client.get_host_keys().add(hostname, key.get_name(), key)
