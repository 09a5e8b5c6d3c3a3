"""Short names of common Xids (NVIDIA's "XID Errors" catalogue), for a reader of the bundle.

A name is a pointer, not a diagnosis: the catalogue lists several causes for most Xids.
"""

from __future__ import annotations

XID_NAMES: dict[int, str] = {
    13: "graphics engine exception",
    31: "GPU memory page fault",
    43: "GPU stopped processing (channel reset)",
    45: "preemptive cleanup, due to previous errors",
    48: "double-bit ECC error",
    61: "internal micro-controller breakpoint/warning",
    62: "internal micro-controller halt",
    63: "ECC page retirement or row remapping recorded",
    64: "ECC page retirement or row remapper failure",
    68: "NVDEC0 exception",
    69: "graphics engine class error",
    74: "NVLink error",
    79: "GPU has fallen off the bus",
    92: "high single-bit ECC error rate",
    94: "contained ECC error",
    95: "uncontained ECC error",
    119: "GSP RPC timeout",
    120: "GSP error",
    121: "C2C link error",
    140: "unrecovered ECC error",
    143: "GPU initialization failure",
    144: "NVLink error (144-150 family)",
    145: "NVLink error (144-150 family)",
    146: "NVLink error (144-150 family)",
    147: "NVLink error (144-150 family)",
    148: "NVLink error (144-150 family)",
    149: "NVLink error (144-150 family)",
    150: "NVLink error (144-150 family)",
}


def xid_name(xid: int) -> str:
    return XID_NAMES.get(xid, "see NVIDIA's Xid catalogue")
