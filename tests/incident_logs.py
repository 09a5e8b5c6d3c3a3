"""Incidents made on the simulator for the tests: the training job with a fault injected mid-run."""

from __future__ import annotations

import re
from pathlib import Path

from acceptance.sim.model import SimRunner, load_scenario
from acceptance.sim.model.pastes import PREFIXES

BASELINES = Path(__file__).resolve().parents[1] / "baselines"

TRAIN = [
    "pretrain_gpt.py",
    "--train-iters",
    "1200",
    "--log-interval",
    "1",
    "--save-interval",
    "200",
    "--eval-interval",
    "500",
]
TORCHRUN = ["torchrun", "--nnodes", "16", "--nproc-per-node", "8", *TRAIN]
XID_NODE, XID_GPU, XID_STEP = "sim-node-05", 3, 700
NIC_NODE, NIC_STEP = "sim-node-07", 400
NODES = [f"sim-node-{i:02d}" for i in range(1, 17)]


def bundle_argv(*args: str, baselines: Path = BASELINES) -> list[str]:
    """`acceptance bundle` on the simulator, unsigned, with the project's baselines unless told, then `args`."""
    return ["bundle", "--cluster", "sim", "--baselines-dir", str(baselines), "--no-sign", *args]


def runner(*incidents: str, at_step: int | None = None, faults: tuple[str, ...] = ()) -> SimRunner:
    items: list[str | dict[str, object]] = list(faults)
    items += [{"fault": f, "at_step": at_step} for f in incidents]
    return SimRunner.from_scenario(load_scenario("healthy-16"), items, seed=20261129)


def write(folder: Path, only: tuple[str, ...] = ()) -> dict[str, Path]:
    """The incident logs of the tests, written once into `folder` (`only` some of them)."""
    out: dict[str, Path] = {}
    xid = f"gpu-xid@{XID_NODE}:{XID_GPU}"
    r = runner(xid, at_step=XID_STEP)
    if only == ("xid",):
        path = folder / "xid.log"
        path.write_text(r.run(TORCHRUN, {}, NODES[0], []).stdout)
        return {"xid": path}
    runs = {
        "xid": r.run(TORCHRUN, {}, NODES[0], []),
        "xid-info": runner(xid, at_step=XID_STEP, faults=("nccl-version",)).run(
            TORCHRUN, {"NCCL_DEBUG": "INFO"}, NODES[0], []
        ),
        "xid-mpirun": r.run(["mpirun", "-H", ",".join(f"{n}:8" for n in NODES), "python", *TRAIN], {}, NODES[0], []),
        "nic": runner(f"nic-degraded@{NIC_NODE}:2", at_step=NIC_STEP).run(["python", *TRAIN], {}, NODES[0], []),
        "reduced": runner().run(
            ["mpirun", "-H", ",".join(f"{n}:8" for n in NODES if n != XID_NODE), "python", *TRAIN], {}, NODES[0], []
        ),
        "dmesg": r.run(["dmesg"], {}, XID_NODE, []),
        "nvsmi": r.run(["nvidia-smi", "-q"], {}, XID_NODE, []),
    }
    for name, run in runs.items():
        path = folder / f"{name}.log"
        path.write_text(run.stdout)
        out[name] = path
    return out


_GLUED = re.compile(r"^Prefetching shards:[^\n]*?\](?=\[rank)", re.M)
C10_STAMP = r"E(\d{3,4}) ([\d:]+)\.(\d{6})"  # c10's date: month * 100 + day, not zero padded


def plain(text: str) -> str:
    """A simulated incident log as its ranks printed it: the shape's line prefix and progress-bar glue taken off."""
    lines = text.splitlines()
    for prefix in sorted(filter(None, PREFIXES.values()), key=len, reverse=True):
        if all(line.startswith(prefix) for line in lines if line.strip()):
            lines = [line.removeprefix(prefix).removeprefix(prefix.rstrip()) for line in lines]
            break
    return _GLUED.sub("", "\n".join(lines) + "\n")


def c10_date(month_day: str) -> tuple[int, int]:
    """``626`` → (6, 26), ``1206`` → (12, 6)."""
    return int(month_day) // 100, int(month_day) % 100
