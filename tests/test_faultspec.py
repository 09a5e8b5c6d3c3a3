"""One grammar for every simulated fault, parsed once at the option; the backend says which faults it shows."""

from __future__ import annotations

from pathlib import Path

import pytest

from acceptance import clusters
from acceptance.clusters.base import ClusterInventory, NodeInfo
from acceptance.errors import UsageError
from acceptance.options import OPTIONS, _convert
from acceptance.profile import Profile, load_profile
from acceptance.sim.model import SimRunner, load_scenario
from acceptance.sim.model.faults import Fault
from acceptance.sim.model.faultspec import KINDS, SchedulerFault, SimFaults, parse_spec
from acceptance.sim.model.production_faults import RecurrenceFault
from tests.ssh_support import NEEDS_SSHD, sim_ssh_profile, ssh_command

ROOT = Path(__file__).resolve().parents[1]
SPECS = (
    "nic-degraded@sim-node-07:3",
    "bad-restore",
    "gpu-busy@sim-node-02:1",
    "xid-recur@sim-node-07:3@6h",
    "slowdown-recur@2h+20m",
    "node-drain@sim-node-03",
)


def shipped(name: str) -> Profile:
    return load_profile(name, ROOT / "baselines")


def test_each_spec_becomes_the_object_of_its_kind() -> None:
    faults = SimFaults.parse(SPECS)
    assert faults.acceptance == (
        Fault("nic-degraded", "sim-node-07", 3),
        Fault("bad-restore"),
        Fault("gpu-busy", "sim-node-02", 1),
    )
    assert [(f.kind, f.node, f.gpu, f.offset_s, f.duration_s) for f in faults.probation] == [
        ("xid-recur", "sim-node-07", 3, 6 * 3600.0, 0.0),
        ("slowdown-recur", None, None, 7200.0, 1200.0),
    ]
    assert faults.scheduler == (SchedulerFault("node-drain", "sim-node-03"),)


def test_what_a_worker_is_handed_parses_back_to_the_same_faults() -> None:
    faults = SimFaults.parse(SPECS)
    assert SimFaults.from_text(str(faults)) == faults
    assert SimFaults.from_text("") == SimFaults()


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("nic-slow@sim-node-01", "unknown kind 'nic-slow'"),
        ("gpu-xid@sim-node-03:5@6h", "gpu-xid takes one @NODE and no @OFFSET"),
        ("xid-recur@sim-node-07:3", "'sim-node-07:3' is not a duration"),
        ("node-drain@sim-node-03:2", "node-drain takes a node, not :INDEX"),
        ("node-drain", "node-drain needs a node"),
        ("gpu-xid@:3", "gpu-xid needs a node"),
        ("spine-slow@sim-node-01", "spine-slow takes no target"),
        ("xid-recur@sim-node-07:8@6h", "bad index '8' (0..7)"),
    ],
)
def test_a_bad_spec_names_itself_the_problem_the_form_and_every_kind(text: str, problem: str) -> None:
    with pytest.raises(UsageError) as caught:
        parse_spec(text)
    message = str(caught.value)
    assert message.startswith(f"bad simulated fault {text!r}: {problem}")
    assert "Form: KIND[@NODE[:INDEX]][@OFFSET[+DURATION]]" in message
    assert all(kind in message for kind in KINDS)


def test_the_option_parses_at_the_edge_and_says_where_a_bad_value_came_from() -> None:
    option = next(o for o in OPTIONS if o.dest == "sim_faults")
    parsed = _convert(option, ["nic-degraded@sim-node-07", " "], "--sim-fault")
    assert parsed == SimFaults((Fault("nic-degraded", "sim-node-07"),))
    with pytest.raises(pytest.UsageError, match=r"^--sim-fault \(from environment ACCEPTANCE_SIM_FAULTS\): bad "):
        _convert(option, ["gpu-xid"], "environment ACCEPTANCE_SIM_FAULTS")


def test_the_backend_says_whether_it_is_simulated_and_its_title() -> None:
    described = {name: clusters.backend_of(shipped(name)) for name in ("sim", "sim-ssh", "sim-slurm")}
    assert {n: (b.name, b.simulated) for n, b in described.items()} == {
        "sim": ("sim", True),
        "sim-ssh": ("ssh", True),
        "sim-slurm": ("slurm", True),
    }
    assert described["sim"].title == "Kubernetes (simulated)"
    real = clusters.backend_of(shipped("sim-ssh").__class__(**{**vars(shipped("sim-ssh")), "sim": None}))
    assert (real.simulated, real.title) == (False, "SSH (bare metal)")


