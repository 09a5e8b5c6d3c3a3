"""What every drafted profile says the same way (`acceptance init`, any backend): the agreement's choices.

Facts read from a live cluster are values; what only the two parties can agree on (DCGM level, the
nccl-tests of the handover, margins, the smoke job) is written here as commented defaults to review.
Pure: text in, text out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

import yaml

from acceptance.margins import Margins
from acceptance.units import format_duration, format_size

HANDOVER_TESTS = (
    ("all_reduce_perf", "16G"),
    ("all_gather_perf", "8G"),
    ("reduce_scatter_perf", "8G"),
    ("alltoall_perf", "4G"),
)


def q(value: object) -> str:
    """A YAML scalar, quoted as YAML needs it."""
    return yaml.safe_dump(value, default_flow_style=True, width=10_000).strip().removesuffix("\n...")


def common(values: Sequence[str | None]) -> tuple[str | None, list[str]]:
    """The value most nodes share, and the other values seen."""
    counts = Counter(v for v in values if v)
    if not counts:
        return None, []
    top = counts.most_common(1)[0][0]
    return top, sorted(v for v in counts if v != top)


def most_gpus(per_node: Mapping[str, int]) -> tuple[int, list[str]]:
    """The GPU count most nodes have, and the nodes that differ as ``name (count)`` (`per_node` not empty)."""
    gpus = Counter(per_node.values()).most_common(1)[0][0]
    return gpus, [f"{node} ({count})" for node, count in per_node.items() if count != gpus]


def signers_lines() -> list[str]:
    return [
        "# Both parties' public keys (OpenSSH allowed_signers format): the handover baseline must be signed",
        "# by one of them, or runs refuse it. Create the file beside this one and uncomment:",
        "# allowed_signers: allowed_signers",
    ]


def env_and_nodes_lines(
    gpus: int, product: str | None, driver: str | None, cuda: str | None, names: Sequence[str]
) -> list[str]:
    """The NCCL environment (commented choices) of the backend's section, then the ``nodes`` section."""
    return [
        "  env:",
        "    NCCL_DEBUG: WARN        # INFO shows the transport NCCL picked (IB or sockets)",
        "    # NCCL_IB_HCA: =mlx5_0,mlx5_1,...   # the HCAs of the GPU fabric",
        "    # NCCL_SOCKET_IFNAME: eth0           # the interface for NCCL's bootstrap",
        "",
        "nodes:",
        f"  gpus_per_node: {gpus}",
        *([f"  gpu_product: {q(product)}"] if product else []),
        *([f"  # driver {driver}, CUDA {cuda} today (recorded in the baseline at handover)"] if driver or cuda else []),
        "  names:",
        *(f"    - {q(n)}" for n in names),
        "",
    ]


def agreement_lines() -> list[str]:
    """The dcgm, nccl, smoke and margins sections with the defaults both parties review."""
    margins = Margins()
    lines = [
        "dcgm:",
        "  level: 3                  # 1 quick, 2 medium, 3 long (~15 min), 4 extended (~1 h+)",
        "  timeout: 2h",
        "  fail_on_warning_severity: isolate",
        "  host_engine: embedded     # or the address of the cluster's nv-hostengine",
        "",
        "nccl:                       # the handover's nccl-tests; later runs use the baseline's commands",
        "  timeout: 1h",
        "  tests:",
    ]
    for program, largest in HANDOVER_TESTS:
        lines.append(f"    - name: {program}")
        lines.append(f"      args: [{program}, -b, 8, -e, {largest}, -f, 2, -g, 1, -w, 5, -n, 20]")
    lines += [
        "",
        "# smoke:                    # the customer's job, run briefly after a repair (criteria 3 and 4)",
        "#   command: [python, train.py, --resume-from, /ckpt]",
        "#   restore_step: 1000",
        "#   timeout: 2h",
        "",
        "margins:                    # agreed at handover; recorded in the baseline, which later runs use",
        f"  busbw_tolerance: {margins.busbw_tolerance}",
        f"  busbw_min_size: {format_size(margins.busbw_min_size).replace(' ', '')}",
        f"  step_time_tolerance: {margins.step_time_tolerance}",
        f"  loss_spike_z: {margins.loss_spike_z:g}",
        f"  loss_shift_z: {margins.loss_shift_z:g}",
        f"  probation: {format_duration(margins.probation_s)}",
    ]
    return lines
