"""Simulated `dcgmi diag`: DCGM 4.x JSON and text in the real layout, level test sets, faults per GPU."""

from __future__ import annotations

import json
import re

import pytest

from acceptance.sim.model.dcgmrender import jsoncpp
from acceptance.tools import dcgm
from tests.shared import CORPUS, needs_shared
from tests.test_sim_support import make_runner

R3 = ["memory", "diagnostic", "nvbandwidth", "pcie", "memory_bandwidth", "targeted_stress", "targeted_power"]


def _diag(faults: list[str], node: str, level: int, as_json: bool = True) -> tuple[str, int, float]:
    argv = ["dcgmi", "diag", "-r", str(level)] + (["-j"] if as_json else [])
    result = make_runner(faults).run(argv, {}, node, [])
    return result.stdout, result.exit_code, result.duration_s


@pytest.mark.parametrize(
    ("level", "tests", "low", "high"),
    [
        (1, ["software"], 10, 60),
        (2, ["software", "memory", "pcie"], 90, 150),
        (3, ["software", *R3], 800, 1000),
        (4, ["software", *R3[:2], R3[2], "memtest", *R3[3:], "pulse_test"], 2500, 3000),
    ],
)
def test_levels_run_the_dcgm4_test_sets_for_realistic_durations(
    level: int, tests: list[str], low: float, high: float
) -> None:
    text, code, seconds = _diag([], "sim-node-01", level)
    report = dcgm.parse(text)
    assert code == 0
    assert report.status == "pass"
    assert sorted(t.name for t in report.tests) == sorted(tests)
    assert all(set(t.gpus) == set(range(8)) and set(t.gpus.values()) == {"pass"} for t in report.tests)
    assert low < seconds < high
    assert report.dcgm_version == "4.2.3"
    assert report.driver_version == "570.133.20"


@needs_shared
def test_json_is_jsoncpp_styled_like_the_real_4x_document() -> None:
    text, _, _ = _diag([], "sim-node-01", 1)
    real = (CORPUS / "dcgm" / "dcgm-4.2.3-r1-json-gb10-software-fail-persistence-mode.json").read_text()
    assert text.splitlines()[:12] == real.splitlines()[:12]
    doc = json.loads(text)
    assert list(doc) == ["DCGM Diagnostic", "entity_groups", "metadata"]
    assert doc["metadata"]["simulated"] is True
    assert jsoncpp(doc) == text
    assert jsoncpp({"a": [1, 2], "b": []}) == '{\n\t"a" : [ 1, 2 ],\n\t"b" : []\n}\n'


@needs_shared
def test_text_table_has_the_real_geometry() -> None:
    text, _, _ = _diag(["ecc-dbe@sim-node-02:6"], "sim-node-02", 3, as_json=False)
    lines = text.splitlines()
    real = (CORPUS / "dcgm" / "dcgm-4.4.2-r2-text-single-gpu-a10g-pass.txt").read_text().splitlines()
    assert lines[0] == "Successfully ran diagnostic for group."
    assert lines[1:5] == real[2:6]
    assert all(len(line) == 78 for line in lines[1:])
    assert "|-----  Deployment  --------+------------------------------------------------|" in lines
    assert "+-----  Stress  ------------+------------------------------------------------+" in lines
    assert "|                           | GPU6: Fail                                     |" in lines
    assert dcgm.parse(text).status == "fail"


@pytest.mark.parametrize("as_json", [True, False])
def test_xid_fails_every_test_on_that_gpu_only(as_json: bool) -> None:
    text, code, _ = _diag(["gpu-xid@sim-node-03:5"], "sim-node-03", 3, as_json)
    report = dcgm.parse(text)
    assert code == 205
    assert report.status == "fail"
    assert {g: s for g, s in report.gpus.items() if s != "pass"} == {5: "fail"}
    assert all(t.gpus[5] == "fail" for t in report.tests)
    other, other_code, _ = _diag(["gpu-xid@sim-node-03:5"], "sim-node-04", 3, as_json)
    assert other_code == 0
    assert dcgm.parse(other).status == "pass"


