"""Benchmark: what redaction and the scan before signing cost in writing a large report and bundle (issue 23.3).

    python bench/redaction.py              # 128 nodes x 8 GPUs
    python bench/redaction.py --nodes 16 128
    python bench/redaction.py --suite      # also: the whole simulated suite at 128 nodes, its report as written

The report: per node the simulator's ``dcgmi diag -r 3 -j`` output, its result JSON and a pod manifest
(as criterion 1 writes them), the 128-node torchrun smoke log, then `finalize` (report-data.json, the
HTML page with its heatmap, the manifest, the scan). The bundle: `write_bundle` of the XID incident in
that log (inputs, bundle.json, bundle.md, the step plot, manifest, scan, archive). Measured: the wall
time of writing each, and within it the time spent in `scrub_text`/`scrub_obj` (redaction as files are
written) and `scan_folder` (the last scan before signing); prints the share (goal: under 10%).
With ``--suite``: the simulated suite at that size, in this process, with every `ReportFolder.add_*` and
`finalize` timed (the report as the run writes it) against the redaction inside them.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


class Clock:
    """Time spent inside the wrapped functions, outermost calls only (scrub_obj calls scrub_text)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.depth = 0

    def wrap(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            self.depth += 1
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.depth -= 1
                if self.depth == 0:
                    self.seconds += time.perf_counter() - start

        return timed


def instrument() -> tuple[Clock, Clock]:
    """Clocks around redaction as files are written (scrub_text, scrub_obj) and the scan before signing."""
    from acceptance.report import bundle, finalize, folder, manifest, secrets

    scrub, scan = Clock(), Clock()
    originals = {name: getattr(secrets, name) for name in ("scrub_text", "scrub_obj", "scan_folder")}
    for module in (secrets, folder, manifest, finalize, bundle):
        for name, original in originals.items():
            if hasattr(module, name):
                setattr(module, name, (scan if name == "scan_folder" else scrub).wrap(original))
    return scrub, scan


def smoke_log(nodes: int) -> tuple[str, Any]:
    from acceptance.sim.model import SimRunner
    from acceptance.sim.model.scenario import Scenario

    node = f"sim-node-{5:0{max(2, len(str(nodes)))}d}"
    runner = SimRunner.from_scenario(
        Scenario(name=f"n{nodes}", nodes=nodes), [{"fault": f"gpu-xid@{node}:3", "at_step": 300}], seed=1
    )
    argv = ["torchrun", "--nnodes", str(nodes), "--nproc-per-node", "8", "pretrain_gpt.py", "--train-iters", "400"]
    return runner.run(argv, {}, runner.cluster.nodes[0].name, []).stdout, runner


def pod(node: str) -> dict[str, Any]:
    env = [{"name": "NCCL_DEBUG", "value": "INFO"}, {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf"}}}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"acceptance-dcgm-{node}", "labels": {"app": "acceptance", "node": node}},
        "spec": {
            "nodeName": node,
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "dcgm",
                    "image": "nvcr.io/nvidia/cloud-native/dcgm:3.3.5-1-ubuntu22.04",
                    "command": ["dcgmi", "diag", "-r", "3", "-j"],
                    "env": env,
                    "resources": {"limits": {"nvidia.com/gpu": 8}},
                }
            ],
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        },
    }


def write_report(root: Path, nodes: int, log: str, runner: Any) -> float:
    from acceptance.report.finalize import finalize
    from acceptance.report.folder import ReportFolder
    from acceptance.report.sign import SignOptions
    from tests.report_scale import DCGM_ARGV, node_names, scale_report

    names = node_names(nodes)
    outputs = {name: runner.run(DCGM_ARGV, {}, name, []).stdout for name in names}
    data = scale_report(nodes, [f"gpu-xid@{names[4 % nodes]}:2"])
    start = time.perf_counter()
    folder = ReportFolder.create(root, "bench", datetime(2026, 12, 1, tzinfo=UTC))
    for name in names:
        folder.add_text(f"outputs/dcgm/{name}.log", outputs[name])
        folder.add_json(f"results/dcgm/{name}.json", json.loads(outputs[name]))
        folder.add_yaml(f"manifests/dcgm/{name}.yaml", pod(name))
    folder.add_text("outputs/training/smoke.log", log)
    result = finalize(folder, None, data, SignOptions(enabled=False))
    assert result.refused is None, result.refused
    return time.perf_counter() - start


