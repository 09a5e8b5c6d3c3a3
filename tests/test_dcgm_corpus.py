"""Every real `dcgmi diag` sample of the corpus and every project fixture, against per-file expectations."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from acceptance.cli import main
from acceptance.cmd.parse_dcgm import read_dcgm
from acceptance.errors import ParseError
from acceptance.tools.dcgm import DcgmReport
from tests.shared import CORPUS, FIXTURES, corpus_files, needs_shared


@dataclass(frozen=True)
class Expect:
    status: str | None  # None: the file is not a dcgmi diag document (ParseError, CLI exit 2)
    exit: int
    version: str | None = None
    driver: str | None = None
    tests: dict[str, str] = field(default_factory=dict)  # every test, in output order
    gpus: dict[int, str] = field(default_factory=dict)
    failing: dict[str, dict[int, str]] = field(default_factory=dict)  # test -> non-pass GPU statuses
    message: tuple[str, str] | None = None  # (test, substring of one of its messages)
    errors: int = 0


SOFTWARE_ONLY_PASS = {"software": "pass"}
R3_4X = [
    "software",
    "memory",
    "diagnostic",
    "nvbandwidth",
    "pcie",
    "memory_bandwidth",
    "targeted_stress",
    "targeted_power",
]
R3_3X = ["software", "pcie", "memory", "diagnostic", "targeted_stress", "targeted_power", "memory_bandwidth"]


def _all(names: list[str], status: str = "pass", **over: str) -> dict[str, str]:
    return {n: over.get(n, status) for n in names}


def _skips(names: list[str], n: int) -> dict[str, dict[int, str]]:
    return {name: {g: "skip" for g in range(n)} for name in names}


def _gpus(n: int, status: str = "pass", **over: str) -> dict[int, str]:
    return {g: over.get(f"g{g}", status) for g in range(n)}


CORPUS_EXPECT: dict[str, Expect] = {
    "dcgm-3.0-r2-json-1gpu-gpu_ids-pass-virtualclient.json": Expect(
        "pass",
        0,
        tests=_all(["software", "pcie", "memory"]),
        gpus={0: "pass"},
        message=("memory", "Allocated 15206918958 bytes"),
    ),
    "dcgm-3.0-r3-json-1gpu-gpu_ids-pass-virtualclient.json": Expect(
        "pass",
        0,
        tests=_all(
            [
                "software",
                "pcie",
                "memory",
                "diagnostic",
                "eud",
                "targeted_stress",
                "targeted_power",
                "memory_bandwidth",
            ],
            eud="skip",
        ),
        gpus={0: "pass"},
        failing={"eud": {0: "skip"}},
        message=("targeted_power", "power average:\t70 W"),
    ),
    "dcgm-3.0-r4-text-rtx2060-persistence-fail-memtest-pass-no-metadata.txt": Expect(
        "fail",
        1,
        tests=_all(
            [
                "software",
                "pcie",
                "memory",
                "pulse_test",
                "targeted_stress",
                "targeted_power",
                "memory_bandwidth",
                "memtest",
            ],
            "skip",
            software="fail",
            memtest="pass",
        ),
        message=("software", "Persistence Mode: Persistence mode for GPU 0 is currently disabled. The DCGM"),
    ),
    "dcgm-3.3.0-r2-text-8gpu-pod-pcie-fail-unsupported-driver-empty-stress-section.txt": Expect(
        "fail",
        1,
        "3.3.0",
        "530.30.02",
        tests={"software": "pass", "pcie": "fail", "memory": "skip"},
        gpus=_gpus(8, "fail"),
        failing={"pcie": _gpus(8, "fail"), "memory": _gpus(8, "skip")},
        message=("pcie", "cudaDeviceGetByPCIBusId Check DCGM and system logs for errors. Reset GPU."),
    ),
    "dcgm-3.3.9-r3-text-2xrtxpro6000-srun-doubled-output-all-skip.txt": Expect(
        "skip",
        1,
        "3.3.9",
        "570.172.08",
        tests=_all(
            ["software", "pcie", "memory", "targeted_stress", "targeted_power", "memory_bandwidth", "eud"],
            "skip",
            software="pass",
        ),
        gpus=_gpus(2, "skip"),
        failing=_skips(["pcie", "memory", "targeted_stress", "targeted_power", "memory_bandwidth", "eud"], 2),
    ),
    "dcgm-3.x-json-fragment-pcie-info-single-string.txt": Expect(None, 2),
    "dcgm-4.2.3-r1-json-gb10-software-fail-persistence-mode.json": Expect(
        "fail",
        1,
        "4.2.3",
        "580.82.09",
        tests={"software": "fail"},
        gpus={0: "fail"},
        failing={"software": {0: "fail"}},
        message=("software", "Persistence Mode: Persistence mode for GPU 0"),
    ),
    "dcgm-4.4.1-r2-text-v100-pcie-fail-internal-error-elided.txt": Expect(
        "fail",
        1,
        "4.4.1",
        "580.65.06",
        tests={"pcie": "fail"},
        message=("pcie", "exited with non-zero status 1' Check DCGM"),
        errors=1,
    ),
    "dcgm-4.4.2-r2-text-single-gpu-a10g-pass.txt": Expect(
        "pass",
        0,
        "4.4.2",
        "580.105.08",
        tests=_all(["software", "memory", "pcie"]),
        gpus={0: "pass"},
    ),
    "dcgm-4.4.2-r3-text-gb10-k8s-pod-all-skip.txt": Expect(
        "skip",
        1,
        "4.4.2",
        "580.95.05",
        tests=_all(R3_4X, "skip", software="pass"),
        gpus={0: "pass"},
        failing=_skips(R3_4X[1:], 1),
    ),
    "dcgm-4.x-r3-json-fragment-diagnostic-8gpu-info-truncated.txt": Expect(None, 2),
    "dcgm-text-deployment-row-remap-pending-error-fragment.txt": Expect(
        "fail",
        1,
        tests={"software": "fail"},
        message=("software", "GPU 3 has uncorrectable memory errors and row remappings are pending"),
        errors=2,
    ),
    "dcgm-text-r2-gpu-memory-fail-thermal-violation-fragment.txt": Expect(
        "fail",
        1,
        tests={"memory": "fail"},
        gpus=_gpus(8, g0="fail"),
        failing={"memory": {0: "fail"}},
        message=(
            "memory",
            "Thermal violations totaling 13.3 seconds started at 9.7 seconds into the test for GPU 0",
        ),
        errors=1,
    ),
}

FIXTURE_EXPECT: dict[str, Expect] = {
    "dcgm-2.4-r2-json-2gpu-gpu-memory-fail-warnings-string.json": Expect(
        "fail",
        1,
        tests={"software": "pass", "pcie": "pass", "memory": "fail"},
        gpus={0: "fail", 1: "pass"},
        failing={"memory": {0: "fail"}},
        message=("memory", "all CUDA-capable devices are busy"),
    ),
    "dcgm-3.2.6-r3-json-8gpu-h100-pass-gpu_ids-sm-stress.json": Expect(
        "pass",
        0,
        "3.2.6",
        "535.129.03",
        tests=_all(
            [
                "software",
                "pcie",
                "memory",
                "diagnostic",
                "sm_stress",
                "targeted_stress",
                "targeted_power",
                "memory_bandwidth",
            ]
        ),
        gpus=_gpus(8),
    ),
    "dcgm-3.3.9-r3-json-4gpu-ecc-dbe-row-remap-failure-gpu2.json": Expect(
        "fail",
        1,
        "3.3.9",
        "550.90.07",
        tests=_all(R3_3X, software="fail", memory="fail"),
        gpus=_gpus(4, g2="fail"),
        failing={
            "software": {2: "fail"},
            "memory": {2: "fail"},
            **_skips(["diagnostic", "targeted_stress", "targeted_power", "memory_bandwidth"], 0),
            **{n: {2: "skip"} for n in ["diagnostic", "targeted_stress", "targeted_power", "memory_bandwidth"]},
        },
        message=("software", "Page Retirement/Row Remap: GPU 2 had uncorrectable memory errors"),
    ),
    "dcgm-3.3.9-r3-text-8gpu-pass.txt": Expect("pass", 0, "3.3.9", "550.90.07", tests=_all(R3_3X), gpus=_gpus(8)),
    # a complete r2 table, then `dcgmi stats` boxes of the same job log: still complete and passing
    "dcgm-4.4.1-r2-text-2gpu-pass-then-dcgmi-stats-job-table.txt": Expect(
        "pass", 0, "4.4.1", "570.133.20", tests=_all(["software", "memory", "pcie"]), gpus=_gpus(2)
    ),
    "dcgm-3.3.9-r3-text-8gpu-pcie-replay-fail-gpu4.txt": Expect(
        "fail",
        1,
        "3.3.9",
        tests=_all(R3_3X, pcie="fail"),
        gpus=_gpus(8, g4="fail"),
        failing={"pcie": {4: "fail"}},
        message=("pcie", "Detected more than 8 PCIe replays per minute for GPU 4 : 12 Reconnect PCIe card."),
    ),
    "dcgm-3.3.9-r3-text-unable-to-complete-group.txt": Expect("error", 1, errors=1),
    "dcgm-4.4.1-json-runtime-error.json": Expect("error", 1, "4.4.1", errors=1),
    "dcgm-4.4.1-r1-text-8gpu-row-remap-failure-software-fail-gpu3.txt": Expect(
        "fail",
        1,
        "4.4.1",
        "570.172.08",
        tests={"software": "fail"},
        gpus=_gpus(8, g3="fail"),
        failing={"software": {3: "fail"}},
        message=("software", "row remapping failed. Drain the GPU"),
    ),
    "dcgm-4.4.1-r3-json-7of8-gpus-gpu7-absent.json": Expect("pass", 0, "4.4.1", tests=_all(R3_4X), gpus=_gpus(7)),
    "dcgm-4.4.1-r3-json-8gpu-h200-pass.json": Expect(
        "pass", 0, "4.4.1", "570.172.08", tests=_all(R3_4X), gpus=_gpus(8)
    ),
    "dcgm-4.4.1-r3-json-8gpu-nvlink-down-pcie-fail-gpu1.json": Expect(
        "fail",
        1,
        "4.4.1",
        tests=_all(R3_4X, pcie="fail"),
        gpus=_gpus(8, g1="fail"),
        failing={"pcie": {1: "fail"}},
        message=("pcie", "NvLink link 4 is currently down"),
    ),
    "dcgm-4.4.1-r3-json-8gpu-pass-with-reset-severity-warning-gpu2.json": Expect(
        "pass",
        0,
        "4.4.1",
        tests=_all(R3_4X),
        gpus=_gpus(8),
        message=("targeted_power", "pending row remappings"),
    ),
    "dcgm-4.4.1-r3-json-8gpu-xid79-diagnostic-fail-gpu5.json": Expect(
        "fail",
        1,
        "4.4.1",
        tests=_all(R3_4X, diagnostic="fail"),
        gpus=_gpus(8, g5="fail"),
        failing={"diagnostic": {5: "fail"}},
        message=("diagnostic", "Detected XID 79 for GPU 5"),
    ),
    "dcgm-4.4.1-r3-json-iterations-2-second-fails-ecc-dbe-gpu1.json": Expect(
        "fail",
        1,
        "4.4.1",
        tests=_all(R3_4X, memory="fail"),
        gpus=_gpus(2, g1="fail"),
        failing={"memory": {1: "fail"}},
        message=("memory", "double-bit ECC error(s) in GPU 1"),
    ),
    "dcgm-4.4.1-r3-text-8gpu-thermal-warn-targeted-power-gpu6.txt": Expect(
        "pass",
        0,
        "4.4.1",
        tests=_all(R3_4X, targeted_power="warn"),
        gpus=_gpus(8),
        failing={"targeted_power": {6: "warn"}},
        message=(
            "targeted_power",
            "thermal violations totaling 4.1 seconds for GPU 6 Verify that the cooling",
        ),
    ),
    "dcgm-4.4.1-r3-text-8gpu-xid79-diagnostic-fail-gpu5.txt": Expect(
        "fail",
        1,
        "4.4.1",
        tests=_all(R3_4X, diagnostic="fail"),
        gpus=_gpus(8, g5="fail"),
        failing={"diagnostic": {5: "fail"}},
        message=("diagnostic", "Detected XID 79 for GPU 5"),
    ),
    "dcgm-4.4.1-r3-text-unable-to-complete-timeout.txt": Expect("error", 1, errors=2),
    "dcgm-4.4.1-r4-json-1gpu-eud-fail.json": Expect(
        "fail",
        1,
        "4.4.1",
        tests=_all(
            [
                "software",
                "memory",
                "diagnostic",
                "nvbandwidth",
                "pulse_test",
                "eud",
                "pcie",
                "memory_bandwidth",
                "targeted_stress",
                "targeted_power",
                "memtest",
            ],
            eud="fail",
        ),
        gpus={0: "fail"},
        failing={"eud": {0: "fail"}},
        message=("eud", "gpumem_memtest reported miscompares"),
    ),
    "dcgm-4.5.0-r3-json-8gpu-overall-fail-every-gpu-row-pass.json": Expect(
        "fail",
        1,
        "4.5.0",
        tests=_all(R3_4X, nvbandwidth="fail"),
        gpus=_gpus(8),
        message=("nvbandwidth", "MCUTIL for GPU 0 is greater than 10%"),
    ),
}


def _check(path: Path, expect: Expect) -> None:
    if expect.status is None:
        with pytest.raises(ParseError) as info:
            read_dcgm(path)
        assert str(path) in str(info.value)
        return
    report = read_dcgm(path)
    assert report.status == expect.status
    assert report.dcgm_version == expect.version
    if expect.driver:
        assert report.driver_version == expect.driver
    assert {t.name: t.status for t in report.tests} == expect.tests
    assert [t.name for t in report.tests] == list(expect.tests)
    assert dict(report.gpus) == expect.gpus
    for test in report.tests:
        non_pass = {g: s for g, s in test.gpus.items() if s != "pass"}
        assert non_pass == expect.failing.get(test.name, {}), test.name
    if expect.message:
        name, text = expect.message
        found = report.test(name)
        assert found is not None
        assert any(text in m.text for m in found.messages), [m.text for m in found.messages]
    assert len(report.errors) == expect.errors
    assert DcgmReport.from_json(json.loads(json.dumps(report.to_json()))) == report


def _cli(path: Path) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["parse", "dcgm", str(path)])
    return code, out.getvalue()


@needs_shared
@pytest.mark.parametrize("name", sorted(CORPUS_EXPECT))
def test_corpus_file(name: str) -> None:
    """Each real sample parses to what a careful reader of it expects."""
    path = CORPUS / "dcgm" / name
    _check(path, CORPUS_EXPECT[name])
    code, out = _cli(path)
    assert code == CORPUS_EXPECT[name].exit
    if code != 2:
        assert json.loads(out)["kind"] == "dcgm-diag"


@needs_shared
def test_every_corpus_file_has_expectations() -> None:
    """A sample added to the corpus without expectations is a failure, not a silent skip."""
    assert {p.name for p in corpus_files("dcgm")} == set(CORPUS_EXPECT)


@pytest.mark.parametrize("name", sorted(FIXTURE_EXPECT))
def test_fixture_file(name: str) -> None:
    """Each project fixture (real layouts, failure kinds the corpus lacks) parses as intended."""
    path = FIXTURES / "dcgm" / name
    _check(path, FIXTURE_EXPECT[name])
    assert _cli(path)[0] == FIXTURE_EXPECT[name].exit


def test_every_fixture_has_expectations() -> None:
    outputs = {p.name for p in (FIXTURES / "dcgm").iterdir() if p.suffix in (".json", ".txt")}
    assert outputs == set(FIXTURE_EXPECT)


def test_cli_json_has_the_design_shape() -> None:
    """`acceptance parse dcgm` prints DESIGN §4.3's keys (plus `devices`), test entries with theirs."""
    code, out = _cli(FIXTURES / "dcgm" / "dcgm-4.4.1-r3-json-8gpu-xid79-diagnostic-fail-gpu5.json")
    doc = json.loads(out)
    assert code == 1
    assert list(doc) == [
        "kind",
        "format",
        "dcgm_version",
        "driver_version",
        "status",
        "skipped",
        "tests",
        "gpus",
        "errors",
        "devices",
        "summary_disagrees",
    ]
    assert list(doc["tests"][0]) == ["name", "category", "status", "gpus", "messages", "entities", "summary"]
    assert doc["summary_disagrees"] == []
    assert doc["gpus"]["5"] == "fail"
    assert doc["devices"]["5"]["serial"] == "1654020000005"
    message = next(t for t in doc["tests"] if t["name"] == "diagnostic")["messages"][0]
    assert (message["error_id"], message["error_severity"], message["gpu"]) == (101, 2, 5)


