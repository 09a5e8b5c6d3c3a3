"""``--record-baseline``: the pieces each criterion wrote during a clean run, as a new handover baseline."""

from __future__ import annotations

import getpass
import importlib
import socket
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from acceptance import __version__
from acceptance.baseline import FORMAT, BaselineStore, Identity, sha256_of, utc_stamp
from acceptance.criteria import CRITERIA
from acceptance.criteria.context import RunContext
from acceptance.criteria.parts import BaselinePart
from acceptance.criteria.shared_folder import SharedFolder
from acceptance.errors import BaselineError
from acceptance.profile import Profile

PartOf = Callable[[SharedFolder, Profile], BaselinePart]


def who() -> str:
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    return f"{user}@{socket.gethostname()}"


def parts_of(context: RunContext, folder: SharedFolder, extra: Iterable[BaselinePart] = ()) -> list[BaselinePart]:
    """What each criterion contributes, in the registry's order (`extra`: the site checks')."""
    return [part(folder, context.profile) for part in part_functions()] + list(extra)


def part_functions() -> list[PartOf]:
    """The ``baseline_part`` of every module the registry names as a criterion's baseline part."""
    out: list[PartOf] = []
    for criterion in CRITERIA:
        for name in criterion.baseline_parts:
            part: PartOf = importlib.import_module(name).baseline_part
            out.append(part)
    return out


def assemble(context: RunContext, parts: Sequence[BaselinePart], *, when: datetime, simulated: bool) -> dict[str, Any]:
    """The baseline document: provenance, every part's conditions and results, the profile's margins."""
    missing = [m for part in parts for m in part.missing]
    if missing and not context.force_record:
        raise BaselineError(f"no clean result for {', '.join(missing)}")
    conditions: dict[str, Any] = {}
    results: dict[str, Any] = {}
    for part in parts:
        conditions.update(part.conditions)
        results.update(part.results)
    return {
        "format": FORMAT,
        "cluster": context.profile.name,
        "identity": Identity.of_profile(context.profile).to_json(),
        "provenance": {
            "recorded_utc": utc_stamp(when),
            "harness_version": __version__,
            "recorded_by": who(),
            "ticket": context.ticket,
            "simulated": simulated,
            "forced": bool(context.force_record),
            "force_reason": context.force_record,
            "profile_sha256": sha256_of(context.profile.path),
            "run_id": context.run_id,
        },
        "conditions": conditions,
        "results": results,
        "margins": context.margins.to_json(),
    }


def record(
    context: RunContext, parts: Sequence[BaselinePart], failures: Sequence[str], *, when: datetime, simulated: bool
) -> Path:
    """Write the new baseline, or refuse (BaselineError saying why) when the run was not clean."""
    if failures and not context.force_record:
        shown = "; ".join(failures[:5]) + (f" (+{len(failures) - 5} more)" if len(failures) > 5 else "")
        raise BaselineError(
            f"baseline NOT recorded: {len(failures)} check(s) did not pass: {shown}. Repair and rerun, or record "
            "anyway with --force-record=REASON (the reason is kept in the baseline)"
        )
    data = assemble(context, parts, when=when, simulated=simulated)
    return BaselineStore(context.profile.path.parent).write(data, when)
