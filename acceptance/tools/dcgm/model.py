"""Records of a parsed `dcgmi diag` run and their stable JSON (`acceptance parse dcgm`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from acceptance.tools.dcgm.names import SOFTWARE

PASS, FAIL, SKIP, WARN, ERROR = "pass", "fail", "skip", "warn", "error"


@dataclass(frozen=True)
class DcgmMessage:
    """A warning, info or error line of one test, with DCGM's error code fields when it printed them."""

    kind: str  # "warning" | "info" | "error"
    text: str
    gpu: int | None = None
    entity: str | None = None  # "GPU3", "CPU0"; None for messages of the whole test
    error_id: int | None = None
    error_category: int | None = None
    error_severity: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "text": self.text,
            "gpu": self.gpu,
            "entity": self.entity,
            "error_id": self.error_id,
            "error_category": self.error_category,
            "error_severity": self.error_severity,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> DcgmMessage:
        return cls(
            kind=str(d.get("kind", "warning")),
            text=str(d.get("text", "")),
            gpu=_opt_int(d.get("gpu")),
            entity=d.get("entity"),
            error_id=_opt_int(d.get("error_id")),
            error_category=_opt_int(d.get("error_category")),
            error_severity=_opt_int(d.get("error_severity")),
        )


@dataclass(frozen=True)
class DcgmTest:
    """One test (4.x plugin id) with its overall status and per-entity statuses.

    `gpus` holds the GPU rows, `entities` the rows of other entities (``CPU0``, ...).
    Any failed row fails the test: when DCGM's own summary of the test says otherwise
    (a Pass over a failed GPU) `status` is ``fail`` and `summary` keeps what DCGM said;
    `summary` is None when the summary and the rows agree.
    """

    name: str
    category: str
    status: str
    gpus: Mapping[int, str] = field(default_factory=dict)
    messages: tuple[DcgmMessage, ...] = ()
    entities: Mapping[str, str] = field(default_factory=dict)
    summary: str | None = None

    def failed_rows(self) -> list[str]:
        """The entities whose own row failed (``GPU3``, ``CPU0``), GPUs first."""
        gpus = [f"GPU{g}" for g, s in sorted(self.gpus.items()) if s == FAIL]
        return gpus + [e for e, s in sorted(self.entities.items()) if s == FAIL]

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "category": self.category,
            "status": self.status,
            "gpus": {str(g): s for g, s in sorted(self.gpus.items())},
            "messages": [m.to_json() for m in self.messages],
            "entities": dict(sorted(self.entities.items())),
            "summary": self.summary,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> DcgmTest:
        return cls(
            name=str(d["name"]),
            category=str(d.get("category", "")),
            status=str(d["status"]),
            gpus={int(g): str(s) for g, s in dict(d.get("gpus", {})).items()},
            messages=tuple(DcgmMessage.from_json(m) for m in d.get("messages", [])),
            entities={str(e): str(s) for e, s in dict(d.get("entities") or {}).items()},
            summary=d.get("summary"),
        )


@dataclass(frozen=True)
class GpuDevice:
    """Identity of a GPU as the output states it (any field may be absent)."""

    serial: str | None = None
    uuid: str | None = None
    pci_bus_id: str | None = None
    device_id: str | None = None

    def label(self) -> str:
        parts = [f"serial {self.serial}" if self.serial else "", self.uuid or ""]
        return ", ".join(p for p in parts if p)


@dataclass(frozen=True)
class ReportError:
    line: int | None
    text: str


@dataclass(frozen=True)
class DcgmReport:
    """One `dcgmi diag` run as parsed: DCGM's own verdict, per test and per GPU."""

    format: str  # "json" | "text"
    status: str  # "pass" | "fail" | "error" | "skip" (every test beyond the software checks skipped)
    tests: tuple[DcgmTest, ...] = ()
    gpus: Mapping[int, str] = field(default_factory=dict)
    errors: tuple[ReportError, ...] = ()
    dcgm_version: str | None = None
    driver_version: str | None = None
    devices: Mapping[int, GpuDevice] = field(default_factory=dict)

    @property
    def incomplete(self) -> bool:
        """Every test beyond the software checks was skipped: nothing was exercised."""
        others = [t for t in self.tests if t.name != SOFTWARE]
        return bool(others) and all(t.status == SKIP for t in others)

    def test(self, name: str) -> DcgmTest | None:
        return next((t for t in self.tests if t.name == name), None)

    def summary_disagrees(self) -> list[dict[str, Any]]:
        """The tests whose summary DCGM printed differs from their rows (a Pass over a failed GPU)."""
        return [
            {"test": t.name, "summary": t.summary, "status": t.status, "failed": t.failed_rows()}
            for t in self.tests
            if t.summary is not None
        ]

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "dcgm-diag",
            "format": self.format,
            "dcgm_version": self.dcgm_version,
            "driver_version": self.driver_version,
            "status": self.status,
            "skipped": [t.name for t in self.tests if t.status == SKIP],
            "tests": [t.to_json() for t in self.tests],
            "gpus": {str(g): s for g, s in sorted(self.gpus.items())},
            "errors": [{"line": e.line, "text": e.text} for e in self.errors],
            "devices": {
                str(g): {
                    "serial": d.serial,
                    "uuid": d.uuid,
                    "pci_bus_id": d.pci_bus_id,
                    "device_id": d.device_id,
                }
                for g, d in sorted(self.devices.items())
            },
            "summary_disagrees": self.summary_disagrees(),
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> DcgmReport:
        if d.get("kind") != "dcgm-diag":
            raise ValueError(f"not a dcgm-diag document (kind={d.get('kind')!r})")
        return cls(
            format=str(d["format"]),
            status=str(d["status"]),
            tests=tuple(DcgmTest.from_json(t) for t in d.get("tests", [])),
            gpus={int(g): str(s) for g, s in dict(d.get("gpus", {})).items()},
            errors=tuple(ReportError(_opt_int(e.get("line")), str(e["text"])) for e in d.get("errors", [])),
            dcgm_version=d.get("dcgm_version"),
            driver_version=d.get("driver_version"),
            devices={
                int(g): GpuDevice(
                    serial=v.get("serial"),
                    uuid=v.get("uuid"),
                    pci_bus_id=v.get("pci_bus_id"),
                    device_id=v.get("device_id"),
                )
                for g, v in dict(d.get("devices", {})).items()
            },
        )


def _opt_int(value: Any) -> int | None:
    if value is None or value == "":
        return None
    return int(value)


@dataclass(frozen=True)
class DcgmConditions:
    """What must match between handover and today for diagnostics to compare: DCGM version and level."""

    dcgm_version: str | None
    level: int | None

    def to_json(self) -> dict[str, Any]:
        return {"dcgm_version": self.dcgm_version, "level": self.level}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> DcgmConditions:
        return cls(dcgm_version=d.get("dcgm_version"), level=_opt_int(d.get("level")))

    def differences(self, handover: DcgmConditions) -> list[str]:
        """How today's conditions (self) differ from the handover's, one phrase each."""
        out = []
        if self.dcgm_version != handover.dcgm_version:
            out.append(f"DCGM {self.dcgm_version or 'unknown'} now, {handover.dcgm_version or 'unknown'} at handover")
        if self.level != handover.level:
            out.append(
                f"level -r {self.level if self.level is not None else '?'} now, "
                f"-r {handover.level if handover.level is not None else '?'} at handover"
            )
        return out
