"""The acceptance suite over SSH: simulated bare-metal hosts behind a real sshd, real mpirun, the same verdicts.

An 8-node variant of ``baselines/sim-ssh`` (one nccl test, the smoke job per node) keeps each run
short; its handover baseline is recorded once, by the suite itself, signed with the simulator's
demo key (as the shipped one is), and every other run is judged against it. The fault matrix
is `.ci/fault_check.py`'s, the one `--cluster=sim` must meet.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator

import pytest
import yaml

from tests.ssh_support import NEEDS_SSHD, ROOT, Run, SuiteRuns, sim_ssh_profile
from tests.suite_run import TEST_TIME_SCALE, fault_runs, marked_ahead, session_folder

pytestmark = [NEEDS_SSHD, pytest.mark.slow]


def _fault_checks() -> tuple[tuple[str, str], ...]:
    spec = importlib.util.spec_from_file_location("fault_check", ROOT / ".ci" / "fault_check.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    checks: tuple[tuple[str, str], ...] = module.FAULT_CHECKS
    return checks


FAULT_CHECKS = _fault_checks()


Runs = SuiteRuns


@pytest.fixture(scope="module")
def runs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    made = SuiteRuns.recorded(
        session_folder(tmp_path_factory, "suite-ssh"),
        "sim-ssh",
        lambda b: sim_ssh_profile(b, time_scale=TEST_TIME_SCALE),
    )
    with marked_ahead(request, made):
        yield made


def test_recording_over_ssh_keeps_the_conditions_of_the_bare_metal_cluster(runs: Runs) -> None:
    [path] = (runs.baselines / "sim-ssh").glob("handover-*.json")
    baseline = json.loads(path.read_text())
    conditions = baseline["conditions"]
    assert conditions["kubernetes_version"] == "none (bare metal over SSH)"
    assert conditions["node_spec"] == {"gpu_product": "NVIDIA H200", "gpus_per_node": 8, "driver_version": "570.133.20",
                                       "cuda_version": "12.8", "os_image": "Ubuntu 22.04.5 LTS"}  # fmt: skip
    assert conditions["nccl"]["all_reduce_perf"]["argv"][0] == "all_reduce_perf"
    assert baseline["provenance"]["simulated"] is True
    pairs = baseline["results"]["pairs"]["all_reduce_perf"]  # localization's reference, measured over SSH too
    assert pairs, baseline["results"].keys()


@pytest.mark.suite_run
def test_the_healthy_suite_passes_over_ssh_with_evidence_per_host(suite_run: Run) -> None:
    run = suite_run
    assert run.returncode == 0, run.stdout[-3000:]
    outcomes = run.outcomes()
    assert len(outcomes) == 4 + 8 + 1 + 1 + 1 + 1
    assert outcomes.pop("test_recurrence::test_no_recurrence") == "skipped", "criterion 5 runs later, for a ticket"
    assert set(outcomes.values()) == {"passed"}
    assert "SIMULATED bare-metal cluster: 8 hosts behind a real OpenSSH sshd on loopback" in run.stdout
    manifest = (run.report / "manifests" / "nccl" / "all_reduce_perf.yaml").read_text()
    assert "kind: SshCommand" in manifest
    assert "fingerprint: SHA256:" in manifest
    assert "exec mpirun --allow-run-as-root -np 64 --hostfile " in manifest
    events = json.loads((run.report / "events" / "dcgm" / "sim-node-05.json").read_text())
    assert [e["reason"] for e in events] == ["Started", "Exited"]
    assert events[1]["message"].startswith("exit 0 after ")
    assert (
        (run.report / "outputs" / "dcgm" / "sim-node-05.sim-node-05.stderr.log")
        .read_text()
        .startswith("Started host engine")
    )
    placement = json.loads((run.report / "placement" / "all_reduce_perf.json").read_text())
    assert {(p["host"], p["node"]) for p in placement} == {(f"sim-node-{i:02d}",) * 2 for i in range(1, 9)}
    assert "Traceback" not in run.stderr


@pytest.mark.parametrize(("fault", "expected"), fault_runs(FAULT_CHECKS))
def test_an_injected_fault_fails_the_same_criteria_as_on_the_kubernetes_simulator(
    suite_run: Run, fault: str, expected: str
) -> None:
    run = suite_run
    assert run.returncode == 1, run.stdout[-3000:]
    assert run.failing_modules() == set(expected.split(","))


@pytest.mark.suite_run("--sim-fault=nic-degraded@sim-node-07")  # the fault matrix's run
def test_a_degraded_nic_is_named_by_group_rounds_of_mpirun_from_the_head_node(suite_run: Run) -> None:
    """Localization over SSH: the profile's listed leaves, groups as mpirun jobs, the pair baseline of the handover."""
    run = suite_run
    props = run.properties("test_nccl_busbw[all_reduce_perf]")
    assert (props["culprit"], props["culprit_kind"]) == ("sim-node-07", "nic"), props
    assert 2 <= int(props["localize_rounds"]) <= 3
    assert int(props["localize_tests"]) >= 4
    found = json.loads((run.report / "localize.json").read_text())
    assert (found["reference"], found["topology"]) == (
        "the pair baseline recorded at handover",
        "localize.topology in the profile",
    )
    assert found["conclusion"]["summary"].startswith("sim-node-07: every group with it at 6")
    groups = sorted((run.report / "manifests" / "localize").glob("loc-r*-g*.yaml"))
    assert len(groups) == int(props["localize_tests"])
    for group in groups:  # each group an mpirun job from the head node, under the run's marker
        manifest = yaml.safe_load(group.read_text())
        assert (manifest["kind"], manifest["node"]) == ("SshCommand", "sim-node-01")
        assert manifest["script"].startswith("exec mpirun --allow-run-as-root -np 16 --hostfile ")