def write_bundle_of(root: Path, nodes: int, log: str, runner: Any) -> float:
    from acceptance.incident import assemble, changes
    from acceptance.incident.inputs import Input, parse_input
    from acceptance.report.bundle import write_bundle
    from acceptance.report.sign import SignOptions

    parsed = [parse_input(Input("job.log", log))]
    ctx = assemble.Context(
        cluster="bench",
        created=datetime(2026, 12, 1),
        nodes=tuple(n.name for n in runner.cluster.nodes),
        gpus_per_node=8,
        full_size=nodes * 8,
    )
    found = assemble.findings(parsed, ctx)
    bundle = assemble.bundle(parsed, found, ctx, [], changes.ChangeLog((), ()))
    start = time.perf_counter()
    written = write_bundle(bundle, root / "bundle", [("job.log", log)], {}, SignOptions(enabled=False))
    assert written.refused is None, written.refused
    return time.perf_counter() - start


def suite(nodes: int, scrub: Clock, scan: Clock) -> dict[str, Any]:
    import pytest
    import yaml

    from acceptance.report import finalize as finalize_module
    from acceptance.report import reporting_plugin
    from acceptance.report.folder import ReportFolder
    from bench.suite_scale import profile
    from tests.report_scale import node_names

    write = Clock()
    for name in ("add_text", "add_json", "add_yaml", "add_file"):
        setattr(ReportFolder, name, write.wrap(getattr(ReportFolder, name)))
    reporting_plugin.finalize = write.wrap(finalize_module.finalize)  # type: ignore[attr-defined]
    with tempfile.TemporaryDirectory() as tmp:
        baselines = profile(Path(tmp), nodes)
        agreement = baselines / "scale" / "cluster.yaml"
        data = yaml.safe_load(agreement.read_text())
        data["nodes"]["names"] = node_names(nodes)  # the simulator's names at this size
        agreement.write_text(yaml.safe_dump(data, sort_keys=False))
        report = Path(tmp) / "report"
        scrub.seconds = scan.seconds = 0.0
        start = time.perf_counter()
        suite_dir = str(Path(__file__).resolve().parents[1] / "acceptance")
        argv = [suite_dir, "--cluster=scale", f"--baselines-dir={baselines}", f"--report-dir={report}",
                "--record-baseline", "--no-sign", "-q", "-p", "no:cacheprovider", "--assert=plain"]  # fmt: skip
        status = pytest.main(argv)
        wall = time.perf_counter() - start
        files = [p for p in report.rglob("*") if p.is_file()]
        mib = sum(p.stat().st_size for p in files) / 2**20
    return {
        "suite_nodes": nodes,
        "exit": int(status),
        "wall_s": round(wall, 1),
        "report_files": len(files),
        "report_mib": round(mib, 1),
        "report_write_s": round(write.seconds, 2),
        "scrub_s": round(scrub.seconds, 2),
        "scan_s": round(scan.seconds, 2),
        "redact_share": f"{(scrub.seconds + scan.seconds) / max(write.seconds, 1e-9):.1%}",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[128])
    parser.add_argument("--suite", action="store_true", help="also run the simulated suite at each size")
    args = parser.parse_args()
    scrub, scan = instrument()
    for nodes in args.nodes:
        log, runner = smoke_log(nodes)
        with tempfile.TemporaryDirectory() as tmp:
            scrub.seconds = scan.seconds = 0.0
            report_s = write_report(Path(tmp), nodes, log, runner)
            report_scrub, report_scan = scrub.seconds, scan.seconds
            report_mib = sum(p.stat().st_size for p in Path(tmp).rglob("*") if p.is_file()) / 2**20
            scrub.seconds = scan.seconds = 0.0
            bundle_s = write_bundle_of(Path(tmp), nodes, log, runner)
            bundle_scrub, bundle_scan = scrub.seconds, scan.seconds
        total = report_s + bundle_s
        redact = report_scrub + report_scan + bundle_scrub + bundle_scan
        print(
            json.dumps(
                {
                    "nodes": nodes,
                    "report_mib": round(report_mib, 1),
                    "report_write_s": round(report_s, 2),
                    "report_scrub_s": round(report_scrub, 2),
                    "report_scan_s": round(report_scan, 2),
                    "bundle_write_s": round(bundle_s, 2),
                    "bundle_scrub_s": round(bundle_scrub, 2),
                    "bundle_scan_s": round(bundle_scan, 2),
                    "redact_share": f"{redact / total:.1%}",
                }
            ),
            flush=True,
        )
    for nodes in args.nodes if args.suite else []:
        print(json.dumps(suite(nodes, scrub, scan)), flush=True)


if __name__ == "__main__":
    main()
