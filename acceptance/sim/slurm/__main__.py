"""``python -m acceptance.sim.slurm [--nodes N]``: start the simulated Slurm, print how to use it, stop on Ctrl-C."""

from __future__ import annotations

import argparse
import signal
import sys

from acceptance.errors import AcceptanceError
from acceptance.sim.slurm.daemons import SimSlurm


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m acceptance.sim.slurm", description=__doc__)
    parser.add_argument("--nodes", type=int, default=16, help="number of simulated nodes (default 16)")
    parser.add_argument("--gpus", type=int, default=8, help="GPUs per node (default 8)")
    args = parser.parse_args(argv)
    # Ctrl-C and SIGTERM stop it, even where SIGINT came ignored (a job started in the background of a script),
    # which Python would otherwise keep; installed before the start (a start cut short stops what it started) and
    # before the lines that say it is up, after which a Ctrl-C is expected at any moment
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: sys.exit(0))
    try:
        slurm = SimSlurm.start(args.nodes, gpus_per_node=args.gpus)
    except AcceptanceError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        print(f"simulated Slurm up: {len(slurm.spec.nodes)} nodes, {args.gpus} GPUs each, in {slurm.layout.root}")
        print(f"  export SLURM_CONF={slurm.layout.conf}")
        print("  sinfo; srun -N2 --gpus-per-node=8 env | grep CUDA_VISIBLE_DEVICES")
        print("Ctrl-C stops every daemon and removes the folder.", flush=True)
        signal.pause()
    finally:
        slurm.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
