"""nvidia-smi: what a bare-metal preflight queries and what an incident reads first, as records.

The façade of `acceptance.tools.nvsmi`; pure (text in, records out), one module per output shape:

- `query`: the command lines a preflight runs (`query_gpus_argv`, `query_apps_argv`) and the
  parsers of what they print (``--format=csv,noheader``); fields are found by the position the
  query asked for, so the builder and the parser share one list of fields.
- `versions`: the driver and CUDA versions from the banner of plain ``nvidia-smi`` or from
  ``nvidia-smi -q``.
- `report`: ``nvidia-smi -q`` in full, the per-GPU health sections (`parse` → `NvsmiReport`,
  `findings` in words, the `excerpt` an incident bundle carries).
"""

from __future__ import annotations

from acceptance.tools.nvsmi.query import (
    APP_FIELDS,
    GPU_FIELDS,
    ComputeApp,
    GpuList,
    GpuRow,
    parse_apps,
    parse_gpus,
    query_apps_argv,
    query_gpus_argv,
)
from acceptance.tools.nvsmi.report import NvsmiGpu, NvsmiReport, excerpt, findings, parse
from acceptance.tools.nvsmi.versions import SmiVersions, parse_versions

__all__ = [
    "APP_FIELDS",
    "GPU_FIELDS",
    "ComputeApp",
    "GpuList",
    "GpuRow",
    "NvsmiGpu",
    "NvsmiReport",
    "SmiVersions",
    "excerpt",
    "findings",
    "parse",
    "parse_apps",
    "parse_gpus",
    "parse_versions",
    "query_apps_argv",
    "query_gpus_argv",
]
