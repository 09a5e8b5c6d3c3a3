"""The simulator's loopback ports: outside the ephemeral range, free, and never given twice while a daemon
may still be starting (another process included)."""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from acceptance.errors import ClusterError
from acceptance.sim import ports

ROOT = Path(__file__).resolve().parents[1]


def test_ports_are_free_distinct_and_outside_the_ephemeral_range() -> None:
    """From the machine's own registry: a private one could hand out a port a simulated daemon of another
    worker is given and binds meanwhile (it failed so once, the daemon's bind before the test's). Free as a
    daemon binds: with SO_REUSEADDR, so that a port whose last connections of another session's daemon are in
    TIME_WAIT counts as free (a plain bind refused one, beside a second session)."""
    low, high = ports.ephemeral_range()
    found = ports.reserve(64)
    assert len(set(found)) == 64
    assert all(not low <= port <= high and port in ports.candidates((low, high)) for port in found)
    for port in found:
        with socket.socket() as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(("127.0.0.1", port))
            sock.listen()  # a daemon listens on it: nothing else may


def test_the_pool_leaves_the_ephemeral_range_whichever_side_has_room() -> None:
    assert ports.candidates((32768, 60999)) == range(20768, 32768)
    assert ports.candidates((1024, 50000)) == range(50001, 65536)
    with pytest.raises(ClusterError, match="no loopback port is left outside the ephemeral range"):
        ports.candidates((1024, 65000))
    assert ports.ephemeral_range(Path("/nonexistent")) == ports.DEFAULT_EPHEMERAL


def test_a_port_given_out_is_not_given_again_while_its_daemon_may_be_binding(tmp_path: Path) -> None:
    """Three reservations of a third of the pool each, none bound: they never meet (random picks alone would
    share about 60 ports per pair)."""
    registry = tmp_path / "given.json"
    start = ports.candidates(ports.ephemeral_range()).start
    pool = range(start, start + 600)
    given = [set(ports.reserve(190, registry=registry, pool=pool)) for _ in range(3)]
    assert len(given[0] | given[1] | given[2]) == 570
    with pytest.raises(ClusterError, match=f"no 100 free loopback ports on 127.0.0.1 in {pool.start}-"):
        ports.reserve(100, registry=registry, pool=pool)  # 30 left


def _listening_with_two_kept_neighbours(stack: contextlib.ExitStack) -> int:
    """A port something listens on, whose next two ports this test keeps from everyone else: bound with
    SO_REUSEADDR and not listening, which a connect() elsewhere never takes as its local port but a bind with
    SO_REUSEADDR (as `ports.reserve` checks a port) still may. Left unheld, a neighbour in the ephemeral range
    was at times the local port of another test's connection (a newcomer's full run failed on it)."""
    for _ in range(50):
        attempt = contextlib.ExitStack()  # closed at once when a neighbour is taken, not kept to the test's end
        held = attempt.enter_context(socket.socket())
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        try:
            for neighbour in (port + 1, port + 2):
                kept = attempt.enter_context(socket.socket())
                kept.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                kept.bind(("127.0.0.1", neighbour))
        except OSError:
            attempt.close()
            continue
        stack.enter_context(attempt)
        return port
    raise AssertionError("no listening port with two free neighbours in 50 tries")


def test_a_port_something_listens_on_is_never_given(tmp_path: Path) -> None:
    with contextlib.ExitStack() as stack:
        port = _listening_with_two_kept_neighbours(stack)
        found = ports.reserve(2, registry=tmp_path / "given.json", pool=range(port, port + 3))
    assert port not in found
    assert sorted(found) == [port + 1, port + 2]


def test_a_port_is_given_again_once_its_hold_ran_out_and_a_cut_registry_is_no_obstacle(tmp_path: Path) -> None:
    registry = tmp_path / "given.json"
    base = ports.candidates(ports.ephemeral_range()).start
    registry.write_text(json.dumps({str(base): 0.0}))  # given out long ago
    assert ports.reserve(1, registry=registry, pool=range(base, base + 1)) == [base]
    assert list(json.loads(registry.read_text())) == [str(base)]  # the old entry replaced by the new one
    registry.write_text('{"2077')  # a process killed while writing
    assert ports.reserve(1, registry=registry, pool=range(base + 1, base + 2)) == [base + 1]


_RESERVE = """
import sys
from pathlib import Path
from acceptance.sim import ports
print(*ports.reserve(150, registry=Path(sys.argv[1]), pool=range(int(sys.argv[2]), int(sys.argv[2]) + 800)))
"""


def test_processes_starting_at_once_get_disjoint_ports(tmp_path: Path) -> None:
    registry, start = tmp_path / "given.json", ports.candidates(ports.ephemeral_range()).start
    procs = [subprocess.Popen([sys.executable, "-c", _RESERVE, str(registry), str(start)], stdout=subprocess.PIPE,
                              text=True, cwd=ROOT) for _ in range(4)]  # fmt: skip
    given = [set(map(int, proc.communicate(timeout=60)[0].split())) for proc in procs]
    assert [len(g) for g in given] == [150] * 4
    assert len(set().union(*given)) == 600
