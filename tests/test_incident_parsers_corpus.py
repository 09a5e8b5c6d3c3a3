"""Launcher errors, kernel Xid lines, nvidia-smi -q and kubectl output of ../shared/corpus-wave2, exactly."""

from __future__ import annotations

from datetime import datetime

import pytest

from acceptance.tools import kernel, kubectl, launcher, nvsmi
from tests.shared import CORPUS, wave2, wave2_files

L = "launcher-mpirun-srun"
K = "nvidia-smi-dmesg"
C = "kubectl"


def _events(name: str, kind: str = L) -> list[tuple[str, str | None, int | None, str | None, int | None, int | None]]:
    return [(e.kind, e.host, e.rank, e.task, e.signal, e.exit_code) for e in launcher.parse(wave2(kind, name), name)]


def test_ssh_failure_names_the_host_and_the_orte_block() -> None:
    assert _events("deepspeed-runner-mpirun-orte-unable-to-start-daemons-ssh-connection-refused.txt") == [
        ("ssh-failed", "algo-2", None, None, None, None),
        ("daemons-failed", "algo-2", None, None, None, None),
    ]


def test_prterun_notice_is_joined_across_the_hard_wrap_and_the_backtrace_host_is_kept() -> None:
    events = launcher.parse(
        wave2(L, "prterun-ompi5-ofi-mtl-abort-signal6-backtrace-interleaved-remote-stderr-wrapped-notice.txt")
    )
    assert [(e.kind, e.host, e.rank, e.pid, e.signal, e.line) for e in events] == [
        ("signal", "neutron-nvidia", None, 820212, 6, 4),
        ("rank-exited", "neutron-nvidia", 1, 820212, 6, 40),
    ]
    assert events[1].text.endswith("exited on signal 6 (Aborted)")


def test_srun_task_lines_in_any_order_with_the_glued_first_line() -> None:
    got = _events("srun-overlap-py-spy-step-terminated-8-nodes-missing-newline.txt")
    tasks = [(h, t, c) for k, h, _, t, _, c in got if k == "task-failed"]
    assert tasks[0] == ("jean-zay-iam33", "3", 123)
    assert sorted(h for h, _, _ in tasks) == [
        f"jean-zay-iam{n}" for n in ("06", "31", "32", "33", "39", "50", "51", "52")
    ]
    assert [k for k, *_ in got].count("step-aborted") == 2


def test_srun_node_failure_and_deepspeed_return_code_inside_torch_logs() -> None:
    m4 = _events(
        "torch-1.12-watchdog-cudaerror-unknown-interleaved-terminate-srun-node-failure.log", "pytorch-nccl-watchdog"
    )
    assert m4 == [
        ("node-failure", "jean-zay-iam49", None, None, None, None),
        ("step-aborted", None, None, None, None, None),
    ]
    ds = launcher.parse(
        wave2("pytorch-nccl-watchdog", "torch-watchdog-timeout-broadcast-2rank-deepspeed-sigkill-handler-rc-6.log")
    )
    assert [(e.kind, e.exit_code, e.signal, e.time) for e in ds] == [
        ("launcher-exit", -6, 6, datetime(2025, 12, 18, 20, 27, 23, 533000))
    ]


def test_every_dmesg_file_has_its_xids_with_the_right_number_and_pci() -> None:
    expected = {
        "dmesg-T-xid119-gsp-rpc-timeout-dell-xe9680-rpc-history-call-trace.txt": [(119, "0000:9b:00")] * 5,
        "dmesg-decode-iso-xid13-sm-exceptions-xid43.txt": [(13, "0000:38:00")] * 16 + [(43, "0000:38:00")],
        "dmesg-h100-pci-10de2330-fallen-off-bus-probe-failed-continuation-lines.txt": [],
        "dmesg-markdown-quoted-xid79-with-nvswitch-sxid20034.txt": [(79, "0000:91:00")],
        "dmesg-xid79-fallen-off-bus-serial-crash-dump-continuation-lines.txt": [(79, "0000:5d:00")],
        "journal-kernel-xid45-caused-by-previous-xid149-xid145-nvlink.txt": [
            (45, "0000:dc:00"),
            (45, "0000:ed:00"),
            (45, "0000:ba:00"),
            (45, "0000:97:00"),
            (45, "0000:dc:00"),
            (45, "0000:ba:00"),
            (45, "0000:ed:00"),
        ],
        "syslog-xid63-row-remapper-monitoring-wrapper-line.txt": [(63, "0000:10:1c")],
    }
    files = [p for p in wave2_files(K) if not p.name.startswith("nvidia-smi")]
    if not files:
        pytest.skip("../shared/corpus-wave2 is absent")
    assert {p.name for p in files} == set(expected)
    for path in files:
        log = kernel.parse(path.read_text(), path.name)
        assert [(x.xid, x.pci) for x in log.xids] == expected[path.name], path.name
        assert log.recognised


