"""PromQL for criterion 5's questions: pure builders, tested by equality.

Every expression keeps DCGM's blank sentinels out (a value at or above 2**47 is "no data",
never a count), and asks Prometheus for the few points that may matter, so that a healthy
24-hour window across 1024 GPUs sends back little more than the per-node minute counts.
"""

from __future__ import annotations

from collections.abc import Sequence

from acceptance.tools.prometheus import FP64_BLANK

BLANK = f"{FP64_BLANK:.0f}"
_REGEX_SPECIAL = set(r"\.^$|?*+()[]{}")


def regex_literal(text: str) -> str:
    """`text` as an RE2 literal inside a PromQL string ("sim-node.07" -> "sim-node\\\\.07")."""
    escaped = "".join("\\" + c if c in _REGEX_SPECIAL else c for c in text)
    return escaped.replace("\\", "\\\\").replace('"', '\\"')


def label_value(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _matchers(node_label: str, nodes: Sequence[str], extra: str) -> list[str]:
    if len(nodes) == 1:
        matchers = [f'{node_label}="{label_value(nodes[0])}"']
    else:
        matchers = [f'{node_label}=~"{"|".join(regex_literal(n) for n in nodes)}"']
    if extra.strip():
        matchers.append(extra.strip().strip(",{}"))
    return matchers


def selector(metric: str, node_label: str, nodes: Sequence[str], extra: str = "") -> str:
    """``METRIC{node_label=~"n1|n2",<extra>}`` (one node: an equality matcher)."""
    return f"{metric}{{{','.join(_matchers(node_label, nodes, extra))}}}"


def names_selector(metrics: Sequence[str], node_label: str, nodes: Sequence[str], extra: str = "") -> str:
    """``{__name__=~"A|B",node_label=~"n1|n2",<extra>}``: every series of several metrics (for /api/v1/series)."""
    names = "|".join(regex_literal(m) for m in metrics)
    return f'{{__name__=~"{names}",{",".join(_matchers(node_label, nodes, extra))}}}'


def valid(sel: str) -> str:
    """The series' samples that are readings, not DCGM blanks."""
    return f"({sel} < {BLANK})"


def presence(sel: str, node_label: str, step_s: float) -> str:
    """Per node, how many GPU series had a sample in the step to each evaluation time."""
    return f"count by ({node_label}) (count_over_time({sel}[{int(step_s)}s]))"


def gpu_presence(sel: str, step_s: float) -> str:
    return f"count_over_time({sel}[{int(step_s)}s])"


def xid_changes(sel: str, per_s: float = 60) -> str:
    """A non-zero XID that was not the gauge's value a minute earlier (a new XID, not a latched one)."""
    return f"({valid(sel)} > 0) unless ({sel} == ({sel} offset {int(per_s)}s))"


def increases(sel: str, per_s: float = 60) -> str:
    """A counter's increase over the `per_s` to each evaluation time, where it went up (resets drop out)."""
    return f"({valid(sel)} - {valid(f'{sel} offset {int(per_s)}s')}) > 0"


def nonzero(sel: str) -> str:
    return f"{valid(sel)} > 0"


def bits(sel: str, mask: int) -> str:
    """The bitmask's value where one of `mask`'s bits is set (PromQL has no bitwise AND: floor and modulo)."""
    terms = [f"(floor({sel} / {1 << b}) % 2)" for b in range(mask.bit_length()) if mask >> b & 1]
    return f"{valid(sel)} and (({' + '.join(terms)}) > 0)"


def blank(sel: str, range_s: float) -> str:
    """Series whose latest value in the range is a DCGM blank."""
    return f"last_over_time({sel}[{max(1, int(range_s))}s]) >= {BLANK}"


def suspects(how: str, sel: str, range_s: float) -> str:
    """An instant query for the series that may hold a point of `how` in the range (a cheap first pass).

    Much cheaper than the range query it spares: each series is read once, not once per step.
    What it lets through is then asked with the exact expression; what it drops has no point.
    """
    r = f"[{int(range_s)}s]"
    changed = f"(changes({sel}{r}) > 0)"
    raised = f"(max_over_time({sel}{r}) > 0 < {BLANK})"
    if how == "increase":
        return changed
    if how == "nonzero":
        return raised
    return f"{changed} or {raised}"  # xid, bits


def sample_counts(sel: str, range_s: float) -> str:
    """Samples per series in the range (a node whose series have them all reported every minute)."""
    return f"count_over_time({sel}[{int(range_s)}s])"
