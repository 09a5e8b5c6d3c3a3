"""The simulator behind the shims: one `SimRunner` per run, asked over a Unix socket.

One JSON line in (`tool`, `argv`, the `node` the session belongs to, the job's `hosts` when the
shim gathered an MPI or torchrun-style placement, the relevant `env`); out, a line ``EXIT_CODE WALL_S``
(`wall_s`: the tool's simulated duration scaled to wall time), then what the tool prints (UTF-8), to the end
of the connection: the shims' client reads it without a JSON decoder (`client.py` says why). A
run's calls replay identically for a given seed and fault set (`SimRunner`'s own seeding).
"""

from __future__ import annotations

import json
import socketserver
import threading
from pathlib import Path
from typing import Any

from acceptance.sim.model.runner import SimRunner
from acceptance.sim.runtime import Host, ToolRun
from acceptance.sim.ssh.nvsmi import dcgmi_info, nvidia_smi


def answer(runner: SimRunner, request: dict[str, Any]) -> ToolRun:
    """What `request`'s tool prints on its node (never raises on a bad request: says so, exit 2)."""
    tool, argv, node = str(request["tool"]), [str(a) for a in request["argv"]], str(request["node"])
    env = {str(k): str(v) for k, v in (request.get("env") or {}).items()}
    if not runner.cluster.has_node(node):
        return ToolRun(f"{tool}: the simulated cluster has no node {node}\n", 2, 0.0)
    if tool == "nvidia-smi" and not {"-q", "--query", "-a"} & set(argv[1:]):
        return nvidia_smi(argv, runner, node)
    if tool == "dcgmi":
        info = dcgmi_info(argv, runner, node)
        if info is not None:
            return info
    hosts = [Host(str(h), str(n), int(s)) for h, n, s in request.get("hosts") or ()]
    if hosts:
        total = sum(h.slots for h in hosts)
        return runner.run(["mpirun", "-np", str(total), *argv], env, node, hosts)
    return runner.run(argv, env, node, [])


def reply(result: ToolRun, time_scale: float) -> bytes:
    """What the client reads: ``EXIT_CODE WALL_S`` on a line, then the tool's output."""
    return f"{result.exit_code} {result.duration_s * time_scale!r}\n".encode() + result.stdout.encode()


class _Handler(socketserver.StreamRequestHandler):
    server: _Server

    def handle(self) -> None:
        line = self.rfile.readline()
        try:
            result = answer(self.server.runner, json.loads(line))
        except (ValueError, KeyError, TypeError) as exc:
            result = ToolRun(f"simulator: bad request ({exc})\n", 2, 0.0)
        self.wfile.write(reply(result, self.server.time_scale))


class _Server(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True
    request_queue_size = 512  # every rank-0 shim and nvidia-smi of every host may ask at once

    def __init__(self, path: str, runner: SimRunner, time_scale: float) -> None:
        self.runner = runner
        self.time_scale = time_scale
        super().__init__(path, _Handler)


class SimServer:
    """The simulator on ``<folder>/sim.sock``, served from a thread of this process."""

    def __init__(self, folder: Path, runner: SimRunner, time_scale: float) -> None:
        self.path = folder / "sim.sock"
        self._server = _Server(str(self.path), runner, time_scale)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.2},
                                        daemon=True, name="sim-ssh-server")  # fmt: skip

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self.path.unlink(missing_ok=True)
