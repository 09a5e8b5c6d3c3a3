"""What one node's links can carry (the profile's `nodes.links`), and the busbw above which a figure is no measurement.

Link rates are line rates in Gb/s (10^9 bits per second) in one direction, as vendors quote them
per port: an NVLink 4 link carries 200 Gb/s each way, an NDR InfiniBand port 400 Gb/s. nccl-tests
prints busbw in GB/s (10^9 bytes per second). No collective moves more than a rank's links carry
in both directions together (in-switch reductions, NVLS or SHARP, are what lift busbw above one
direction's rate), so the bound is 2 x rate / 8 bits per byte: the GPU's NVLink within a node, and
for a run over several nodes also the node's NICs together (the tighter of the two). Without the
node's specification the bound is one no GPU interconnect reaches.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

#: busbw no GPU interconnect carries (GB/s): NVLink 5, the fastest shipped, carries 1800 GB/s a GPU both ways
ANY_LINK_GBYTES = 10_000.0


@dataclass(frozen=True)
class NodeLinks:
    """One node's links, line rates in Gb/s in one direction; None where the profile does not say."""

    #: NVLink (or other GPU-to-GPU link inside the node) of one GPU, all its links together
    nvlink_gbps_per_gpu: float | None = None
    #: network adapters between nodes, per node
    nics: int | None = None
    #: line rate of one of them
    nic_gbps: float | None = None


@dataclass(frozen=True)
class BusbwBound:
    """The largest busbw (GB/s) a run can measure, and how it follows from the links (`how`)."""

    gbytes_per_s: float
    how: str

    def exceeded_by(self, busbw: float | None) -> bool:
        """Whether a busbw is a number beyond the links (N/A, nan and inf are refused as not numbers)."""
        return busbw is not None and math.isfinite(busbw) and busbw > self.gbytes_per_s


def busbw_bound(links: NodeLinks | None, nodes: int | None) -> BusbwBound:
    """The bound for a run over `nodes` nodes (None: not known, then the looser of the two)."""
    intra: BusbwBound | None = None
    inter: BusbwBound | None = None
    if links is not None and links.nvlink_gbps_per_gpu:
        rate = links.nvlink_gbps_per_gpu
        intra = BusbwBound(2 * rate / 8, f"NVLink {rate:g} Gb/s per GPU each way x 2 directions / 8 bits per byte")
    if links is not None and links.nics and links.nic_gbps:
        total = links.nics * links.nic_gbps
        inter = BusbwBound(
            2 * total / 8,
            f"{links.nics} NICs x {links.nic_gbps:g} Gb/s each way x 2 directions / 8 bits per byte",
        )
    # the NICs carry nothing of a run inside one node
    known = [b for b in (intra, None if nodes == 1 else inter) if b is not None]
    if not known:
        return BusbwBound(
            ANY_LINK_GBYTES,
            f"{ANY_LINK_GBYTES:g} GB/s, beyond any GPU interconnect (the profile's nodes.links gives this cluster's)",
        )
    if nodes is None:  # one node or several: the bound must hold for either
        return max(known, key=lambda b: b.gbytes_per_s)
    return min(known, key=lambda b: b.gbytes_per_s)
