"""nvidia-smi's CSV queries and versions: parsed by equality, from the simulator's output and real ``-q`` logs."""

from __future__ import annotations

from pathlib import Path

import pytest

from acceptance.errors import ParseError
from acceptance.sim.model import SimRunner, load_scenario
from acceptance.sim.ssh.nvsmi import nvidia_smi
from acceptance.tools import nvsmi
from tests.shared import SHARED, corpus_files, needs_shared

# The shape of nvidia-smi 570's CSV (hand-made in the real format: no GPU at hand to record one).
GPUS = (
    "0, GPU-5d3a0c8e-9d6f-2c11-83a2-3d0f1c9a7e10, NVIDIA H200, 00000000:18:00.0, 570.133.20, 143771 MiB\n"
    "1, GPU-7e2b1f44-0a31-66c9-1f2e-a80c4b7d9e21, NVIDIA H200, 00000000:2A:00.0, 570.133.20, [N/A]\n"
)


def test_gpu_rows_by_the_fields_the_query_asked_for() -> None:
    assert nvsmi.query_gpus_argv() == [
        "nvidia-smi", "--query-gpu=index,uuid,name,pci.bus_id,driver_version,memory.total", "--format=csv,noheader"
    ]  # fmt: skip
    assert nvsmi.parse_gpus(GPUS) == nvsmi.GpuList(
        (
            nvsmi.GpuRow(0, "GPU-5d3a0c8e-9d6f-2c11-83a2-3d0f1c9a7e10", "NVIDIA H200", "00000000:18:00.0",
                         "570.133.20", 143771),
            nvsmi.GpuRow(1, "GPU-7e2b1f44-0a31-66c9-1f2e-a80c4b7d9e21", "NVIDIA H200", "00000000:2A:00.0",
                         "570.133.20", None),
        ),
        (),
    )  # fmt: skip


def test_lines_that_are_not_gpus_are_kept_as_problems() -> None:
    text = GPUS + "Unable to determine the device handle for GPU0000:9B:00.0: Unknown Error\n"
    found = nvsmi.parse_gpus(text)
    assert len(found.gpus) == 2
    assert found.problems == ("Unable to determine the device handle for GPU0000:9B:00.0: Unknown Error",)
    failed = nvsmi.parse_gpus(
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the "
        "latest NVIDIA driver is installed and running.\n"
    )
    assert failed.gpus == ()
    assert failed.problems[0].startswith("NVIDIA-SMI has failed")
    with pytest.raises(ParseError, match="each GPU index once"):
        nvsmi.parse_gpus(GPUS + GPUS)


def test_compute_apps_name_the_process_holding_a_gpu() -> None:
    assert nvsmi.query_apps_argv()[1] == "--query-compute-apps=pid,process_name,gpu_uuid,used_memory"
    assert nvsmi.parse_apps("") == []
    apps = nvsmi.parse_apps("48213, /usr/bin/python3, GPU-aa, 71680 MiB\n9, /opt/a, b/run, GPU-bb, [N/A]\n")
    assert apps == [
        nvsmi.ComputeApp(48213, "/usr/bin/python3", "GPU-aa", 71680),
        nvsmi.ComputeApp(9, "/opt/a, b/run", "GPU-bb", None),
    ]
    assert apps[0].describe() == "pid 48213 (/usr/bin/python3, 71680 MiB)"
    with pytest.raises(ParseError, match=r"nvidia-smi --query-compute-apps:1: expected 'pid, process_name"):
        nvsmi.parse_apps("Failed to initialize NVML: Driver/library version mismatch\n")


def test_the_simulated_hosts_nvidia_smi_parses_back() -> None:
    runner = SimRunner.from_scenario(load_scenario("healthy-16"), ["gpu-busy@sim-node-02:6"], seed=3)
    gpus = nvsmi.parse_gpus(nvidia_smi(nvsmi.query_gpus_argv(), runner, "sim-node-02").stdout)
    node = runner.cluster.node("sim-node-02")
    assert [(g.index, g.uuid, g.pci_bus_id) for g in gpus.gpus] == [(g.index, g.uuid, g.pci_bus_id) for g in node.gpus]
    assert {g.name for g in gpus.gpus} == {"NVIDIA H200"}
    assert gpus.problems == ()
    apps = nvsmi.parse_apps(nvidia_smi(nvsmi.query_apps_argv(), runner, "sim-node-02").stdout)
    assert apps == [nvsmi.ComputeApp(48213, "python3", node.gpus[6].uuid, 71680)]
    assert nvsmi.parse_apps(nvidia_smi(nvsmi.query_apps_argv(), runner, "sim-node-01").stdout) == []
    banner = nvidia_smi(["nvidia-smi"], runner, "sim-node-02").stdout
    assert nvsmi.parse_versions(banner) == nvsmi.SmiVersions("570.133.20", "12.8")
    assert "48213      C   python3" in banner


# every ``nvidia-smi -q`` sample of the shared corpora
Q_SAMPLES = [
    *corpus_files("nvidia-smi"),
    *sorted((SHARED / "corpus-wave2" / "nvidia-smi-dmesg").glob("nvidia-smi-q-*.txt")),
]


@needs_shared
@pytest.mark.parametrize("path", Q_SAMPLES, ids=lambda p: p.name)
def test_versions_from_every_nvidia_smi_q_sample(path: Path) -> None:
    expected = {
        "nvidia-smi-q-8xa100-sxm4-80gb-driver-525-full.txt": ("525.60.13", "12.0"),
        "nvidia-smi-q-a100-ecc-dram-correctable-remapped-rows-pending-fragment.txt": ("510.73.08", "11.6"),
        "nvidia-smi-q-ecc-sram-uncorrectable-volatile-aggregate-fragment.txt": (None, None),
    }
    found = nvsmi.parse_versions(path.read_text())
    assert (found.driver, found.cuda) == expected[path.name]


@needs_shared
@pytest.mark.parametrize("path", Q_SAMPLES, ids=lambda p: p.name)
def test_the_versions_parser_and_the_q_report_agree_on_every_sample(path: Path) -> None:
    """One package, two readers of ``nvidia-smi -q``: the preflight's versions and the incident's report."""
    text = path.read_text()
    found, report = nvsmi.parse_versions(text), nvsmi.parse(text, path.name)
    assert (found.driver, found.cuda) == (report.driver_version, report.cuda_version)


def test_a_simulated_hosts_nvidia_smi_q_over_ssh_reads_back_through_the_facade() -> None:
    """What ``nvidia-smi -q`` prints on a sim-ssh host (the simulator behind the shim), parsed by the -q parser."""
    from acceptance.sim.ssh.server import answer

    runner = SimRunner.from_scenario(load_scenario("healthy-16"), ["ecc-dbe@sim-node-04:2"], seed=3)
    text = answer(runner, {"tool": "nvidia-smi", "argv": ["nvidia-smi", "-q"], "node": "sim-node-04"}).stdout
    report = nvsmi.parse(text, "sim-node-04")
    assert (report.driver_version, report.attached_gpus, len(report.gpus)) == ("570.133.20", 8, 8)
    assert nvsmi.parse_versions(text) == nvsmi.SmiVersions("570.133.20", report.cuda_version)
    bad = [g.pci for g in report.gpus if nvsmi.findings(g)]
    assert bad == [runner.cluster.node("sim-node-04").gpus[2].busid.lower()], bad
