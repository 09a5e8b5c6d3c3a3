"""kubectl output as people paste it (../shared/corpus-wave3/kubectl), read fact by fact.

Each file's facts were read by hand from the file and its .source: node names, each condition's
type/status/reason, taints, unschedulable, what the paste says about Ready, events'
namespace/type/reason/object/age/count/message, node and pod rows. Then properties over every
kubectl file of wave 2 and 3: a consistent prefix or indentation on every line, or CRLF line ends,
change no fact.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from acceptance.tools import kubectl
from tests.shared import wave2_files, wave3, wave3_files

C = "kubectl"
NOT_IN_PASTE = "Ready: not in the paste"
ASSUME = "AssumePod failed: pod c4c9c2a8-83d3-4e9b-b6fa-ed47719d3d19 is in the cache, so can't be assumed"


def facts(kt: kubectl.KubectlText) -> dict[str, list[tuple[Any, ...]]]:
    """The facts of a paste in the shape of the table below (empty kinds left out)."""
    out: dict[str, list[tuple[Any, ...]]] = {
        "nodes": [(n.name, n.taints, n.unschedulable, n.ready_text) for n in kt.nodes],
        "conditions": [(n.name, c.type, c.status, c.reason) for n in kt.nodes for c in n.conditions],
        "events": [
            (e.namespace, e.type, e.reason, e.object, e.last_seen, e.count, e.source, e.message) for e in kt.events
        ],
        "node_rows": [(r.name, r.status, r.roles, r.age, r.version) for r in kt.node_rows],
        "pod_rows": [(r.name, r.ready, r.status, r.restarts, r.age) for r in kt.pod_rows],
        "pods": [(p.name, p.message) for p in kt.pods],
    }
    return {k: v for k, v in out.items() if v}


EXPECTED: dict[str, dict[str, list[tuple[Any, ...]]]] = {
    "describe-node-1.7-tab-separated-labels-conditions-space-tab-runs-truncated.txt": {
        # 1.7 prints no Unschedulable line; the paste ends before DiskPressure and Ready
        "nodes": [("xxxx", (), None, NOT_IN_PASTE)],
        "conditions": [
            ("xxxx", "NetworkUnavailable", "False", "RouteCreated"),
            ("xxxx", "OutOfDisk", "False", "KubeletHasSufficientDisk"),
            ("xxxx", "MemoryPressure", "False", "KubeletHasSufficientMemory"),
        ],
    },
    "describe-node-conditions-tail-addresses-capacity-allocatable-one-space-indent-nvidia-gpu-1-flannel.txt": {
        "nodes": [(None, (), None, "Ready: True")],
        "conditions": [
            (None, "NetworkUnavailable", "False", "FlannelIsUp"),
            (None, "MemoryPressure", "False", "KubeletHasSufficientMemory"),
            (None, "DiskPressure", "False", "KubeletHasNoDiskPressure"),
            (None, "PIDPressure", "False", "KubeletHasSufficientPID"),
            (None, "Ready", "True", "KubeletReady"),
        ],
    },
    "describe-node-npd-custom-conditions-aks-containerd-deprecation-kerneldeadlock-wide-padding-2025.txt": {
        "nodes": [(None, (), None, NOT_IN_PASTE)],
        "conditions": [
            (
                None,
                "DeprecatedConfigsFieldInContainerdConfiguration",
                "False",
                "DeprecatedConfigsFieldInContainerdConfigurationNotDetected",
            ),
            (None, "ReadOnlyRootFileSystem", "False", "ReadOnlyRootFileSystemNotDetected"),
            (None, "DeprecatedPullingSchemaV1Image", "False", "DeprecatedPullingSchemaV1ImageDetected"),
            (
                None,
                "DeprecatedMirrorsFieldInContainerdConfiguration",
                "False",
                "DeprecatedMirrorsFieldInContainerdConfigurationNotDetected",
            ),
            (None, "KernelDeadlock", "False", "KernelHasNoDeadlock"),
        ],
    },
    "describe-nodes-pleg-not-healthy-ready-false-elided-header-1.13.txt": {
        "nodes": [("etkhub", (), None, "Ready: False")],
        "conditions": [
            ("etkhub", "OutOfDisk", "False", "KubeletHasSufficientDisk"),
            ("etkhub", "MemoryPressure", "False", "KubeletHasSufficientMemory"),
            ("etkhub", "DiskPressure", "False", "KubeletHasNoDiskPressure"),
            ("etkhub", "Ready", "False", "KubeletNotReady"),
        ],
    },
    "describe-pod-events-unexpectedadmissionerror-allocate-failed-custom-scheduler-x8-over.txt": {
        "events": [
            ("", "Warning", "FailedScheduling", "", "73s", 1, "4pd-scheduler", ASSUME),
            ("", "Warning", "FailedScheduling", "", "73s", 1, "4pd-scheduler", ASSUME),
            (
                "",
                "Normal",
                "Scheduled",
                "",
                "73s",
                1,
                "4pd-scheduler",
                "Successfully assigned default/gpu-pod to pkm-05",
            ),
            ("", "Warning", "FailedScheduling", "", "73s", 1, "4pd-scheduler", ASSUME),
            (
                "",
                "Warning",
                "UnexpectedAdmissionError",
                "",
                "73s",
                1,
                "kubelet",
                "Allocate failed due to rpc error: code = Unavailable desc = transport is closing, which is unexpected",
            ),
            (
                "",
                "Warning",
                "FailedMount",
                "",
                "9s",
                8,
                "kubelet",
                "MountVolume.SetUp failed for volume "
                '"kube-api-access-8hcmj" : object "default"/"kube-root-ca.crt" not registered',
            ),
        ],
    },
    "describe-pod-message-nvml-gpu-is-lost-then-get-pods-unexpectedadmissionerror-bash-prompt.txt": {
        "pods": [
            (
                None,
                "Pod Allocate failed due to device plugin GetPreferredAllocation rpc failed with err: rpc "
                "error: code = Unknown desc = Unable to retrieve list of available devices: error creating "
                "nvml.Device 5: nvml: GPU is lost, which is unexpected",
            )
        ],
        "pod_rows": [("rojin-2q6ld", "0/1", "UnexpectedAdmissionError", "0", "4s")],
    },
    "get-events-2015-v0.14-firstseen-lastseen-count-subobject-blockquote-prefixed.txt": {
        # absolute times only: last_seen stays empty, the time is in last_seen_utc (tested below)
        "events": [
            (
                "",
                "",
                "failedScheduling",
                "Pod/redis-master-controller-fplln",
                "",
                211,
                "{scheduler }",
                "Error scheduling: no minions available to schedule pods",
            )
        ],
    },
    "get-events-A-sort-by-lasttimestamp-namespace-column-elided-dots-trailing-blanks-rke2.txt": {
        "events": [
            (
                "kube-system",
                "Warning",
                "FailedMount",
                "pod/helm-install-rke2-canal-jjmwv",
                "9m43s",
                1,
                "",
                'MountVolume.SetUp failed for volume "content" : object "kube-system"/"chart-content-rke2-canal" '
                "not registered",
            ),
            (
                "kube-system",
                "Warning",
                "FailedMount",
                "pod/helm-install-rke2-canal-jjmwv",
                "5m39s",
                1,
                "",
                'MountVolume.SetUp failed for volume "values" : object "kube-system"/"chart-values-rke2-canal" '
                "not registered",
            ),
        ],
    },
    "get-events-n-kube-system-ascend-npu-device-fault-occur-faultcodes-kv-message.txt": {
        "events": [
            (
                "kube-system",
                "Warning",
                "Occur",
                "pod/ascend-device-plugin-daemonset-910-dlpmv",
                "8s",
                1,
                "",
                "device fault, nodeName:k8smaster, assertion:Occur, cardID:2, deviceID:0, faultCodes:8C084E00, "
                "faultLevelName:RestartBusiness, alarmRaisedTime:2023-11-21 05:36:53",
            )
        ],
    },
    "get-nodes-2016-no-roles-column-ready-schedulingdisabled.txt": {
        "node_rows": [
            ("185.19.30.240", "Ready", "", "21d", ""),
            ("185.19.30.251", "Ready,SchedulingDisabled", "", "21d", ""),
        ],
    },
    "get-nodes-then-describe-node-notready-unreachable-noexecute-noschedule-lease-truncated-1.15.txt": {
        # the paste ends right after the Conditions ruler: no row, so no Ready either
        "nodes": [
            (
                "p100",
                ("node.kubernetes.io/unreachable:NoExecute", "node.kubernetes.io/unreachable:NoSchedule"),
                False,
                NOT_IN_PASTE,
            )
        ],
        "node_rows": [
            ("p100", "NotReady", "<none>", "17h", "v1.15.11"),
            ("ubuntu", "Ready", "master", "17h", "v1.15.11"),
        ],
    },
    "get-pods-completed-pod-flips-to-unexpectedadmissionerror-after-kubelet-restart-double-space-command.txt": {
        "pod_rows": [
            ("cuda-sample-2-29z5v", "0/1", "Completed", "0", "23s"),
            ("cuda-sample-lt2jq", "0/1", "UnexpectedAdmissionError", "0", "72s"),
        ],
    },
}


def test_every_wave3_kubectl_file_has_its_facts() -> None:
    files = {p.name for p in wave3_files(C)}
    if not files:
        pytest.skip("../shared/corpus-wave3 is absent")
    assert files == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_wave3_kubectl_facts(name: str) -> None:
    assert facts(kubectl.parse(wave3(C, name), name)) == EXPECTED[name]


def test_condition_messages_times_and_zero_time() -> None:
    """Messages with spaces survive TAB and blank padding; the zero time is 'never', not year 1."""
    old = kubectl.parse(wave3(C, "describe-node-1.7-tab-separated-labels-conditions-space-tab-runs-truncated.txt"))
    [net, disk, _] = old.nodes[0].conditions
    assert (net.message, net.heartbeat, net.transition) == (
        "openshift-sdn cleared kubelet-set NoRouteCreated",
        None,
        datetime(2017, 8, 30, 15, 12),
    )
    assert disk.message == "kubelet has sufficient disk space available"
    pleg = kubectl.parse(wave3(C, "describe-nodes-pleg-not-healthy-ready-false-elided-header-1.13.txt"))
    ready = pleg.nodes[0].conditions[-1]
    assert ready.message == "PLEG is not healthy: pleg was last seen active 16h17m50.791825508s ago; threshold is 3m0s"
    assert ready.transition == datetime(2019, 6, 2, 21, 39, 37)
    assert pleg.nodes[0].not_ready
    assert pleg.elided == (2,)


def test_capacity_allocatable_and_hostname_with_one_blank_indent() -> None:
    name = "describe-node-conditions-tail-addresses-capacity-allocatable-one-space-indent-nvidia-gpu-1-flannel.txt"
    [node] = kubectl.parse(wave3(C, name)).nodes
    assert node.capacity["ephemeral-storage"] == "960317832Ki"
    assert node.allocatable["ephemeral-storage"] == "885028912506"
    assert node.allocatable_gpus == 1
    assert node.hostname == "k8s-node1"
    assert node.conditions[-1].message == "kubelet is posting ready status. AppArmor enabled"


def test_ages_stay_relative_and_absolute_times_are_kept() -> None:
    """``9m43s`` is kept as printed with no time; before 1.0 the paste carries times, so they are kept."""
    rke2 = kubectl.parse(
        wave3(C, "get-events-A-sort-by-lasttimestamp-namespace-column-elided-dots-trailing-blanks-rke2.txt")
    )
    assert [(e.last_seen, e.last_seen_utc, e.first_seen_utc) for e in rke2.events] == [
        ("9m43s", None, None),
        ("5m39s", None, None),
    ]
    assert rke2.elided == (3, 4, 7, 8)
    [old] = kubectl.parse(
        wave3(C, "get-events-2015-v0.14-firstseen-lastseen-count-subobject-blockquote-prefixed.txt")
    ).events
    assert (old.last_seen, old.first_seen, old.last_seen_utc, old.first_seen_utc) == (
        "",
        None,
        datetime(2015, 3, 31, 16, 56, 5),
        datetime(2015, 3, 31, 15, 33, 34),
    )
    assert old.to_json()["last_seen_utc"] == "2015-03-31T16:56:05"


def test_cordoned_row_is_ready_and_cordoned() -> None:
    rows = kubectl.parse(wave3(C, "get-nodes-2016-no-roles-column-ready-schedulingdisabled.txt")).node_rows
    assert [(r.ready, r.cordoned) for r in rows] == [(True, False), (True, True)]


# -- shapes the corpus does not hold, written after kubectl's printers --------------------------------


def _tabwriter(rows: list[list[str]]) -> str:
    """Rows padded as kubectl's tabwriter pads them (each cell to its column's widest value, 3 blanks apart)."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "".join("   ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() + "\n" for r in rows)


