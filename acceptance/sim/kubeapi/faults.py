"""Faults the emulator can inject, chosen when it is built (never changed while it runs)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

IMAGE_PULL_FAILS = "does-not-exist"
"""An image whose name contains this cannot be pulled (ErrImagePull, then ImagePullBackOff)."""


#: the methods the emulator answers
METHODS = frozenset({"GET", "POST", "PUT", "DELETE"})


def request_kind(method: str, parts: Sequence[str]) -> str:
    """A request's method and the resource it addresses, with its subresource: ``GET pods/log`` for
    ``GET /api/v1/namespaces/NS/pods/NAME/log``, ``DELETE jobs`` for a Job's deletion."""
    at = parts.index("namespaces") + 2 if "namespaces" in parts else len(parts)
    if at >= len(parts):  # a cluster-scoped resource: /api/v1/RESOURCE[/NAME[/SUB]], /apis/GROUP/VERSION/RESOURCE
        at = 2 if parts[:1] == ["api"] else 3
    rest = parts[at:]
    return f"{method} {'/'.join([*rest[0:1], *rest[2:3]])}"


@dataclass(frozen=True)
class Faults:
    """What goes wrong in the emulated cluster.

    - `error_rate`: share of API requests answered 500/503/429 before any work is done.
    - `retry_after_s`: the ``Retry-After`` a 429 carries, whole seconds (1, as a busy API server says; 0 lets
      a test of a nearly dead API run in seconds: the client still honours it).
    - `latency_s`: added to every API answer.
    - `watch_drop_s`: a watch ends after a random time up to this (wall seconds).
    - `watch_gone_rate`: share of watch resumptions answered 410 Gone (the client must relist).
    - `pod_update_lag_s`: a pod's updates (MODIFIED events) reach its watchers this many wall seconds late, as
      from a slow watch stream: the Job's watch can say it completed while the pods' still shows it pending.
    - `node_not_ready`: node → simulated seconds after a pod starts running there when it goes NotReady.
    - `evict`: pods whose name contains this are evicted `evict_after_s` after they start.
    - `oom`: pods whose name contains this are OOMKilled halfway through their command.
    - `blackhole_rate`: share of requests that are read and never answered (the connection stays open).
    - `cut_rate`: share of requests whose connection is closed with no answer.
    - `refused`: requests always answered 503 ServiceUnavailable, named by method and resource as
      `request_kind` names them (``GET pods/log``: no log is handed over; ``DELETE jobs``: no Job is deleted).
    - `seed`: makes the random choices repeatable.
    """

    error_rate: float = 0.0
    retry_after_s: int = 1
    latency_s: float = 0.0
    watch_drop_s: float | None = None
    watch_gone_rate: float = 0.0
    pod_update_lag_s: float = 0.0
    node_not_ready: Mapping[str, float] = field(default_factory=dict)
    evict: str | None = None
    evict_after_s: float = 1.0
    oom: str | None = None
    blackhole_rate: float = 0.0
    cut_rate: float = 0.0
    refused: frozenset[str] = frozenset()
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("error_rate", "watch_gone_rate"):
            value = getattr(self, name)
            if not (0.0 <= value <= 1.0):  # also false for NaN
                raise ValueError(f"{name} {value!r}: expected a share from 0 to 1")
        for kind in self.refused:
            method, _, resource = kind.partition(" ")
            if method not in METHODS or not resource or " " in resource:
                raise ValueError(f"refused {kind!r}: expected a method and a resource, such as 'GET pods/log'")
        if not (0 <= self.retry_after_s <= 3600):
            raise ValueError(f"retry_after_s {self.retry_after_s!r}: expected whole seconds from 0 to 3600")
        for name in ("latency_s", "pod_update_lag_s"):
            value = getattr(self, name)
            if not (0.0 <= value < float("inf")):
                raise ValueError(f"{name} {value!r}: expected seconds >= 0")
