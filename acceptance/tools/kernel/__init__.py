"""Kernel log lines of the NVIDIA driver: Xid and NVSwitch SXid errors, fallen-off-the-bus GPUs.

Collectors and prefixes seen in real captures: plain ``dmesg``
(``[ 4254.197816] ``), ``dmesg -T`` (``[Sun Feb 23 16:24:18 2025] ``), ``dmesg --decode
--time-format iso`` (``kern  :warn  : 2025-01-21T04:41:44,283302+00:00 ``), syslog / journal
(``May 19 07:08:57 <host> kernel: [680111.646286] ``), a bare ``kernel: ``, markdown ``> ``
quoting and monitoring wrappers (``Xid errors on instance: <host>, Error: ``). Continuation lines
without a time stamp are joined to the message before them.

The façade of `acceptance.tools.kernel`. Pure: text in, `KernelLog` out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from acceptance.tools import logtime
from acceptance.tools.kernel.xids import XID_NAMES, xid_name

__all__ = ["XID_NAMES", "FallenOff", "KernelLog", "SXidEvent", "XidEvent", "normalise_pci", "parse", "xid_name"]

_WRAPPER = re.compile(r"^Xid errors on instance: ([\w.-]+), Error: ")
_ISO_PREFIX = re.compile(r"^\w+\s*:\s*\w+\s*: (\d{4}-\d{2}-\d{2}T[\d:,.]+(?:[+-]\d{2}:\d{2}|Z)?) ")
_SYSLOG_PREFIX = re.compile(r"^(\w{3} +\d{1,2} \d{2}:\d{2}:\d{2}) ([\w.-]+) kernel: ")
_KERNEL = re.compile(r"^kernel: ")
_CTIME_PREFIX = re.compile(r"^\[(\w{3} \w{3} +\d{1,2} \d{2}:\d{2}:\d{2} \d{4})\] ")
_UPTIME_PREFIX = re.compile(r"^\[\s*(\d+\.\d+)\] ")
_BDF = r"([0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2})"
_XID = re.compile(r"NVRM: Xid \(PCI:" + _BDF + r"(?:\.\d)?((?: GPU-I:\d+)?(?: GPU-CI:\d+)?)\): "
                  r"(\d+)(?:, pid=('?<unknown>'?|\d+))?(?:, name=(\S+?))?(?:, |$)(.*)")  # fmt: skip
_SXID = re.compile(r"(nvidia-nvswitch\d+): SXid \(PCI:([0-9A-Fa-f:.]+)\): (\d+), (.*)")
_GPU_AT = re.compile(r"NVRM: GPU at PCI:([0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}): (GPU-[0-9a-f-]+)")
_SERIAL = re.compile(r"NVRM: GPU Board Serial Number: (\S+)")
_FALLEN = re.compile(
    r"(?:NVIDIA GPU|GPU) ([0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2})(?:\.\d)?\b.*?fallen off the bus"
)
_CAUSED_BY = re.compile(r"caused by previous Xid (\d+)")
_GPU_INDEX = re.compile(r"\bGPU(\d+)\b")


def normalise_pci(text: str) -> str:
    """``0000:5D:00.0`` / ``00000000:5d:00.0`` / ``PCI:0000:5d:00`` → ``0000:5d:00`` (domain:bus:device)."""
    text = text.removeprefix("PCI:").lower()
    head = text.split(".", 1)[0]
    parts = head.split(":")
    if len(parts) == 3:
        return f"{int(parts[0], 16):04x}:{parts[1]:0>2}:{parts[2]:0>2}"
    return head


@dataclass(frozen=True)
class XidEvent:
    """``NVRM: Xid (PCI:0000:9b:00): 119, pid=..., name=..., <message>``; the Xid is the number after ``): ``."""

    xid: int
    pci: str
    message: str
    line: int
    time: datetime | None = None
    uptime_s: float | None = None
    host: str | None = None
    pid: int | None = None
    process: str | None = None
    gpu_instance: str | None = None
    caused_by: int | None = None
    gpu_index: int | None = None
    uuid: str | None = None
    serial: str | None = None

    @property
    def name(self) -> str:
        return xid_name(self.xid)

    def to_json(self) -> dict[str, Any]:
        return {"xid": self.xid, "name": self.name, "pci": self.pci, "message": self.message, "line": self.line,
                "time": self.time.isoformat() if self.time else None, "uptime_s": self.uptime_s, "host": self.host,
                "pid": self.pid, "process": self.process, "caused_by": self.caused_by, "gpu_index": self.gpu_index,
                "uuid": self.uuid, "serial": self.serial}  # fmt: skip


@dataclass(frozen=True)
class SXidEvent:
    """``nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 20034, Fatal, Link 48 LTSSM Fault Up``."""

    sxid: int
    switch: str
    pci: str
    message: str
    line: int
    time: datetime | None = None
    uptime_s: float | None = None


@dataclass(frozen=True)
class FallenOff:
    """A GPU that fell off the bus, said with or without an Xid token."""

    pci: str
    line: int
    time: datetime | None = None
    uptime_s: float | None = None


@dataclass(frozen=True)
class KernelLog:
    source: str
    xids: tuple[XidEvent, ...] = ()
    sxids: tuple[SXidEvent, ...] = ()
    fallen_off: tuple[FallenOff, ...] = ()
    uuids: dict[str, str] = field(default_factory=dict)
    serials: dict[str, str] = field(default_factory=dict)
    hosts: tuple[str, ...] = ()

    @property
    def recognised(self) -> bool:
        return bool(self.xids or self.sxids or self.fallen_off or self.uuids)


@dataclass
class _Entry:
    number: int
    text: str
    time: datetime | None
    uptime: float | None
    host: str | None


def _entries(text: str, year: int | None) -> list[_Entry]:
    """Messages with their prefixes removed; untimed indented lines continue the message before."""
    out: list[_Entry] = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip()
        if line.startswith(">"):
            line = line[1:].lstrip(" ") if line[1:2] == " " else line[1:]
        if not line.strip():
            continue
        host = time = uptime = None
        if (m := _WRAPPER.match(line)) is not None:
            host, line = m.group(1), line[m.end() :]
        if (m := _ISO_PREFIX.match(line)) is not None:
            time, line = logtime.parse_iso(m.group(1)), line[m.end() :]
        if (m := _SYSLOG_PREFIX.match(line)) is not None:
            time, host, line = logtime.parse_syslog(m.group(1), year), m.group(2), line[m.end() :]
        if (m := _KERNEL.match(line)) is not None:
            line = line[m.end() :]
        if (m := _CTIME_PREFIX.match(line)) is not None:
            time, line = logtime.parse_ctime(m.group(1)), line[m.end() :]
        if (m := _UPTIME_PREFIX.match(line)) is not None:
            uptime, line = float(m.group(1)), line[m.end() :]
        timed = time is not None or uptime is not None
        if not timed and raw[:1].isspace() and out:
            out[-1].text += " " + line.strip().removeprefix("NVRM: ")
            continue
        out.append(_Entry(number, line.strip(), time, uptime, host))
    return out


def _process(text: str | None) -> str | None:
    return None if text in (None, "<unknown>") else text


def _pid(text: str | None) -> int | None:
    return int(text) if text and text.isdigit() else None


def parse(text: str, source: str = "<text>", *, year: int | None = None) -> KernelLog:
    """The Xid, SXid and fallen-off-the-bus events of a kernel log, with GPU UUIDs and serials by PCI id."""
    if "NVRM" not in text and "SXid" not in text:
        return KernelLog(source)
    year = year if year is not None else logtime.first_year(text)
    uuids: dict[str, str] = {}
    serials: dict[str, str] = {}
    xids: list[XidEvent] = []
    sxids: list[SXidEvent] = []
    fallen: list[FallenOff] = []
    hosts: list[str] = []
    last_pci: str | None = None
    for e in _entries(text, year):
        if e.host and e.host not in hosts:
            hosts.append(e.host)
        if (m := _GPU_AT.search(e.text)) is not None:
            last_pci = normalise_pci(m.group(1))
            uuids[last_pci] = m.group(2)
        elif (m := _SERIAL.search(e.text)) is not None and last_pci is not None:
            serials[last_pci] = m.group(1)
        elif (m := _XID.search(e.text)) is not None:
            pci = normalise_pci(m.group(1))
            message = m.group(6).strip()
            caused = _CAUSED_BY.search(message)
            index = _GPU_INDEX.search(message)
            xids.append(XidEvent(
                xid=int(m.group(3)), pci=pci, message=message, line=e.number, time=e.time, uptime_s=e.uptime,
                host=e.host, pid=_pid(m.group(4)), process=_process(m.group(5)),
                gpu_instance=(m.group(2) or "").strip() or None,
                caused_by=int(caused.group(1)) if caused else None, gpu_index=int(index.group(1)) if index else None,
                uuid=uuids.get(pci), serial=serials.get(pci),
            ))  # fmt: skip
            if "fallen off the bus" in message:
                fallen.append(FallenOff(pci, e.number, e.time, e.uptime))
        elif (m := _SXID.search(e.text)) is not None:
            sxids.append(SXidEvent(int(m.group(3)), m.group(1), normalise_pci(m.group(2)), m.group(4).strip(),
                                   e.number, e.time, e.uptime))  # fmt: skip
        elif (m := _FALLEN.search(e.text)) is not None:
            pci = normalise_pci(m.group(1))
            if not any(f.pci == pci for f in fallen):
                fallen.append(FallenOff(pci, e.number, e.time, e.uptime))
    return KernelLog(source, tuple(xids), tuple(sxids), tuple(fallen), uuids, serials, tuple(hosts))
