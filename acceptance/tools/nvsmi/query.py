"""``nvidia-smi --query-gpu=... --format=csv,noheader`` and ``--query-compute-apps=...``: lines to records.

nvidia-smi writes one line per GPU (or per process), the fields in the order of the query,
separated by ``", "``; values it cannot read are ``[N/A]``, ``[Not Supported]`` or
``[Unknown Error]``; a GPU it cannot reach is a line of its own such as ``Unable to determine
the device handle for GPU0000:9B:00.0: Unknown Error``. Such lines are kept as problems,
never dropped: a node that lists 7 GPUs and a problem line is not a healthy 7-GPU node.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from acceptance.errors import ParseError

GPU_FIELDS = ("index", "uuid", "name", "pci.bus_id", "driver_version", "memory.total")
APP_FIELDS = ("pid", "process_name", "gpu_uuid", "used_memory")
_MIB = re.compile(r"^(\d+)\s*MiB$")


def query_gpus_argv() -> list[str]:
    return ["nvidia-smi", f"--query-gpu={','.join(GPU_FIELDS)}", "--format=csv,noheader"]


def query_apps_argv() -> list[str]:
    return ["nvidia-smi", f"--query-compute-apps={','.join(APP_FIELDS)}", "--format=csv,noheader"]


@dataclass(frozen=True)
class GpuRow:
    index: int
    uuid: str
    name: str
    pci_bus_id: str
    driver_version: str
    memory_total_mib: int | None


@dataclass(frozen=True)
class GpuList:
    """The GPUs nvidia-smi listed, and every line it printed that is not a GPU (its own complaints)."""

    gpus: tuple[GpuRow, ...]
    problems: tuple[str, ...]


@dataclass(frozen=True)
class ComputeApp:
    """A process that holds a GPU."""

    pid: int
    process_name: str
    gpu_uuid: str
    used_memory_mib: int | None

    def describe(self) -> str:
        memory = f", {self.used_memory_mib} MiB" if self.used_memory_mib is not None else ""
        return f"pid {self.pid} ({self.process_name}{memory})"


def _value(text: str) -> str | None:
    text = text.strip()
    return None if text.startswith("[") and text.endswith("]") else text


def _mib(text: str) -> int | None:
    found = _MIB.match(text.strip())
    return int(found.group(1)) if found else None


def parse_gpus(text: str, source: str = "nvidia-smi --query-gpu") -> GpuList:
    """GPU rows in the order printed; lines that are not rows become `problems`."""
    rows: list[GpuRow] = []
    problems: list[str] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        fields = [f.strip() for f in line.split(",")]
        if len(fields) != len(GPU_FIELDS) or not fields[0].isdigit():
            problems.append(line.strip())
            continue
        index, uuid, name, bus, driver, memory = fields
        rows.append(GpuRow(int(index), uuid, name, bus, _value(driver) or "", _mib(memory)))
    indexes = [r.index for r in rows]
    if len(set(indexes)) != len(indexes):
        raise ParseError(source, 0, ", ".join(map(str, indexes)), "each GPU index once")
    return GpuList(tuple(rows), tuple(problems))


def parse_apps(text: str, source: str = "nvidia-smi --query-compute-apps") -> list[ComputeApp]:
    """The processes holding GPUs; an empty output means none.

    The process name may itself hold ``", "`` (a path with commas): the pid is the first field,
    the GPU UUID and memory the last two, the name what lies between.
    """
    apps: list[ComputeApp] = []
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.lower().startswith("no running"):
            continue
        fields = [f.strip() for f in stripped.split(",")]
        if len(fields) < len(APP_FIELDS) or not fields[0].isdigit():
            raise ParseError(source, number, stripped, f"'{', '.join(APP_FIELDS)}' as nvidia-smi prints them")
        name = ", ".join(fields[1:-2])
        apps.append(ComputeApp(int(fields[0]), name, fields[-2], _mib(fields[-1])))
    return apps
