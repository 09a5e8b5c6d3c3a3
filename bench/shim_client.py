"""CPU of one call of a simulated host's tool shim (acceptance/sim/ssh/client.py) against a bare interpreter.

    python bench/shim_client.py              # 200 calls each
    python bench/shim_client.py --calls 50

A sim-ssh or sim-slurm suite run starts the client once for every nvidia-smi, dcgmi, dmesg, nccl-tests rank 0
and training job of every host: a full test session about 1,500 times. Each call here asks a simulator served
from this process (time scale 0) for ``dmesg`` on one node, as a shim does. Printed: the median CPU (user and
system, the child's own) of a call, that of ``python -I -S -c pass``, and their ratio.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from acceptance.sim.model import SimRunner, load_scenario
from acceptance.sim.ssh import client
from acceptance.sim.ssh.server import SimServer


def _cpu_ms(argv: list[str], env: dict[str, str], calls: int) -> float:
    """The median CPU of one run of `argv`, in milliseconds."""
    spent = []
    for _ in range(calls):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(argv, env=env, capture_output=True, check=True, timeout=60)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        spent.append((after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1000)
    return statistics.median(spent)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    runner = SimRunner.from_scenario(load_scenario("healthy-16"), [], seed=1)
    folder = Path(tempfile.mkdtemp(prefix="bench-shim-"))  # short: a Unix socket's path has at most 107 bytes
    server = SimServer(folder, runner, 0.0)
    server.start()
    try:
        env = {"PATH": os.environ["PATH"], "SIM_SSH_DIR": str(folder), "SIM_SSH_NODE": "sim-node-01"}
        bare = _cpu_ms([sys.executable, "-I", "-S", "-c", "pass"], env, args.calls)
        shim = _cpu_ms([sys.executable, "-I", "-S", client.__file__, "dmesg"], env, args.calls)
    finally:
        server.close()
        folder.rmdir()
    print(f"{'calls':>6} {'bare python ms':>15} {'shim call ms':>13} {'ratio':>6}")
    print(f"{args.calls:>6} {bare:>15.1f} {shim:>13.1f} {shim / bare:>6.2f}")


if __name__ == "__main__":
    main()
