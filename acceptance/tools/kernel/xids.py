"""Short names of common Xids (NVIDIA's "XID Errors" catalogue), for a reader of the bundle.

A name is a pointer, not a diagnosis: the catalogue lists several causes for most Xids. The catalogue is DCGM's
(`acceptance.tools.dcgm.XID_MEANINGS`); here only the Xids it lacks and the longer names a kernel log's reader gets.
"""

from __future__ import annotations

from acceptance.tools.dcgm.findings import XID_MEANINGS

XID_NAMES: dict[int, str] = {
    **XID_MEANINGS,
    43: "GPU stopped processing (channel reset)",
    45: "preemptive cleanup, due to previous errors",
    61: "internal micro-controller breakpoint/warning",
    68: "NVDEC0 exception",
    69: "graphics engine class error",
    121: "C2C link error",
    140: "unrecovered ECC error",
    143: "GPU initialization failure",
    **{xid: "NVLink error (144-150 family)" for xid in range(144, 151)},
}


def xid_name(xid: int) -> str:
    return XID_NAMES.get(xid, "see NVIDIA's Xid catalogue")