WIDE = "$ kubectl get events -A -o wide\n" + _tabwriter([
    ["NAMESPACE", "LAST SEEN", "TYPE", "REASON", "OBJECT", "SUBOBJECT", "SOURCE", "MESSAGE", "FIRST SEEN", "COUNT",
     "NAME"],
    ["default", "115m", "Warning", "NodeNotReady", "node/gpu-node-7", "", "node-controller",
     "Node gpu-node-7 status is now: NodeNotReady", "3h", "4", "gpu-node-7.17a"],
    ["kube-system", "2m", "Normal", "Pulled", "pod/dcgm-exporter-x", "spec.containers{exporter}", "kubelet, gpu-node-7",
     "Container image already present on machine", "2m", "1", "dcgm-exporter-x.17b"],
])  # fmt: skip


def test_get_events_wide_message_is_not_the_last_column() -> None:
    """With -o wide MESSAGE is followed by FIRST SEEN, COUNT and NAME; the ages stay relative."""
    first, second = kubectl.parse(WIDE).events
    assert (first.namespace, first.last_seen, first.first_seen, first.count, first.object, first.source) == (
        "default",
        "115m",
        "3h",
        4,
        "node/gpu-node-7",
        "node-controller",
    )
    assert first.message == "Node gpu-node-7 status is now: NodeNotReady"
    assert (first.last_seen_utc, first.first_seen_utc) == (None, None)
    assert (second.source, second.message, second.count) == (
        "kubelet, gpu-node-7",
        "Container image already present on machine",
        1,
    )


