"""The handover baseline store: validated, dated, atomic, never overwritten, hashed."""

from __future__ import annotations

import copy
import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from acceptance.baseline import (
    BaselineStore,
    ClusterConditions,
    NodeSpec,
    load,
    validate,
)
from acceptance.errors import BaselineError

WHEN = datetime(2026, 11, 29, 23, 5, 7, tzinfo=UTC)


def document(when: datetime = WHEN) -> dict[str, Any]:
    return {
        "format": "recovery-acceptance-baseline/1",
        "cluster": "c1",
        "provenance": {
            "recorded_utc": when.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "harness_version": "0.1.0",
            "recorded_by": "ops@host",
            "ticket": None,
            "simulated": False,
            "forced": False,
        },
        "conditions": {
            "nodes": ["n1", "n2"],
            "kubernetes_version": "v1.30.10",
            "node_spec": {
                "gpu_product": "NVIDIA H200",
                "gpus_per_node": 8,
                "driver_version": "570.133.20",
                "cuda_version": "12.8",
            },
            "nccl": {"all_reduce_perf": {"nccl_version": "2.26.2"}},
            "dcgm": {"dcgm_version": "4.2.3", "level": 3},
        },
        "results": {
            "nccl": {"all_reduce_perf": {"collective": "all_reduce", "rows": []}},
            "dcgm": {"n1": {"kind": "dcgm-diag", "status": "pass"}},
        },
        "margins": {"busbw_tolerance": 0.05, "busbw_min_size": 1048576, "step_time_tolerance": 0.05},
    }


def test_write_then_latest_round_trips_with_a_stable_sha256(tmp_path: Path) -> None:
    store = BaselineStore(tmp_path / "c1")
    path = store.write(document(), WHEN)
    assert path.name == "handover-20261129T230507Z.json"
    loaded = store.latest()
    assert loaded.path == path
    assert loaded.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert load(path).sha256 == loaded.sha256
    assert loaded.baseline.conditions.node_spec.driver_version == "570.133.20"
    assert loaded.baseline.nccl_names == ("all_reduce_perf",)


def test_an_existing_baseline_is_never_overwritten(tmp_path: Path) -> None:
    store = BaselineStore(tmp_path / "c1")
    path = store.write(document(), WHEN)
    before = path.read_bytes()
    changed = document()
    changed["provenance"]["recorded_by"] = "someone-else"
    with pytest.raises(BaselineError, match="already exists; a baseline is never overwritten"):
        store.write(changed, WHEN)
    assert path.read_bytes() == before
    assert [p.name for p in (tmp_path / "c1").iterdir()] == [path.name], "no temporary file may remain"


def test_latest_is_the_newest_agreement_and_copies_do_not_count(tmp_path: Path) -> None:
    """A copy named handover-old-copy.json once sorted last and became "latest"."""
    store = BaselineStore(tmp_path / "c1")
    store.write(document(), WHEN)
    newer = store.write(document(WHEN.replace(year=2027)), WHEN.replace(year=2027))
    assert store.latest().path == newer
    (tmp_path / "c1" / "handover-old-copy.json").write_text(json.dumps(document()))
    (tmp_path / "c1" / "handover-zzz.json").write_text("{}")
    assert store.latest().path == newer
    assert [p.name for p in store.files()] == ["handover-20261129T230507Z.json", "handover-20271129T230507Z.json"]


def test_a_baseline_renamed_to_look_newer_is_refused(tmp_path: Path) -> None:
    store = BaselineStore(tmp_path / "c1")
    store.write(document(), WHEN)
    (tmp_path / "c1" / "handover-20991231T000000Z.json").write_text(json.dumps(document()))
    with pytest.raises(BaselineError, match="its name says 20991231T000000Z but it was agreed at 2026-11-29T23:05:07Z"):
        store.latest()


def test_invalid_document_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    bad = document()
    del bad["conditions"]["node_spec"]["driver_version"]
    store = BaselineStore(tmp_path / "c1")
    with pytest.raises(
        BaselineError, match=r"conditions\.node_spec: found nothing, expected the field 'driver_version'"
    ):
        store.write(bad, WHEN)
    assert not list((tmp_path / "c1").glob("*.json"))


def test_missing_baseline_says_how_to_record_one(tmp_path: Path) -> None:
    with pytest.raises(BaselineError, match=r"--cluster=c1 --record-baseline"):
        BaselineStore(tmp_path / "c1").latest()


def test_broken_json_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "handover-x.json"
    path.write_text('{\n  "format": \n}\n')
    with pytest.raises(BaselineError, match=rf"{path}:3: not valid JSON"):
        load(path)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d.__setitem__("format", "v0"), "format"),
        (lambda d: d["margins"].__setitem__("busbw_tolerance", 0.7), r"margins\.busbw_tolerance"),
        (lambda d: d["provenance"].__setitem__("recorded_utc", "yesterday"), r"provenance\.recorded_utc"),
        (lambda d: d["results"]["nccl"]["all_reduce_perf"].pop("rows"), r"results\.nccl\.all_reduce_perf"),
    ],
)
def test_schema_problems_are_named(edit: Any, message: str) -> None:
    data = copy.deepcopy(document())
    edit(data)
    with pytest.raises(BaselineError, match=message):
        validate(json.loads(json.dumps(data)), "b.json")


def test_conditions_differences_are_worded() -> None:
    then = ClusterConditions(("n1", "n2"), "v1.30.10", NodeSpec("NVIDIA H200", 8, "570.133.20", "12.8"))
    now = ClusterConditions(("n1", "n3"), "v1.31.2", NodeSpec("NVIDIA H200", 8, "575.51.03", "12.8"))
    assert now.differences(then) == [
        "Kubernetes v1.31.2 now, v1.30.10 at handover",
        "NVIDIA driver 575.51.03 now, 570.133.20 at handover",
        "nodes n3 now, not in the node set at handover",
        "nodes n2 at handover, missing now",
    ]
    assert then.differences(then) == []
