"""kubectl pastes as node evidence (field 6): what a paste says about a node, and what it does not say."""

from __future__ import annotations

import json
from pathlib import Path

from acceptance.cli import main
from acceptance.incident import nodes
from acceptance.incident.inputs import Input, parse_input
from acceptance.incident.model import AffectedNode
from tests.incident_logs import bundle_argv
from tests.shared import CORPUS2, CORPUS3, needs_shared, wave3

C = "kubectl"
P100 = "get-nodes-then-describe-node-notready-unreachable-noexecute-noschedule-lease-truncated-1.15.txt"
TAIL = "describe-node-conditions-tail-addresses-capacity-allocatable-one-space-indent-nvidia-gpu-1-flannel.txt"


def _evidence(node: str, text: str, host: str | None = None) -> nodes.NodeEvidence:
    parsed = parse_input(Input("paste.txt", text, host, "evidence"))
    [found] = nodes.node_evidence([AffectedNode(node, ())], [parsed])
    return found


def test_truncated_describe_says_ready_is_not_in_the_paste() -> None:
    """The p100 paste ends after the Conditions ruler: Ready is not known, and no record says it is."""
    found = _evidence("p100", wave3(C, P100))
    assert [(c["type"], c["status"], c["bad"]) for c in found.conditions] == [("Ready", "not in the paste", None)]
    assert "Ready: not in the paste (paste.txt line 5" in found.conditions[0]["message"]


def test_describe_named_by_hostname_gives_conditions_and_allocatable_gpus() -> None:
    """A mid-output excerpt has no Name line; its Hostname address names the node, its Allocatable the GPUs."""
    found = _evidence("k8s-node1", wave3(C, TAIL))
    assert [(c["type"], c["status"]) for c in found.conditions][-1] == ("Ready", "True")
    assert found.allocatable_gpus == 1
    assert _evidence("k8s-node2", wave3(C, TAIL)).conditions == ()


def test_events_name_the_node_as_a_whole_word() -> None:
    text = wave3(C, "get-events-n-kube-system-ascend-npu-device-fault-occur-faultcodes-kv-message.txt")
    assert [e["reason"] for e in _evidence("k8smaster", text).events] == ["Occur"]
    assert _evidence("k8smaste", text).events == ()


@needs_shared
def test_bundle_with_a_truncated_describe_paste_never_says_all_good(tmp_path: Path) -> None:
    out = tmp_path / "b"
    log = (
        CORPUS2
        / "pytorch-nccl-watchdog"
        / "torch-1.x-nccl-watchdog-ncclRemoteError-ib-completion-error-elastic-sigterm.log"
    )
    argv = bundle_argv("--reports-dir", str(tmp_path / "r"), "--out", str(out), "--job-logs", str(log),
                       "--evidence", f"p100={CORPUS3 / C / P100}")  # fmt: skip
    assert main(argv) == 0
    doc = json.loads((out / "bundle.json").read_text())
    [p100] = [n for n in doc["node_evidence"] if n["node"] == "p100"]
    assert [c["status"] for c in p100["conditions"]] == ["not in the paste"]
    summary = next(out.glob("*.md")).read_text()
    assert "- p100: conditions: Ready: not in the paste" in summary
    assert "all good" not in summary.split("- p100:", 1)[1].splitlines()[0]


def test_a_cut_ready_row_is_named_as_unread() -> None:
    found = _evidence("p100", wave3(C, P100) + "  Ready            Tru\n")
    assert [c["status"] for c in found.conditions] == ["not in the paste"]
    assert found.conditions[0]["message"].endswith("; line 26 could not be read)")


@needs_shared
def test_evidence_given_several_times_keeps_every_file(tmp_path: Path) -> None:
    """``--evidence A=x --evidence B=y`` kept only y (argparse's default for a repeated option)."""
    out = tmp_path / "b"
    log = (
        CORPUS2
        / "pytorch-nccl-watchdog"
        / "torch-1.x-nccl-watchdog-ncclRemoteError-ib-completion-error-elastic-sigterm.log"
    )
    pleg = CORPUS3 / C / "describe-nodes-pleg-not-healthy-ready-false-elided-header-1.13.txt"
    argv = bundle_argv("--reports-dir", str(tmp_path / "r"), "--out", str(out), "--job-logs", str(log),
                       "--evidence", f"etkhub={pleg}", "--evidence", f"p100={CORPUS3 / C / P100}")  # fmt: skip
    assert main(argv) == 0
    doc = json.loads((out / "bundle.json").read_text())
    assert [Path(i["path"]).name for i in doc["inputs"]][1:] == [pleg.name, P100]
    etkhub = next(n for n in doc["node_evidence"] if n["node"] == "etkhub")
    assert [(c["type"], c["status"], c["bad"]) for c in etkhub["conditions"]][-1] == ("Ready", "False", True)
