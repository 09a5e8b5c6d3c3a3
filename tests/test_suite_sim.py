"""The acceptance suite end to end on the simulated cluster, through the real Kubernetes backend.

Each run is made once for the session (`SimRuns`, by whichever xdist worker asks first) and judged by every
test that reads it; the runs that need a folder of their own (recording a baseline, logs handed in) keep
pytester's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest

from tests.suite_run import SimRuns, SuiteRun, marked_ahead, run_suite, session_folder, sim_cluster_folder

pytestmark = pytest.mark.slow

NODES = [f"sim-node-{i:02d}" for i in range(1, 17)]
FABRIC = ["all_reduce_perf", "all_gather_perf", "reduce_scatter_perf", "alltoall_perf"]
STEP = "test_smoke_step_time"
LOSS = "test_loss_continuity"
RECURRENCE = "test_no_recurrence"


def fabric(name: str) -> str:
    return f"test_nccl_busbw[{name}]"


def dcgm(node: str) -> str:
    return f"test_dcgm_diagnostics[{node}]"


@pytest.fixture(scope="module")
def runs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimRuns]:
    made = SimRuns(session_folder(tmp_path_factory, "suite-sim"))
    with marked_ahead(request, made):
        yield made


NIC_DEGRADED = ("--sim-fault=nic-degraded@sim-node-07", "-p", "no:xdist")  # the xdist test's one-process run too


@pytest.mark.suite_run
def test_healthy_cluster_passes_every_item(suite_run: SuiteRun) -> None:
    run = suite_run
    assert run.result.ret == 0, run.result.stdout.str()[-3000:]
    outcomes = run.outcomes
    assert len(outcomes) == 4 + 16 + 4 + 1 + 1 + 1
    assert outcomes.pop(RECURRENCE) == "skipped", "criterion 5 runs later, for a ticket"
    assert set(outcomes.values()) == {"passed"}
    assert run.properties(STEP)["verdict"] == "pass"
    assert run.properties(LOSS)["verdict"] == "pass"
    props = run.properties(fabric("all_reduce_perf"))
    assert props["verdict"] == "pass"
    assert float(props["worst_ratio"]) > 0.95
    assert (run.report_dir / "report.html").is_file()
    assert (run.report_dir / "MANIFEST.json").is_file()
    assert "culprit" not in props, "a passing fabric item runs no localization"
    assert not [n for n in run.objects_created() if n.startswith("MPIJob/loc-")]
    run.result.stdout.fnmatch_lines(
        ["*= acceptance verdicts =*", "ACCEPTED: all 26 judged items passed (criteria 0, 1, 2, 3, 4)"]
    )
    assert '<div class="verdict accepted" id="verdict">' in (run.report_dir / "report.html").read_text()


@pytest.mark.suite_run(*NIC_DEGRADED)
def test_degraded_nic_fails_fabric_and_the_step_time_it_slows(suite_run: SuiteRun) -> None:
    """A slow rail passes DCGM (the GPUs are fine) but slows every collective and so the job's steps."""
    run = suite_run
    assert run.result.ret == 1
    outcomes = run.outcomes
    assert {name for name, o in outcomes.items() if o != "passed" and name != RECURRENCE} == {
        fabric(n) for n in FABRIC
    } | {STEP}
    assert outcomes[LOSS] == "passed"
    message = run.message(fabric("all_reduce_perf"))
    assert "all_reduce_perf: busbw" in message
    assert "at handover" in message
    assert "margin −5%" in message
    assert "FAILED test_nccl_busbw[all_reduce_perf]: all_reduce_perf: busbw " in run.result.stdout.str()
    for name in FABRIC:  # one localization, carried by every failing fabric item
        props = run.properties(fabric(name))
        assert (props["culprit"], props["culprit_kind"], props["localize_confirmed"]) == ("sim-node-07", "nic", "true")
        assert int(props["localize_rounds"]) <= 3
        assert props["localize_test"] == "all_gather_perf"
    assert "localized in 2 rounds: sim-node-07: every group with it at 6" in message
    run.result.stdout.fnmatch_lines([
        "CAUSE sim-node-07 network (NIC or link) (criterion 2) explains nccl-tests busbw −*% (4 items, criterion 2), "
        "smoke step +*% (criterion 3)",
    ])  # fmt: skip
    html = (run.report_dir / "report.html").read_text()
    assert "Fabric localization: group results per round" in html
    cells = re.findall(
        r'<td class="fail" title="(\d+)% of the pair baseline">(\d+)% <small>with (sim-node-\d\d)</small>', html
    )
    assert cells, "the matrix shows failing groups with their share of the pair baseline and the partner"
    assert all(a == b and 55 <= int(a) <= 70 for a, b, _ in cells), cells  # the NIC runs at ~62% of its rate


