"""What ``nvidia-smi`` (and ``dcgmi --version``/``discovery -l``, ``lsb_release``) print on a simulated host.

In the formats of the real tools: the CSV of ``--query-gpu`` and ``--query-compute-apps``
(``--format=csv[,noheader][,nounits]``), ``-L``, and the banner table of plain ``nvidia-smi``
with the driver and CUDA versions. A ``gpu-busy`` fault puts a process on its GPU.
"""

from __future__ import annotations

from collections.abc import Sequence

from acceptance.sim.model.cluster import GPU_MEMORY_MIB, GPU_NAME, Gpu
from acceptance.sim.model.runner import SimRunner
from acceptance.sim.runtime import ToolRun

STAMP = "Mon Nov 30 00:15:00 2026"  # the simulator's clock does not follow the wall clock
_UNITS = {"memory.total": "MiB", "memory.used": "MiB", "used_memory": "MiB", "power.draw": "W"}


def _busy(runner: SimRunner, node: str) -> list[tuple[Gpu, int, str, int]]:
    out = []
    gpus = runner.cluster.node(node).gpus
    for fault in runner.faults.on([node], "gpu-busy"):
        out.append((gpus[fault.index], int(fault.param("pid")), str(fault.param("process")),
                    int(fault.param("memory_mib"))))  # fmt: skip
    return out


def _gpu_value(runner: SimRunner, gpu: Gpu, field: str, used_mib: int) -> str:
    values = {
        "index": str(gpu.index),
        "uuid": gpu.uuid,
        "gpu_uuid": gpu.uuid,
        "name": GPU_NAME,
        "gpu_name": GPU_NAME,
        "serial": gpu.serial,
        "pci.bus_id": gpu.pci_bus_id,
        "gpu_bus_id": gpu.pci_bus_id,
        "driver_version": runner.versions.driver,
        "memory.total": f"{GPU_MEMORY_MIB} MiB",
        "memory.used": f"{used_mib} MiB",
        "persistence_mode": "Enabled",
        "temperature.gpu": "34",
        "power.draw": "73.41 W",
    }
    return values.get(field, "[N/A]")


def _csv(fields: list[str], rows: list[list[str]], fmt: set[str]) -> str:
    out = []
    if "noheader" not in fmt:
        out.append(", ".join(f"{f} [{_UNITS[f]}]" if f in _UNITS and "nounits" not in fmt else f for f in fields))
    for row in rows:
        shown = [v.rsplit(" ", 1)[0] if v.endswith((" MiB", " W")) else v for v in row] if "nounits" in fmt else row
        out.append(", ".join(shown))
    return "".join(line + "\n" for line in out)


def _banner(runner: SimRunner, node: str) -> str:
    v = runner.versions
    busy = {gpu.index: mib for gpu, _, _, mib in _busy(runner, node)}
    rule = "+-----------------------------------------+------------------------+----------------------+"
    lines = [
        STAMP,
        "+-----------------------------------------------------------------------------------------+",
        f"| NVIDIA-SMI {v.driver:<22} Driver Version: {v.driver:<14} CUDA Version: {v.cuda:<9}|",
        "|-----------------------------------------+------------------------+----------------------+",
        "| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |",
        "| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |",
        "|=========================================+========================+======================|",
    ]
    for gpu in runner.cluster.node(node).gpus:
        used = busy.get(gpu.index, 0)
        lines += [
            f"|   {gpu.index}  {GPU_NAME:<24} On  |   {gpu.pci_bus_id} Off |                    0 |",
            f"| N/A   34C    P0             73W /  700W |  {used:>6}MiB / {GPU_MEMORY_MIB}MiB |      0%      Default |",
            rule,
        ]
    lines += ["", "+" + "-" * 89 + "+", "| Processes:" + " " * 78 + "|"]
    for gpu, pid, name, mib in _busy(runner, node):
        lines.append(f"|    {gpu.index}   N/A  N/A    {pid:>7}      C   {name:<40} {mib:>6}MiB |")
    if not _busy(runner, node):
        lines.append("|  No running processes found                                                             |")
    lines.append("+-----------------------------------------------------------------------------------------+")
    return "\n".join(lines) + "\n"


def nvidia_smi(argv: Sequence[str], runner: SimRunner, node: str) -> ToolRun:
    """``nvidia-smi ...`` on `node`."""
    args = list(argv[1:])
    fmt: set[str] = set()
    query: tuple[str, list[str]] | None = None
    fields: list[str]
    for arg in args:
        if arg.startswith("--format="):
            fmt = set(arg.split("=", 1)[1].split(","))
        elif arg.startswith(("--query-gpu=", "--query-compute-apps=")):
            kind, _, names = arg.partition("=")
            query = (kind, [f.strip() for f in names.split(",") if f.strip()])
    gpus = runner.cluster.node(node).gpus
    if query is not None:
        if "csv" not in fmt:
            return ToolRun("Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n", 2, 0.0)
        kind, fields = query
        if kind == "--query-gpu":
            used = {gpu.index: mib for gpu, _, _, mib in _busy(runner, node)}
            rows = [[_gpu_value(runner, g, f, used.get(g.index, 0)) for f in fields] for g in gpus]
        else:
            apps = {"pid": 1, "process_name": 2, "used_memory": 3}
            rows = []
            for gpu, pid, name, mib in _busy(runner, node):
                record = ("", str(pid), name, f"{mib} MiB")
                rows.append([record[apps[f]] if f in apps else _gpu_value(runner, gpu, f, mib) for f in fields])
        return ToolRun(_csv(fields, rows, fmt), 0, 0.05)
    if args in (["-L"], ["--list-gpus"]):
        return ToolRun("".join(f"GPU {g.index}: {GPU_NAME} (UUID: {g.uuid})\n" for g in gpus), 0, 0.05)
    if not args:
        return ToolRun(_banner(runner, node), 0, 0.1)
    return ToolRun(f"nvidia-smi {' '.join(args)}: not simulated (simulated: plain, -L, --query-gpu, "
                   "--query-compute-apps)\n", 2, 0.0)  # fmt: skip


def dcgmi_info(argv: Sequence[str], runner: SimRunner, node: str) -> ToolRun | None:
    """``dcgmi --version`` and ``dcgmi discovery -l``; None for the other dcgmi commands."""
    if "--version" in argv[1:2] or argv[1:2] == ["-v"]:
        return ToolRun(f"\ndcgmi  version: {runner.versions.dcgm}\n\n", 0, 0.0)
    if argv[1:2] == ["discovery"]:
        gpus = runner.cluster.node(node).gpus
        rows = [f"| {g.index:<6} | Name: {GPU_NAME:<63}|\n|        | PCI Bus ID: {g.pci_bus_id:<57}|\n"
                f"|        | Device UUID: {g.uuid:<56}|" for g in gpus]  # fmt: skip
        rule = "+--------+----------------------------------------------------------------------+"
        text = "\n".join([f"{len(gpus)} GPUs found.", rule, "| GPU ID | Device Information" + " " * 51 + "|",
                          rule, *rows, rule]) + "\n"  # fmt: skip
        return ToolRun(text, 0, 0.1)
    return None