def test_events_rows_without_header_and_node_named_on_the_command_line() -> None:
    text = (
        "$ kubectl describe node gpu-node-3\n"
        "  Ready            False   Mon, 03 Jun 2019 13:54:18 +0000   Sun, 02 Jun 2019 21:39:37 +0000   "
        "KubeletNotReady   PLEG is not healthy\n"
        "\n"
        "  Warning  NodeNotReady  115m (x2 over 3h)  node-controller  Node gpu-node-3 status is now: NodeNotReady\n"
    )
    [node] = kubectl.parse(text).nodes
    assert (node.name, node.ready_text) == ("gpu-node-3", "Ready: False")
    [ev] = node.events
    assert (ev.reason, ev.last_seen, ev.count, ev.over, ev.source) == (
        "NodeNotReady",
        "115m",
        2,
        "3h",
        "node-controller",
    )
    assert ev.last_seen_utc is None


def test_variable_on_the_command_line_is_no_node_name() -> None:
    text = "$ kubectl describe node $NODE_NAME | sed -n '/^Conditions:/,/^Addresses:/ p'\nConditions:\n"
    assert kubectl.parse(text).nodes[0].name is None


def test_text_that_is_no_kubectl_output_is_not_recognised() -> None:
    for text in ("epoch 1/10  loss 3  5s\n", "Message: hello\n", "Normal run 3 5s\n", "[...]\n...\n"):
        assert not kubectl.parse(text).recognised


