"""The simulated probation: the production model's series in a real Prometheus (or offline dumps), for criterion 5.

Writes the model's OpenMetrics dumps (one file per group of nodes, so promtool's memory stays
bounded) and the job's rank logs into a folder named after the run, backfills a Prometheus
with ``promtool`` and serves it on loopback. Without the ``prometheus`` package the same dumps
are read through the offline source, and the source's description says so. On the simulator
the window is taken as already elapsed.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from acceptance.clusters.base import ClusterEvent
from acceptance.errors import ProfileError
from acceptance.metrics.base import MetricsSource
from acceptance.metrics.offline import OfflineSource
from acceptance.metrics.remote import PrometheusSource
from acceptance.metrics.settings import PrometheusSettings
from acceptance.profile import Profile
from acceptance.sim import promserver
from acceptance.sim.model import SimCluster, load_scenario
from acceptance.sim.model.production import DEFAULT_FIELDS, Production
from acceptance.sim.model.production_faults import RecurrenceFault

NODES_PER_DUMP = 16
STEP_TIME = 'max(job_step_time_seconds{job="gpt-prod"})'
PROGRESS = 'max(job_steps_completed_total{job="gpt-prod"})'


def sim_cluster(profile: Profile) -> SimCluster:
    if profile.sim is None:
        raise ProfileError(f"{profile.path}: backend sim needs a 'sim' section")
    cluster, _ = load_scenario(profile.sim.scenario).build(profile.sim.seed)
    return cluster


def simulated_node_signals(
    profile: Profile, nodes: Sequence[str], since: datetime, faults: Sequence[RecurrenceFault]
) -> list[ClusterEvent]:
    """The production period's node events (``node-notready-recur``), from `since` on."""
    model = Production(sim_cluster(profile), tuple(nodes), since, 0.0, tuple(faults))
    out = [
        ClusterEvent(when, f"Node/{node}", reason, message, "Warning" if reason == "NodeNotReady" else "Normal")
        for when, node, reason, message in model.cluster_events()
    ]
    out.append(ClusterEvent(since, "cluster", "Coverage", "SIMULATED: node events of the simulated production period"))
    return out


def write_period(model: Production, folder: Path) -> tuple[list[Path], list[Path]]:
    """The model's OpenMetrics dumps and rank logs under `folder`: (dumps, logs)."""
    dumps_dir, logs_dir = folder / "dumps", folder / "rank-logs"
    dumps_dir.mkdir(parents=True, exist_ok=True)
    logs_dir.mkdir(parents=True, exist_ok=True)
    dumps = []
    groups = [model.nodes[i : i + NODES_PER_DUMP] for i in range(0, len(model.nodes), NODES_PER_DUMP)]
    for n, group in enumerate(groups):
        path = dumps_dir / f"dcgm-exporter-{n:03d}.om"
        with path.open("w", encoding="utf-8") as out:
            for chunk in model.openmetrics(group, job=n == 0):
                out.write(chunk)
        dumps.append(path)
    logs = []
    for node, text in model.rank_logs().items():
        path = logs_dir / f"{node}.log"
        path.write_text(text, encoding="utf-8")
        logs.append(path)
    return dumps, logs


@dataclass
class SimulatedProbation:
    """The simulated production period of one run, served for criterion 5; `close` stops and removes it.

    `job`: the queries of the job's series in it; `now`: the window taken as elapsed (`elapsed_now`)."""

    folder: Path
    source: MetricsSource
    logs: list[Path]
    now: datetime
    notes: list[str] = field(default_factory=list)
    server: promserver.PrometheusServer | None = None
    job: Mapping[str, str] = field(default_factory=lambda: {"step_time": STEP_TIME, "progress": PROGRESS})

    @classmethod
    def open(
        cls,
        profile: Profile,
        nodes: Sequence[str],
        start: datetime,
        length_s: float,
        faults: Sequence[RecurrenceFault],
        marker: str,
        fields: Sequence[str] = DEFAULT_FIELDS,
    ) -> SimulatedProbation:
        cluster = sim_cluster(profile)
        parsed = tuple(faults)
        model = Production(
            cluster, tuple(nodes), start, length_s, parsed, fields=tuple(fields), job_nodes=len(cluster.nodes)
        )
        folder = Path(tempfile.mkdtemp(prefix=f"acceptance-probation-{marker}-"))
        try:
            dumps, logs = write_period(model, folder)
            notes = [
                f"SIMULATED production period of {len(nodes)} nodes from {start.isoformat()} "
                f"({', '.join(f.text for f in parsed) or 'no recurrence faults'})"
            ]
            missing = promserver.available()
            if missing is not None:
                notes.append(f"{missing}: the simulated series are read through the offline source")
                source: MetricsSource = OfflineSource(folder / "dumps", note="SIMULATED, offline (no prometheus)")
                return cls(folder, source, logs, elapsed_now(start, length_s), notes)
            promserver.backfill(dumps, folder / "tsdb")
            server = promserver.PrometheusServer.start(folder / "tsdb", marker)
            for dump in dumps:
                dump.unlink()  # the TSDB holds them now
            settings = PrometheusSettings(url=server.url, scrape_interval_s=model.scrape_s)
            source = PrometheusSource(settings, note="SIMULATED: backfilled by promtool from the simulator's series")
            return cls(folder, source, logs, elapsed_now(start, length_s), notes, server)
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise

    def close(self) -> None:
        try:
            self.source.close()
            if self.server is not None:
                self.server.stop()
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)


def elapsed_now(start: datetime, length_s: float) -> datetime:
    """On the simulator the window is taken as elapsed: "now" is just past its end."""
    return start + timedelta(seconds=length_s + 1)
