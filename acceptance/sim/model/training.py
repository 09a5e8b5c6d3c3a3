"""A simulated Megatron-LM GPT pretraining job: the log lines Megatron prints, from a seeded model.

The command the simulator understands (anything before the script, e.g. ``torchrun ...`` or
``mpirun ...``, is ignored; unknown Megatron flags are accepted and ignored)::

    python pretrain_gpt.py --train-iters 1200 --log-interval 1 --save-interval 200 \\
        --eval-interval 500 [--save /ckpt] [--load /ckpt --ckpt-step 1000] \\
        [--global-batch-size 1024] [--seq-length 4096] [--lr 3e-4] [--min-lr 3e-5] \\
        [--lr-warmup-iters 100] [--fp16]

- a pre-incident log: ``--train-iters 1200 --save-interval 200`` prints iterations 1..1200 and
  checkpoint saves at 200, 400, ...;
- a resumed smoke run after a checkpoint, same schedule, stopping early:
  ``--train-iters 1200 --load /ckpt --ckpt-step 1000 --exit-interval 1100`` prints
  ``loading checkpoint from /ckpt at iteration 1000``, iterations 1001..1100 and
  ``[exiting program at iteration 1100] datetime: ...`` (``--exit-interval``/``--lr-decay-iters``
  as in Megatron: the learning-rate schedule follows ``--lr-decay-iters``, else ``--train-iters``).
  (``--ckpt-step`` is the simulator's stand-in for the checkpoint's tracker file; without it
  ``--load`` finds no checkpoint and training starts at iteration 1, as Megatron does.)

Model: step time ~1.2 s at 16 nodes (+3% per doubling), between-run variation 0.6%,
within-run CV 1.2%; the first iteration of every run (start or resume) is ~10x slower, the
next two 1.5x/1.2x; the iteration after an eval (+6 s) or a checkpoint save (+3.5 s) carries
that time, as Megatron's interval timer does. Loss follows one seeded curve of the cluster
(1.8 + 9.2 (1 + step/30)^-0.55 with 1.2% log-noise per step) that every run, resumed or not,
continues; faults: `gpu-throttle`, `nic-*`, `spine-slow` slow the step, `gpu-xid`/`node-down`
kill the job at start-up, `bad-restore` bends the resumed run; with ``at_step`` a fault strikes
mid-run instead (`acceptance.sim.model.incident`: an XID hangs the job until the NCCL watchdog
fires, a NIC or GPU fault slows it from that step).
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from acceptance.errors import UsageError
from acceptance.sim.model import incident, pastes
from acceptance.sim.model.cluster import GPUS_PER_NODE, SimCluster, derive_seed, rng
from acceptance.sim.model.faults import FaultSet

SCRIPT_SUFFIX = ".py"
_INT_FLAGS = {
    "--train-iters": "train_iters", "--log-interval": "log_interval",
    "--save-interval": "save_interval", "--eval-interval": "eval_interval", "--ckpt-step": "ckpt_step",
    "--global-batch-size": "global_batch_size", "--seq-length": "seq_length",
    "--lr-warmup-iters": "lr_warmup_iters", "--tensor-model-parallel-size": "tp",
    "--exit-interval": "exit_interval", "--lr-decay-iters": "lr_decay_iters",
}  # fmt: skip
_FLOAT_FLAGS = {"--lr": "lr", "--min-lr": "min_lr"}
_STR_FLAGS = {"--load": "load", "--save": "save"}
EPOCH = datetime(2026, 11, 23, 8, 0, 0)
#: the most iterations one simulated command renders (its whole log is built in memory: ~300 B a line)
MAX_RENDERED_ITERS = 200_000


@dataclass(frozen=True)
class TrainArgs:
    train_iters: int = 1200
    log_interval: int = 1
    save_interval: int = 0
    eval_interval: int = 1000
    load: str | None = None
    save: str | None = None
    ckpt_step: int | None = None
    global_batch_size: int = 1024
    seq_length: int = 4096
    lr: float = 3e-4
    min_lr: float = 3e-5
    lr_warmup_iters: int = 100
    tp: int = 8
    fp16: bool = False
    exit_interval: int = 0
    lr_decay_iters: int | None = None


def is_training(argv: Sequence[str]) -> bool:
    return any(a.rsplit("/", 1)[-1].startswith("pretrain_") and a.endswith(SCRIPT_SUFFIX) for a in argv)


def parse_train_args(argv: Sequence[str]) -> TrainArgs:
    start = next(i for i, a in enumerate(argv) if a.rsplit("/", 1)[-1].startswith("pretrain_")) + 1
    values: dict[str, object] = {}
    i = start
    while i < len(argv):
        flag = argv[i]
        flag, eq, inline = flag.partition("=")
        has_value = bool(eq) or (i + 1 < len(argv) and not argv[i + 1].startswith("--"))
        value = inline if eq else (argv[i + 1] if has_value else "")
        i += 1 if eq or not has_value else 2
        try:
            if flag in _INT_FLAGS:
                values[_INT_FLAGS[flag]] = int(value)
            elif flag in _FLOAT_FLAGS:
                values[_FLOAT_FLAGS[flag]] = float(value)
            elif flag in _STR_FLAGS:
                values[_STR_FLAGS[flag]] = value
            elif flag == "--fp16":
                values["fp16"] = True
        except ValueError as exc:
            raise UsageError(f"training command: bad value {value!r} for {flag}") from exc
    args = TrainArgs(**values)  # type: ignore[arg-type]
    if args.train_iters < 1 or args.log_interval < 1:
        raise UsageError("training command: --train-iters and --log-interval must be at least 1")
    if args.ckpt_step is not None and not 0 <= args.ckpt_step < args.train_iters:
        raise UsageError(f"training command: --ckpt-step {args.ckpt_step} must lie in 0..train-iters-1")
    first = (args.ckpt_step or 0) + 1
    last = args.train_iters
    if args.exit_interval > 0:
        last = min(last, -(-first // args.exit_interval) * args.exit_interval)
    if last - first + 1 > MAX_RENDERED_ITERS:
        raise UsageError(
            f"training command: the simulator renders at most {MAX_RENDERED_ITERS:,} iterations per command, "
            f"this one asks for {last - first + 1:,} (iterations {first}..{last}); lower --train-iters "
            "or stop earlier with --exit-interval"
        )
    return args


def base_loss(cluster_seed: int, step: int) -> float:
    """The cluster's one loss curve: every run of the job sees the same data at the same step."""
    noise = rng(cluster_seed, "loss", step).gauss(0.0, 0.012)
    return float((1.8 + 9.2 * (1 + step / 30) ** -0.55) * math.exp(noise))