# -- properties over every kubectl file of wave 2 and 3 -----------------------------------------------


def _all_files() -> list[Path]:
    return wave2_files(C) + wave3_files(C)


PREFIXES = ["> ", "    ", "\t", "  > ", "> > "]


@pytest.mark.parametrize("prefix", PREFIXES)
def test_a_prefix_on_every_line_changes_no_fact(prefix: str) -> None:
    files = _all_files()
    if not files:
        pytest.skip("../shared corpora are absent")
    for path in files:
        text = path.read_text(encoding="utf-8")
        quoted = "".join(prefix + line for line in text.splitlines(keepends=True))
        assert kubectl.parse(quoted, path.name) == kubectl.parse(text, path.name), path.name


def test_crlf_line_ends_and_trailing_blanks_change_no_fact() -> None:
    files = _all_files()
    if not files:
        pytest.skip("../shared corpora are absent")
    for path in files:
        text = path.read_text(encoding="utf-8")
        base = kubectl.parse(text, path.name)
        assert kubectl.parse(text.replace("\n", "\r\n"), path.name) == base, path.name
        assert kubectl.parse(text.replace("\n", "   \n"), path.name) == base, path.name


def test_every_kubectl_file_gives_facts() -> None:
    files = _all_files()
    if not files:
        pytest.skip("../shared corpora are absent")
    assert [p.name for p in files if not facts(kubectl.parse(p.read_text(encoding="utf-8")))] == []


