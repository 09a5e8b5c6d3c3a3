"""The cluster profile: the shipped one loads; every kind of mistake is named precisely."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from acceptance.errors import ProfileError, UsageError
from acceptance.profile import load_profile, load_profile_file
from tests.suite_run import read_yaml

ROOT = Path(__file__).resolve().parents[1]
SIM_PROFILE = ROOT / "baselines" / "sim" / "cluster.yaml"


def sim_data() -> dict[str, Any]:
    data: dict[str, Any] = read_yaml(SIM_PROFILE)
    return data


def write(tmp_path: Path, data: dict[str, Any]) -> Path:
    folder = tmp_path / "baselines" / "c1"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "cluster.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_shipped_sim_profile_loads() -> None:
    profile = load_profile("sim", ROOT / "baselines")
    assert profile.backend == "sim"
    assert len(profile.nodes) == 16
    assert profile.nodes[6] == "sim-node-07"
    assert profile.gpus_per_node == 8
    assert profile.test_names[0] == "all_reduce_perf"
    assert profile.margins.busbw_tolerance == 0.05
    assert profile.margins.busbw_min_size == 1 << 20
    assert profile.margins.probation_s == 86400
    assert profile.sim is not None
    assert profile.sim.scenario == Path("healthy-16"), "the shipped profile names one of the simulator's scenarios"


def test_missing_profile_lists_known_ones(tmp_path: Path) -> None:
    write(tmp_path, sim_data())
    with pytest.raises(ProfileError, match=r"no profile for cluster 'nope'.*profiles in .*: c1"):
        load_profile("nope", tmp_path / "baselines")


Mutation = Callable[[dict[str, Any]], None]


def _set(path: list[Any], value: Any) -> Mutation:
    def mutate(data: dict[str, Any]) -> None:
        target = data
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return mutate


def _delete(path: list[Any]) -> Mutation:
    def mutate(data: dict[str, Any]) -> None:
        target = data
        for key in path[:-1]:
            target = target[key]
        del target[path[-1]]

    return mutate


def _duplicate_node(data: dict[str, Any]) -> None:
    data["nodes"]["names"][3] = data["nodes"]["names"][2]


BAD: list[tuple[str, Mutation, str, str]] = [
    ("missing nodes", _delete(["nodes"]), r"\(top level\)", "the field 'nodes'"),
    ("missing gpus_per_node", _delete(["nodes", "gpus_per_node"]), r"nodes", "the field 'gpus_per_node'"),
    ("wrong type", _set(["nodes", "gpus_per_node"], "eight"), r"nodes\.gpus_per_node", "of type integer"),
    ("unknown backend", _set(["backend"], "nomad"), r"backend", "one of kube, ssh, slurm, sim"),
    ("unknown field", _set(["nccl", "testz"], []), r"nccl\.testz", "one of env, tests, timeout"),
    ("duplicate node", _duplicate_node, r"nodes\.names\[3\]", "each node named once"),
    ("negative margin", _set(["margins", "busbw_tolerance"], -0.05), r"margins\.busbw_tolerance", "≥ 0"),
    ("margin over 50%", _set(["margins", "busbw_tolerance"], 0.6), r"margins\.busbw_tolerance", "≤ 0.5"),
    ("bad size", _set(["margins", "busbw_min_size"], "1 lots"), r"margins\.busbw_min_size", "1MiB or 16G"),
    ("bad duration", _set(["margins", "probation"], "a day"), r"margins\.probation", "90s, 15m, 24h"),
    ("dcgm level 5", _set(["dcgm", "level"], 5), r"dcgm\.level", "≤ 4"),
    ("backend without section", _delete(["sim"]), r"\(top level\)", "a 'sim' section"),
    (
        "nccl arg typo",
        _set(["nccl", "tests", 1, "args"], ["all_gather_perf", "-b", "8", "--maxbytez", "8G"]),
        r"nccl\.tests\[1\]\.args",
        "maxbytez",
    ),
]


@pytest.mark.parametrize(("mutate", "path", "expected"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_profiles_name_file_line_path_and_expectation(
    tmp_path: Path, mutate: Mutation, path: str, expected: str
) -> None:
    data = copy.deepcopy(sim_data())
    mutate(data)
    file = write(tmp_path, data)
    with pytest.raises(ProfileError) as info:
        load_profile_file(file)
    message = str(info.value)
    assert str(file) in message
    assert re.search(rf"{re.escape(str(file))}:\d+: ", message), message

    assert re.search(path, message), message
    assert expected in message, message


def test_error_line_points_at_the_offending_value(tmp_path: Path) -> None:
    data = sim_data()
    data["nodes"]["gpus_per_node"] = "eight"
    file = write(tmp_path, data)
    lines = file.read_text().splitlines()
    line = next(i for i, text in enumerate(lines, 1) if "gpus_per_node: eight" in text)
    with pytest.raises(ProfileError, match=rf"{file}:{line}: nodes\.gpus_per_node"):
        load_profile_file(file)


def test_broken_yaml_names_the_line(tmp_path: Path) -> None:
    file = tmp_path / "cluster.yaml"
    file.write_text("cluster: x\nbackend: sim\nnodes: [a, b\ndcgm: {level: 1}\n")
    with pytest.raises(ProfileError, match=rf"{file}:4: expected valid YAML"):
        load_profile_file(file)


def test_returned_node_outside_the_node_set_is_a_usage_error() -> None:
    profile = load_profile("sim", ROOT / "baselines")
    profile.check_returned_nodes(["sim-node-07"])
    with pytest.raises(UsageError, match=r"gpu-99 is not in the node set .*sim-node-01"):
        profile.check_returned_nodes(["sim-node-07", "gpu-99"])


def test_ssh_backend_needs_an_address_for_every_node(tmp_path: Path) -> None:
    data = sim_data()
    data["backend"] = "ssh"
    del data["sim"]
    data["ssh"] = {"user": "ops", "hosts": {"sim-node-01": "10.0.0.1"}}
    file = write(tmp_path, data)
    with pytest.raises(ProfileError, match=r"ssh\.hosts: found no address for sim-node-02"):
        load_profile_file(file)