def test_cli_exit_code_option_overrides_a_clean_output(tmp_path: Path) -> None:
    """A clean-looking output with dcgmi exit 226 is not a pass."""
    path = FIXTURES / "dcgm" / "dcgm-4.4.1-r3-json-8gpu-h200-pass.json"
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["parse", "dcgm", "--exit-code", "226", str(path)]) == 1
        assert main(["parse", "dcgm", "--exit-code", "0", str(path)]) == 0


BOM_FILES = [("corpus", n) for n in sorted(CORPUS_EXPECT)] + [("fixtures", n) for n in sorted(FIXTURE_EXPECT)]


@pytest.mark.parametrize(("where", "name"), BOM_FILES)
def test_a_utf8_bom_at_the_start_is_valid_output(where: str, name: str, tmp_path: Path) -> None:
    """A capture saved with a UTF-8 byte order mark (read as utf-8, so it shows as U+FEFF) parses as the plain one."""
    path = (CORPUS if where == "corpus" else FIXTURES) / "dcgm" / name
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    bom = tmp_path / name
    bom.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    expect = (CORPUS_EXPECT if where == "corpus" else FIXTURE_EXPECT)[name]
    if expect.status is None:
        with pytest.raises(ParseError):
            read_dcgm(bom)
        return
    assert read_dcgm(bom) == read_dcgm(path)
    assert _cli(bom) == _cli(path)