@pytest.mark.suite_run("--sim-fault=nic-degraded@sim-node-07", "-n", "4")
def test_xdist_gives_the_same_verdicts_as_one_process(runs: Runs, suite_run: Run) -> None:
    one = runs.get("--sim-fault=nic-degraded@sim-node-07")  # the fault matrix's run
    four = suite_run
    assert four.returncode == one.returncode == 1
    assert four.outcomes() == one.outcomes()
    made = sorted(p.name for p in (four.report / "manifests").rglob("*.yaml"))
    assert made == sorted(p.name for p in (one.report / "manifests").rglob("*.yaml"))


@pytest.mark.suite_run("--sim-fault=node-down@sim-node-05")
def test_a_host_that_refuses_connections_fails_the_preflight_naming_it(suite_run: Run) -> None:
    run = suite_run
    assert run.returncode == 1
    outcomes = run.outcomes()
    assert outcomes["test_preflight::test_node_set_ready"] == "failure"
    message = run.message("test_node_set_ready")
    assert "node set: sim-node-05: NotReady (unreachable over SSH: cannot connect to " in message
    assert "127.0.0.65 port" in message
    assert "connection refused" in message
    assert {v for k, v in outcomes.items() if not k.startswith("test_preflight")} == {"skipped"}


@pytest.mark.suite_run("--sim-fault=gpu-busy@sim-node-02:3", "-k", "preflight")
def test_a_busy_gpu_fails_the_preflight_with_its_process(suite_run: Run) -> None:
    run = suite_run
    assert run.returncode == 1
    message = run.message("test_node_set_ready")
    assert "sim-node-02: NotReady (GPU 3 busy: pid 48213 (python3, 71680 MiB) holds it)" in message


@pytest.mark.suite_run("--ssh-insecure-accept-new", "-k", "cluster_answers")
def test_accepting_unknown_host_keys_is_written_into_the_report(suite_run: Run) -> None:
    run = suite_run
    assert run.returncode == 0, run.stdout[-2000:]
    assert "WARNING: --ssh-insecure-accept-new: unknown SSH host keys are accepted WITHOUT verification" in run.stdout
    props = run.suite_properties()
    assert props["ssh_host_keys"].startswith("WARNING: NOT VERIFIED")


SITE_CHECKS = str(ROOT / "examples" / "site_checks")


@pytest.mark.suite_run(SITE_CHECKS, "-k", "site_check", "--sim-fault=nic-degraded@sim-node-07")
def test_a_sites_own_check_runs_on_the_hosts_too(suite_run: Run) -> None:
    """examples/site_checks (ib_write_bw per node) over SSH: the degraded rail's node fails, no other."""
    run = suite_run
    outcomes = run.outcomes()
    assert len(outcomes) == 8
    assert {k for k, v in outcomes.items() if v != "passed"} == {
        "test_site_checks::test_site_check[ib_write_bw:sim-node-07]"
    }
    assert "sim-node-07: mlx5_0 at " in run.message("test_site_check[ib_write_bw:sim-node-07]")
