"""perftest's ``ib_write_bw`` on the simulated cluster: a loopback bandwidth test of one NIC.

Enough of the real tool for a site check (see ``examples/site_checks``): the server form
(``ib_write_bw -d mlx5_K ...``) and the client form (``... localhost``) print the test's
header block and one result row, in perftest's own layout with ``--report_gbits``. One
``Simulated`` row in the header block is the only departure from the real tool. A rail at
reduced speed (``nic-degraded``) measures at its `factor` of the 400 Gb/s line rate; a rail
that is down (``nic-down``) makes the tool fail as it does on a port that is not active.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from acceptance.errors import UsageError
from acceptance.sim.model.cluster import SimCluster
from acceptance.sim.model.faults import FaultSet

LOOPBACK_EFFICIENCY = 0.978  # what a healthy 400 Gb/s NDR port measures in loopback, large messages
RULE = "-" * 87


def _options(argv: Sequence[str]) -> tuple[str, int, float, bool]:
    device, size, duration, gbits = "mlx5_0", 65536, 5.0, False
    it = iter(argv[1:])
    for arg in it:
        if arg in ("-d", "--ib-dev"):
            device = next(it, "")
        elif arg in ("-s", "--size"):
            size = int(next(it, "65536"))
        elif arg in ("-D", "--duration"):
            duration = float(next(it, "5"))
        elif arg == "--report_gbits":
            gbits = True
        elif arg in ("-F", "--CPU-freq", "-a", "--all", "-R", "--rdma_cm"):
            continue
        elif arg.startswith("-"):
            raise UsageError(f"ib_write_bw: option {arg!r} is not one the simulator knows")
        # anything else is the server's host name (client form): the result is the same
    if not device.startswith("mlx5_") or not device[5:].isdigit():
        raise UsageError(f"ib_write_bw: no device {device!r} (the simulated nodes have mlx5_0 … mlx5_7)")
    return device, size, duration, gbits


def _address(rail: int, r: random.Random) -> str:
    return f"LID 0x{0x10 + rail:02x} QPN 0x{r.randrange(0x100, 0xFFFF):04x} PSN 0x{r.getrandbits(24):06x}"


def ib_write_bw(
    argv: Sequence[str], cluster: SimCluster, faults: FaultSet, node: str, r: random.Random
) -> tuple[str, int, float]:
    """(stdout, exit status, simulated seconds) of one ``ib_write_bw`` on `node`."""
    device, size, duration, gbits = _options(argv)
    rail = int(device[5:])
    nics = cluster.node(node).nics
    if rail >= len(nics):
        return f" Couldn't find IB device {device}\n", 1, 0.1
    if rail in faults.rails_down(node):
        return (
            f" Port number 1 state is Down\n Couldn't set the link layer\n Couldn't get context for {device}\n",
            1,
            0.5,
        )
    factor = 1.0
    for fault in faults.on([node], "nic-degraded"):
        if fault.index == rail:
            factor *= float(fault.param("factor"))
    line_gbps = nics[rail].gbps * factor
    average = line_gbps * LOOPBACK_EFFICIENCY * (1 + r.gauss(0, 0.002))
    peak = average * (1 + abs(r.gauss(0, 0.0005)))
    unit = "Gb/sec" if gbits else "MB/sec"
    scale = 1.0 if gbits else 1000 / 8
    iterations = int(average * 1e9 / 8 / size * duration)
    lines = [
        RULE,
        "                    RDMA_Write BW Test",
        f" Dual-port       : OFF\t\tDevice         : {device}",
        " Number of qps   : 1\t\tTransport type : IB",
        " Connection type : RC\t\tUsing SRQ      : OFF",
        " PCIe relax order: ON",
        " TX depth        : 128",
        " CQ Moderation   : 1",
        " Mtu             : 4096[B]",
        " Link type       : IB",
        " Max inline data : 0[B]",
        " rdma_cm QPs\t : OFF",
        " Data ex. method : Ethernet",
        " Simulated       : yes (recovery-acceptance sim)",
        RULE,
        f" local address: {_address(rail, r)}",
        f" remote address: {_address(rail, r)}",
        RULE,
        f" #bytes     #iterations    BW peak[{unit}]    BW average[{unit}]   MsgRate[Mpps]",
        f" {size:<10d} {iterations:<10d}       {peak * scale:<18.2f} {average * scale:<18.2f}"
        f"   {average * 1e9 / 8 / size / 1e6:.6f}",
        RULE,
    ]
    return "\n".join(lines) + "\n", 0, duration + 1.0
