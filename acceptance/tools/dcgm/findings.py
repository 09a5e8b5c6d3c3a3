"""What a DCGM diagnostic message means and what an on-call engineer does about it.

Decided from the error's category and severity when DCGM printed them (JSON 3.3+),
and from well-known words of the message otherwise (text tables carry no codes).
"""

from __future__ import annotations

import re

from acceptance.tools.dcgm.model import DcgmMessage
from acceptance.tools.dcgm.names import (
    ERROR_NAMES,
    SEVERITY_CONFIG,
    SEVERITY_ISOLATE,
    SEVERITY_NAMES,
    SEVERITY_RESET,
)

# NVIDIA Xid catalogue, the ones a failed node most often shows.
XID_MEANINGS: dict[int, str] = {
    13: "graphics engine exception",
    31: "GPU memory page fault",
    43: "GPU stopped processing",
    45: "preemptive cleanup",
    48: "double-bit ECC error",
    61: "internal micro-controller breakpoint",
    62: "internal micro-controller halt",
    63: "ECC page retirement or row remapping recorded",
    64: "ECC page retirement or row remapper failure",
    74: "NVLink error",
    79: "GPU has fallen off the bus",
    92: "high single-bit ECC error rate",
    94: "contained ECC error",
    95: "uncontained ECC error",
    119: "GSP RPC timeout",
    120: "GSP error",
    149: "NVLink/NVSwitch fabric error",
}

RMA = "drain the node and open an RMA"
COOLING = "check the node's cooling and airflow, then rerun the diagnostic"
SETTING = "fix the node setting and rerun the diagnostic"
RESET = "reset the GPU and rerun the diagnostic"
NVLINK = "drain the node and check NVLink/NVSwitch (fabric manager, trays); RMA if it repeats"
PCIE = "drain the node and check the GPU's PCIe link (riser, reseat); RMA if it repeats"
POWER = "check the GPU's power delivery and rerun the diagnostic"
LOGS = "check DCGM and system logs (dmesg, nvidia-bug-report) and rerun the diagnostic"

_ACTION_BY_CATEGORY = {
    3: SETTING,
    4: SETTING,
    5: RMA,
    8: SETTING,
    9: COOLING,
    10: RMA,
    11: NVLINK,
    12: NVLINK,
    13: PCIE,
    14: POWER,
    15: RMA,
}
_XID = re.compile(r"\bXID\s*(?:error\s*)?(\d+)", re.IGNORECASE)
_WORDS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\bXID\b", re.I), RMA),
    (re.compile(r"row remap|uncorrectable|double.bit|\bDBE\b|page retire", re.I), RMA),
    (re.compile(r"fallen off the bus", re.I), RMA),
    (re.compile(r"nvlink|nvswitch", re.I), NVLINK),
    (re.compile(r"pcie replay|pci.?e link|replay", re.I), PCIE),
    (re.compile(r"thermal|temperature|cooling", re.I), COOLING),
    (re.compile(r"persistence mode|environment variable|permission", re.I), SETTING),
    (re.compile(r"power", re.I), POWER),
)


def xid_of(text: str) -> int | None:
    match = _XID.search(text)
    return int(match.group(1)) if match else None


def cause(message: DcgmMessage, limit: int = 90) -> str:
    """A short name for what the message reports (``XID 79: GPU has fallen off the bus``)."""
    xid = xid_of(message.text)
    if xid is not None:
        meaning = XID_MEANINGS.get(xid)
        return f"XID {xid}: {meaning}" if meaning else f"XID {xid}"
    text = " ".join(message.text.split())
    if len(text) > limit:
        text = text[: limit - 3].rstrip() + "..."
    if message.error_id in ERROR_NAMES:
        return f"{text} [DCGM_FR_{ERROR_NAMES[message.error_id]}]"
    return text


def action(messages: list[DcgmMessage]) -> str:
    """The one action for a set of findings on one GPU, the most serious first."""
    if not messages:
        return LOGS
    chosen = [_action_of(m) for m in messages]
    for preferred in (RMA, NVLINK, PCIE, RESET, COOLING, POWER, SETTING):
        if preferred in chosen:
            return preferred
    return LOGS


def _action_of(message: DcgmMessage) -> str:
    if xid_of(message.text) is not None:
        return RMA
    if message.error_severity == SEVERITY_RESET:
        return RESET
    if message.error_severity == SEVERITY_CONFIG:
        return SETTING
    if message.error_category in _ACTION_BY_CATEGORY:
        return _ACTION_BY_CATEGORY[message.error_category]
    if message.error_severity == SEVERITY_ISOLATE:
        return RMA
    for pattern, act in _WORDS:
        if pattern.search(message.text):
            return act
    return LOGS


def codes(message: DcgmMessage) -> str:
    """``DCGM_FR_XID_ERROR (101), severity isolate`` or '' when the output carried no codes."""
    parts = []
    if message.error_id is not None:
        name = ERROR_NAMES.get(message.error_id)
        parts.append(f"DCGM_FR_{name} ({message.error_id})" if name else f"error id {message.error_id}")
    if message.error_severity is not None:
        parts.append(f"severity {SEVERITY_NAMES.get(message.error_severity, message.error_severity)}")
    return ", ".join(parts)
