"""The simulated cluster itself: identity per seed, node specs, fault syntax, scenarios, CLI, time scale."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from acceptance.cli import main
from acceptance.errors import UsageError
from acceptance.sim.kubeapi.timescale import TimeScale
from acceptance.sim.model.cluster import build_cluster
from acceptance.sim.model.faults import KINDS
from acceptance.sim.model.faultspec import parse_fault
from acceptance.sim.model.runner import SimRunner
from acceptance.sim.model.scenario import SCENARIO_DIR, available, load_scenario, scenario_from_dict
from tests.test_sim_support import make_runner


def test_cluster_identity_is_stable_per_seed_and_differs_between_seeds() -> None:
    a, b, c = build_cluster(16, 7), build_cluster(16, 7), build_cluster(16, 8)
    assert a == b
    assert [g.uuid for g in a.nodes[0].gpus] != [g.uuid for g in c.nodes[0].gpus]
    uuids = {g.uuid for n in a.nodes for g in n.gpus}
    assert len(uuids) == 128
    assert a.nodes[0].name == "sim-node-01"
    assert a.nodes[-1].name == "sim-node-16"
    big = build_cluster(1024, 1)
    assert big.nodes[-1].name == "sim-node-1024"
    assert big.nodes_per_leaf == 16
    assert big.leaves == 64


@pytest.mark.parametrize("nodes", [1, 1025])
def test_cluster_size_limits(nodes: int) -> None:
    with pytest.raises(UsageError, match=r"2\.\.1024"):
        build_cluster(nodes)


def test_node_specs_carry_gpu_feature_discovery_labels_and_readiness() -> None:
    runner = make_runner(["node-down@sim-node-14"])
    specs = runner.nodes()
    assert len(specs) == 16
    spec = specs[0]
    assert spec.labels["nvidia.com/gpu.product"] == "NVIDIA-H200"
    assert spec.labels["nvidia.com/gpu.count"] == "8"
    assert spec.gpus == 8
    assert spec.labels["nvidia.com/cuda.driver-version.full"] == runner.versions.driver
    assert spec.labels["kubernetes.io/hostname"] == "sim-node-01"
    assert spec.labels["acceptance.sim/leaf-group"] == "leaf-01"
    assert specs[8].labels["acceptance.sim/leaf-group"] == "leaf-02"
    assert spec.kubelet_version.startswith("v1.30.")
    assert spec.os_image.startswith("Ubuntu 22.04")
    assert [s.name for s in specs if not s.ready] == ["sim-node-14"]


def test_versions_for_preflight_and_the_nccl_version_fault() -> None:
    healthy, changed = make_runner(), make_runner(["nccl-version"])
    assert healthy.versions.as_dict()["nccl"] == "2.26.5"
    assert changed.versions.nccl == "2.27.3"
    assert {k for k, v in healthy.versions.as_dict().items() if changed.versions.as_dict()[k] != v} == {"nccl"}


@pytest.mark.parametrize(
    ("text", "kind", "node", "index"),
    [
        ("nic-degraded@sim-node-07", "nic-degraded", "sim-node-07", 0),
        ("gpu-xid@sim-node-03:5", "gpu-xid", "sim-node-03", 5),
        ("bad-restore", "bad-restore", None, 0),
        ("spine-slow", "spine-slow", None, 0),
    ],
)
def test_fault_syntax(text: str, kind: str, node: str | None, index: int) -> None:
    fault = parse_fault(text, build_cluster(16))
    assert (fault.kind, fault.node, fault.index) == (kind, node, index)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("nic-slow@sim-node-01", "unknown kind"),
        ("gpu-xid@sim-node-17", "unknown node"),
        ("gpu-xid@sim-node-03:8", "bad index"),
        ("gpu-xid", "needs a node"),
        ("spine-slow@sim-node-01", "takes no target"),
    ],
)
def test_bad_fault_is_a_usage_error_listing_what_exists(text: str, problem: str) -> None:
    with pytest.raises(UsageError, match=problem) as info:
        parse_fault(text, build_cluster(16))
    message = str(info.value)
    assert all(kind in message for kind in KINDS)
    assert "sim-node-01 ... sim-node-16" in message


def test_every_shipped_scenario_loads_and_builds() -> None:
    names = available()
    assert {"healthy-16", "scale-1024", "nic-degraded", "gpu-xid", "spine-slow", "bad-restore"} <= set(names)
    for name in names:
        scenario = load_scenario(name)
        cluster, faults = scenario.build()
        assert cluster.nodes
        assert name.startswith(("healthy", "scale-1024")) or faults.faults or scenario.image_pull is not None, name
    assert (SCENARIO_DIR / "healthy-16.yaml").is_file()


def test_scenario_errors_name_the_file_and_what_is_expected(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"unknown simulator scenario .nope.; available: .*healthy-16"):
        load_scenario("nope")
    bad = tmp_path / "bad.yaml"
    bad.write_text("nodes: 16\nfautls: []\n")
    with pytest.raises(UsageError, match=r"bad\.yaml: unknown key\(s\) \['fautls'\]"):
        load_scenario(bad)
    with pytest.raises(UsageError, match="mode must be one of"):
        scenario_from_dict({"faults": [{"fault": "bad-restore", "mode": "sideways"}]}).build()


def test_runner_from_scenario_with_extra_faults_and_seed() -> None:
    runner = SimRunner.from_scenario(load_scenario("nic-degraded"), ["gpu-xid@sim-node-02:1"], seed=9)
    assert runner.cluster.seed == 9
    assert [str(f) for f in runner.faults.faults] == ["nic-degraded@sim-node-07:3", "gpu-xid@sim-node-02:1"]


def test_shell_wrapped_commands_run_in_turn_and_stop_at_a_failure() -> None:
    runner = make_runner(["gpu-xid@sim-node-01:0"])
    ok = make_runner().run(["bash", "-c", "echo start; dcgmi diag -r 1 -j && echo done"], {}, "sim-node-01", [])
    assert ok.exit_code == 0
    assert ok.stdout.startswith("start\n{")
    assert ok.stdout.endswith("done\n")
    failed = runner.run(["sh", "-c", "dcgmi diag -r 1 && echo never"], {}, "sim-node-01", [])
    assert failed.exit_code == 205
    assert "never" not in failed.stdout
    script = "set -e\nnv-hostengine -n &\nsleep 2\ntimeout 900 dcgmi diag -r 1 -j | tee /out/d.json\necho after"
    stopped = runner.run(["bash", "-c", script], {}, "sim-node-01", [])
    assert stopped.exit_code == 205
    assert stopped.stdout.startswith("{")
    assert "after" not in stopped.stdout
    tolerated = runner.run(["bash", "-c", "dcgmi diag -r 1 || true; echo after"], {}, "sim-node-01", [])
    assert tolerated.exit_code == 0
    assert tolerated.stdout.endswith("after\n")
    missing = runner.run(["ib_send_lat"], {}, "sim-node-01", [])
    assert missing.exit_code == 127


def test_ib_write_bw_measures_the_rail_its_fault_slows_and_fails_on_a_rail_that_is_down() -> None:
    from examples.site_checks.conftest import parse_ib_write_bw

    runner = make_runner(["nic-degraded@sim-node-07:3", "nic-down@sim-node-02:5"])
    argv = ["ib_write_bw", "-d", "mlx5_3", "-F", "--report_gbits", "-D", "2", "localhost"]
    healthy = parse_ib_write_bw(runner.run(argv, {}, "sim-node-01", []).stdout)
    slow = parse_ib_write_bw(runner.run(argv, {}, "sim-node-07", []).stdout)
    assert 385 < healthy["mlx5_3"] < 397
    assert 0.6 < slow["mlx5_3"] / healthy["mlx5_3"] < 0.64
    other = parse_ib_write_bw(runner.run([*argv[:2], "mlx5_4", *argv[3:]], {}, "sim-node-07", []).stdout)
    assert other["mlx5_4"] > 385
    down = runner.run(["ib_write_bw", "-d", "mlx5_5", "localhost"], {}, "sim-node-02", [])
    assert down.exit_code == 1
    assert "Port number 1 state is Down" in down.stdout
    assert runner.run(["ib_write_bw", "-d", "eth0"], {}, "sim-node-01", []).exit_code == 2


def test_cli_prints_the_tool_output_and_exits_with_its_status(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "sim",
            "run",
            "--fault",
            "gpu-xid@sim-node-03:5",
            "--node",
            "sim-node-03",
            "--",
            "dcgmi",
            "diag",
            "-r",
            "2",
            "-j",
        ]
    )
    out = capsys.readouterr().out
    assert code == 205
    assert json.loads(out)["metadata"]["simulated"] is True
    assert main(["sim", "run", "--", "all_reduce_perf", "-b", "8", "-e", "1M", "-f", "2", "-g", "8"]) == 0
    assert "# Collective test concluded: all_reduce_perf" in capsys.readouterr().out
    assert main(["sim", "run", "--fault", "bogus", "--", "dcgmi", "diag", "-r", "1"]) == 2
    assert "unknown kind 'bogus'" in capsys.readouterr().err


def test_time_scale() -> None:
    assert TimeScale.parse("1/60").wall(900) == pytest.approx(15)
    assert TimeScale.parse("instant").wall(900) == 0
    assert TimeScale.parse("realtime").wall(12.5) == 12.5
    with pytest.raises(UsageError, match="bad time scale"):
        TimeScale.parse("fast")


def test_bad_command_lines_print_the_reason_and_exit_2_instead_of_raising() -> None:
    runner = make_runner()
    bad = runner.run(["all_reduce_perf", "-d", "complex"], {}, "sim-node-01", [])
    assert bad.exit_code == 2
    assert "datatype" in bad.stdout
    assert runner.run(["mpirun", "-np", "16", "-H", "nowhere:8", "all_reduce_perf"], {}, "x", []).exit_code == 2


@pytest.mark.parametrize(
    ("kind", "factor", "problem"),
    [
        ("nic-degraded@sim-node-02", math.inf, "factor must be a finite number > 0, not inf"),
        ("nic-down@sim-node-02", math.nan, "factor must be a finite number > 0, not nan"),
        ("spine-slow", 0, "factor must be a finite number > 0, not 0"),
        ("leaf-uplink@sim-node-02", 3.0, "factor must be at most 1"),
        ("gpu-throttle@sim-node-02", "fast", "factor must be a finite number > 0, not 'fast'"),
    ],
)
def test_a_fault_factor_that_no_link_has_is_refused(kind: str, factor: object, problem: str) -> None:
    """Issue 23: a factor of infinity made the simulated busbw 2,400x the baseline."""
    with pytest.raises(UsageError, match=re.escape(problem)):
        parse_fault(kind, build_cluster(16), {"factor": factor})
    assert parse_fault("gpu-throttle@sim-node-02", build_cluster(16), {"factor": 1.5}).param("factor") == 1.5
