"""The localization section of the HTML report: group results per round as a nodes × rounds matrix.

Reads the ``details.localize`` a failing fabric verdict carries (`criteria.localize_result`). A
row is a node (grouped by leaf), a column a round; a cell names the node's partners in that
round's group and the group's busbw as a share of the pair baseline, coloured by the group's
status. The culprits' rows come first. The same localization attached to several fabric items
is shown once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from acceptance.report.markup import esc as _e
from acceptance.tools.nccl import fmt_bytes

_CLASS = {"ok": "pass", "slow": "fail", "failed": "error"}


def localizations(verdicts: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Each distinct localization among the verdicts' details, in order."""
    seen: list[Mapping[str, Any]] = []
    for verdict in verdicts:
        found = (verdict.get("details") or {}).get("localize")
        if isinstance(found, Mapping) and found not in seen:
            seen.append(found)
    return seen


def matrix(
    found: Mapping[str, Any],
) -> tuple[list[int], list[tuple[str, str]], dict[tuple[str, int], Mapping[str, Any]]]:
    """Rounds (columns), (leaf, node) rows, and each node's group per round."""
    rounds = [int(r["round"]) for r in found.get("rounds", ())]
    cells: dict[tuple[str, int], Mapping[str, Any]] = {}
    leaf_of: dict[str, str] = {}
    for r in found.get("rounds", ()):
        for group in r.get("groups", ()):
            nodes = [str(n) for n in group.get("nodes", ())]
            leaves = [str(x) for x in group.get("leaves", ())]
            for i, node in enumerate(nodes):
                cells[(node, int(r["round"]))] = group
                leaf_of.setdefault(node, leaves[i] if i < len(leaves) else "")
    culprits = set(str(found.get("culprit", "")).split(","))
    rows = sorted(((leaf, node) for node, leaf in leaf_of.items()), key=lambda r: (r[1] not in culprits, r[0], r[1]))
    return rounds, rows, cells


def _cell(node: str, group: Mapping[str, Any] | None) -> str:
    if group is None:
        return '<td class="notrun">–</td>'
    status = str(group.get("status", ""))
    partners = "+".join(n for n in group.get("nodes", ()) if n != node)
    ratio = group.get("ratio")
    shown = f"{ratio * 100:.0f}%" if isinstance(ratio, int | float) else _e(group.get("detail", status))
    title = f' title="{_e(group.get("detail", ""))}"'
    return f'<td class="{_CLASS.get(status, "missing")}"{title}>{shown} <small>with {_e(partners)}</small></td>'


def render(verdicts: Iterable[Mapping[str, Any]]) -> str:
    """The section's HTML ('not run' when no fabric item failed)."""
    parts = []
    for found in localizations(verdicts):
        rounds, rows, cells = matrix(found)
        sizes = ", ".join(fmt_bytes(int(s)) for s in found.get("sizes", ()))
        head = (
            f"<p><b>{_e(found.get('culprit'))}</b> ({_e(found.get('culprit_kind'))}): {_e(found.get('summary'))}</p>"
            f'<p class="caption">{len(rounds)} round(s) of {_e(found.get("test"))} on disjoint groups in parallel '
            f"(sizes {_e(sizes)}), against {_e(found.get('reference'))}; {_e(found.get('seconds'))} s. "
            "A cell: the group's busbw as a share of the reference (or why it did not run) and the node's "
            "partners in it; green within the margin, red slow or failed.</p>"
        )
        purposes = "".join(
            f"<li>round {_e(r.get('round'))}: {_e(r.get('purpose'))}</li>" for r in found.get("rounds", ())
        )
        th = "".join(f"<th>round {n}</th>" for n in rounds)
        body = "".join(
            f"<tr><td>{_e(leaf)}</td><td>{_e(node)}</td>"
            + "".join(_cell(node, cells.get((node, n))) for n in rounds)
            + "</tr>"
            for leaf, node in rows
        )
        parts.append(f"{head}<ul>{purposes}</ul><table><tr><th>leaf</th><th>node</th>{th}</tr>{body}</table>")
    return "".join(parts) or '<p class="notrun">no localization: no fabric item failed, or it is turned off</p>'
