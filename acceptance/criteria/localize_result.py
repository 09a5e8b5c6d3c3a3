"""A localization's outcome as plain data: the conclusion, every round's groups, and what it took.

It crosses pytest processes (the run folder's `once` hands one process's search to all) and
becomes the fabric verdict's junit properties (`culprit`, `culprit_kind`, `localize_rounds`,
`localize_tests`, `localize_seconds`), evidence lines and the HTML's matrix (`details`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from acceptance.judge.localize import Conclusion
from acceptance.judge.verdict import Figure, Verdict


@dataclass(frozen=True)
class LocalizeResult:
    test: str
    conclusion: Conclusion
    rounds: tuple[Mapping[str, Any], ...]
    seconds: float
    sizes: tuple[int, ...]
    reference: str
    topology: str
    stopped: str = ""

    def figures(self) -> dict[str, Figure]:
        c = self.conclusion
        return {
            "culprit": c.culprit,
            "culprit_kind": c.culprit_kind,
            "localize_rounds": c.rounds,
            "localize_tests": c.tests,
            "localize_seconds": round(self.seconds, 1),
            "localize_test": self.test,
            "localize_confirmed": c.confirmed,
        }

    def evidence(self) -> list[str]:
        c = self.conclusion
        sizes = ", ".join(_size(s) for s in self.sizes) or "none"
        lines = [f"localization: {c.summary}", *c.evidence]
        lines.append(f"group tests: {self.test} at {sizes}, against {self.reference}; topology from {self.topology}")
        if self.stopped:
            lines.append(f"search stopped: {self.stopped}")
        return lines

    def details(self) -> dict[str, Any]:
        """What the HTML shows: the conclusion and each round's groups."""
        return {
            "test": self.test,
            "culprit": self.conclusion.culprit,
            "culprit_kind": self.conclusion.culprit_kind,
            "summary": self.conclusion.summary,
            "rounds": [dict(r) for r in self.rounds],
            "sizes": list(self.sizes),
            "reference": self.reference,
            "seconds": round(self.seconds, 1),
        }

    def attach(self, verdict: Verdict) -> Verdict:
        """The fabric verdict carrying this conclusion (summary, figures, evidence, details)."""
        c = self.conclusion
        plural = "s" if c.rounds != 1 else ""
        summary = f"{verdict.summary}; localized in {c.rounds} round{plural}: {c.summary}"
        return replace(
            verdict,
            summary=summary,
            figures={**verdict.figures, **self.figures()},
            evidence=(*self.evidence(), *verdict.evidence),
            details={**verdict.details, "localize": self.details()},
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "test": self.test, "conclusion": self.conclusion.to_json(), "rounds": [dict(r) for r in self.rounds],
            "seconds": self.seconds, "sizes": list(self.sizes), "reference": self.reference,
            "topology": self.topology, "stopped": self.stopped,
        }  # fmt: skip

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> LocalizeResult:
        sizes = tuple(int(s) for s in doc["sizes"])
        return cls(
            str(doc["test"]), Conclusion.from_json(doc["conclusion"]), tuple(doc["rounds"]), float(doc["seconds"]),
            sizes, str(doc["reference"]), str(doc["topology"]), str(doc.get("stopped", "")),
        )  # fmt: skip


def _size(size: int) -> str:
    from acceptance.tools.nccl import fmt_bytes

    return fmt_bytes(size)
