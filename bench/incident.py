"""Benchmark: assemble an incident bundle from the simulator's biggest jobs (issue 15).

    python bench/incident.py                  # 128, 1024 and 8192 ranks (16, 128 and 1024 nodes)
    python bench/incident.py --nodes 16 128   # some sizes only

An XID strikes step 300 of a torchrun job on N nodes x 8 GPUs: every other rank prints PyTorch's
watchdog timeout (2 x 127 .. 2 x 8191 timed lines plus their follow-ups) and every node's agent its
ChildFailedError summary. Measured: the log's size, the time to parse it with every parser
(`incident.inputs.parse_input`), the time to derive the fields (`incident.assemble.findings`) and
to render ``bundle.json``, the document's size, and lines per second. Prints one JSON line per size.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def one(nodes: int) -> dict[str, object]:
    from acceptance.incident import assemble, changes, render
    from acceptance.incident.inputs import Input, parse_input
    from acceptance.sim.model import SimRunner, load_scenario
    from acceptance.sim.model.scenario import Scenario

    scenario = load_scenario("healthy-16") if nodes == 16 else Scenario(name=f"n{nodes}", nodes=nodes)
    node = f"sim-node-{5:0{max(2, len(str(nodes)))}d}"
    runner = SimRunner.from_scenario(scenario, [{"fault": f"gpu-xid@{node}:3", "at_step": 300}], seed=1)
    argv = [
        "torchrun",
        "--nnodes",
        str(nodes),
        "--nproc-per-node",
        "8",
        "pretrain_gpt.py",
        "--train-iters",
        "400",
        "--save-interval",
        "100",
    ]
    start = time.perf_counter()
    text = runner.run(argv, {}, runner.cluster.nodes[0].name, []).stdout
    sim_s = time.perf_counter() - start
    lines = text.count("\n")
    start = time.perf_counter()
    parsed = [parse_input(Input("job.log", text))]
    parse_s = time.perf_counter() - start
    ctx = assemble.Context(
        cluster="bench",
        created=datetime(2026, 12, 1),
        nodes=tuple(n.name for n in runner.cluster.nodes),
        gpus_per_node=8,
        full_size=nodes * 8,
    )
    start = time.perf_counter()
    found = assemble.findings(parsed, ctx)
    bundle = assemble.bundle(parsed, found, ctx, [], changes.ChangeLog((), ()))
    doc = json.dumps(render.to_json(bundle, {}))
    derive_s = time.perf_counter() - start
    return {
        "nodes": nodes,
        "ranks": nodes * 8,
        "log_lines": lines,
        "log_mib": round(len(text) / 2**20, 1),
        "simulate_s": round(sim_s, 2),
        "parse_s": round(parse_s, 2),
        "derive_and_render_s": round(derive_s, 2),
        "lines_per_s": int(lines / max(parse_s + derive_s, 1e-9)),
        "bundle_json_mib": round(len(doc) / 2**20, 2),
        "affected": [a.node for a in bundle.cluster.affected[:1]],
        "mapped_ranks": len(bundle.ranks.entries),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, nargs="+", default=[16, 128, 1024])
    for nodes in parser.parse_args().nodes:
        print(json.dumps(one(nodes)), flush=True)


if __name__ == "__main__":
    main()
