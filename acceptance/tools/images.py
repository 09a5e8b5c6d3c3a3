"""Container image references as Kubernetes reports them: a tag (``repo:tag``) or a digest (``repo@sha256:…``)."""

from __future__ import annotations


def pinned(ref: str | None) -> bool:
    """Whether `ref` names one image by its content (a digest), not a tag that may move."""
    return bool(ref) and "@sha256:" in str(ref)


def shown(now: str | None, then: str | None) -> str:
    """Today's image in words beside the handover's: a tag against a recorded digest says why it is not comparable."""
    if not now:
        return "unknown"
    if pinned(then) and not pinned(now):
        return f"{now} (a tag: no digest was reported for it, so it cannot be shown to be the handover's image)"
    return now
