"""What a simulated node's own tools say: the kernel log (``dmesg``) and ``nvidia-smi -q``.

- ``dmesg``: a few boot lines, then for a ``gpu-xid`` fault on the node the NVIDIA driver's lines in
  the real shape (``NVRM: GPU at PCI:...: GPU-<uuid>``, ``NVRM: GPU Board Serial Number``, ``NVRM: Xid
  (PCI:0000:9a:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.``, ...), with
  uptime stamps only (the simulator keeps no wall clock for the kernel; flags such as ``-T`` are ignored).
- ``nvidia-smi -q``: the ``NVSMI LOG`` report of the node's 8 H200s; with a ``gpu-xid`` fault it prints
  only ``Unable to determine the device handle for GPU<bus>: Unknown Error`` and exits 15, as nvidia-smi
  does for a GPU that has fallen off the bus; ``ecc-dbe`` shows in the ECC and remapped-rows sections,
  ``gpu-throttle`` as an active thermal slowdown.
"""

from __future__ import annotations

from acceptance.sim.model.cluster import GPU_MEMORY_MIB, GPU_NAME, SimCluster, Versions, rng
from acceptance.sim.model.faults import FaultSet

GPU_LOST = 15  # nvidia-smi: "GPU is lost"


def dmesg(cluster: SimCluster, faults: FaultSet, node: str, versions: Versions) -> tuple[str, int]:
    r = rng(cluster.seed, "dmesg", node)
    t = 3.2 + r.uniform(0, 1)
    lines = [
        f"[{t:12.6f}] nvidia: loading out-of-tree module taints kernel.",
        f"[{t + 0.41:12.6f}] NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  {versions.driver}  Release Build",
        f"[{t + 1.07:12.6f}] nvidia-modeset: Loading NVIDIA UNIX Open Kernel Mode Setting Driver for x86_64  "
        f"{versions.driver}  Release Build",
    ]
    uptime = 86400 * 2 + r.uniform(0, 86400)
    for fault in sorted(faults.on([node], "gpu-xid"), key=lambda f: f.index):
        gpu = cluster.node(node).gpus[fault.index]
        bus = gpu.busid
        stamp = uptime + fault.index
        lines += [
            f"[{stamp:12.6f}] NVRM: GPU at PCI:{bus}: {gpu.uuid}",
            f"[{stamp + 0.000038:12.6f}] NVRM: GPU Board Serial Number: {gpu.serial}",
            f"[{stamp + 0.000044:12.6f}] NVRM: Xid (PCI:{bus}): {fault.param('xid')}, pid='<unknown>', "
            "name=<unknown>, GPU has fallen off the bus.",
            f"[{stamp + 0.000055:12.6f}] NVRM: GPU {bus}.0: GPU has fallen off the bus.",
            f"[{stamp + 0.000062:12.6f}] NVRM: GPU {bus}.0: GPU serial number is {gpu.serial}.",
            f"[{stamp + 0.000097:12.6f}] NVRM: A GPU crash dump has been created. If possible, please run",
            "               NVRM: nvidia-bug-report.sh as root to collect this data before",
            "               NVRM: the NVIDIA kernel module is unloaded.",
        ]
    return "\n".join(lines) + "\n", 0


def _kv(depth: int, key: str, value: object | None = None) -> str:
    pad = " " * (4 * depth)
    if value is None:
        return pad + key
    return f"{pad}{key:<{42 - len(pad)}}: {value}"


def nvidia_smi_q(cluster: SimCluster, faults: FaultSet, node: str, versions: Versions) -> tuple[str, int]:
    spec = cluster.node(node)
    lost = faults.on([node], "gpu-xid")
    if lost:
        bus = f"0000:{spec.gpus[lost[0].index].bus:02X}:00.0"
        return f"Unable to determine the device handle for GPU{bus}: Unknown Error\n", GPU_LOST
    r = rng(cluster.seed, "nvidia-smi", node)
    dbe = {f.index for f in faults.on([node], "ecc-dbe")}
    hot = {f.index for f in faults.on([node], "gpu-throttle")}
    out = ["", "==============NVSMI LOG==============", "",
           _kv(0, "Timestamp", "Mon Nov 23 08:00:00 2026"), _kv(0, "Driver Version", versions.driver),
           _kv(0, "CUDA Version", versions.cuda), "", _kv(0, "Attached GPUs", len(spec.gpus))]  # fmt: skip
    for gpu in spec.gpus:
        bad, throttled = gpu.index in dbe, gpu.index in hot
        out += [
            _kv(0, f"GPU {gpu.pci_bus_id}"), _kv(1, "Product Name", GPU_NAME), _kv(1, "Product Brand", "NVIDIA"),
            _kv(1, "Product Architecture", "Hopper"), _kv(1, "Serial Number", gpu.serial),
            _kv(1, "GPU UUID", gpu.uuid), _kv(1, "Minor Number", gpu.index), _kv(1, "PCI"),
            _kv(2, "Bus", f"0x{gpu.bus:02X}"), _kv(2, "Bus Id", gpu.pci_bus_id), _kv(1, "Clocks Event Reasons"),
            _kv(2, "Idle", "Not Active"), _kv(2, "SW Power Cap", "Not Active"),
            _kv(2, "HW Slowdown", "Active" if throttled else "Not Active"),
            _kv(3, "HW Thermal Slowdown", "Active" if throttled else "Not Active"),
            _kv(3, "HW Power Brake Slowdown", "Not Active"), _kv(2, "SW Thermal Slowdown", "Not Active"),
            _kv(1, "FB Memory Usage"), _kv(2, "Total", f"{GPU_MEMORY_MIB} MiB"), _kv(1, "ECC Errors"),
        ]  # fmt: skip
        for scope in ("Volatile", "Aggregate"):
            out += [_kv(2, scope), _kv(3, "SRAM Correctable", 0), _kv(3, "SRAM Uncorrectable", 0),
                    _kv(3, "DRAM Correctable", 0), _kv(3, "DRAM Uncorrectable", 1 if bad else 0)]  # fmt: skip
        out += [
            _kv(1, "Retired Pages"), _kv(2, "Single Bit ECC", "N/A"), _kv(2, "Double Bit ECC", "N/A"),
            _kv(2, "Pending Page Blacklist", "N/A"), _kv(1, "Remapped Rows"), _kv(2, "Correctable Error", 0),
            _kv(2, "Uncorrectable Error", 1 if bad else 0), _kv(2, "Pending", "Yes" if bad else "No"),
            _kv(2, "Remapping Failure Occurred", "No"), _kv(1, "Temperature"),
            _kv(2, "GPU Current Temp", f"{(88 if throttled else 34) + r.randrange(4)} C"),
            _kv(1, "Power Readings"), _kv(2, "Power Draw", f"{118 + r.uniform(0, 9):.2f} W"), "",
        ]  # fmt: skip
    return "\n".join(out) + "\n", 0
