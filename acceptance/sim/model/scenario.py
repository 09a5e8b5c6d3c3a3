"""Scenario files (``acceptance/sim/scenarios/*.yaml``, shipped in the package; ``fixtures/scenarios`` in a
checkout): a cluster size, a seed, software versions, faults.

::

    name: nic-degraded
    description: one rail of sim-node-07 at reduced speed
    nodes: 16                # 2..1024
    nodes_per_leaf: 8        # optional; default 8 up to 64 nodes, 16 beyond
    seed: 1
    versions: {nccl: 2.26.5} # optional overrides of acceptance.sim.model.cluster.Versions
    image_pull:              # optional: pull times on nodes with a cold image cache (sim.model.images)
      bandwidth: 150MiB
      cold_nodes: [sim-node-07]
      sizes: {nccl-tests: 6GiB, nemo: 25GiB}
    faults:
      - nic-degraded@sim-node-07:3          # compact form
      - {fault: bad-restore, mode: step-off} # with parameters
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from acceptance.errors import UsageError
from acceptance.sim.model.cluster import SimCluster, Versions, build_cluster
from acceptance.sim.model.faults import Fault, FaultSet
from acceptance.sim.model.faultspec import model_fault
from acceptance.sim.model.images import PullModel

SCENARIO_DIR = Path(__file__).resolve().parents[1] / "scenarios"  # shipped in the package
DEFAULT_SCENARIO = "healthy-16"
_KEYS = {"name", "description", "nodes", "nodes_per_leaf", "seed", "versions", "faults", "image_pull"}


@dataclass(frozen=True)
class Scenario:
    name: str = DEFAULT_SCENARIO
    description: str = "16 healthy H200 nodes"
    nodes: int = 16
    nodes_per_leaf: int | None = None
    seed: int = 1
    versions: Mapping[str, str] = field(default_factory=dict)
    faults: tuple[str | Mapping[str, Any], ...] = ()
    image_pull: PullModel | None = None  # None: every node has every image

    def build(
        self, seed: int | None = None, extra_faults: Iterable[str | Mapping[str, Any] | Fault] = ()
    ) -> tuple[SimCluster, FaultSet]:
        """The cluster and its faults; `seed` overrides the scenario's, `extra_faults` (parsed faults, compact
        strings or mappings with parameters, as in a scenario file) add to its own."""
        versions = Versions().with_overrides(self.versions)
        cluster = build_cluster(self.nodes, self.seed if seed is None else seed, self.nodes_per_leaf, versions)
        return cluster, FaultSet(tuple(model_fault(item, cluster) for item in (*self.faults, *extra_faults)))


def available(directory: Path = SCENARIO_DIR) -> list[str]:
    return sorted(p.stem for p in directory.glob("*.yaml")) if directory.is_dir() else []


def load_scenario(name_or_path: str | Path | None = None, directory: Path = SCENARIO_DIR) -> Scenario:
    """A scenario by name (``healthy-16``) from `directory`, or from a YAML file path."""
    ref = str(name_or_path or DEFAULT_SCENARIO)
    path = Path(ref)
    if not (path.suffix in (".yaml", ".yml") and path.is_file()):
        path = directory / f"{ref}.yaml"
    if not path.is_file():
        if ref == DEFAULT_SCENARIO:
            return Scenario()
        raise UsageError(f"unknown simulator scenario {ref!r}; available: {', '.join(available(directory)) or 'none'}")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise UsageError(f"{path}: not valid YAML: {exc}") from exc
    return scenario_from_dict(data, str(path))


def scenario_from_dict(data: Any, source: str = "<scenario>") -> Scenario:
    if not isinstance(data, dict):
        raise UsageError(f"{source}: expected a mapping with keys {sorted(_KEYS)}")
    unknown = sorted(set(data) - _KEYS)
    if unknown:
        raise UsageError(f"{source}: unknown key(s) {unknown}; expected some of {sorted(_KEYS)}")
    faults = data.get("faults") or []
    if not isinstance(faults, list) or not all(isinstance(f, str | dict) for f in faults):
        raise UsageError(f"{source}: faults must be a list of 'KIND[@NODE[:INDEX]]' strings or mappings")
    try:
        return Scenario(
            name=str(data.get("name", Path(source).stem)),
            description=str(data.get("description", "")),
            nodes=int(data.get("nodes", 16)),
            nodes_per_leaf=int(data["nodes_per_leaf"]) if data.get("nodes_per_leaf") else None,
            seed=int(data.get("seed", 1)),
            versions={str(k): str(v) for k, v in (data.get("versions") or {}).items()},
            faults=tuple(faults),
            image_pull=PullModel.from_mapping(data["image_pull"], source) if "image_pull" in data else None,
        )
    except (TypeError, ValueError) as exc:
        raise UsageError(f"{source}: {exc}") from exc