def test_a_ready_row_cut_by_the_paste_is_unread_not_ready() -> None:
    """The p100 paste cut one line further (``  MemoryPressure   Un``): no condition, the line is unread."""
    text = wave3(C, "get-nodes-then-describe-node-notready-unreachable-noexecute-noschedule-lease-truncated-1.15.txt")
    cut = kubectl.parse(text + "  Ready            Tru\n")
    [node] = cut.nodes
    assert (node.conditions, node.ready, node.ready_text, node.not_ready) == ((), None, NOT_IN_PASTE, False)
    assert node.unread == cut.unread == (26,)


def test_tab_padded_describe_events_with_an_empty_cell() -> None:
    """kubectl 1.9 and before: TAB padding, and SubObjectPath empty; cells are read on 8-wide tab stops."""
    text = (
        "Events:\n"
        "  FirstSeen\tLastSeen\tCount\tFrom\t\t\tSubObjectPath\tType\t\tReason\t\tMessage\n"
        "  ---------\t--------\t-----\t----\t\t\t-------------\t--------\t------\t\t-------\n"
        "  4m\t\t4m\t\t1\tdefault-scheduler\t\t\tNormal\t\tScheduled\tSuccessfully assigned gpu-pod to node-1\n"
        "  2m\t\t1m\t\t3\tkubelet, node-1\tspec.containers{c}\tWarning\t\tBackOff\t\t"
        "Back-off restarting failed container\n"
    )
    first, second = kubectl.parse(text).events
    assert (first.first_seen, first.last_seen, first.count, first.source, first.type, first.reason) == (
        "4m",
        "4m",
        1,
        "default-scheduler",
        "Normal",
        "Scheduled",
    )
    assert (second.source, second.count, second.type, second.message) == (
        "kubelet, node-1",
        3,
        "Warning",
        "Back-off restarting failed container",
    )


def test_get_events_1x_columns_kind_and_name_make_the_object() -> None:
    text = "$ kubectl get events\n" + _tabwriter([
        ["LASTSEEN", "FIRSTSEEN", "COUNT", "NAME", "KIND", "SUBOBJECT", "TYPE", "REASON", "SOURCE", "MESSAGE"],
        ["2m", "1h", "12", "gpu-node-2", "Node", "", "Warning", "NodeNotReady", "{node-controller }",
         "Node gpu-node-2 status is now: NodeNotReady"],
    ])  # fmt: skip
    [ev] = kubectl.parse(text).events
    assert (ev.last_seen, ev.first_seen, ev.count, ev.object, ev.source, ev.type) == (
        "2m",
        "1h",
        12,
        "Node/gpu-node-2",
        "{node-controller }",
        "Warning",
    )


@pytest.mark.parametrize(
    ("line", "node"),
    [
        ("$ kubectl describe node gpu-1", "gpu-1"),
        ("root@host:~/dir# kubectl describe no gpu-1", "gpu-1"),
        ("C:\\Users\\me>kubectl describe node/gpu-1", "gpu-1"),
        ("> kubectl --context prod describe nodes gpu-1 | grep -A8 Conditions", "gpu-1"),
        ("[me@box k8s]$ kubectl describe nodes", None),
        ("$ kubectl describe node gpu-1 gpu-2", None),
        ("$ kubectl describe node <node-name>", None),
    ],
)
def test_the_node_named_on_the_command_line(line: str, node: str | None) -> None:
    row = "  Ready   True   Mon, 03 Jun 2019 13:54:18 +0000   Sun, 02 Jun 2019 21:39:37 +0000   KubeletReady   ok\n"
    [desc] = kubectl.parse(f"{line}\n{row}").nodes
    assert desc.name == node


def test_a_quoted_block_after_a_line_of_prose() -> None:
    """Only the quoted lines carry ``> ``: their quote marks are taken off line by line."""
    text = wave3(C, "get-nodes-2016-no-roles-column-ready-schedulingdisabled.txt")
    quoted = "Here is what I get:\n" + "".join("> " + line for line in text.splitlines(keepends=True))
    assert facts(kubectl.parse(quoted)) == facts(kubectl.parse(text))


def test_get_events_rows_without_header_are_read_but_wide_ones_refused() -> None:
    """Without the header, a ``-o wide`` row's SOURCE and SUBOBJECT would end up in the message: refused."""
    [plain] = kubectl.parse("default   115m   Warning   NodeNotReady   node/gpu-node-7   Node is not ready\n").events
    assert (plain.namespace, plain.last_seen, plain.object, plain.message) == (
        "default",
        "115m",
        "node/gpu-node-7",
        "Node is not ready",
    )
    wide_row = WIDE.splitlines()[2]
    assert kubectl.parse(wide_row + "\n").events == ()