def test_xid_details_prefixes_and_joins() -> None:
    t = kernel.parse(wave2(K, "dmesg-T-xid119-gsp-rpc-timeout-dell-xe9680-rpc-history-call-trace.txt"))
    first = t.xids[0]
    assert (first.time, first.pid, first.process, first.gpu_index) == (
        datetime(2025, 2, 23, 16, 24, 18),
        2024380,
        "nvidia-smi",
        4,
    )
    assert (first.uuid, first.serial) == ("GPU-509665ad-b600-ac93-3616-d754b23d636d", "1650124014249")
    iso = kernel.parse(wave2(K, "dmesg-decode-iso-xid13-sm-exceptions-xid43.txt"))
    assert iso.xids[0].time == datetime(2025, 1, 21, 4, 41, 44, 283302)
    assert iso.xids[0].pid is None
    assert iso.xids[-1].message == "Ch 00000008"
    assert iso.xids[-1].process == "pt_main_thread"
    nvl = kernel.parse(wave2(K, "journal-kernel-xid45-caused-by-previous-xid149-xid145-nvlink.txt"))
    assert [x.caused_by for x in nvl.xids][:2] == [149, 145]
    assert {x.xid for x in nvl.xids} == {45}
    wrapped = kernel.parse(wave2(K, "syslog-xid63-row-remapper-monitoring-wrapper-line.txt"))
    assert wrapped.hosts == ("ip-26-0-146-100",)
    assert wrapped.xids[0].uptime_s == 680111.646286
    assert wrapped.xids[0].message == "Row Remapper: New row marked for remapping, reset gpu to activate"
    bus = kernel.parse(wave2(K, "dmesg-h100-pci-10de2330-fallen-off-bus-probe-failed-continuation-lines.txt"))
    assert [(f.pci, f.uptime_s) for f in bus.fallen_off] == [("0000:5d:00", 14387.209961)]
    quoted = kernel.parse(wave2(K, "dmesg-markdown-quoted-xid79-with-nvswitch-sxid20034.txt"))
    assert quoted.xids[0].uuid == "GPU-b6c3b2be-c55b-d076-fa0e-d464e4c7e08b"
    assert [(s.sxid, s.switch, s.pci) for s in quoted.sxids][:2] == [
        (20034, "nvidia-nvswitch1", "0000:06:00"),
        (20034, "nvidia-nvswitch0", "0000:05:00"),
    ]
    assert quoted.fallen_off[0].pci == "0000:91:00"


def test_pci_ids_are_normalised_for_joining() -> None:
    assert {kernel.normalise_pci(t) for t in ("PCI:0000:5d:00", "0000:5D:00.0", "00000000:5D:00.0")} == {"0000:5d:00"}


def test_nvidia_smi_full_report_of_a_healthy_node() -> None:
    report = nvsmi.parse(wave2(K, "nvidia-smi-q-8xa100-sxm4-80gb-driver-525-full.txt"))
    assert (report.driver_version, report.cuda_version, report.attached_gpus) == ("525.60.13", "12.0", 8)
    assert [g.bus_id for g in report.gpus][:2] == ["00000000:07:00.0", "00000000:0B:00.0"]
    assert len(report.gpus) == 8
    first = report.gpus[0]
    assert first.get("GPU UUID") == "GPU-eb0003d2-77b4-70fd-4ab9-3ef1c9853c49"
    assert first.get("Remapped Rows/Bank Remap Availability Histogram/Max") == "640 bank(s)"
    assert first.get("Clocks Throttle Reasons/HW Slowdown/HW Thermal Slowdown") == "Not Active"
    assert all(nvsmi.findings(g) == [] for g in report.gpus)
    assert sum(g.processes for g in report.gpus) == 10


def test_nvidia_smi_fragments_show_their_findings() -> None:
    pending = CORPUS / "nvidia-smi" / "nvidia-smi-q-a100-ecc-dram-correctable-remapped-rows-pending-fragment.txt"
    sram = CORPUS / "nvidia-smi" / "nvidia-smi-q-ecc-sram-uncorrectable-volatile-aggregate-fragment.txt"
    if not pending.is_file():
        pytest.skip("../shared/corpus is absent")
    report = nvsmi.parse(pending.read_text())
    assert [nvsmi.findings(g) for g in report.gpus] == [["row remapping pending: reset the GPU to apply it"]]
    assert report.gpus[0].pci == "0000:10:1c"
    headless = nvsmi.parse(sram.read_text())
    assert [g.bus_id for g in headless.gpus] == [None]
    assert nvsmi.findings(headless.gpus[0]) == [
        "1 uncorrectable SRAM ECC error(s) (volatile)",
        "5 uncorrectable SRAM ECC error(s) (aggregate)",
    ]


def test_nvidia_smi_lost_gpu_and_text_that_is_not_nvidia_smi() -> None:
    lost = nvsmi.parse("Unable to determine the device handle for GPU0000:5D:00.0: Unknown Error\n")
    assert lost.recognised
    assert lost.unreachable
    assert lost.gpus == ()
    not_smi = nvsmi.parse('Traceback (most recent call last):\n  File "x.py", line 1, in <module>\n')
    assert not not_smi.recognised


