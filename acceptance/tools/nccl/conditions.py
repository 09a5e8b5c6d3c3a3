"""`NcclConditions`: what must be equal between today's fabric run and the handover's.

The normalized command, the collective, the message-size range, ranks per node,
node count and the nccl-tests / NCCL / CUDA versions. `differences` says in words
what differs, e.g. "NCCL 2.29.2 now, 2.28.7 at handover".
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from acceptance.tools import images
from acceptance.tools.nccl.command import NcclTest
from acceptance.tools.nccl.names import fmt_bytes
from acceptance.tools.nccl.records import NcclRun

#: options already compared as the size range
_SIZE_OPTIONS = ("minbytes", "maxbytes")


@dataclass(frozen=True)
class NcclConditions:
    command: Mapping[str, Any] | None
    collective: str | None
    min_bytes: int | None
    max_bytes: int | None
    ranks_per_node: int | None
    node_count: int | None
    nccl_tests_version: str | None = None
    nccl_version: str | None = None
    cuda_version: str | None = None
    image: str | None = None  # the image the tests ran from, with its digest when the cluster reported one
    launch: str | None = None  # how the ranks were started, where the backend chooses it (srun --mpi=pmi2, mpirun)

    @classmethod
    def of(cls, run: NcclRun, test: NcclTest | None = None) -> NcclConditions:
        """Conditions of a parsed run (and of the command that produced it, when known)."""
        per_host = Counter(r.host for r in run.ranks)
        counts = set(per_host.values())
        min_bytes = run.params.get("min_bytes")
        max_bytes = run.params.get("max_bytes")
        if test is not None:
            min_bytes = test.option("minbytes", min_bytes)
            max_bytes = test.option("maxbytes", max_bytes)
        return cls(
            command=test.normalized() if test is not None else None,
            collective=run.collective or (test.collective if test is not None else None),
            min_bytes=None if min_bytes is None else int(min_bytes),
            max_bytes=None if max_bytes is None else int(max_bytes),
            ranks_per_node=counts.pop() if len(counts) == 1 else None,
            node_count=len(per_host) or None,
            nccl_tests_version=run.nccl_tests_version,
            nccl_version=run.nccl_version,
            cuda_version=run.cuda_version,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "command": None if self.command is None else dict(self.command),
            "collective": self.collective,
            "min_bytes": self.min_bytes,
            "max_bytes": self.max_bytes,
            "ranks_per_node": self.ranks_per_node,
            "node_count": self.node_count,
            "nccl_tests_version": self.nccl_tests_version,
            "nccl_version": self.nccl_version,
            "cuda_version": self.cuda_version,
            "image": self.image,
            **({"launch": self.launch} if self.launch else {}),
        }

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> NcclConditions:
        def opt_int(key: str) -> int | None:
            value = doc.get(key)
            return None if value is None else int(value)

        return cls(
            command=doc.get("command"),
            collective=doc.get("collective"),
            min_bytes=opt_int("min_bytes"),
            max_bytes=opt_int("max_bytes"),
            ranks_per_node=opt_int("ranks_per_node"),
            node_count=opt_int("node_count"),
            nccl_tests_version=doc.get("nccl_tests_version"),
            nccl_version=doc.get("nccl_version"),
            cuda_version=doc.get("cuda_version"),
            image=doc.get("image"),
            launch=doc.get("launch"),
        )

    def differences(self, handover: NcclConditions) -> list[str]:
        """Each way today (self) differs from the handover, in words; empty when comparable.

        A value known at handover but unknown today is a difference (it cannot be
        shown equal); a value the handover did not record is not.
        """
        out: list[str] = []

        def check(label: str, now: Any, then: Any, show: Any = str) -> None:
            if then is None or now == then:
                return
            shown_now = "unknown" if now is None else show(now)
            out.append(f"{label} {shown_now} now, {show(then)} at handover")

        check("collective", self.collective, handover.collective)
        if (self.min_bytes, self.max_bytes) != (handover.min_bytes, handover.max_bytes) and (
            handover.min_bytes is not None or handover.max_bytes is not None
        ):
            out.append(
                f"message sizes {_range(self.min_bytes, self.max_bytes)} now, "
                f"{_range(handover.min_bytes, handover.max_bytes)} at handover"
            )
        check("ranks per node", self.ranks_per_node, handover.ranks_per_node)
        check("node count", self.node_count, handover.node_count)
        check("nccl-tests", self.nccl_tests_version, handover.nccl_tests_version)
        check("NCCL", self.nccl_version, handover.nccl_version)
        check("CUDA", self.cuda_version, handover.cuda_version)
        if handover.image is not None and self.image != handover.image:
            out.append(f"image {images.shown(self.image, handover.image)} now, {handover.image} at handover")
        check("launched with", self.launch, handover.launch)
        if handover.command is not None:
            out.extend(_command_differences(self.command, handover.command))
        return out


def _range(lo: int | None, hi: int | None) -> str:
    def show(n: int | None) -> str:
        return "?" if n is None else fmt_bytes(n)

    return f"{show(lo)}–{show(hi)}"


def _command_differences(now: Mapping[str, Any] | None, then: Mapping[str, Any]) -> list[str]:
    if now is None:
        return ["command unknown now, recorded at handover"]
    out = []
    if now.get("program") != then.get("program"):
        out.append(f"binary {now.get('program')} now, {then.get('program')} at handover")
    for section, label in (("options", "option"), ("env", "environment")):
        a, b = dict(now.get(section, {})), dict(then.get(section, {}))
        for key in sorted(a.keys() | b.keys()):
            if section == "options" and key in _SIZE_OPTIONS:
                continue
            if a.get(key) != b.get(key):
                out.append(f"{label} {key}={_show(a.get(key))} now, {_show(b.get(key))} at handover")
    return out


def _show(value: Any) -> str:
    return "unset" if value is None else str(value)
