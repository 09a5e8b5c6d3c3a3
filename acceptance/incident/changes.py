"""Field 7: what differs from the last accepted state — the latest baseline and the latest signed acceptance report.

Each side is a `State` that knows some fields (images and digests, NCCL/CUDA/driver/Kubernetes
versions, GPU model, the job's command and environment, the node set). A field is compared only
where both sides know it. A difference is dated by its reference: when the reference is at most
24 h old the change happened within the last 24 h; when older, only "since <date>" is known.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from acceptance.incident.model import Change, ChangeLog

DAY = timedelta(hours=24)


@dataclass(frozen=True)
class State:
    label: str
    utc: datetime | None = None
    kind: str = "now"  # "now" | "baseline" | "report"
    images: Mapping[str, str] = field(default_factory=dict)
    versions: Mapping[str, str] = field(default_factory=dict)  # nccl, cuda, driver, kubernetes, gpu_product
    command: str | None = None
    env: Mapping[str, str] | None = None
    nodes: tuple[str, ...] | None = None
    extra: Mapping[str, str] = field(default_factory=dict)

    def reference_json(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "label": self.label,
            "utc": self.utc.isoformat() + "Z" if self.utc else None,
            **dict(self.extra),
        }


def _change(what: str, then: str | None, now: str | None, ref: State, now_utc: datetime) -> Change:
    within = (now_utc - ref.utc) <= DAY if ref.utc is not None else None
    return Change(what, then, now, ref.label, ref.utc, within)


def _compare(now: State, ref: State, now_utc: datetime, changes: list[Change], same: list[str]) -> None:
    for key in sorted(set(now.versions) & set(ref.versions)):
        a, b = ref.versions[key], now.versions[key]
        if a != b:
            changes.append(_change(key.replace("_", " "), a, b, ref, now_utc))
        else:
            same.append(f"{key.replace('_', ' ')} {b} (as in {ref.label})")
    for name in sorted(set(now.images) & set(ref.images)):
        if now.images[name] != ref.images[name]:
            changes.append(_change(f"image of {name}", ref.images[name], now.images[name], ref, now_utc))
    if now.images and ref.images and set(now.images) != set(ref.images):
        only_now = sorted(set(now.images) - set(ref.images))
        if only_now and not set(now.images) & set(ref.images):
            then = ", ".join(sorted(set(ref.images.values())))
            changes.append(_change("images", then, ", ".join(sorted(now.images[n] for n in only_now)), ref, now_utc))
    if now.command is not None and ref.command is not None and now.command != ref.command:
        changes.append(_change("job command", ref.command, now.command, ref, now_utc))
    if now.env is not None and ref.env is not None:
        for key in sorted(set(now.env) | set(ref.env)):
            was, is_now = ref.env.get(key), now.env.get(key)
            if was != is_now:
                changes.append(_change(f"env {key}", was, is_now, ref, now_utc))
    if now.nodes is not None and ref.nodes is not None:
        added = [n for n in now.nodes if n not in ref.nodes]
        removed = [n for n in ref.nodes if n not in now.nodes]
        if added or removed:
            changes.append(
                _change(
                    "node set",
                    f"{len(ref.nodes)} nodes" + (f", incl. {', '.join(removed)}" if removed else ""),
                    f"{len(now.nodes)} nodes" + (f", incl. {', '.join(added)}" if added else ""),
                    ref,
                    now_utc,
                )
            )
        else:
            same.append(f"node set of {len(now.nodes)} nodes (as in {ref.label})")


def changelog(now: State, references: Sequence[State], now_utc: datetime) -> ChangeLog:
    """Every difference of `now` from each reference, newest reference first."""
    changes: list[Change] = []
    same: list[str] = []
    ordered = sorted(references, key=lambda r: r.utc or datetime.min, reverse=True)
    for ref in ordered:
        _compare(now, ref, now_utc, changes, same)
    return ChangeLog(tuple(r.reference_json() for r in ordered), tuple(changes), tuple(same))
