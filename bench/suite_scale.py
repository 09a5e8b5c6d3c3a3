"""Benchmark: the acceptance suite end to end on a large simulated cluster (record, then judge).

    python bench/suite_scale.py                # 1024 nodes x 8 GPUs, one nccl test
    python bench/suite_scale.py --nodes 256

Prints the wall time of each run and the items per second; asserts nothing.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the project, and `bench` as a package

from bench.suite_timing import timed_suite

ROOT = Path(__file__).resolve().parents[1]


def profile(folder: Path, nodes: int) -> Path:
    data = yaml.safe_load((ROOT / "baselines" / "sim" / "cluster.yaml").read_text())
    data["cluster"] = "scale"
    scenario = folder / "scenario.yaml"
    scenario.write_text(yaml.safe_dump({"name": f"scale-{nodes}", "nodes": nodes, "seed": 1, "faults": []}))
    data["sim"]["scenario"] = str(scenario)
    data["sim"]["time_scale"] = 0.0005
    width = 4 if nodes > 99 else 2
    data["nodes"]["names"] = [f"sim-node-{i:0{width}d}" for i in range(1, nodes + 1)]
    data["nccl"]["tests"] = data["nccl"]["tests"][:1]
    target = folder / "baselines" / "scale"
    target.mkdir(parents=True)
    (target / "cluster.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    return target.parent


def run(baselines: Path, report: Path, *extra: str) -> tuple[float, str]:
    return timed_suite("--cluster=scale", f"--baselines-dir={baselines}", f"--report-dir={report}", *extra)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1024)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        baselines = profile(Path(tmp), args.nodes)
        for mode, extra in (("record", ("--record-baseline",)), ("judge", ("--allow-unsigned-baseline",))):
            wall, summary = run(baselines, Path(tmp) / f"report-{mode}", *extra)
            items = args.nodes + 7
            print(f"{args.nodes} nodes, {mode}: {wall:.1f} s wall, {items / wall:.1f} items/s ({summary})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