@pytest.mark.suite_run("--sim-fault=spine-slow", "-k", "fabric")
def test_a_slow_spine_fails_fabric_with_a_switch_and_no_node(suite_run: SuiteRun) -> None:
    run = suite_run
    props = run.properties(fabric("all_reduce_perf"))
    assert props["verdict"] == "fail"
    assert (props["culprit"], props["culprit_kind"]) == ("leaf-01<->leaf-02", "switch")
    assert int(props["localize_rounds"]) <= 3
    assert "fabric, not a node" in run.message(fabric("all_reduce_perf"))


@pytest.mark.suite_run("--sim-fault=gpu-xid@sim-node-03:5", "-k", "dcgm or fabric")
def test_gpu_xid_fails_that_node_and_gpu_and_the_fabric(suite_run: SuiteRun) -> None:
    # the criteria judged here only: the failed smoke and pre-incident jobs would add their waits for nothing
    run = suite_run
    assert set(run.outcomes) == {dcgm(n) for n in NODES} | {fabric(n) for n in FABRIC}
    outcomes = run.outcomes
    failed = {name for name, o in outcomes.items() if o != "passed" and name != RECURRENCE}
    assert dcgm("sim-node-03") in failed
    assert not {dcgm(n) for n in NODES if n != "sim-node-03"} & failed
    message = run.message(dcgm("sim-node-03"))
    assert "sim-node-03 GPU 5" in message
    assert "XID 79" in message
    assert run.properties(dcgm("sim-node-03"))["gpu5.diagnostic"] == "fail"
    assert fabric("all_reduce_perf") in failed
    assert "NCCL failure" in run.message(fabric("all_reduce_perf"))


@pytest.mark.suite_run("--sim-fault=nccl-version")
def test_different_nccl_version_makes_fabric_not_comparable(suite_run: SuiteRun) -> None:
    run = suite_run
    outcomes = run.outcomes
    assert {name for name, o in outcomes.items() if o != "passed" and name != RECURRENCE} == {fabric(n) for n in FABRIC}
    message = run.message(fabric("all_reduce_perf"))
    assert "NOT-COMPARABLE" in message
    assert "NCCL 2.27.3 now, 2.26.5 at handover" in message
    html = (run.report_dir / "report.html").read_text()
    assert '<div class="verdict not-accepted" id="verdict">' in html, "conditions that differ are never a pass"
    assert "NOT COMPARABLE: all_reduce_perf" in html


@pytest.mark.suite_run("--sim-fault=node-down@sim-node-14")
def test_node_down_fails_preflight_and_the_rest_skip_with_its_reason(suite_run: SuiteRun) -> None:
    run = suite_run
    outcomes = run.outcomes
    assert outcomes["test_node_set_ready"] == "failed"
    assert "sim-node-14: NotReady" in run.message("test_node_set_ready")
    skipped = {name for name, o in outcomes.items() if o == "skipped"}
    assert skipped == {dcgm(n) for n in NODES} | {fabric(n) for n in FABRIC} | {STEP, LOSS, RECURRENCE}
    assert "preflight failed: node set: sim-node-14: NotReady" in run.message(fabric("all_reduce_perf"))
    run.result.stdout.fnmatch_lines(["SKIPPED 22 items: preflight failed: node set: sim-node-14: NotReady*"])
    run.result.stdout.fnmatch_lines(
        ["NOT ACCEPTED: 1 item failed (criterion 0); 22 items not judged (criteria 1, 2, 3, 4)"]
    )


@pytest.mark.suite_run("-k", "fabric", "--sim-fault=node-down@sim-node-05")
def test_an_unusable_cluster_fails_the_run_even_when_the_preflight_items_are_deselected(suite_run: SuiteRun) -> None:
    """`-k fabric` on a cluster with a node down once gave "4 skipped" and exit 0."""
    run = suite_run
    assert set(run.outcomes.values()) == {"skipped"}
    assert len(run.outcomes) == len(FABRIC)
    assert run.result.ret == 1
    run.result.stdout.fnmatch_lines(["NOT ACCEPTED: the cluster is unusable (see the preflight); the run fails"])


