"""``nvidia-smi -q``: the per-GPU health sections a provider reads first.

Shape (as NVIDIA drivers 470 to 570 print it): an
``==============NVSMI LOG==============`` banner, ``Timestamp``/``Driver Version``/``CUDA Version``/
``Attached GPUs``, one ``GPU 00000000:07:00.0`` block per GPU with ``Key : Value`` lines nested by
4 spaces (section headers have no colon). Author-trimmed fragments (``[...]`` lines, a block
without its ``GPU`` header) are read as far as they go. A GPU that fell off the bus shows as
``Unable to determine the device handle for GPU 0000:9A:00.0: Unknown Error``.

Pure: text in, `NvsmiReport` out (re-exported by the façade, `acceptance.tools.nvsmi`). There is no Xid
counter in ``nvidia-smi -q``; Xids come from the kernel log (`acceptance.tools.kernel`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from acceptance.tools.kernel import normalise_pci

_GPU_HEADER = re.compile(r"^GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d)\s*$")
_KEY_VALUE = re.compile(r"^( *)(\S.*?)\s+: ?(.*)$")
_UNREACHABLE = re.compile(r"Unable to determine the device handle for (?:GPU|gpu) ?([0-9A-Fa-f:.]+)?:? ?(.*)")
# Sections of a GPU block; a headerless fragment must hold one of them to count as nvidia-smi -q.
_KNOWN = frozenset(
    {
        "Product Name",
        "GPU UUID",
        "ECC Errors",
        "Retired Pages",
        "Remapped Rows",
        "Temperature",
        "Power Readings",
        "Clocks Throttle Reasons",
        "Clocks Event Reasons",
        "FB Memory Usage",
        "PCI",
    }
)
# Text without any of these is no nvidia-smi -q output (a cheap test before reading it line by line).
_SIGNS = (
    "NVSMI LOG",
    "Driver Version",
    "Product Name",
    "GPU UUID",
    "ECC Errors",
    "Remapped Rows",
    "Retired Pages",
    "Unable to determine the device handle",
)
_THROTTLE_SECTIONS = ("Clocks Throttle Reasons", "Clocks Event Reasons")
_BAD_THROTTLE = ("HW Slowdown", "HW Thermal Slowdown", "HW Power Brake Slowdown", "SW Thermal Slowdown")
_SUMMARY_KEYS = (
    "Product Name", "Serial Number", "GPU UUID", "ECC Errors/Volatile/SRAM Uncorrectable",
    "ECC Errors/Volatile/DRAM Uncorrectable", "ECC Errors/Aggregate/SRAM Uncorrectable",
    "ECC Errors/Aggregate/DRAM Uncorrectable", "ECC Errors/Volatile/DRAM Correctable",
    "Remapped Rows/Uncorrectable Error", "Remapped Rows/Pending", "Remapped Rows/Remapping Failure Occurred",
    "Retired Pages/Double Bit ECC", "Retired Pages/Pending Page Blacklist", "Temperature/GPU Current Temp",
    "Power Readings/Power Draw",
)  # fmt: skip


@dataclass(frozen=True)
class NvsmiGpu:
    """One GPU block: its fields by path (``ECC Errors/Volatile/DRAM Uncorrectable``)."""

    bus_id: str | None
    fields: dict[str, str]
    line: int
    processes: int = 0

    @property
    def pci(self) -> str | None:
        return normalise_pci(self.bus_id) if self.bus_id else None

    def get(self, path: str) -> str | None:
        return self.fields.get(path)

    def number(self, path: str) -> int | None:
        value = self.fields.get(path, "")
        return int(value) if value.strip().isdigit() else None

    def to_json(self) -> dict[str, Any]:
        return {"bus_id": self.bus_id, "pci": self.pci, "product": self.get("Product Name"),
                "uuid": self.get("GPU UUID"), "serial": self.get("Serial Number"), "findings": findings(self),
                "line": self.line}  # fmt: skip


@dataclass(frozen=True)
class NvsmiReport:
    source: str
    timestamp: str | None = None
    driver_version: str | None = None
    cuda_version: str | None = None
    attached_gpus: int | None = None
    gpus: tuple[NvsmiGpu, ...] = ()
    unreachable: tuple[str, ...] = field(default_factory=tuple)

    @property
    def recognised(self) -> bool:
        return bool(self.gpus or self.driver_version or self.unreachable)

    def gpu(self, pci: str) -> NvsmiGpu | None:
        wanted = normalise_pci(pci)
        return next((g for g in self.gpus if g.pci == wanted), None)


def parse(text: str, source: str = "<text>") -> NvsmiReport:
    """The header and every GPU block of ``nvidia-smi -q`` output (or of a fragment of it)."""
    if not any(word in text for word in _SIGNS):
        return NvsmiReport(source)
    top: dict[str, str] = {}
    gpus: list[NvsmiGpu] = []
    unreachable: list[str] = []
    current: dict[str, str] | None = None
    bus: str | None = None
    start = 0
    processes = 0
    stack: list[tuple[int, str]] = []

    def close() -> None:
        if current is not None and (bus is not None or any(k.split("/", 1)[0] in _KNOWN for k in current)):
            gpus.append(NvsmiGpu(bus, dict(current), start, processes))

    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip()
        if not line.strip() or line.strip() == "[...]" or line.startswith("====="):
            continue
        if (m := _UNREACHABLE.search(line)) is not None:
            unreachable.append(line.strip())
            continue
        if (m := _GPU_HEADER.match(line)) is not None:
            close()
            current, bus, start, processes, stack = {}, m.group(1), number, 0, []
            continue
        indent = len(line) - len(line.lstrip(" "))
        depth = indent // 4
        if current is None and depth == 0:
            kv = _KEY_VALUE.match(line)
            if kv:
                top[kv.group(2).strip()] = kv.group(3).strip()
            continue
        if current is None:  # a fragment that starts inside a GPU block
            current, bus, start, processes, stack = {}, None, number, 0, []
        stack = [(d, name) for d, name in stack if d < depth]
        kv = _KEY_VALUE.match(line)
        if kv is None:
            stack.append((depth, line.strip()))
            continue
        key = kv.group(2).strip()
        if key == "Process ID":
            processes += 1
        path = "/".join([name for _, name in stack] + [key])
        current.setdefault(path, kv.group(3).strip())
        stack.append((depth, key))  # a value line can head deeper lines too (HW Slowdown → HW Thermal Slowdown)
    close()
    attached = top.get("Attached GPUs", "")
    return NvsmiReport(
        source=source,
        timestamp=top.get("Timestamp"),
        driver_version=top.get("Driver Version"),
        cuda_version=top.get("CUDA Version"),
        attached_gpus=int(attached) if attached.isdigit() else None,
        gpus=tuple(gpus),
        unreachable=tuple(unreachable),
    )


def findings(gpu: NvsmiGpu) -> list[str]:
    """What in a GPU block says the GPU is unhealthy, in words (empty for a healthy block)."""
    out: list[str] = []
    for scope in ("Volatile", "Aggregate"):
        for mem in ("SRAM", "DRAM"):
            count = gpu.number(f"ECC Errors/{scope}/{mem} Uncorrectable")
            if count:
                out.append(f"{count} uncorrectable {mem} ECC error(s) ({scope.lower()})")
        legacy = gpu.number(f"ECC Errors/{scope}/Double Bit/Total")
        if legacy:
            out.append(f"{legacy} double-bit ECC error(s) ({scope.lower()})")
    if gpu.number("Remapped Rows/Uncorrectable Error"):
        out.append(f"{gpu.number('Remapped Rows/Uncorrectable Error')} row(s) remapped for uncorrectable errors")
    if (gpu.get("Remapped Rows/Pending") or "").lower() == "yes":
        out.append("row remapping pending: reset the GPU to apply it")
    if (gpu.get("Remapped Rows/Remapping Failure Occurred") or "").lower() == "yes":
        out.append("row remapping failure occurred")
    if gpu.number("Retired Pages/Double Bit ECC"):
        out.append(f"{gpu.number('Retired Pages/Double Bit ECC')} page(s) retired for double-bit ECC errors")
    if (gpu.get("Retired Pages/Pending Page Blacklist") or "").lower() == "yes":
        out.append("page retirement pending")
    for section in _THROTTLE_SECTIONS:
        for reason in _BAD_THROTTLE:
            for path in (f"{section}/{reason}", f"{section}/HW Slowdown/{reason}"):
                if (gpu.get(path) or "").lower() == "active" and reason not in " ".join(out):
                    out.append(f"clock event active: {reason}")
    return out


def excerpt(report: NvsmiReport, pcis: list[str] | None = None) -> list[str]:
    """The lines of the report a provider wants in the first message (all GPUs, or those of `pcis`)."""
    attached = report.attached_gpus if report.attached_gpus is not None else "?"
    out = [f"nvidia-smi -q ({report.source}): driver {report.driver_version or '?'}, "
           f"CUDA {report.cuda_version or '?'}, "
           f"{attached} GPU(s) attached, "
           f"{len(report.gpus)} GPU block(s), taken {report.timestamp or 'at an unknown time'}"]  # fmt: skip
    out.extend(f"  {line}" for line in report.unreachable)
    wanted = {normalise_pci(p) for p in pcis} if pcis else None
    for gpu in report.gpus:
        if wanted is not None and gpu.pci not in wanted:
            continue
        found = findings(gpu)
        out.append(
            f"  GPU {gpu.bus_id or '(block without header)'}: {'; '.join(found) if found else 'no health finding'}"
        )
        out.extend(f"    {key}: {gpu.fields[key]}" for key in _SUMMARY_KEYS if key in gpu.fields)
    return out