def test_ecc_dbe_fails_memory_tests_and_software() -> None:
    report = dcgm.parse(_diag(["ecc-dbe@sim-node-11:6"], "sim-node-11", 4)[0])
    failing = {t.name for t in report.tests if t.status == "fail"}
    assert failing == {"software", "memory", "memtest"}
    assert all(t.gpus[6] == "fail" for t in report.tests if t.name in failing)


def test_throttle_fails_targeted_power_and_warns_targeted_stress_at_r3_not_r2() -> None:
    text, code, _ = _diag(["gpu-throttle@sim-node-05:2"], "sim-node-05", 3, as_json=False)
    report = dcgm.parse(text)
    assert code == 226
    by_name = {t.name: t for t in report.tests}
    assert by_name["targeted_power"].status == "fail"
    assert by_name["targeted_power"].gpus[2] == "fail"
    assert by_name["targeted_stress"].status == "warn"
    assert {n for n, t in by_name.items() if t.status != "pass"} == {"targeted_power", "targeted_stress"}
    assert _diag(["gpu-throttle@sim-node-05:2"], "sim-node-05", 2)[1] == 0


def test_serials_are_stable_per_seed() -> None:
    first = json.loads(_diag([], "sim-node-01", 1)[0])["entity_groups"][0]["entities"]
    again = json.loads(make_runner(seed=1).run(["dcgmi", "diag", "-r", "1", "-j"], {}, "sim-node-01", []).stdout)
    other = json.loads(make_runner(seed=2).run(["dcgmi", "diag", "-r", "1", "-j"], {}, "sim-node-01", []).stdout)
    assert first == again["entity_groups"][0]["entities"]
    assert first != other["entity_groups"][0]["entities"]
    assert {e["device_id"] for e in first} == {"2335"}


@pytest.mark.parametrize("level", [1, 2, 3, 4])
def test_fast_json_writer_equals_the_generic_jsoncpp_emulation(level: int) -> None:
    faults = ["gpu-throttle@sim-node-01:2", "ecc-dbe@sim-node-01:4", "gpu-xid@sim-node-01:7"]
    text = make_runner(faults).run(["dcgmi", "diag", "-r", str(level), "-j"], {}, "sim-node-01", []).stdout
    assert jsoncpp(json.loads(text)) == text


def test_bad_level_is_an_error_exit() -> None:
    result = make_runner().run(["dcgmi", "diag", "-r", "7"], {}, "sim-node-01", [])
    assert result.exit_code != 0
    assert result.stdout.startswith("Error:")


def test_gpu_list_restricts_the_run_to_those_gpus() -> None:
    runner = make_runner(["gpu-xid@sim-node-01:5"])
    only = runner.run(["dcgmi", "diag", "-r", "2", "-j", "-i", "0,1"], {}, "sim-node-01", [])
    report = dcgm.parse(only.stdout)
    assert only.exit_code == 0
    assert set(report.gpus) == {0, 1}
    bad = runner.run(["dcgmi", "diag", "-r", "2", "-i", "5"], {}, "sim-node-01", [])
    assert bad.exit_code == 205
    assert "GPU5: Fail" in bad.stdout
    assert runner.run(["dcgmi", "diag", "-r", "2", "-i", "9"], {}, "sim-node-01", []).exit_code == 255


def test_text_prints_only_the_categories_the_level_ran() -> None:
    """Like the real 4.4.2 r2 table: Deployment, Hardware, Integration, and no empty Stress section."""
    text, _, _ = _diag([], "sim-node-01", 2, as_json=False)
    separators = re.findall(r"^[|+]-----  (\w+)  -", text, re.MULTILINE)
    assert separators == ["Metadata", "Deployment", "Hardware", "Integration"]
