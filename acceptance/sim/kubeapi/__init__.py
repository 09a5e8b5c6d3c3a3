"""The Kubernetes API emulator and its controllers, over the simulated cluster's `ToolRunner`.

`EmulatedApi` (in `server`) is the entry point; `faults` holds what it can inject and
`timescale` how simulated seconds become wall seconds.
"""

from __future__ import annotations

from acceptance.sim.kubeapi.faults import Faults
from acceptance.sim.kubeapi.server import EmulatedApi, add_serve_options, serve, serve_from_args, write_kubeconfig
from acceptance.sim.kubeapi.timescale import TimeScale

__all__ = ["EmulatedApi", "Faults", "TimeScale", "add_serve_options", "serve", "serve_from_args", "write_kubeconfig"]
