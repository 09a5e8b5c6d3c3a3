"""``--record-baseline``: assemble the pieces of a clean run into a new handover baseline."""

from __future__ import annotations

import getpass
import socket
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from acceptance import __version__
from acceptance.baseline import FORMAT, BaselineStore, sha256_of, utc_stamp
from acceptance.coordinate import RunFolder
from acceptance.errors import BaselineError
from acceptance.profile import Profile


def who() -> str:
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    return f"{user}@{socket.gethostname()}"


def assemble(
    profile: Profile,
    folder: RunFolder,
    *,
    when: datetime,
    run_id: str,
    ticket: str | None,
    simulated: bool,
    force_reason: str | None,
) -> dict[str, Any]:
    """The baseline document from the parts the suite's items wrote."""
    cluster = folder.parts("cluster").get("conditions")
    if cluster is None:
        raise BaselineError("the preflight did not run, so the cluster's conditions are unknown; run the whole suite")
    nccl = folder.parts("nccl")
    dcgm = folder.parts("dcgm")
    missing = [name for name in profile.test_names if name not in nccl]
    missing += [f"DCGM on {node}" for node in profile.nodes if node not in dcgm]
    if missing and not force_reason:
        raise BaselineError(f"no clean result for {', '.join(missing)}")
    levels = {part["level"] for part in dcgm.values()}
    versions = {part["report"].get("dcgm_version") for part in dcgm.values()}
    dcgm_conditions = (
        {"dcgm_version": versions.pop() if len(versions) == 1 else None, "level": levels.pop() if levels else None}
        if dcgm
        else None
    )
    smoke = folder.parts("smoke").get("steps")
    results: dict[str, Any] = {
        "nccl": {name: part["run"] for name, part in nccl.items()},
        "dcgm": {node: part["report"] for node, part in dcgm.items()},
    }
    if smoke:
        results["smoke"] = smoke
    m = profile.margins
    return {
        "format": FORMAT,
        "cluster": profile.name,
        "provenance": {
            "recorded_utc": utc_stamp(when),
            "harness_version": __version__,
            "recorded_by": who(),
            "ticket": ticket,
            "simulated": simulated,
            "forced": bool(force_reason),
            "force_reason": force_reason,
            "profile_sha256": sha256_of(profile.path),
            "run_id": run_id,
        },
        "conditions": {
            **cluster,
            "nccl": {name: part["conditions"] for name, part in nccl.items()},
            "dcgm": dcgm_conditions,
        },
        "results": results,
        "margins": {
            "busbw_tolerance": m.busbw_tolerance,
            "busbw_min_size": m.busbw_min_size,
            "step_time_tolerance": m.step_time_tolerance,
            "loss_spike_z": m.loss_spike_z,
            "loss_shift_z": m.loss_shift_z,
            "probation_s": m.probation_s,
        },
    }


def record(
    profile: Profile,
    folder: RunFolder,
    failures: Sequence[str],
    *,
    when: datetime,
    run_id: str,
    ticket: str | None,
    simulated: bool,
    force_reason: str | None,
) -> Path:
    """Write the new baseline, or refuse (BaselineError saying why) when the run was not clean."""
    if failures and not force_reason:
        shown = "; ".join(failures[:5]) + (f" (+{len(failures) - 5} more)" if len(failures) > 5 else "")
        raise BaselineError(
            f"baseline NOT recorded: {len(failures)} check(s) did not pass: {shown}. Repair and rerun, or record "
            "anyway with --force-record=REASON (the reason is kept in the baseline)"
        )
    data = assemble(
        profile, folder, when=when, run_id=run_id, ticket=ticket, simulated=simulated, force_reason=force_reason
    )
    return BaselineStore(profile.path.parent).write(data, when)