def _read(kt: kubectl.KubectlText) -> set[tuple[Any, ...]]:
    """What a cut must not invent: conditions, events (age and count), node and pod rows, by line."""
    evs = [*kt.events, *(e for n in kt.nodes for e in n.events), *(e for p in kt.pods for e in p.events)]
    return (
        {("condition", c.line, c.type, c.status) for n in kt.nodes for c in n.conditions}
        | {("event", e.line, e.type, e.reason, e.last_seen, e.count) for e in evs}
        | {("node", r.line, r.name, r.status) for r in kt.node_rows}
        | {("pod", r.line, r.name, r.ready, r.status) for r in kt.pod_rows}
    )


@pytest.mark.heavy
def test_a_paste_cut_anywhere_invents_nothing() -> None:
    """Cut every file at every 7th character (mid-line too): no error, and every condition, event and row
    read is one the whole file has, with the same status, age and count (a cut ``Ready  Tru`` or
    ``21s (x3 over 61s)`` is no row)."""
    files = _all_files()
    if not files:
        pytest.skip("../shared corpora are absent")
    for path in files:
        text = path.read_text(encoding="utf-8")
        whole = _read(kubectl.parse(text))
        for end in range(0, len(text), 7):
            extra = _read(kubectl.parse(text[:end])) - whole
            assert not extra, (path.name, end, extra)


def test_get_nodes_and_pods_wide_and_all_namespaces() -> None:
    nodes_text = "$ kubectl get nodes -o wide\n" + _tabwriter([
        ["NAME", "STATUS", "ROLES", "AGE", "VERSION", "INTERNAL-IP", "EXTERNAL-IP", "OS-IMAGE", "KERNEL-VERSION",
         "CONTAINER-RUNTIME"],
        ["gpu-node-7", "NotReady,SchedulingDisabled", "<none>", "115m", "v1.30.4", "10.0.0.7", "<none>",
         "Ubuntu 22.04.4 LTS", "5.15.0-105-generic", "containerd://1.7.13"],
    ])  # fmt: skip
    [row] = kubectl.parse(nodes_text).node_rows
    assert (row.name, row.ready, row.cordoned, row.age, row.version, row.labels) == (
        "gpu-node-7",
        False,
        True,
        "115m",
        "v1.30.4",
        {},
    )
    pods_text = "$ kubectl get pods -A -o wide\n" + _tabwriter([
        ["NAMESPACE", "NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE", "NOMINATED NODE", "READINESS GATES"],
        ["train", "job-worker-3", "0/1", "UnexpectedAdmissionError", "0", "115m", "<none>", "gpu-node-7", "<none>",
         "<none>"],
        ["train", "job-worker-4", "1/1", "Running", "2 (5m ago)", "3h", "10.1.0.9", "gpu-node-8", "<none>", "<none>"],
    ])  # fmt: skip
    rows = kubectl.parse(pods_text).pod_rows
    assert [(r.namespace, r.name, r.status, r.restarts, r.age, r.node) for r in rows] == [
        ("train", "job-worker-3", "UnexpectedAdmissionError", "0", "115m", "gpu-node-7"),
        ("train", "job-worker-4", "Running", "2 (5m ago)", "3h", "gpu-node-8"),
    ]


def test_a_cordoned_node_described() -> None:
    text = (
        "Name:               gpu-node-7\n"
        "Taints:             node.kubernetes.io/unschedulable:NoSchedule\n"
        "Unschedulable:      true\n"
    )
    [node] = kubectl.parse(text).nodes
    assert (node.name, node.taints, node.unschedulable, node.ready_text) == (
        "gpu-node-7",
        ("node.kubernetes.io/unschedulable:NoSchedule",),
        True,
        NOT_IN_PASTE,
    )


def test_an_error_of_describe_node_describes_no_node() -> None:
    text = '$ kubectl describe node gpu-node-9\nError from server (NotFound): nodes "gpu-node-9" not found\n'
    assert kubectl.parse(text).nodes == ()
    assert kubectl.parse("$ kubectl describe node gpu-node-9\nTaints:  <none>\n").nodes[0].name == "gpu-node-9"
