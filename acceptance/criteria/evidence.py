"""The raw evidence of a run's workloads, kept in the report folder beside the verdicts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from acceptance.clusters.base import WorkloadResult
from acceptance.report.folder import ReportFolder


@dataclass(frozen=True)
class Evidence:
    """Writes what a workload printed, what was submitted, its events and outcome, under ``<group>/<name>``."""

    folder: ReportFolder

    def result(self, stem: str, result: WorkloadResult) -> None:
        self.folder.add_text(f"outputs/{stem}.log", result.output)
        for name, text in sorted(result.streams.items()):
            self.folder.add_text(f"outputs/{stem}.{name}.log", text)
        self.folder.add_yaml(f"manifests/{stem}.yaml", [dict(m) for m in result.manifests])
        self.folder.add_json(f"events/{stem}.json", [dict(e) for e in result.events])
        self.folder.add_json(f"results/{stem}.json", {
            "workload": result.workload, "kind": result.kind, "status": result.status, "reason": result.reason,
            "exit_code": result.exit_code, "placement": dict(result.placement),
            "started": result.started.isoformat() if result.started else None,
            "finished": result.finished.isoformat() if result.finished else None,
        })  # fmt: skip

    def placement(self, name: str, rows: Sequence[Mapping[str, Any]]) -> None:
        """rank → host → pod → node of one MPI run."""
        self.folder.add_json(f"placement/{name}.json", [dict(r) for r in rows])
