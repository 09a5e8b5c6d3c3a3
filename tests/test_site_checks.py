"""A site's own check through the hooks (examples/site_checks): items, junit, evidence, HTML, baseline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from acceptance.baseline import BaselineStore
from tests.suite_run import ROOT, SHIPPED_TIME_SCALE, run_suite, sim_cluster_folder

pytestmark = pytest.mark.slow

EXAMPLE = str(ROOT / "examples" / "site_checks")
NODES = [f"sim-node-{i:02d}" for i in range(1, 17)]


def item(node: str) -> str:
    return f"test_site_check[ib_write_bw:{node}]"


def test_a_site_check_is_recorded_then_judged_like_a_criterion(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = sim_cluster_folder(pytester.path, time_scale=SHIPPED_TIME_SCALE)  # its jobs have short deadlines
    recorded = run_suite(pytester, EXAMPLE, "-k", "site_check or preflight", "--record-baseline",
                         "--force-record=site check only")  # fmt: skip
    assert recorded.result.ret == 0, recorded.result.stdout.str()[-3000:]
    assert {recorded.outcomes[item(n)] for n in NODES} == {"passed"}
    baseline = BaselineStore(folder).latest()
    kept = baseline.baseline.data["results"]["site"]["ib_write_bw"]
    assert set(kept) == set(NODES)
    assert all(380 < kept["sim-node-07"][f"mlx5_{k}"] < 400 for k in range(8))

    alerts = pytester.path / "alerts.jsonl"
    monkeypatch.setenv("SITE_ALERTS", str(alerts))
    run = run_suite(pytester, EXAMPLE, "-k", "site_check", "--sim-fault=nic-degraded@sim-node-07:3")
    assert run.result.ret == 1
    failed = {name for name, outcome in run.outcomes.items() if outcome != "passed"}
    assert failed == {item("sim-node-07")}
    message = run.message(item("sim-node-07"))
    assert "sim-node-07: mlx5_3 at 2" in message
    assert "at handover" in message, "judged against the figure kept in the baseline"
    props = run.properties(item("sim-node-07"))
    assert (props["verdict"], props["rails_slow"]) == ("fail", "1")
    assert 230 < float(props["gbps[mlx5_3]"]) < 260
    assert [json.loads(line)["item"].endswith(item("sim-node-07")) for line in alerts.read_text().splitlines()] == [
        True
    ]
    manifest = run.report_dir / "manifests" / "site" / "ib_write_bw" / "sim-node-07.yaml"
    assert "kind: Job" in manifest.read_text()
    output = run.report_dir / "outputs" / "site" / "ib_write_bw" / "sim-node-07.log"
    assert "Device         : mlx5_3" in output.read_text()
    html = (run.report_dir / "report.html").read_text()
    assert "site check ib_write_bw: InfiniBand loopback bandwidth of every rail" in html
    assert "FAILED test_site_check[ib_write_bw:sim-node-07]: sim-node-07: mlx5_3 at" in run.result.stdout.str()


def test_without_site_checks_there_is_no_site_item(pytester: pytest.Pytester) -> None:
    run = run_suite(pytester, "-k", "preflight", "--collect-only", "-q")
    assert "test_site_check" not in run.result.stdout.str()
    assert "test_cluster_answers" in run.result.stdout.str()
    assert Path(EXAMPLE, "conftest.py").is_file()