def test_describe_node_conditions_taints_and_bad_states() -> None:
    gke = kubectl.parse(
        wave2(C, "describe-node-gke-notready-unknown-npd-frequentdockerrestart-true-unreachable-taint.txt")
    )
    [node] = gke.nodes
    assert node.name == "gke-kubia-default-pool-e6fd6670-8jzb"
    assert node.not_ready
    assert node.taints == ("node.kubernetes.io/unreachable:NoSchedule",)
    assert node.unschedulable is False
    assert len(node.conditions) == 12
    assert node.events == ()
    bad = {c.type: c.status for c in node.conditions if c.bad}
    assert bad == {
        "FrequentDockerRestart": "True",
        "FrequentKubeletRestart": "True",
        "MemoryPressure": "Unknown",
        "DiskPressure": "Unknown",
        "PIDPressure": "Unknown",
        "Ready": "Unknown",
    }
    ready = next(c for c in node.conditions if c.type == "Ready")
    assert ready.transition == datetime(2020, 4, 9, 6, 17, 43)
    assert ready.reason == "NodeStatusUnknown"
    eks = kubectl.parse(wave2(C, "describe-node-eks-conditions-ready-false-kubeletnotready-cni-not-initialized.txt"))
    [cut] = eks.nodes
    assert cut.name is None
    assert [(c.type, c.status, c.bad) for c in cut.conditions][-1] == ("Ready", "False", True)
    assert cut.conditions[-1].message.endswith("cni plugin not initialized")


def test_describe_pod_states_last_states_and_aggregated_events() -> None:
    oom = kubectl.parse(wave2(C, "describe-pod-oomkilled-crashloopbackoff-exit137.txt")).pods[0]
    [c] = oom.containers
    assert (c.state, c.state_reason, c.last_state, c.last_reason, c.exit_code, c.restart_count) == (
        "Waiting",
        "CrashLoopBackOff",
        "Terminated",
        "OOMKilled",
        137,
        6,
    )
    assert oom.node == "grafana-cloud-control-plane"
    assert len(oom.events) == 10
    backoff = oom.events[-1]
    assert (backoff.type, backoff.reason, backoff.last_seen, backoff.count, backoff.over) == (
        "Warning",
        "BackOff",
        "87s",
        23,
        "6m33s",
    )
    pending = kubectl.parse(wave2(C, "describe-pod-pending-failedscheduling-insufficient-nvidia-gpu.txt")).pods[0]
    assert pending.node is None
    assert pending.status == "Pending"
    assert (pending.events[0].reason, pending.events[0].count, pending.events[0].over) == (
        "FailedScheduling",
        70,
        "5h43m",
    )
    evicted = kubectl.parse(wave2(C, "describe-pod-evicted-diskpressure-shell-session-with-typo-error.txt")).pods[0]
    assert (evicted.status, evicted.reason, evicted.node) == ("Failed", "Evicted", "controlplane")
    assert [e.reason for e in evicted.events] == ["Evicted", "Scheduled"]
    nnr = kubectl.parse(wave2(C, "describe-pod-nodenotready-event-init-container-unknown-exit255.txt")).pods[0]
    assert [(c.name, c.init, c.last_reason, c.exit_code) for c in nnr.containers] == [
        ("wait-for-kafka", True, None, 0),
        ("orders-app", False, "Unknown", 255),
    ]
    assert nnr.events[-1].reason == "NodeNotReady"
    assert nnr.events[-1].source == "node-controller"
    pull = kubectl.parse(wave2(C, "describe-pod-errimagepull-imagepullbackoff-escaped-quotes.txt")).pods[0]
    assert [e.message for e in pull.events if e.reason == "Failed"][1:] == [
        "Error: ErrImagePull",
        "Error: ImagePullBackOff",
    ]


def test_kubectl_events_and_get_nodes_tables() -> None:
    ev = kubectl.parse(wave2(C, "kubectl-events-for-pod-backoff-x256-over.txt")).events
    assert [(e.reason, e.count, e.object) for e in ev][-1] == ("BackOff", 256, "Pod/giant-narwhal-6958c5bdd8-69gtn")
    rows = kubectl.parse(wave2(C, "get-nodes-eks-notready-label-column-empty-for-most-rows.txt")).node_rows
    assert [(r.name, r.ready, r.labels) for r in rows][-1] == (
        "ip-100-64-3-8.us-west-2.compute.internal",
        False,
        {"app": "cni_troubleshooting"},
    )
    assert [r.ready for r in rows] == [True, True, True, False]


def test_every_kubectl_file_is_recognised() -> None:
    files = wave2_files(C)
    if not files:
        pytest.skip("../shared/corpus-wave2 is absent")
    assert len(files) == 9
    assert all(kubectl.parse(p.read_text(), p.name).recognised for p in files)
