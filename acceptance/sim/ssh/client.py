"""The shims' client: ask the simulator what this tool prints on this simulated host, then print it.

Run by the shim scripts as ``python -I -S client.py TOOL ARGS...`` in a session of the simulated
sshd, so it imports nothing but the standard library, and of that only built-in and C modules: a run
starts thousands of these, and ``json`` and ``socket`` (``re``, ``enum`` behind them) more than doubled
what each costs (about 35 ms of CPU against 15: bench/shim_client.py). The request is JSON whose strings
the C encoder of ``_json`` quotes; the answer is a header line and the tool's raw output (`server.py`).
The session says which host it is (``SIM_SSH_NODE``, set by the sshd per listening address) and
where the simulator listens (``SIM_SSH_DIR``). The process lasts as long as the tool would (scaled),
so it can be found and ended like the real one.

MPI and torchrun-style jobs: every rank's shim notes its host in a rendezvous folder and only
rank 0 (node rank 0) comes here; it collects the placement, so the simulated run covers the
hosts where Open MPI really started the ranks.
"""

import _json
import _socket
import os
import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is not imported at run time (its import alone costs a shim a third more)
    from typing import NoReturn

GATHER_TIMEOUT_S = 60.0
CONNECT_TIMEOUT_S = 60.0


def _fail(text: str, code: int) -> "NoReturn":
    sys.stderr.write(text + "\n")
    sys.exit(code)


def _gather(folder: str, size: int, slots_each: int | None) -> list[list[object]]:
    """[[host, node, slots], ...] in rank order, once all `size` ranks have written their host."""
    deadline = time.monotonic() + GATHER_TIMEOUT_S
    while True:
        names = [n for n in os.listdir(folder) if n.isdigit()] if os.path.isdir(folder) else []
        if len(names) >= size or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    nodes = []
    for rank in range(size):
        try:
            with open(os.path.join(folder, str(rank))) as handle:
                nodes.append(handle.read().strip())
        except OSError:
            _fail(f"simulated job: rank {rank} of {size} never started (rendezvous {folder})", 1)
    for name in os.listdir(folder):
        os.unlink(os.path.join(folder, name))
    os.rmdir(folder)
    hosts: list[list[object]] = []
    for node in nodes:
        if hosts and hosts[-1][1] == node and slots_each is None:
            hosts[-1][2] = int(str(hosts[-1][2])) + 1
        else:
            hosts.append([node, node, slots_each or 1])
    return hosts


def _engine_running(sim: str, node: str) -> bool:
    try:
        with open(os.path.join(sim, "hostengine", node + ".pid")) as handle:
            pid = int(handle.read().strip())
        os.kill(pid, 0)
    except (OSError, ValueError):
        return False
    return True


def _json_text(value: object) -> str:
    """`value` (None, a bool, an int, a string, or lists and string-keyed dicts of them) as JSON, strings quoted
    by the C encoder."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return str(_json.encode_basestring_ascii(value))
    if isinstance(value, list):
        return "[" + ",".join(_json_text(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(_json_text(k) + ":" + _json_text(v) for k, v in value.items()) + "}"
    raise TypeError(f"no JSON for {type(value).__name__}")


def _ask(path: str, request: bytes, tool: str) -> bytes:
    """The simulator's answer, whole (it closes the connection after it); a busy simulator (its backlog full) is
    asked again for up to a minute."""
    deadline = time.monotonic() + CONNECT_TIMEOUT_S
    while True:
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        try:
            sock.settimeout(120)
            sock.connect(path)
            sock.sendall(request)
            chunks = []
            while chunk := sock.recv(1 << 20):
                chunks.append(chunk)
            return b"".join(chunks)
        except (BlockingIOError, ConnectionRefusedError) as exc:
            if time.monotonic() > deadline:
                _fail(f"{tool}: the simulator of these hosts does not answer ({exc})", 127)
            time.sleep(0.05)
        except OSError as exc:
            _fail(f"{tool}: the simulator of these hosts does not answer ({exc})", 127)
        finally:
            sock.close()


def main() -> None:
    tool, args = sys.argv[1], sys.argv[2:]
    sim, node = os.environ.get("SIM_SSH_DIR"), os.environ.get("SIM_SSH_NODE")
    if not sim or not node:
        _fail(f"{tool}: this is a shim of the simulated hosts; it runs only in their SSH sessions", 127)
    assert sim is not None
    assert node is not None
    hosts = None
    env = os.environ
    if env.get("OMPI_COMM_WORLD_RANK") is not None:
        job = env.get("OMPI_MCA_ess_base_jobid") or env.get("PMIX_NAMESPACE") or "job"
        hosts = _gather(os.path.join(sim, "rendezvous", job), int(env.get("OMPI_COMM_WORLD_SIZE", "1")), None)
    elif env.get("NODE_RANK") is not None and env.get("NNODES"):
        job = "torch-{}-{}-{}".format(env.get("MASTER_ADDR"), env.get("MASTER_PORT"), env.get("NNODES"))
        hosts = _gather(os.path.join(sim, "rendezvous", job), int(env["NNODES"]), int(env.get("NPROC_PER_NODE", "8")))
    if tool == "dcgmi" and args[:1] in (["diag"], ["discovery"]) and not _engine_running(sim, node):
        _fail("Error: unable to establish a connection to the specified host: localhost\n"
              "Error: Unable to connect to host engine. Host engine connection invalid/disconnected.", 255)  # fmt: skip
    keep = ("NCCL_", "OMPI_COMM_WORLD_", "CUDA_", "HOSTNAME", "NODE_RANK", "NNODES", "MASTER_")
    request = {"tool": tool, "argv": [tool, *args], "node": node, "hosts": hosts,
               "env": {k: v for k, v in env.items() if k.startswith(keep)}}  # fmt: skip
    said = _ask(os.path.join(sim, "sim.sock"), _json_text(request).encode() + b"\n", tool)
    head, _, stdout = said.partition(b"\n")
    try:
        first, second = head.split()
        code, wall = int(first), float(second)
    except ValueError:  # too few or too many fields too
        _fail(f"{tool}: the simulator of these hosts gave no answer it could read ({head[:200]!r})", 127)
    # the tool's lines appear over its (scaled) time, as a real tool prints them while it runs
    lines = stdout.splitlines(keepends=True)
    start = time.monotonic()
    for i, line in enumerate(lines, 1):
        time.sleep(max(0.0, start + wall * i / len(lines) - time.monotonic()))
        sys.stdout.buffer.write(line)
        sys.stdout.flush()
    time.sleep(max(0.0, start + wall - time.monotonic()))
    sys.exit(code)


if __name__ == "__main__":
    main()
