"""Benchmark: criterion 5 over a 24 h window from a real Prometheus, for 16, 128 and 1024 GPUs.

    python bench/recurrence.py                      # 16, 128 and 1024 GPUs (2, 16, 128 nodes)
    python bench/recurrence.py --gpus 128 --repeat 3
    python bench/recurrence.py --cache-dir /var/tmp/ra-bench   # keep the backfilled TSDBs for the next run

For each size the simulator writes a healthy 24 h production period of dcgm-exporter's judged
fields at a 15 s scrape interval (the series a passing window must read in full), promtool
backfills it and a `prometheus` serves it on loopback. Criterion 5's reading and judging then
runs in a fresh Python process, which reports its wall time, queries sent, points and bytes
read, and peak RSS; the Prometheus server's own peak RSS is printed beside it. Target: under
30 s for 1024 GPUs on a 2-core machine. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from acceptance.judge.recurrence import judge_hardware, judge_job, judge_probation  # noqa: E402
from acceptance.judge.recurrence_rules import RecurrenceRules, Window  # noqa: E402
from acceptance.metrics.collect import JobSources, collect_hardware, collect_job  # noqa: E402
from acceptance.metrics.remote import PrometheusSource  # noqa: E402
from acceptance.metrics.settings import PrometheusSettings  # noqa: E402
from acceptance.sim import promserver  # noqa: E402
from acceptance.sim.model.cluster import build_cluster  # noqa: E402
from acceptance.sim.model.production import Production  # noqa: E402
from acceptance.sim.probation import PROGRESS, STEP_TIME, write_period  # noqa: E402

DAY = 24 * 3600.0
FIELDS = (
    "DCGM_FI_DEV_GPU_TEMP",
    "DCGM_FI_DEV_XID_ERRORS",
    "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
    "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
    "DCGM_FI_DEV_ROW_REMAP_FAILURE",
)
START = datetime(2026, 11, 2, 3, 0, tzinfo=UTC)


def measure(url: str, nodes: list[str]) -> dict[str, object]:
    """Criterion 5's reading and judging, in this (fresh) process."""
    rules = RecurrenceRules()
    window = Window(START, DAY, START + timedelta(seconds=DAY + 1))
    source = PrometheusSource(PrometheusSettings(url=url, deadline_s=600))
    began = time.perf_counter()
    hardware = collect_hardware(source, nodes, window, rules, 8, 15.0)
    job = collect_job(source, JobSources(STEP_TIME, PROGRESS), window, 1.2, [], 15.0)
    parts = [judge_hardware(hardware, rules, window), judge_job(job, rules, window)]
    verdict = judge_probation(parts, nodes, rules, window)
    wall = time.perf_counter() - began
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "wall_s": wall,
        "status": verdict.status.value,
        "peak_rss_mib": peak_kib / 1024,
        **source.stats.as_figures(),
    }


def prepare(folder: Path, gpus: int) -> tuple[list[str], float, float, int]:
    """The period's TSDB under `folder` (reused when there): (nodes, write s, backfill s, samples)."""
    nodes_count = max(2, gpus // 8)
    cluster = build_cluster(nodes_count, seed=1)
    nodes = [n.name for n in cluster.nodes]
    model = Production(cluster, tuple(nodes), START, DAY, fields=FIELDS, job_nodes=nodes_count)
    samples = len(model.times) * (len(nodes) * 8 * len(FIELDS) + 2)
    if (folder / "tsdb" / "done").is_file():
        return nodes, 0.0, 0.0, samples
    began = time.perf_counter()
    dumps, _ = write_period(model, folder)
    wrote = time.perf_counter() - began
    began = time.perf_counter()
    promserver.backfill(dumps, folder / "tsdb", deadline_s=3600)
    filled = time.perf_counter() - began
    for dump in dumps:
        dump.unlink()
    (folder / "tsdb" / "done").write_text("ok\n")
    return nodes, wrote, filled, samples


def peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def bench(folder: Path, gpus: int, repeat: int) -> None:
    nodes, wrote, filled, samples = prepare(folder, gpus)
    setup = f"wrote {wrote:.0f} s, backfilled {filled:.0f} s" if wrote else "TSDB reused from the cache"
    print(f"{gpus} GPUs ({len(nodes)} nodes), 24 h at 15 s: {samples / 1e6:.1f} M samples; {setup}", flush=True)
    server = promserver.PrometheusServer.start(folder / "tsdb", f"bench-{gpus}", deadline_s=300)
    try:
        for n in range(repeat):
            argv = [sys.executable, __file__, "--measure", server.url, *nodes]
            done = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=1800)
            got = json.loads(done.stdout.strip().splitlines()[-1])
            print(
                f"  run {n + 1}: {got['wall_s']:.1f} s wall ({'under' if got['wall_s'] < 30 else 'OVER'} the 30 s "
                f"target), verdict {got['status']}, {got['queries']} queries, {got['points_read']:,} points, "
                f"{got['bytes_read'] / 1e6:.1f} MB read, {got['query_s']:.1f} s waiting on Prometheus, "
                f"peak RSS {got['peak_rss_mib']:.0f} MiB; prometheus peak RSS {peak_rss_mib(server.process.pid):.0f} "
                "MiB",
                flush=True,
            )
    finally:
        server.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", type=int, nargs="+", default=[16, 128, 1024])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--cache-dir", type=Path, default=None, help="keep (and reuse) the backfilled TSDBs here")
    parser.add_argument("--measure", nargs="+", metavar=("URL", "NODE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure[0], args.measure[1:])))
        return 0
    missing = promserver.available()
    if missing:
        print(f"skipped: {missing}")
        return 0
    with tempfile.TemporaryDirectory(prefix="bench-recurrence-") as tmp:
        root = args.cache_dir or Path(tmp)
        for gpus in args.gpus:
            bench(root / f"gpus-{gpus}", gpus, args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
