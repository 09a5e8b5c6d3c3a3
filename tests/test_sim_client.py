"""The shims' client and the simulator behind it (acceptance/sim/ssh/client.py, server.py): what a shim prints and
its exit status are the simulator's, byte for byte, over the real Unix socket, with the client's light protocol."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from acceptance.sim.model import SimRunner, load_scenario
from acceptance.sim.runtime import ToolRun
from acceptance.sim.ssh import client
from acceptance.sim.ssh.server import SimServer, answer, reply

CLIENT = Path(client.__file__)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@given(json_values)
def test_the_client_s_json_is_what_json_reads_back(value: object) -> None:
    """The request the client writes without the json module: any string (quotes, backslashes, control characters,
    lone surrogates, emoji) and any nesting read back equal."""
    assert json.loads(client._json_text(value)) == value


def test_a_value_json_has_no_plain_form_for_is_refused() -> None:
    with pytest.raises(TypeError, match="no JSON for float"):
        client._json_text({"wall": 1.5})


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Path, SimRunner]]:
    """A simulator on ``sim.sock`` in a short folder of its own (a Unix socket's path has at most 107 bytes, too few
    for pytest's tmp_path), time scale 0."""
    runner = SimRunner.from_scenario(load_scenario("healthy-16"), ["ecc-dbe@sim-node-04:2"], seed=3)
    folder = Path(tempfile.mkdtemp(prefix="sc-"))
    server = SimServer(folder, runner, 0.0)
    server.start()
    try:
        yield folder, runner
    finally:
        server.close()
        folder.rmdir()


def _shim(folder: Path, node: str, *argv: str) -> subprocess.CompletedProcess[bytes]:
    env = {"PATH": os.environ["PATH"], "SIM_SSH_DIR": str(folder), "SIM_SSH_NODE": node}
    return subprocess.run([sys.executable, "-I", "-S", str(CLIENT), *argv], env=env, capture_output=True,
                          timeout=60, check=False)  # fmt: skip


@pytest.mark.parametrize(
    "argv",
    [
        ("nvidia-smi", "-q"),
        ("nvidia-smi", "--query-gpu=index,uuid,name", "--format=csv,noheader"),
        ("dmesg",),
        ("no-such-tool", "--flag", 'quote " and \\ back'),
    ],
    ids=["nvidia-smi -q", "nvidia-smi query", "dmesg", "unknown tool"],
)
def test_a_shim_prints_the_simulator_s_output_and_exits_with_its_status(
    served: tuple[Path, SimRunner], argv: tuple[str, ...]
) -> None:
    folder, runner = served
    done = _shim(folder, "sim-node-04", *argv)
    expected = answer(runner, {"tool": argv[0], "argv": list(argv), "node": "sim-node-04"})
    assert (done.stdout.decode(), done.returncode) == (expected.stdout, expected.exit_code), done.stderr
    assert done.stdout, "every case prints something"


def test_a_node_the_simulator_does_not_have_is_its_answer_not_the_client_s() -> None:
    runner = SimRunner.from_scenario(load_scenario("healthy-16"), [], seed=1)
    said = answer(runner, {"tool": "dmesg", "argv": ["dmesg"], "node": "sim-node-99"})
    assert (said.stdout, said.exit_code) == ("dmesg: the simulated cluster has no node sim-node-99\n", 2)


def test_the_reply_is_a_status_line_then_the_output_as_it_was() -> None:
    out = "GPU 0: NVIDIA H200 (UUID: GPU-…)\nno newline at the end ✓"
    said = reply(ToolRun(out, 3, 12.5), 0.002)
    head, _, body = said.partition(b"\n")
    assert head == b"3 0.025"
    assert body.decode() == out


def test_a_simulator_that_answers_nonsense_is_said_with_exit_127() -> None:
    folder = Path(tempfile.mkdtemp(prefix="sn-"))
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(folder / "sim.sock"))
    listener.listen(1)
    listener.settimeout(60)

    def nonsense() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.recv(1 << 16)
            conn.sendall(b"<html>502</html>")

    thread = threading.Thread(target=nonsense, daemon=True)
    thread.start()
    try:
        done = _shim(folder, "sim-node-01", "dmesg")
    finally:
        thread.join(10)
        listener.close()
        (folder / "sim.sock").unlink()
        folder.rmdir()
    assert done.returncode == 127
    assert b"dmesg: the simulator of these hosts gave no answer it could read (b'<html>502</html>')" in done.stderr