@pytest.mark.suite_run("--sim-fault=nic-degraded@sim-node-07", "-n", "4")
def test_xdist_gives_the_same_verdicts_and_objects_as_one_process(runs: SimRuns, suite_run: SuiteRun) -> None:
    one = runs.get(*NIC_DEGRADED)
    one_outcomes, one_objects = one.outcomes, one.objects_created()
    four = suite_run
    assert four.outcomes == one_outcomes
    strip = lambda names: sorted(n.split("-ra-")[0] for n in names)  # noqa: E731 - run ids differ
    assert strip(four.objects_created()) == strip(one_objects)
    # DCGM per node, one MPIJob per nccl test, two training runs, one localization (8 pairs, then 2),
    # and beside DCGM the nccl and smoke images pulled ahead on every node (criteria.prepull)
    assert len(one_objects) == 16 + 4 + 2 + 8 + 2 + 2 * 16
    assert sum(1 for n in one_objects if n.startswith("Job/prepull-")) == 2 * 16


def test_record_mode_refuses_on_a_failing_node_and_never_overwrites(pytester: pytest.Pytester) -> None:
    folder = sim_cluster_folder(pytester.path, with_baseline=False)
    run = run_suite(pytester, "--record-baseline", "--sim-fault=ecc-dbe@sim-node-05:2", baselines=folder.parent)
    assert run.result.ret == 1
    run.result.stdout.fnmatch_lines(["*baseline NOT recorded: 1 check(s) did not pass*sim-node-05*--force-record*"])
    assert not list(folder.glob("handover-*.json"))
    run = run_suite(pytester, "--record-baseline", baselines=folder.parent)
    assert run.result.ret == 0, run.result.stdout.str()[-3000:]
    (first,) = folder.glob("handover-*.json")
    before = first.read_bytes()
    pairs = json.loads(before)["results"]["pairs"]  # the pair baseline of every test, for localization
    assert set(pairs) == set(FABRIC)
    assert {n for g in pairs["all_reduce_perf"]["groups"] for n in g["nodes"]} == set(NODES)
    assert {g["crossing"] for g in pairs["all_reduce_perf"]["groups"]} == {True, False}
    run = run_suite(pytester, baselines=folder.parent)
    assert run.result.ret == 0, run.result.stdout.str()[-3000:]
    assert first.read_bytes() == before


@pytest.mark.suite_run("--sim-fault=gpu-throttle@sim-node-05:2")
def test_throttling_gpu_fails_its_diagnostics_and_the_smoke_step_time(suite_run: SuiteRun) -> None:
    run = suite_run
    failed = {name for name, o in run.outcomes.items() if o != "passed" and name != RECURRENCE}
    assert failed == {dcgm("sim-node-05"), STEP}
    message = run.message(STEP)
    assert "smoke step time" in message
    assert "margin +5.0%" in message
    assert float(run.properties(STEP)["ratio"]) > 1.05


@pytest.mark.suite_run("--sim-fault=bad-restore")
def test_bad_restore_fails_loss_continuity_only(suite_run: SuiteRun) -> None:
    run = suite_run
    failed = {name for name, o in run.outcomes.items() if o != "passed" and name != RECURRENCE}
    assert failed == {LOSS}
    assert "first step beyond at 1001" in run.message(LOSS)


def test_logs_handed_in_are_judged_without_running_the_job(pytester: pytest.Pytester) -> None:
    from acceptance.sim.model.runner import SimRunner
    from acceptance.sim.model.scenario import load_scenario

    runner = SimRunner.from_scenario(load_scenario("bad-restore-step-off"), seed=20261129)
    base = "python pretrain_gpt.py --train-iters 1200 --log-interval 1 --save-interval 200 --eval-interval 500"
    pre = runner.run([*base.split(), "--exit-interval", "1000"], {}, "sim-node-01", ())
    smoke = runner.run([*base.split(), "--load", "/ckpt", "--ckpt-step", "1000", "--exit-interval", "1200"],
                       {}, "sim-node-01", ())  # fmt: skip
    (pytester.path / "pre.log").write_text(pre.stdout)
    (pytester.path / "smoke.log").write_text(smoke.stdout)
    run = run_suite(
        pytester, f"--pre-incident-log={pytester.path / 'pre.log'}", f"--smoke-log={pytester.path / 'smoke.log'}",
        "--restore-step=1000", "-k", "loss or smoke",
    )  # fmt: skip
    assert run.outcomes[LOSS] == "failed"
    assert "expected 1001" in run.message(LOSS)
    assert not (run.report_dir / "manifests" / "training").exists(), "no training job may run"


@pytest.mark.suite_run("-k", "smoke or loss")
def test_a_criterion_selected_alone_does_not_wait_for_deselected_ones(suite_run: SuiteRun) -> None:
    """With -k only the training criteria run: they must not wait for DCGM jobs nobody submits."""
    run = suite_run
    assert run.result.ret == 0, run.result.stdout.str()[-3000:]
    assert set(run.outcomes) == {STEP, LOSS}
    assert (run.report_dir / "manifests" / "training" / "smoke.yaml").is_file(), "the job ran on the cluster"
