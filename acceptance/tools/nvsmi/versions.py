"""Driver and CUDA versions as nvidia-smi states them.

The banner of plain ``nvidia-smi`` says ``Driver Version: 570.133.20     CUDA Version: 12.8``;
``nvidia-smi -q`` says ``Driver Version : 525.60.13`` and ``CUDA Version : 12.0`` on lines of
their own. "CUDA Version" is the highest CUDA the driver supports: the version the node's
GPU software stack is agreed on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_DRIVER = re.compile(r"Driver Version\s*:\s*([0-9][0-9.]*)")
_CUDA = re.compile(r"CUDA Version\s*:\s*([0-9][0-9.]*)")


@dataclass(frozen=True)
class SmiVersions:
    driver: str | None
    cuda: str | None


def parse_versions(text: str) -> SmiVersions:
    """The first driver and CUDA versions the text states (None where it states none)."""
    driver, cuda = _DRIVER.search(text), _CUDA.search(text)
    return SmiVersions(driver.group(1) if driver else None, cuda.group(1) if cuda else None)
