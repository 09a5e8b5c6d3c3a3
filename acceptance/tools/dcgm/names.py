"""Names DCGM uses for its tests and error codes, and how 2.x/3.x spellings map onto 4.x.

DCGM 4.x names each test by its plugin id in snake_case (``software``, ``pcie``,
``targeted_power`` ...). DCGM 2.x and 3.x print display names (``Targeted Power``,
``GPU Memory``) and split the deployment checks into nine rows (``Denylist``,
``Persistence Mode`` ...) that 4.x folds into the single ``software`` test.
"""

from __future__ import annotations

import re

DEPLOYMENT = "Deployment"
HARDWARE = "Hardware"
INTEGRATION = "Integration"
STRESS = "Stress"

SOFTWARE = "software"

# 2.x/3.x deployment check rows; 4.x reports all of them as one `software` test
# whose messages are prefixed with the check name.
SOFTWARE_CHECKS: frozenset[str] = frozenset(
    {
        "Blacklist",
        "Denylist",
        "NVML Library",
        "CUDA Main Library",
        "CUDA Toolkit Library",
        "CUDA Runtime Library",
        "Permissions and OS Blocks",
        "Persistence Mode",
        "Environment Variables",
        "Page Retirement",
        "Page Retirement/Row Remap",
        "Graphics Processes",
        "Inforom",
    }
)

# 4.x plugin id -> category (PluginStrings.h, dcgmi/Diag.cpp of 3.x for the older display names).
CATEGORY_OF: dict[str, str] = {
    "software": DEPLOYMENT,
    "context_create": HARDWARE,
    "memory": HARDWARE,
    "diagnostic": HARDWARE,
    "pulse_test": HARDWARE,
    "eud": HARDWARE,
    "cpu_eud": HARDWARE,
    "nvbandwidth": HARDWARE,
    "pcie": INTEGRATION,
    "sm_stress": STRESS,
    "targeted_stress": STRESS,
    "targeted_power": STRESS,
    "memory_bandwidth": STRESS,
    "memtest": STRESS,
    "nccl_tests": INTEGRATION,
    "rist": HARDWARE,
}

_ALIASES: dict[str, str] = {
    "gpu_memory": "memory",
    "eud_test": "eud",
    "cpu_eud_test": "cpu_eud",
    "sm_perf": "sm_stress",
    "targeted_perf": "targeted_stress",
    "busgrind": "pcie",
    "pci_express": "pcie",
}

# Tests each `-r LEVEL` suite runs in DCGM 4.x on a datacenter GPU (EUD only where
# the EUD package is installed; nvbandwidth from 4.2). Used to name what a run
# at a given level should contain, never to invent results.
LEVEL_TESTS: dict[int, tuple[str, ...]] = {
    1: ("software",),
    2: ("software", "pcie", "memory"),
    3: (
        "software",
        "pcie",
        "memory",
        "diagnostic",
        "targeted_stress",
        "targeted_power",
        "memory_bandwidth",
    ),
    4: (
        "software",
        "pcie",
        "memory",
        "diagnostic",
        "targeted_stress",
        "targeted_power",
        "memory_bandwidth",
        "memtest",
        "pulse_test",
    ),
}

# error_severity (dcgm_errors.h DCGM_ERROR_*)
SEVERITY_NAMES: dict[int, str] = {
    0: "none",
    1: "monitor",
    2: "isolate",
    3: "unknown",
    4: "triage",
    5: "config",
    6: "reset",
}
SEVERITY_NONE = 0
SEVERITY_ISOLATE = 2
SEVERITY_CONFIG = 5
SEVERITY_RESET = 6

# error_id (DCGM_FR_*), the ones a recovery acceptance meets most.
ERROR_NAMES: dict[int, str] = {
    3: "PCI_REPLAY_RATE",
    4: "VOLATILE_DBE_DETECTED",
    5: "VOLATILE_SBE_DETECTED",
    6: "PENDING_PAGE_RETIREMENTS",
    10: "CLOCKS_EVENT_THERMAL",
    13: "NVLINK_ERROR_THRESHOLD",
    14: "NVLINK_DOWN",
    29: "PERSISTENCE_MODE",
    40: "THERMAL_VIOLATIONS",
    41: "THERMAL_VIOLATIONS_TS",
    44: "INTERNAL",
    51: "CUDA_API",
    56: "MEMORY_ALLOC",
    57: "CUDA_DBE",
    62: "MEMORY_BANDWIDTH",
    63: "TARGET_POWER",
    70: "NVLINK_CRC_ERROR_THRESHOLD",
    71: "NVLINK_ERROR_CRITICAL",
    80: "ROW_REMAP_FAILURE",
    84: "UNCORRECTABLE_ROW_REMAP",
    85: "PENDING_ROW_REMAP",
    101: "XID_ERROR",
    102: "SBE_VIOLATION",
    103: "DBE_VIOLATION",
    104: "PCIE_REPLAY_VIOLATION",
    108: "CUDA_FM_NOT_INITIALIZED",
    109: "SXID_ERROR",
}


def normalize_test_name(name: str) -> str:
    """The DCGM 4.x plugin id for a test name of any DCGM version.

    >>> normalize_test_name("Targeted Power"), normalize_test_name("GPU Memory")
    ('targeted_power', 'memory')
    """
    stripped = name.strip()
    if stripped in SOFTWARE_CHECKS:
        return SOFTWARE
    key = re.sub(r"[\s\-/]+", "_", stripped.lower())
    return _ALIASES.get(key, key)


def category_of(name: str, default: str = "") -> str:
    """The category of a normalized test name (`default` for a test this table does not know)."""
    return CATEGORY_OF.get(name, default)


def tests_for_level(level: int) -> tuple[str, ...]:
    return LEVEL_TESTS.get(level, ())


_GPU_IN_TEXT = re.compile(r"\bGPU ?(\d{1,3})\b")


def gpu_in_message(text: str) -> int | None:
    """The GPU index a DCGM message names first (``GPU 0 Thermal violations ...``), if any."""
    match = _GPU_IN_TEXT.search(text)
    return int(match.group(1)) if match else None
