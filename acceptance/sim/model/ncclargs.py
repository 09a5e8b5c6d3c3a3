"""Command lines of nccl-tests and of the `mpirun` that launches them, as the simulator reads them."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from acceptance import units
from acceptance.errors import UsageError

COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast", "reduce", "sendrecv")
TYPE_SIZES = {
    "int8": 1,
    "uint8": 1,
    "int32": 4,
    "uint32": 4,
    "int64": 8,
    "uint64": 8,
    "half": 2,
    "float": 4,
    "double": 8,
    "bfloat16": 2,
    "f8e4m3": 1,
    "f8e5m2": 1,
}
OPS = ("sum", "prod", "min", "max", "avg")

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


def parse_size(text: str) -> int:
    """nccl-tests sizes: ``8``, ``1K``, ``32M``, ``16G`` (powers of 1024)."""
    try:
        return units.parse_size(text)
    except ValueError:
        raise UsageError(f"bad size {text!r}: expected e.g. 8, 1K, 32M or 16G") from None


def collective_of(program: str) -> str | None:
    base = os.path.basename(program).removesuffix("_mpi")
    if not base.endswith("_perf"):
        return None
    name = base.removesuffix("_perf")
    return name if name in COLLECTIVES else None


def parse_nccl_args(argv: Sequence[str]) -> NcclArgs:
    """argv[0] is the binary (``all_reduce_perf``, ``/opt/nccl-tests/build/alltoall_perf_mpi``...)."""
    program = os.path.basename(argv[0])
    collective = collective_of(program)
    if collective is None:
        raise UsageError(f"{argv[0]!r} is not an nccl-tests binary ({', '.join(c + '_perf' for c in COLLECTIVES)})")
    values: dict[str, object] = {}
    ints = {
        "-t": "nthreads", "--nthreads": "nthreads", "-g": "ngpus", "--ngpus": "ngpus", "-w": "warmup",
        "--warmup_iters": "warmup", "-n": "iters", "--iters": "iters", "-m": "agg", "--agg_iters": "agg",
        "-c": "check", "--check": "check", "-G": "graph", "--cudagraph": "graph", "-r": "root",
        "--root": "root", "-z": "blocking", "--blocking": "blocking",
    }  # fmt: skip
    sizes = {"-b": "min_bytes", "--minbytes": "min_bytes", "-e": "max_bytes", "--maxbytes": "max_bytes"}
    ignored = {"-a", "--average", "-p", "--parallel_init", "-C", "--report_cputime", "-T", "--timeout",
               "-R", "--local_register", "-N", "--run_cycles", "-u", "--unalign", "-S",
               "--report_timestamps"}  # fmt: skip
    i = 1
    while i < len(argv):
        opt = argv[i]
        val = None
        if "=" in opt and opt.startswith("--"):
            opt, val = opt.split("=", 1)
        elif opt.startswith("-") and len(opt) > 2 and not opt.startswith("--"):
            opt, val = opt[:2], opt[2:]
        if val is None:
            if i + 1 >= len(argv):
                raise UsageError(f"{program}: option {opt} needs a value")
            val = argv[i + 1]
            i += 2
        else:
            i += 1
        try:
            if opt in ints:
                values[ints[opt]] = int(val)
            elif opt in sizes:
                values[sizes[opt]] = parse_size(val)
            elif opt in ("-f", "--stepfactor"):
                values["step_factor"] = int(val)
            elif opt in ("-i", "--stepbytes"):
                values["step_bytes"] = parse_size(val)
            elif opt in ("-d", "--datatype"):
                if val not in TYPE_SIZES and val != "all":
                    raise UsageError(f"{program}: datatype {val!r} not one of {', '.join(TYPE_SIZES)}")
                values["dtype"] = val
            elif opt in ("-o", "--op"):
                if val not in OPS and val != "all":
                    raise UsageError(f"{program}: op {val!r} not one of {', '.join(OPS)}")
                values["op"] = val
            elif opt not in ignored:
                raise UsageError(f"{program}: unknown option {opt}")
        except ValueError as exc:
            raise UsageError(f"{program}: bad value {val!r} for {opt}") from exc
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