def learning_rate(args: TrainArgs, step: int) -> float:
    if step <= args.lr_warmup_iters:
        return args.lr * step / max(args.lr_warmup_iters, 1)
    decay = args.lr_decay_iters or args.train_iters
    frac = (step - args.lr_warmup_iters) / max(decay - args.lr_warmup_iters, 1)
    return args.min_lr + (args.lr - args.min_lr) * 0.5 * (1 + math.cos(math.pi * min(frac, 1.0)))


def _timestamp(t: datetime) -> str:
    return t.strftime("%Y-%m-%d %H:%M:%S")


def _eval_block(step: int, loss: float) -> list[str]:
    ppl = math.exp(min(20, loss))
    text = f" validation loss at iteration {step} | lm loss value: {loss:.6E} | lm loss PPL: {ppl:.6E} | "
    return ["-" * (len(text) + 1), text, "-" * (len(text) + 1)]


def run_training(
    argv: Sequence[str],
    cluster: SimCluster,
    faults: FaultSet,
    nodes: Sequence[str],
    call_seed: int,
    *,
    env: Mapping[str, str] | None = None,
    hosts: Mapping[str, str] | None = None,
    launcher: str = "python",
) -> tuple[str, int, float]:
    """(log text, exit status, simulated seconds) of one run of the training command on `nodes`.

    Faults with ``at_step`` strike during the run (`acceptance.sim.model.incident`); `hosts` names
    each node's host as the job sees it (a pod's hostname), `launcher` is ``mpirun``, ``torchrun``
    or ``python``, and ``NCCL_DEBUG=INFO`` in `env` adds NCCL's start-up lines that map ranks to hosts.
    """
    args = parse_train_args(argv)
    faults, mid = incident.split(faults)
    job = incident.job_for(nodes, hosts, launcher)
    r = random.Random(call_seed)
    world = len(nodes) * GPUS_PER_NODE
    shape = pastes.choose(derive_seed(call_seed, "paste"), env) if mid else pastes.Shape()
    clock = EPOCH.replace(month=shape.month) + timedelta(seconds=r.randrange(0, 6 * 86400))
    lines = [
        f"SIMULATED (recovery-acceptance sim, seed {cluster.seed}): Megatron-style log of a simulated GPT "
        "pretraining job, not a measurement",
        f"using world size: {world}, data-parallel size: {max(world // args.tp, 1)}, "
        "context-parallel size: 1, "
        f"tensor-model-parallel size: {args.tp}, pipeline-model-parallel size: 1",
        "> building GPT model ...",
        f" > number of parameters on (tensor, pipeline) model parallel rank (0, 0): {1088487424}",
    ]
    if (env or {}).get("NCCL_DEBUG", "").upper() == "INFO":
        v = faults.versions(cluster.versions)
        lines += incident.nccl_info_lines(job, v.nccl, v.cuda, derive_seed(call_seed, "nccl-info"))
    elapsed = 55.0 + 0.02 * world
    fatal = faults.fatal(nodes)
    if fatal is not None:
        rank = cluster.node(fatal.node or nodes[0]).index % max(len(nodes), 1) * GPUS_PER_NODE + fatal.index
        nccl = faults.versions(cluster.versions).nccl
        lines += [
            f"[rank{rank}]: torch.distributed.DistBackendError: NCCL error in: "
            "/opt/pytorch/pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:3356, "
            f"unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version {nccl}",
            f"[rank{rank}]: ncclUnhandledCudaError: Call to CUDA function failed.",
            f"[rank{rank}]: Last error:",
            f"[rank{rank}]: Cuda failure 'unknown error'",
        ]
        return "\n".join(pastes.apply(lines, shape)) + "\n", 1, elapsed
    start = 0
    bad = faults.restore()
    if args.load is not None and args.ckpt_step is None:
        lines.append(f"WARNING: could not find the metadata file {args.load}/latest_checkpointed_iteration.txt")
        lines.append("    will not load any checkpoints and will start from random")
    elif args.load is not None and args.ckpt_step is not None:
        start = args.ckpt_step
        elapsed += 20.0 + r.uniform(0, 8)
        lines.append(f" loading checkpoint from {args.load} at iteration {start}")
        lines.append(f"  successfully loaded checkpoint from {args.load} [ t 1/{args.tp}, p 1/1 ] at iteration {start}")
    first = start + 1
    if bad is not None and start > 0 and bad.param("mode") == "step-off":
        first = start + 2
    clock += timedelta(seconds=elapsed)
    lines += [f"[before the start of training step] datetime: {_timestamp(clock)} ", "training ..."]
    base = 1.2 * (1 + 0.03 * math.log2(max(len(nodes), 1) / 16)) * faults.step_time_factor(cluster, nodes)
    base *= math.exp(r.gauss(0.0, 0.006))
    stop = incident.stopping(mid, nodes)
    slow = incident.slowdown(faults, mid, cluster, nodes)
    carry = 0.0
    window_t: list[float] = []
    window_l: list[float] = []
    for n, step in enumerate(range(first, args.train_iters + 1)):
        if stop is not None and step >= int(stop.param("at_step")):
            tail, code, seconds = incident.hang_lines(job, stop, step, clock, derive_seed(call_seed, "incident"), shape)
            return "\n".join(pastes.apply([*lines, *tail], shape)) + "\n", code, elapsed + seconds
        t = base * math.exp(r.gauss(0.0, 0.012)) + carry
        if slow is not None and step >= slow[0]:
            t *= slow[1]
        t *= (10.0 + r.uniform(-1, 2)) if n == 0 else 1.5 if n == 1 else 1.2 if n == 2 else 1.0
        carry = 0.0
        loss = base_loss(cluster.seed, step) * math.exp(r.gauss(0.0, 0.001))
        spike = 1.0
        if bad is not None and start > 0 and bad.param("mode") == "loss-jump":
            excess = float(bad.param("jump")) * math.exp(-(step - start - 1) / 60)
            loss *= 1 + excess
            spike = 1 + 12 * excess  # the grad norm co-spikes, as in real corrupted-state restores
        elapsed += t
        clock += timedelta(seconds=t)
        window_t.append(t)
        window_l.append(loss)
        if step % args.log_interval == 0 or step == args.train_iters:
            tm = sum(window_t) / len(window_t)
            lm = sum(window_l) / len(window_l)
            gnorm = (0.25 + 2.5 * (1 + step / 50) ** -0.8) * math.exp(r.gauss(0.0, 0.08)) * spike
            lines.append(
                f" [{_timestamp(clock)}] iteration {step:8d}/{args.train_iters:8d} |"
                f" consumed samples: {step * args.global_batch_size:12d} |"
                f" elapsed time per iteration (ms): {tm * 1000:.1f} |"
                f" throughput per GPU (TFLOP/s/GPU): {504.0 / tm:.1f} |"
                f" learning rate: {learning_rate(args, step):.6E} |"
                f" global batch size: {args.global_batch_size:5d} |"
                f" lm loss: {lm:.6E} |"
                f" loss scale: {65536.0 if args.fp16 else 1.0:.1f} |"
                f" grad norm: {gnorm:.3f} |"
                f" number of skipped iterations: {0:3d} |"
                f" number of nan iterations: {0:3d} |"
            )
            window_t, window_l = [], []
        if args.eval_interval and step % args.eval_interval == 0:
            lines += _eval_block(step, base_loss(cluster.seed, step) * 1.02)
            carry += 6.0 + r.uniform(0, 1)
        if args.save_interval and step % args.save_interval == 0:
            target = args.save or "/ckpt"
            lines.append(f"saving checkpoint at iteration {step:7d} to {target} in torch_dist format")
            lines.append(
                f"  successfully saved checkpoint from iteration {step:7d} to {target} [ t 1/{args.tp}, p 1/1 ]"
            )
            carry += 3.5 + r.uniform(0, 0.8)
        if args.exit_interval and step % args.exit_interval == 0:
            lines.append(f"[exiting program at iteration {step}] datetime: {_timestamp(clock)} ")
            return "\n".join(pastes.apply(lines, shape)) + "\n", 0, elapsed
    lines.append(f"[after training is done] datetime: {_timestamp(clock)} ")
    return "\n".join(pastes.apply(lines, shape)) + "\n", 0, elapsed
