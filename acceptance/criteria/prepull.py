"""The images of later criteria, pulled onto the returned nodes while their DCGM diagnostics run.

A repaired or replaced node often comes back with an empty image cache, and the nccl-tests and
training images are many gigabytes: pulled only when nccl-tests or the smoke run start, they add
minutes to every recovery. So the DCGM batch carries, `alongside`, a batch of pods that request no
GPUs (one Job per image and returned node, running ``true``): it starts in the background as soon
as DCGM is submitted, without the GPU lock, and by the time DCGM ends the images are there; the
critical path is DCGM → nccl-tests → smoke. Its Jobs carry the run's labels and are deleted when
they end, like every workload's. Only images a selected criterion will run are pulled, and only
when the profile names them (``kube.images``; ``kube.prepull_images: false`` turns this off).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from acceptance import criteria
from acceptance.clusters.base import NodeWorkload
from acceptance.criteria.scheduler import Batch

if TYPE_CHECKING:
    from acceptance.criteria.runparts import RunParts

KEY = "prepull"
ARGV = ("true",)


class PrePull:
    """Which images to pull ahead, where, for one pytest process's run."""

    def __init__(self, run: RunParts) -> None:
        self.run = run

    def images(self) -> list[str]:
        """The profile's image names (``nccl``, ``smoke``) the selected criteria will run after DCGM."""
        ctx = self.run.context
        images = ctx.profile.kube.get("images") or {}
        if not ctx.profile.kube.get("prepull_images", True):
            return []
        wanted = []
        if criteria.module(2) in self.run.selected and ctx.nccl_tests:
            wanted.append("nccl")
        if {criteria.module(3), criteria.module(4)} & self.run.selected and self.run.training.runs_job():
            wanted.append("smoke")
        # an image DCGM runs is pulled by DCGM itself; one named twice is pulled once
        seen = {images.get("dcgm")}
        out = []
        for name in wanted:
            if images.get(name) and images[name] not in seen:
                seen.add(images[name])
                out.append(name)
        return out

    def batch(self) -> Batch | None:
        """One Job per image and target node, holding no GPU; None when there is nothing to pull."""
        return batch_for(self.images(), self.run.context.targets, self.run.context.profile.dcgm_timeout_s)


def batch_for(images: Sequence[str], nodes: Sequence[str], deadline_s: float) -> Batch | None:
    """Jobs running ``true`` in each of the profile's `images` (``nccl``, ``smoke``) on each node, requesting
    no GPU and no RDMA device; None when there is nothing to pull."""
    if not images or not nodes:
        return None
    workloads = {
        f"{image}-{node}": NodeWorkload(
            f"{KEY}-{image}-{node}", node, ARGV, image, gpus=0, rdma=False, deadline_s=deadline_s
        )
        for node in nodes
        for image in images
    }
    note = f"{' and '.join(images)} image{'s' * (len(images) > 1)} ahead of their criteria, no GPUs"
    return Batch(KEY, KEY, workloads, deadline_s, note=note, gpus=False)
