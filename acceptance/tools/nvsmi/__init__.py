"""nvidia-smi: the queries a bare-metal preflight makes, and their output as records.

The façade of `acceptance.tools.nvsmi`. Pure: the command lines (`query_gpus_argv`,
`query_apps_argv`) and the parsers of what they print (``--format=csv,noheader``), plus the
driver and CUDA versions from the banner of plain ``nvidia-smi`` or from ``nvidia-smi -q``.
Fields are found by the position the query asked for, so the builder and the parser share
one list of fields.
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
from acceptance.tools.nvsmi.versions import SmiVersions, parse_versions

__all__ = [
    "APP_FIELDS",
    "GPU_FIELDS",
    "ComputeApp",
    "GpuList",
    "GpuRow",
    "SmiVersions",
    "parse_apps",
    "parse_gpus",
    "parse_versions",
    "query_apps_argv",
    "query_gpus_argv",
]
