"""Image pulls on the simulated nodes: a cold cache costs the image's size over the node's bandwidth.

A repaired or replaced node starts with an empty image cache; the others have every image the
cluster ran before. A node pulls one image at a time, as the kubelet does by default
(``serializeImagePulls``), so a second image waits for the first; a pod that wants an image
already being pulled waits for that pull. Pure: the caller gives the time (wall seconds) and the
time scale; `ImageCache` answers when an image is there.

A scenario's ``image_pull`` section::

    image_pull:
      bandwidth: 150MiB        # per node and second, from the registry (pull and unpack)
      cold_nodes: [sim-node-07] # or "all"; the other nodes have every image
      sizes:                    # by a part of the image reference, the first that matches
        nccl-tests: 6GiB
        nemo: 25GiB
      default_size: 1GiB
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from acceptance.errors import UsageError
from acceptance.units import parse_size

_KEYS = {"bandwidth", "cold_nodes", "sizes", "default_size"}


@dataclass(frozen=True)
class PullModel:
    """How images reach the nodes: bytes per second per node, sizes by reference, the nodes that start cold."""

    bandwidth_bps: float
    sizes: tuple[tuple[str, int], ...] = ()
    default_size: int = 1 << 30
    cold_nodes: frozenset[str] | None = None  # None: every node

    def size_of(self, image: str) -> int:
        return next((size for part, size in self.sizes if part in image), self.default_size)

    def seconds(self, image: str) -> float:
        """Simulated seconds one pull of `image` takes."""
        return self.size_of(image) / self.bandwidth_bps

    def cold(self, node: str) -> bool:
        return self.cold_nodes is None or node in self.cold_nodes

    @classmethod
    def from_mapping(cls, data: Any, source: str) -> PullModel:
        if not isinstance(data, Mapping):
            raise UsageError(f"{source}: image_pull: expected a mapping with keys {sorted(_KEYS)}")
        unknown = sorted(set(data) - _KEYS)
        if unknown:
            raise UsageError(f"{source}: image_pull: unknown key(s) {unknown}; expected some of {sorted(_KEYS)}")
        try:
            bandwidth = parse_size(str(data.get("bandwidth", "150MiB")).removesuffix("/s"))
            sizes = tuple((str(k), parse_size(v)) for k, v in (data.get("sizes") or {}).items())
            default = parse_size(data.get("default_size", "1GiB"))
        except (TypeError, ValueError) as exc:
            raise UsageError(f"{source}: image_pull: {exc}") from None
        if bandwidth <= 0:
            raise UsageError(f"{source}: image_pull.bandwidth must be more than 0 (e.g. 150MiB)")
        cold = data.get("cold_nodes", "all")
        if cold != "all" and not (isinstance(cold, list) and all(isinstance(n, str) for n in cold)):
            raise UsageError(f"{source}: image_pull.cold_nodes: expected a list of node names or 'all'")
        return cls(float(bandwidth), sizes, default, None if cold == "all" else frozenset(cold))


@dataclass
class ImageCache:
    """What each node has pulled, and when its pulls end (wall seconds, after `time_scale`)."""

    model: PullModel
    time_scale: float
    _ready: dict[tuple[str, str], float] = field(default_factory=dict)  # (node, image) -> when it is there
    _free: dict[str, float] = field(default_factory=dict)  # node -> when its current pulls end

    def request(self, node: str, image: str, now: float) -> tuple[float, float, float] | None:
        """None when `image` is on `node` now; else (wall time it will be, its pull's simulated seconds,
        simulated seconds waited for the node's earlier pulls). Asking again joins the same pull."""
        if not self.model.cold(node):
            return None
        ready = self._ready.get((node, image))
        if ready is not None:
            return None if ready <= now else (ready, self.model.seconds(image), 0.0)
        pull = self.model.seconds(image)
        start = max(now, self._free.get(node, now))
        ready = start + pull * self.time_scale
        self._ready[(node, image)] = ready
        self._free[node] = ready
        waited = (start - now) / self.time_scale if self.time_scale > 0 else 0.0
        return ready, pull, waited
