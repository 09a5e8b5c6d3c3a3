"""Loopback ports for the simulator's daemons (slurmctld and each slurmd, sshd, Prometheus).

A port found free by binding it and letting it go can be taken before the daemon binds it: by the local port
of any outgoing connection on the machine (the kernel picks those from the ephemeral range,
``/proc/sys/net/ipv4/ip_local_port_range``), or by another simulated cluster starting at the same moment.
Either way the daemon cannot listen (a slurmd that never registers, its node ``unknown*`` until the start
times out). The ports given here come from outside the ephemeral range, and each one given out is
remembered for `HOLD_S` in a file of this user, read and written under a lock, so that no other start on
this machine is given it before its daemon has bound it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import random
import socket
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from acceptance.errors import ClusterError

HOLD_S = 300.0  # far longer than any daemon of ours takes to bind its port
EPHEMERAL = Path("/proc/sys/net/ipv4/ip_local_port_range")
DEFAULT_EPHEMERAL = (32768, 60999)  # Linux's default range
TRIES = 2000


def candidates(ephemeral: tuple[int, int]) -> range:
    """The ports outside the ephemeral range that we give out: the 12,000 below it, or those above it when
    the range starts too low to leave room (a machine tuned for many outgoing connections)."""
    low, high = ephemeral
    if low - 12_000 >= 10_000:
        return range(low - 12_000, low)
    if high < 65_535 - 4_000:
        return range(high + 1, 65_536)
    raise ClusterError(f"{EPHEMERAL} is {low} {high}: no loopback port is left outside the ephemeral range")


def ephemeral_range(path: Path = EPHEMERAL) -> tuple[int, int]:
    try:
        low, high = (int(v) for v in path.read_text().split())
    except (OSError, ValueError):
        return DEFAULT_EPHEMERAL
    return low, high


def reserve(count: int, address: str = "127.0.0.1", registry: Path | None = None,
            pool: range | None = None) -> list[int]:  # fmt: skip
    """`count` distinct ports free on `address` now, none given out by this function in the last `HOLD_S`
    (from `pool`, by default `candidates` of this machine's ephemeral range)."""
    pool = pool if pool is not None else candidates(ephemeral_range())
    rng = random.Random()
    with _registry(registry or _default_registry()) as given:
        now = time.time()
        for old in [key for key, at in given.items() if now - at >= HOLD_S]:
            del given[old]
        recent = {int(port) for port in given}
        found: list[int] = []
        for _ in range(TRIES):
            if len(found) == count:
                break
            port = rng.choice(pool)
            if port in recent or port in found or not _free(address, port):
                continue
            found.append(port)
        if len(found) < count:
            raise ClusterError(f"no {count} free loopback ports on {address} in {pool.start}-{pool.stop - 1}")
        given.update({str(port): now for port in found})
    return found


def _free(address: str, port: int) -> bool:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the daemons bind: TIME_WAIT is no obstacle
        try:
            sock.bind((address, port))
        except OSError:
            return False
    return True


def _default_registry() -> Path:
    return Path(tempfile.gettempdir()) / f"acceptance-ports-{os.geteuid()}.json"


@contextlib.contextmanager
def _registry(path: Path) -> Iterator[dict[str, float]]:
    """The ports given out (port -> when), locked against every other process for the block; written back."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "r+", encoding="utf-8") as file:
        fcntl.flock(file, fcntl.LOCK_EX)
        text = file.read()
        try:
            given = {str(k): float(v) for k, v in json.loads(text).items()} if text.strip() else {}
        except (ValueError, AttributeError, TypeError):
            given = {}  # a file cut short by a killed process: only a memory of recent ports is lost
        yield given
        file.seek(0)
        file.truncate()
        file.write(json.dumps(given))
