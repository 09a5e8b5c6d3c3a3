"""Benchmark: assemble an incident bundle from the simulator's biggest jobs (issue 15), and read an
``NCCL_DEBUG=INFO`` capture of 8,192 ranks (issue 24).

    python bench/incident.py                  # 128, 1024 and 8192 ranks (16, 128 and 1024 nodes), then the capture
    python bench/incident.py --nodes 16 128   # some sizes only
    python bench/incident.py --nodes --nccl-info-ranks 8192          # the capture only (~10 M lines, ~900 MiB)
    python bench/incident.py --nodes --nccl-info-ranks 1024 --no-bundle

An XID strikes step 300 of a torchrun job on N nodes x 8 GPUs: every other rank prints PyTorch's
watchdog timeout (2 x 127 .. 2 x 8191 timed lines plus their follow-ups) and every node's agent its
ChildFailedError summary. Measured: the log's size, the time to parse it with every parser
(`incident.inputs.parse_input`), the time to derive the fields (`incident.assemble.findings`) and
to render ``bundle.json``, the document's size, and lines per second. Prints one JSON line per size.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))


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


def _rss_mib() -> float:
    """This process's resident set now (Linux /proc), in MiB; its peak where /proc is absent."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
        return round(pages * os.sysconf("SC_PAGE_SIZE") / 2**20, 1)
    except (OSError, ValueError, IndexError):
        return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def capture(ranks: int, bundle: bool) -> dict[str, object]:
    """The NCCL-INFO-heavy capture (one log per node, in a temporary folder): each reader's lines per second
    over it (the six that `parse_input` runs, `parse_input` itself, and the scrub of the evidence copy), read one
    file at a time (the resident set after every eighth of the files shows it stays flat),
    then ``acceptance bundle`` on the folder end to end, in a child process."""
    import nccl_capture

    from acceptance.incident import inputs
    from acceptance.report.secrets import scrub_text
    from acceptance.tools import kernel, kubectl, launcher, logtime, nvsmi, torchlogs

    nodes = ranks // 8
    out: dict[str, object] = {"capture_ranks": ranks, "files": nodes}
    with tempfile.TemporaryDirectory(prefix="nccl-info-") as tmp:
        folder = Path(tmp) / "logs"
        start = time.perf_counter()
        lines, size = nccl_capture.write(folder, nodes)
        out |= {
            "log_lines": lines,
            "log_mib": round(size / 2**20, 1),
            "generate_s": round(time.perf_counter() - start, 1),
        }
        files = sorted(folder.iterdir())
        readers = {
            "torchlogs": lambda text, name, year: torchlogs.parse(text, name, year=year),
            "launcher": lambda text, name, year: launcher.parse(text, name),
            "trainlog": lambda text, name, year: inputs._steps(text, name),
            "kubectl": lambda text, name, year: kubectl.may_recognise(text) and kubectl.parse(text, name),
            "kernel": lambda text, name, year: kernel.parse(text, name, year=year),
            "nvsmi": lambda text, name, year: nvsmi.parse(text, name),
            "parse_input": lambda text, name, year: inputs.parse_input(inputs.Input(name, text), year=year),
            "scrub": lambda text, name, year: scrub_text(text),  # the evidence copy's credentials scrub
        }
        spent = dict.fromkeys(readers, 0.0)
        cpu = dict.fromkeys(spent, 0.0)  # CPU seconds too: on a shared machine the wall clock also counts waiting
        rss: list[float] = []
        for n, path in enumerate(files):
            text = path.read_text()
            year = logtime.first_year(text)
            for name, read in readers.items():
                start, clock = time.perf_counter(), time.process_time()
                read(text, str(path), year)
                spent[name] += time.perf_counter() - start
                cpu[name] += time.process_time() - clock
            if n % max(1, len(files) // 8) == 0:
                rss.append(_rss_mib())
        for name, seconds in spent.items():
            out[f"{name}_s"] = round(seconds, 2)
            out[f"{name}_lines_per_s"] = int(lines / max(seconds, 1e-9))
            out[f"{name}_lines_per_cpu_s"] = int(lines / max(cpu[name], 1e-9))
        out["readers_rss_mib_every_eighth"] = rss
        out["readers_peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
        if bundle:
            out |= _bundle(folder, Path(tmp))
    return out


def _bundle(folder: Path, tmp: Path) -> dict[str, object]:
    root = Path(__file__).resolve().parents[1]
    argv = [sys.executable, "-m", "acceptance.cli", "bundle", "--cluster", "sim", "--baselines-dir",
            str(root / "baselines"), "--no-sign", "--reports-dir", str(tmp / "reports"), "--out", str(tmp / "b"),
            "--job-logs", str(folder)]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(root)}
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    child = resource.getrusage(resource.RUSAGE_CHILDREN)
    out: dict[str, object] = {"bundle_rc": done.returncode, "bundle_s": round(wall, 1),
                              "bundle_cpu_s": round(child.ru_utime + child.ru_stime, 1),
                              "bundle_peak_rss_mib": round(child.ru_maxrss / 1024, 1)}  # fmt: skip
    if done.returncode != 0:
        out["bundle_stderr"] = done.stderr[-2000:]
        return out
    doc = json.loads((tmp / "b" / "bundle.json").read_text())
    out |= {
        "bundle_window": [doc["window"]["how"], doc["window"]["first_bad_utc"]],
        "bundle_affected": [a["node"] for a in doc["cluster"]["affected"][:2]],
        "bundle_mapped_ranks": len(doc["ranks"]["entries"]),
        "bundle_log_clock": doc["log_clock"][:160],
        "bundle_folder_mib": round(sum(p.stat().st_size for p in (tmp / "b").rglob("*") if p.is_file()) / 2**20, 1),
    }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, nargs="*", default=[16, 128, 1024])
    parser.add_argument("--nccl-info-ranks", type=int, nargs="*", default=[8192])
    parser.add_argument("--no-bundle", action="store_true", help="the capture's readers only, no acceptance bundle")
    args = parser.parse_args()
    for nodes in args.nodes:
        print(json.dumps(one(nodes)), flush=True)
    for ranks in args.nccl_info_ranks:
        print(json.dumps(capture(ranks, not args.no_bundle)), flush=True)


if __name__ == "__main__":
    main()
