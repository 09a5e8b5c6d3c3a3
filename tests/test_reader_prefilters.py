"""The cheap tests that spare the readers long logs that cannot be theirs (issue 24: NCCL INFO captures).

`kubectl.may_recognise` must be True for every text `kubectl.parse` recognises something in, and
trainlog's per-line prefilter must not change which format any log is detected as: both over every
file of every corpus folder and every fixture, and over kubectl pastes buried in NCCL INFO lines.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from acceptance.errors import ParseError
from acceptance.incident.inputs import Input, parse_input
from acceptance.tools import kubectl, trainlog
from tests.shared import CORPUS, CORPUS2, CORPUS3, FIXTURES, K8S, SHARED

NCCL = "gpu-node-0003:4127:4204 [3] NCCL INFO Channel 07/0 : 27[3] -> 28[4] [send] via NET/IB/3/GDRDMA\n"


def _texts() -> Iterator[tuple[str, str]]:
    for root in (CORPUS, CORPUS2, CORPUS3, K8S, FIXTURES, SHARED / "docs"):
        if not root.is_dir():
            continue
        for path in sorted(root.rglob("*")):
            if path.is_file() and path.stat().st_size < 8 << 20:
                try:
                    yield str(path), path.read_text(encoding="utf-8", errors="replace")
                except OSError:
                    continue


TEXTS = list(_texts())


def _detected(text: str) -> str | None:
    try:
        return trainlog.detect(text.splitlines(keepends=True))
    except ParseError:
        return None


def test_there_are_texts_to_check() -> None:
    assert len(TEXTS) > 20


@pytest.mark.heavy
@pytest.mark.parametrize(("label", "text"), TEXTS, ids=[Path(label).name for label, _ in TEXTS])
def test_kubectl_gate_never_hides_what_parse_recognises(label: str, text: str) -> None:
    if kubectl.parse(text, label).recognised:
        assert kubectl.may_recognise(text), label
        buried = NCCL * 50 + text + ("\n" if not text.endswith("\n") else "") + NCCL * 50
        assert kubectl.may_recognise(buried)
        assert parse_input(Input(label, buried)).kubectl == kubectl.parse(buried, label)


def test_kubectl_gate_is_false_on_nccl_info_only() -> None:
    assert not kubectl.may_recognise(NCCL * 1000)
    assert parse_input(Input("n.log", NCCL * 1000)).kubectl is None


@pytest.mark.parametrize(
    "paste",
    [
        "Type    Reason    Age   From     Message\n----    ------    ----  ----     -------\n"
        "Warning  XidError  2m    kernel   GPU has fallen off the bus\n",
        "Warning  NodeNotReady  3m  node-controller  Node is not ready\n",
        "NAME          STATUS     ROLES    AGE   VERSION\ngpu-node-01   NotReady   <none>   12d   v1.29.4\n",
        "  Ready  False  Mon, 23 Nov 2026 18:50:00 +0000  Mon, 23 Nov 2026 18:50:00 +0000  KubeletNotReady  x\n",
        "$ kubectl describe node gpu-node-01\nName:  gpu-node-01\nRoles:  <none>\n",
    ],
)
def test_kubectl_found_among_nccl_info_lines(paste: str) -> None:
    text = NCCL * 200 + paste + NCCL * 200
    found = kubectl.parse(text, "x")
    assert found.recognised
    assert kubectl.may_recognise(text)
    parsed = parse_input(Input("x", text))
    assert parsed.kubectl == found


@pytest.mark.heavy
@pytest.mark.parametrize(("label", "text"), TEXTS, ids=[Path(label).name for label, _ in TEXTS])
def test_trainlog_prefilter_changes_no_detection(label: str, text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    fast = _detected(text)
    buried_fast = _detected(NCCL * 30 + text)
    monkeypatch.setattr("acceptance.tools.trainlog._may_detect", lambda line: True)
    assert _detected(text) == fast, label
    assert _detected(NCCL * 30 + text) == buried_fast, label