@pytest.mark.parametrize(
    ("cluster", "spec", "expect"),
    [
        ("sim", "gpu-busy@sim-node-02", "shows through nvidia-smi on SSH hosts; use --cluster=sim-ssh"),
        ("sim", "node-drain@sim-node-02", "use --cluster=sim-slurm"),
        ("sim-ssh", "slurmd-down@sim-node-02", "use --cluster=sim-slurm"),
        ("sim-slurm", "gpu-busy@sim-node-02", "use --cluster=sim-ssh"),
    ],
)
def test_a_simulated_backend_refuses_a_fault_it_cannot_show_before_starting(
    cluster: str, spec: str, expect: str
) -> None:
    with pytest.raises(UsageError, match=f"--sim-fault {spec.split('@', maxsplit=1)[0]}.*cannot show") as caught:
        clusters.open(shipped(cluster), "ra-test", faults=clusters.parse_faults([spec]))
    assert expect in str(caught.value)


def test_a_real_cluster_takes_no_simulated_fault() -> None:
    real = shipped("sim-ssh").__class__(**{**vars(shipped("sim-ssh")), "sim": None})
    with pytest.raises(UsageError, match="--sim-fault needs a simulated cluster; sim-ssh uses backend ssh"):
        clusters.open(real, "ra-test", faults=clusters.parse_faults(["nic-degraded@sim-node-01"]))


def test_every_simulated_backend_shows_criterion_5s_faults() -> None:
    probation = SimFaults.parse(["xid-recur@sim-node-07:3@6h", "scrape-gap@1h"])
    for name in ("sim", "sim-ssh", "sim-slurm"):
        assert probation.refused(clusters.backend_of(shipped(name)).shows) == [], name


def test_the_acceptance_time_model_takes_parsed_faults_and_refuses_the_probations() -> None:
    faults = SimFaults.parse(["xid-recur@sim-node-07:3@6h", "nic-degraded@sim-node-07"])
    runner = SimRunner.from_scenario(load_scenario("healthy-16"), faults.acceptance)
    assert runner.faults.faults == (Fault("nic-degraded", "sim-node-07"),)
    with pytest.raises(UsageError, match="xid-recur is a fault of criterion 5's probation"):
        SimRunner.from_scenario(load_scenario("healthy-16"), faults.probation)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match=r"unknown node 'sim-node-17'.*nodes: 16 nodes sim-node-01 \.\.\. sim-node-16"):
        SimRunner.from_scenario(load_scenario("healthy-16"), SimFaults.parse(["gpu-xid@sim-node-17"]).acceptance)


def test_an_inventory_of_the_simulators_nodes_says_so() -> None:
    def node(labels: dict[str, str]) -> NodeInfo:
        return NodeInfo("n1", True, False, {}, 8, labels, "v1.30.2", "Ubuntu 22.04")

    assert ClusterInventory("v1", (node({"acceptance.sim/simulated": "true"}),)).simulated
    assert not ClusterInventory("v1", (node({}),)).simulated


@NEEDS_SSHD
def test_the_simulated_ssh_backend_keeps_criterion_5s_faults_for_its_probation(tmp_path: Path) -> None:
    """A probation fault on --cluster=sim-ssh reaches the probation; the hosts run the acceptance-time ones."""
    profile = load_profile("sim-ssh", sim_ssh_profile(tmp_path, nodes=2).parent)
    faults = clusters.parse_faults(["xid-recur@sim-node-02:3@6h", "gpu-busy@sim-node-02:1"])
    cluster = clusters.open(profile, "ra-faultspec", faults=faults)
    try:
        assert isinstance(cluster, clusters.base.SimulatesProbation)
        assert cluster.faults.probation == faults.probation  # type: ignore[attr-defined]
        apps = ssh_command(cluster.hosts, "sim-node-02", "nvidia-smi --query-compute-apps=pid --format=csv,noheader")  # type: ignore[attr-defined]
        assert "48213" in apps, "the acceptance-time fault reached the hosts"
        worker = clusters.open(profile, "ra-faultspec", attach=cluster.attach_info())
        assert worker.faults == faults  # type: ignore[attr-defined]
        worker.close()
    finally:
        cluster.close()
    assert isinstance(faults.probation[0], RecurrenceFault)
