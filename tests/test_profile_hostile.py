"""Hostile and broken profiles are refused before anything is built from them, naming file, line and path.

A billion-laughs document, a file too large or nested too deeply, NaN or endless timeouts and
margins, and node names that are not host names (a shell command, U+202E, NUL, 300 characters).
"""

from __future__ import annotations

import copy
import math
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from acceptance.cli import main
from acceptance.errors import ProfileError
from acceptance.profile import load_profile_file
from acceptance.yamlsrc import MAX_BYTES
from tests.test_profile import sim_data, write

LAUGHS = "\n".join(
    ['lol0: &lol0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    + [f"lol{i}: &lol{i} [{', '.join([f'*lol{i - 1}'] * 9)}]" for i in range(1, 10)]
)


def _profile_text(tmp_path: Path, **replace: str) -> Path:
    path = write(tmp_path, sim_data())
    text = path.read_text()
    for old, new in replace.items():
        assert old in text
        text = text.replace(old, new, 1)
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("description: ", "description: *lol9\nx: "),
        ("args:\n    - all_reduce_perf", "args:\n    - *lol9\n    - all_reduce_perf"),
        ("  env:\n", "  env:\n    BOMB: *lol9\n"),
        ("smoke:\n  command:\n", "smoke:\n  command:\n  - *lol9\n"),
    ],
    ids=["description", "nccl args", "kube env", "smoke command"],
)
def test_a_billion_laughs_is_refused_at_its_first_alias(tmp_path: Path, old: str, new: str) -> None:
    path = _profile_text(tmp_path, **{old: new})
    path.write_text(LAUGHS + "\n" + path.read_text())
    with pytest.raises(ProfileError, match=rf"{re.escape(str(path))}:\d+: expected valid YAML \(an alias \(\*lol"):
        load_profile_file(path)


def test_a_document_larger_than_the_bound_is_refused_unread(tmp_path: Path) -> None:
    path = _profile_text(tmp_path, **{"description: ": "description: " + "x" * MAX_BYTES + " "})
    with pytest.raises(ProfileError, match=r"at most 1024 KiB"):
        load_profile_file(path)


@pytest.mark.heavy
def test_nesting_too_deep_to_parse_is_an_error_not_a_traceback(tmp_path: Path) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text("cluster: x\ndescription: " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(ProfileError, match=r"nested at most a few hundred levels"):
        load_profile_file(path)


NUMBERS = [
    (["dcgm", "timeout"], math.nan, r"dcgm\.timeout: found nan, expected a finite number"),
    (["nccl", "timeout"], math.inf, r"nccl\.timeout: found inf, expected a finite number"),
    (["nccl", "timeout"], "99999999d", r"nccl\.timeout: found '99999999d', expected a duration of at most 365d"),
    (
        ["smoke", "timeout"],
        1e300,
        r"smoke\.timeout: found 1e\+300, expected one of the accepted forms \(a number of seconds, at most a year",
    ),
    (["margins", "busbw_tolerance"], math.nan, r"margins\.busbw_tolerance: found nan, expected a finite number"),
    (["margins", "loss_spike_z"], -math.inf, r"margins\.loss_spike_z: found -inf, expected a finite number"),
    (["sim", "time_scale"], math.nan, r"sim\.time_scale: found nan, expected a finite number"),
    (["sim", "seed"], 10**30, r"sim\.seed: found 1000000000000000000000000000000, expected a number ≤"),
    (["nodes", "links", "nvlink_gbps_per_gpu"], math.inf, r"nodes\.links\.nvlink_gbps_per_gpu: found inf, expected"),
    (["nodes", "links", "nic_gbps"], 0, r"nodes\.links\.nic_gbps: found 0, expected"),
]


@pytest.mark.parametrize(("where", "value", "message"), NUMBERS, ids=[f"{w[-1]}={v}" for w, v, _ in NUMBERS])
def test_numbers_must_be_finite_and_in_range(tmp_path: Path, where: list[str], value: Any, message: str) -> None:
    data = copy.deepcopy(sim_data())
    target = data
    for key in where[:-1]:
        target = target[key]
    target[where[-1]] = value
    path = write(tmp_path, data)
    with pytest.raises(ProfileError, match=rf"{re.escape(str(path))}:\d+: {message}"):
        load_profile_file(path)


NAMES = [
    "; rm -rf /",
    "sim-node-\u202e16",
    "sim\x00node",
    "a" * 300,
    "sim-node-16\n",
    "-sim",
    "sim_node",
    "Sim-Node-16",
]


@pytest.mark.parametrize(
    "name", NAMES, ids=["shell", "rlo", "nul", "300 chars", "line end", "dash", "underscore", "upper"]
)
def test_node_names_must_be_kubernetes_node_names(tmp_path: Path, name: str) -> None:
    data = sim_data()
    data["nodes"]["names"][15] = name
    path = write(tmp_path, data)
    with pytest.raises(
        ProfileError, match=r"nodes\.names\[15\]: found .*, expected (a host name|a Kubernetes|text without)"
    ):
        load_profile_file(path)


def test_host_names_with_dots_and_upper_case_are_fine_over_ssh(tmp_path: Path) -> None:
    data = sim_data()
    names = ["gpu-07.cluster.local", "GPU-08"]
    data["nodes"]["names"] = names
    data["backend"] = "ssh"
    del data["sim"]
    data["ssh"] = {"user": "ops", "hosts": {n: f"10.0.0.{i}" for i, n in enumerate(names, 1)}}
    assert load_profile_file(write(tmp_path, data)).nodes == tuple(names)


def test_profile_check_prints_the_problem_without_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = sim_data()
    data["dcgm"]["timeout"] = math.nan
    folder = tmp_path / "baselines"
    write(tmp_path, data)
    assert main(["profile", "check", "c1", "--baselines-dir", str(folder)]) == 2
    err = capsys.readouterr().err
    assert "dcgm.timeout: found nan, expected a finite number" in err
    assert "Traceback" not in err


def test_yaml_anchors_without_aliases_still_load(tmp_path: Path) -> None:
    path = _profile_text(tmp_path, **{"kube:\n": "kube: &k\n"})
    assert yaml.safe_load(path.read_text())["kube"]
    assert load_profile_file(path).backend == "sim"


def test_the_node_links_are_read_and_a_nic_count_needs_its_rate(tmp_path: Path) -> None:
    """`nodes.links` (issue 23): what bounds a plausible busbw; NICs without a line rate say nothing."""
    from acceptance.links import NodeLinks

    assert load_profile_file(write(tmp_path, sim_data())).links == NodeLinks(3600.0, 8, 400.0)
    data = copy.deepcopy(sim_data())
    del data["nodes"]["links"]["nic_gbps"]
    path = write(tmp_path, data)
    with pytest.raises(ProfileError, match=rf"{re.escape(str(path))}:\d+: nodes\.links"):
        load_profile_file(path)
    del data["nodes"]["links"]
    assert load_profile_file(write(tmp_path, data)).links is None
