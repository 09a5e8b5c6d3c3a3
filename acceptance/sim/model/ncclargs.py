"""Command lines of nccl-tests and of the `mpirun` that launches them, as the simulator reads them.

nccl-tests' own options are read through the tools' table (`acceptance.tools.nccl.NcclTest`,
the one parser of nccl-tests argv in the project). The simulator's own: the `mpirun`
command line, which binaries it simulates, and the `NcclArgs` a run uses (with the defaults
its header prints when an option is not given).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from acceptance.errors import UsageError
from acceptance.tools.nccl import COLLECTIVES, NcclTest, collective_of

# mpirun options by number of arguments they take (Open MPI 4/5 spellings the launchers use)
_MPI_ONE = {
    "-np", "-n", "-c", "--np", "-hostfile", "--hostfile", "-machinefile", "--machinefile", "-H", "-host",
    "--host", "-x", "--bind-to", "-bind-to", "--map-by", "-map-by", "--rank-by", "-N", "-npernode",
    "--npernode", "--prefix", "-wdir", "--wdir", "--output-filename", "-output-filename", "--rankfile", "-rf",
    "--cpus-per-proc", "-cpus-per-proc", "--cpus-per-rank", "--timeout", "-timeout", "--tmpdir", "-tmpdir",
    "-am", "--am", "--tune", "-ppr", "--mca-param-file",
}  # fmt: skip
_MPI_TWO = {"--mca", "-mca", "--gmca", "-gmca"}


@dataclass(frozen=True)
class NcclArgs:
    program: str
    collective: str
    nthreads: int = 1
    ngpus: int = 1
    min_bytes: int = 32 * 1024 * 1024
    max_bytes: int = 32 * 1024 * 1024
    step_factor: int | None = None
    step_bytes: int = 1024 * 1024
    warmup: int = 1
    iters: int = 20
    agg: int = 1
    check: int = 1
    graph: int = 0
    dtype: str = "float"
    op: str = "sum"
    root: int = 0
    blocking: int = 0


@dataclass(frozen=True)
class MpiLaunch:
    """What `mpirun` was asked: process count, hosts given with -H, env exported with -x, the program argv."""

    np: int | None
    per_node: int | None  # -N / -npernode / --map-by ppr:K:node
    hosts: tuple[tuple[str, int], ...]
    env: tuple[tuple[str, str | None], ...]  # None: exported from the launcher's environment
    program: tuple[str, ...]


#: nccl-tests' canonical option names → the NcclArgs fields the simulator uses (others: accepted, no effect)
_FIELDS = {
    "nthreads": "nthreads",
    "ngpus": "ngpus",
    "minbytes": "min_bytes",
    "maxbytes": "max_bytes",
    "stepfactor": "step_factor",
    "stepbytes": "step_bytes",
    "warmup_iters": "warmup",
    "iters": "iters",
    "agg_iters": "agg",
    "check": "check",
    "cudagraph": "graph",
    "datatype": "dtype",
    "op": "op",
    "root": "root",
    "blocking": "blocking",
}


def simulated_collective(program: str) -> str | None:
    """The collective of an nccl-tests binary the simulator runs (nccl-tests' own seven), else None."""
    name = collective_of(os.path.basename(program))
    return name if name in COLLECTIVES else None


def parse_nccl_args(argv: Sequence[str]) -> NcclArgs:
    """argv[0] is the binary (``all_reduce_perf``, ``/opt/nccl-tests/build/alltoall_perf_mpi``...)."""
    program = os.path.basename(argv[0])
    collective = simulated_collective(program)
    if collective is None:
        raise UsageError(f"{argv[0]!r} is not an nccl-tests binary ({', '.join(c + '_perf' for c in COLLECTIVES)})")
    try:
        test = NcclTest.from_argv(argv)
    except UsageError as exc:
        raise UsageError(f"{program}: {exc}") from None
    values = {_FIELDS[name]: value for name, value in test.options if name in _FIELDS}
    args = NcclArgs(program=program, collective=collective, **values)  # type: ignore[arg-type]
    if args.min_bytes > args.max_bytes:
        raise UsageError(f"{program}: minBytes {args.min_bytes} > maxBytes {args.max_bytes}")
    if args.step_factor is not None and args.step_factor < 2:
        raise UsageError(f"{program}: step factor must be at least 2")
    return args


def parse_mpirun(argv: Sequence[str]) -> MpiLaunch:
    """Split an ``mpirun``/``mpiexec`` command line into its options and the program argv."""
    np: int | None = None
    per_node: int | None = None
    hosts: list[tuple[str, int]] = []
    env: list[tuple[str, str | None]] = []
    i = 1
    while i < len(argv) and argv[i].startswith("-"):
        opt = argv[i]
        if opt in _MPI_TWO:
            i += 3
            continue
        if opt in _MPI_ONE:
            if i + 1 >= len(argv):
                raise UsageError(f"mpirun: option {opt} needs a value")
            val = argv[i + 1]
            if opt in ("-np", "-n", "-c", "--np"):
                if not val.isdigit():
                    raise UsageError(f"mpirun: {opt} needs a number, not {val!r}")
                np = int(val)
            elif opt in ("-H", "-host", "--host"):
                for item in val.split(","):
                    name, _, slots = item.partition(":")
                    hosts.append((name, int(slots or 1)))
            elif opt in ("-N", "-npernode", "--npernode"):
                per_node = int(val)
            elif opt in ("--map-by", "-map-by") and val.startswith("ppr:") and val.count(":") >= 2:
                count, unit = val.split(":")[1:3]
                if unit == "node" and count.isdigit():
                    per_node = int(count)
            elif opt == "-x":
                key, sep, value = val.partition("=")
                env.append((key, value if sep else None))
            i += 2
            continue
        i += 1  # a flag (--allow-run-as-root, --tag-output, -v ...)
    if i >= len(argv):
        raise UsageError("mpirun: no program to run")
    return MpiLaunch(np, per_node, tuple(hosts), tuple(env), tuple(argv[i:]))
