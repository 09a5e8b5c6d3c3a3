"""`acceptance sim ...`: the simulated H200 cluster from the command line.

``acceptance sim run [--scenario S] [--fault F]... [--seed N] [--node NODE] -- COMMAND...``
prints what the tool would print on the simulated cluster and exits with the tool's status::

    acceptance sim run -- all_reduce_perf -b 8 -e 16G -f 2 -g 8
    acceptance sim run --fault nic-degraded@sim-node-07 -- mpirun -np 128 all_reduce_perf -b 1M -e 16G -f 2
    acceptance sim run --fault gpu-xid@sim-node-03:5 --node sim-node-03 -- dcgmi diag -r 3 -j
    acceptance sim run -- python pretrain_gpt.py --train-iters 1200 --save-interval 200
    acceptance sim run --incident gpu-xid@sim-node-05:3 --at-step 700 -- \
        torchrun --nnodes 16 --nproc-per-node 8 pretrain_gpt.py --train-iters 1200 --save-interval 200
    acceptance sim run --incident gpu-xid@sim-node-05:3 --at-step 700 --node sim-node-05 -- dmesg

Further subcommands (``serve``) are added to the same `sim` parser.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from acceptance.errors import UsageError
from acceptance.sim import kubeapi
from acceptance.sim.model.faults import KINDS
from acceptance.sim.model.runner import SimRunner
from acceptance.sim.model.scenario import DEFAULT_SCENARIO, available, load_scenario


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("sim", help="the simulated H200 cluster (run a tool on it)")
    commands = parser.add_subparsers(dest="sim_command", metavar="SUBCOMMAND", required=True)
    kinds = "; ".join(f"{k}: {meaning}" for k, (_, meaning) in KINDS.items())
    run = commands.add_parser(
        "run",
        help="print what a tool would print on the simulated cluster",
        description="Run nccl-tests (plain or under mpirun), `dcgmi diag` or the training command on the "
        "simulated cluster; print its output and exit with its status.",
        epilog=f"fault kinds: {kinds}",
    )
    add_cluster_options(run)
    run.add_argument("--node", help="the node the command runs on (default: the first node)")
    run.add_argument("--show-duration", action="store_true", help="print the simulated duration on stderr")
    run.add_argument("tool", nargs=argparse.REMAINDER, help="-- then the command line")
    run.set_defaults(func=_run)
    serve = commands.add_parser("serve", help="serve the simulated cluster through a Kubernetes API on loopback")
    add_cluster_options(serve)
    kubeapi.add_serve_options(serve)
    serve.set_defaults(func=lambda args: kubeapi.serve_from_args(runner_from_args(args), args))


def add_cluster_options(parser: argparse.ArgumentParser) -> None:
    """--scenario/--fault/--seed, shared by the `sim` subcommands."""
    names = ", ".join(available()) or DEFAULT_SCENARIO
    parser.add_argument("--scenario", default=DEFAULT_SCENARIO, help=f"name or YAML path ({names})")
    parser.add_argument(
        "--fault",
        action="append",
        default=[],
        metavar="KIND[@NODE[:INDEX]]",
        help="inject a fault (repeatable)",
    )
    parser.add_argument("--seed", type=int, default=None, help="override the scenario's seed")
    parser.add_argument(
        "--incident",
        action="append",
        default=[],
        metavar="KIND@NODE[:INDEX]",
        help="a fault that strikes the training job at --at-step (gpu-xid: the job hangs until the NCCL watchdog "
        "fires; nic-degraded, nic-down, gpu-throttle: it runs slower from then on)",
    )
    parser.add_argument("--at-step", type=int, default=None, metavar="N", help="the step an --incident strikes in")


def runner_from_args(args: argparse.Namespace) -> SimRunner:
    incidents = list(getattr(args, "incident", []) or [])
    at_step = getattr(args, "at_step", None)
    if incidents and at_step is None:
        raise UsageError("--incident needs --at-step N: the training step the fault strikes in")
    if at_step is not None and not incidents:
        raise UsageError("--at-step needs an --incident KIND@NODE[:INDEX] to strike")
    faults: list[str | dict[str, object]] = list(args.fault)
    faults += [{"fault": text, "at_step": at_step} for text in incidents]
    return SimRunner.from_scenario(load_scenario(args.scenario), faults, args.seed)


def _run(args: argparse.Namespace) -> int:
    command = list(args.tool)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise UsageError("acceptance sim run: give the command after --, e.g. -- all_reduce_perf -b 8 -e 1G -f 2 -g 8")
    runner = runner_from_args(args)
    node = args.node or runner.cluster.nodes[0].name
    runner.cluster.node(node)
    result = runner.run(command, {}, node, [])
    sys.stdout.write(result.stdout)
    sys.stdout.flush()
    if args.show_duration:
        print(f"simulated duration: {result.duration_s:.1f} s", file=sys.stderr)
    return result.exit_code
