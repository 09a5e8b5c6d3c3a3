"""The simulator's incident logs arrive in the shapes real pastes have, and the bundle reads each alike."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from acceptance.cli import main
from acceptance.errors import UsageError
from acceptance.sim.model import pastes
from tests.incident_logs import NODES, TORCHRUN, XID_GPU, XID_NODE, XID_STEP, bundle_argv, runner

LOST = 8 * NODES.index(XID_NODE) + XID_GPU
PLAIN = "prefix=none,month=11"
SHAPES = [
    "prefix=quote,month=11",
    "prefix=indent4,month=11,tqdm",
    "prefix=indent8,month=11,mid-entry",
    "prefix=tab,month=11,tqdm,mid-entry",
]
MONTHS = ["prefix=none,month=6", "prefix=quote,month=3,tqdm,mid-entry"]


def _log(tmp: Path, shape: str) -> Path:
    run = runner(f"gpu-xid@{XID_NODE}:{XID_GPU}", at_step=XID_STEP)
    out = run.run(TORCHRUN, {pastes.ENV: shape}, NODES[0], [])
    path = tmp / f"{shape.replace(',', '_').replace('=', '-')}.log"
    path.write_text(out.stdout)
    return path


def _bundle(tmp: Path, shape: str) -> dict[str, Any]:
    log = _log(tmp, shape)
    out = tmp / f"b-{log.stem}"
    assert main([*bundle_argv("--job-logs", str(log), "--reports-dir", str(tmp / "r"), "--out", str(out))]) == 0
    return json.loads((out / "bundle.json").read_text())


def _fields(doc: dict[str, Any]) -> dict[str, Any]:
    """The seven fields of a bundle as far as the job log decides them (not the bundle's own time or paths)."""
    errors = [
        (e["kind"], e["ranks"], e.get("op"), e.get("timeout_ms"), e.get("first_utc")) for e in doc["nccl"]["errors"]
    ]
    steps = {k: v for k, v in doc["steps"].items() if k not in ("csv", "plot")}
    return {
        "1 cluster": [(a["node"], sorted(r["detail"] for r in a["reasons"])) for a in doc["cluster"]["affected"]],
        "2 window": {k: v for k, v in doc["window"].items() if k != "note"},
        "3 ranks": {k: doc["ranks"][k] for k in ("world_size", "mapped", "conflicts", "by_node")},
        "4 nccl": errors,
        "5 steps": steps,
        "6 node evidence": doc["node_evidence"],
        "7 changes": doc["changes"]["items"],
        "severity": doc["severity"]["level"],
    }


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _fields(_bundle(tmp_path_factory.mktemp("plain"), PLAIN))


@pytest.mark.heavy
@pytest.mark.parametrize("shape", SHAPES)
def test_each_paste_shape_gives_the_same_seven_fields(tmp_path: Path, plain: dict[str, Any], shape: str) -> None:
    """Quoted, indented, glued to a progress bar, the torchrun summary from its root cause down: same bundle.

    A summary pasted from its root cause down holds one of its node's 8 ranks: the 7 entries above it are
    not in the paste, so 7 fewer ranks are mapped; everything else is the same.
    """
    fields = _fields(_bundle(tmp_path, shape))
    expected = plain
    if pastes.parse(shape).mid_entry:
        ranks = plain["3 ranks"]
        by_node = {**ranks["by_node"], XID_NODE: str(LOST)}
        expected = {**plain, "3 ranks": {**ranks, "mapped": ranks["mapped"] - 7, "by_node": by_node}}
    assert fields == expected


@pytest.mark.heavy
@pytest.mark.parametrize("shape", MONTHS)
def test_a_job_run_in_spring_or_summer_keeps_its_window_and_failure_order(
    tmp_path: Path, plain: dict[str, Any], shape: str
) -> None:
    """c10 prints ``E626`` for 26 June: the window and every failure time move by the month, nothing is lost."""
    fields = _fields(_bundle(tmp_path, shape))
    month = pastes.parse(shape).month

    def moved(value: str) -> str:
        when = datetime.fromisoformat(value.removesuffix("Z"))
        return when.replace(month=month).isoformat() + "Z"

    window = dict(plain["2 window"])
    for key in ("last_healthy_utc", "first_bad_utc"):
        window[key] = moved(window[key])
    assert fields["2 window"] == window
    assert fields["4 nccl"] == [(*e[:4], moved(e[4]) if e[4] else e[4]) for e in plain["4 nccl"]]
    same = ("6 node evidence", "7 changes", "severity")
    assert {k: fields[k] for k in same} == {k: plain[k] for k in same}
    dated = [
        (node, sorted(r.replace("2026-11-", f"2026-{month:02d}-") for r in why)) for node, why in plain["1 cluster"]
    ]
    assert fields["1 cluster"] == dated
    assert fields["3 ranks"]["world_size"] == plain["3 ranks"]["world_size"]
    assert fields["5 steps"]["last_checkpoint_step"] == plain["5 steps"]["last_checkpoint_step"]


def test_the_shapes_are_what_real_pastes_show() -> None:
    run = runner(f"gpu-xid@{XID_NODE}:{XID_GPU}", at_step=XID_STEP)
    text = run.run(TORCHRUN, {pastes.ENV: "prefix=quote,month=6,tqdm,mid-entry"}, NODES[0], []).stdout
    lines = text.splitlines()
    assert all(line.startswith("> ") for line in lines)
    glued = [line for line in lines if "s/shard][rank" in line]
    assert len(glued) == 1
    assert "[rank35]:[E6" in glued[0]  # June: three digits, no zero padding
    assert all(" ProcessGroupNCCL.cpp:" not in line or "[E6" in line for line in lines)
    roots = [i for i, line in enumerate(lines) if line == "> Root Cause (first observed failure):"]
    assert len(roots) == 16
    lost_node = [i for i in roots if f"host      : {XID_NODE}" in lines[i + 3]]
    assert len(lost_node) == 1
    before = lines[lost_node[0] - 1]
    assert "-" * 60 not in before, "the lost rank's node's summary starts at its Root Cause entry"
    agents = [line for line in lines if line.startswith("> W") and "closing signal SIGTERM" in line]
    assert agents
    assert all(line[3:7] == "0627" or line[3:7].startswith("06") for line in agents), "agent glog dates stay padded"


def test_every_shape_is_chosen_for_some_seed() -> None:
    chosen = [pastes.choose(seed) for seed in range(200)]
    assert {s.prefix for s in chosen} == set(pastes.PREFIXES)
    assert {s.month for s in chosen} == set(pastes.MONTHS)
    assert {s.tqdm for s in chosen} == {True, False}
    assert {s.mid_entry for s in chosen} == {True, False}
    assert pastes.choose(7) == pastes.choose(7)


def test_c10_dates_are_not_zero_padded() -> None:
    assert (pastes.c10_date(6, 26), pastes.c10_date(12, 6), pastes.c10_date(1, 3)) == ("626", "1206", "103")


def test_a_shape_the_simulator_does_not_know_is_a_usage_error_naming_the_form() -> None:
    with pytest.raises(UsageError, match=r"'prefix=ray' is not one of prefix=none\|indent4"):
        pastes.parse("prefix=ray")
    assert pastes.parse("tqdm,month=6") == pastes.Shape(month=6, tqdm=True)
