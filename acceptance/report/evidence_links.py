"""Which files of the report folder are a verdict's evidence, as relative links.

The scheduler writes each workload's evidence as ``<kind>/<group>/<subject>.<ext>`` (see
`criteria.evidence.Evidence` and `criteria.scheduler.Batch`): ``outputs/`` (what the tool
printed, read first), ``results/``, ``events/``, ``manifests/``. A criterion's groups and the
verdict's subject (a node, an nccl-test) name its files. Pure: the folder's file list in, paths out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import PurePosixPath
from typing import Any

KINDS = ("outputs", "results", "events", "manifests")  # reading order
_GROUPS: dict[int | None, tuple[str, ...]] = {1: ("dcgm",), 2: ("nccl",), 3: ("training",), 4: ("training",)}
_STEMS: dict[int | None, tuple[str, ...]] = {3: ("smoke",), 4: ("pre-incident", "smoke")}
LOCALIZE = "localize.json"


class EvidenceIndex:
    """A report folder's files by (group, subject); built once, asked per verdict."""

    def __init__(self, files: Iterable[str]) -> None:
        self.files = frozenset(files)
        self._by_stem: dict[tuple[str, str], list[tuple[int, str]]] = {}
        for name in sorted(self.files):
            path = PurePosixPath(name)
            if len(path.parts) >= 3 and path.parts[0] in KINDS:
                group = "/".join(path.parts[1:-1])
                self._by_stem.setdefault((group, path.stem), []).append((KINDS.index(path.parts[0]), name))

    def groups(self) -> set[str]:
        return {group for group, _ in self._by_stem}

    def of(self, criterion: int | None, verdict: Mapping[str, Any]) -> tuple[str, ...]:
        """The verdict's evidence, its tool output first; nothing for a criterion that runs no workload."""
        stems = _stems(criterion, verdict)
        if criterion is None:
            groups: tuple[str, ...] = tuple(sorted(g for g in self.groups() if g.startswith("site/")))
        else:
            groups = _GROUPS.get(criterion, ())
        out = [name for stem in stems for group in groups for _, name in sorted(self._by_stem.get((group, stem), []))]
        if criterion == 2:
            out += [f"placement/{s}.json" for s in stems if f"placement/{s}.json" in self.files]
            if (verdict.get("figures") or {}).get("localize_rounds") and LOCALIZE in self.files:
                out.append(LOCALIZE)
        return tuple(dict.fromkeys(out))


def _stems(criterion: int | None, verdict: Mapping[str, Any]) -> tuple[str, ...]:
    if criterion in _STEMS:
        return _STEMS[criterion]
    figures = verdict.get("figures") or {}
    return tuple(dict.fromkeys(str(s) for s in (figures.get("node"), verdict.get("subject")) if s))
