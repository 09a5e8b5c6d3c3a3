"""Benchmark: time to verdict with and without pulling images ahead, and the harness's own overhead.

    python bench/prepull.py                          # the suite, 16 nodes, sim-node-07 returned with a cold cache
    python bench/prepull.py --scales 0.004 0.032 --repeat 3

The scenario `acceptance/sim/scenarios/cold-cache-16.yaml`: the returned node has an empty image cache
(nccl-tests 6 GiB, NeMo 25 GiB, DCGM 1 GiB at 150 MiB/s), the other nodes have every image. For
each mode (pre-pull on; off with ``kube.prepull_images: false``) the whole suite runs with
``--returned-node sim-node-07`` at two time scales s1 < s2 (the best of `--repeat` runs each).

The items wait for their batches one after the other (DCGM, each nccl test, the smoke run, the
pre-incident run): the critical path. Their junit times I(s) hold the tool time on it, scaled, plus
a little harness time per item; the run's wall time T(s) adds start-up, collection, the report:

    I(s) = i + s * S    so    S = (I2 - I1) / (s2 - s1)        O = T1 - s1 * S

S is the simulated time to verdict (tool time on the critical path, image pulls included), O the
wall seconds the harness adds to a run (start-up, orchestration, judging, the report); O / S is that
overhead as a share of the tool time at time scale 1 (a real cluster). Fitting on the items' times
rather than on T keeps the noise of process start-up on a busy machine out of S. Independently,
the run's own Kubernetes events say how long the nccl-tests and smoke batches waited for image pulls
(critical-path pull seconds, simulated). Prints; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the project, and `bench` as a package

from acceptance.profile import SHIPPED_DIR
from acceptance.sim.model.scenario import SCENARIO_DIR
from bench.suite_timing import timed_suite

SCENARIO = SCENARIO_DIR / "cold-cache-16.yaml"
RETURNED = "sim-node-07"
PULLED = re.compile(r"Successfully pulled image .* in ([0-9.]+)s \(([0-9.]+)s including waiting\)")


def baselines(folder: Path, time_scale: float, prepull: bool) -> Path:
    """A copy of baselines/sim (signed baseline and signers as shipped) on the cold-cache scenario."""
    target = folder / "baselines" / "sim"
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(SHIPPED_DIR / "sim", target)
    data = yaml.safe_load((target / "cluster.yaml").read_text())
    data["sim"]["scenario"] = str(SCENARIO)
    data["sim"]["time_scale"] = time_scale
    data["kube"]["prepull_images"] = prepull
    (target / "cluster.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    return target.parent


def run(folder: Path, time_scale: float, prepull: bool) -> tuple[float, float, float, str]:
    """Wall seconds of one suite run, its items' seconds (junit), the critical-path pull seconds from its
    events, and its summary."""
    report = folder / f"report-{time.monotonic_ns()}"
    wall, summary = timed_suite("--cluster=sim", f"--baselines-dir={baselines(folder, time_scale, prepull)}",
                                f"--report-dir={report}", f"--returned-node={RETURNED}", "--progress-every=0",
                                cwd=folder)  # fmt: skip
    junit = report / "junit.xml"
    items = sum(float(case.get("time", 0)) for case in ET.parse(junit).iter("testcase")) if junit.exists() else 0.0
    return wall, items, critical_pulls(report), summary


def critical_pulls(report: Path) -> float:
    """Simulated seconds the nccl-tests and training batches waited for images (the longest pod of each run)."""
    total = 0.0
    for group in ("nccl", "training"):
        for path in sorted((report / "events" / group).glob("*.json")):
            waits = [float(m.group(2)) for e in json.loads(path.read_text()) if (m := PULLED.search(e["message"]))]
            total += max(waits, default=0.0)
    return total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scales", type=float, nargs=2, default=[0.004, 0.032], metavar=("S1", "S2"))
    parser.add_argument("--repeat", type=int, default=2, help="runs per mode and scale; the fastest counts")
    args = parser.parse_args()
    s1, s2 = sorted(args.scales)
    print(f"suite on {SCENARIO.name}, --returned-node={RETURNED}; time scales {s1} and {s2}, best of {args.repeat}")
    fitted: dict[bool, tuple[float, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for prepull in (False, True):
            walls: dict[float, float] = {}
            items: dict[float, float] = {}
            pulls = 0.0
            for scale in (s1, s2):
                for _ in range(args.repeat):
                    wall, item, pulls, summary = run(Path(tmp), scale, prepull)
                    walls[scale] = min(walls.get(scale, wall), wall)
                    items[scale] = min(items.get(scale, item), item)
                    print(
                        f"  pre-pull {'on ' if prepull else 'off'} scale {scale:<6} {wall:6.1f} s wall, items "
                        f"{item:6.1f} s, critical-path pulls {pulls:4.0f} s simulated  ({summary})",
                        flush=True,
                    )
            simulated = (items[s2] - items[s1]) / (s2 - s1)
            overhead = walls[s1] - s1 * simulated
            fitted[prepull] = (simulated, overhead)
            label = "with pre-pull   " if prepull else "without pre-pull"
            print(
                f"{label}: simulated time to verdict {simulated:6.0f} s ({simulated / 60:.1f} min), of it image "
                f"pulls on the critical path {pulls:4.0f} s; harness overhead {overhead:5.1f} s wall "
                f"(at s2: {walls[s2] - s2 * simulated:5.1f} s) = {overhead / simulated:.2%} of the tool time at "
                "time scale 1",
                flush=True,
            )
    (without, _), (with_, overhead) = fitted[False], fitted[True]
    saved = without - with_
    print(f"pre-pulling saves {saved:.0f} s of {without:.0f} s to verdict ({saved / without:.1%})")
    ratio = overhead / with_
    print(
        f"harness overhead with pre-pull: {ratio:.2%} of the tool time at time scale 1 (target <= 1%: "
        f"{'met' if ratio <= 0.01 else 'NOT met'}); at the bench's scales {ratio / s1:.0%} and {ratio / s2:.0%}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
