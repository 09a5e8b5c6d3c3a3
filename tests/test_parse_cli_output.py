"""`acceptance parse`: its imports stay light and its streamed JSON is the stable document, whole."""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from acceptance.cmd import parse_nccl
from acceptance.cmd.jsonout import pretty
from acceptance.cmd.parse_nccl import read_nccl
from tests.shared import CORPUS, FIXTURES, ROOT, corpus_files

HEAVY = ("pandas", "numpy", "matplotlib", "kubernetes")
CHECK = """
import contextlib, io, json, sys
from acceptance.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    code = main(sys.argv[1:])
print(json.dumps([code, sorted(m for m in {heavy!r} if m in sys.modules)]))
"""


@pytest.mark.parametrize(
    ("kind", "path"),
    [
        ("nccl", FIXTURES / "nccl" / "nccl-tests-2.17.8-allreduce-srun-label-warn-mid-table-split-rows.txt"),
        ("nccl", FIXTURES / "nccl" / "nccl-tests-2.17.8-allreduce-J-report.json"),
        ("dcgm", FIXTURES / "dcgm" / "dcgm-4.4.1-r3-json-8gpu-h200-pass.json"),
        ("dcgm", FIXTURES / "dcgm" / "dcgm-3.3.9-r3-text-8gpu-pass.txt"),
    ],
    ids=["nccl text", "nccl json", "dcgm json", "dcgm text"],
)
def test_parse_loads_no_pandas_matplotlib_or_kubernetes(kind: str, path: Path) -> None:
    """In a fresh interpreter, as a user runs it: the command's imports are the parser's, nothing else."""
    done = subprocess.run(
        [sys.executable, "-c", CHECK.format(heavy=HEAVY), "parse", kind, str(path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
        timeout=120,
    )
    code, loaded = json.loads(done.stdout)
    assert code == 0
    assert loaded == []


def _streamed(path: Path) -> dict[str, object]:
    out = io.StringIO()
    parse_nccl.write_cli(path, argparse.Namespace(collective=None), out)
    doc: dict[str, object] = json.loads(out.getvalue())
    return doc


@pytest.mark.parametrize(
    "path",
    [p for p in corpus_files("nccl") if "5colls" in p.name or "launcher" in p.name or "540node" in p.name]
    + sorted((FIXTURES / "nccl").glob("*.txt")),
    ids=lambda p: p.name[:50],
)
def test_the_streamed_document_is_the_capture_s_document(path: Path) -> None:
    """Runs written as they finish (through the spool) give exactly `capture.to_json()`, keys in order."""
    doc = _streamed(path)
    assert doc == read_nccl(path).to_json()
    assert list(doc) == ["kind", "status", "runs", "errors"]


def test_a_spool_larger_than_memory_is_copied_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past SPOOL_BYTES the runs go through a temporary file and are copied out in blocks."""
    path = CORPUS / "nccl" / "nccl-tests-2.17.8-5colls-10node-80rank-h100-double-ok.txt"
    if not path.exists():
        pytest.skip("../shared is absent")
    monkeypatch.setattr(parse_nccl, "SPOOL_BYTES", 1000)
    assert _streamed(path) == read_nccl(path).to_json()


def test_pretty_is_the_same_json_one_record_a_line() -> None:
    doc = {"kind": "x", "runs": [{"rows": [{"a": 1, "b": [1, 2]}, {"a": None}], "p": {"q": "\u00e9\u202e"}}], "e": []}
    text = pretty(doc, 4)
    assert json.loads(text) == doc
    assert '      "rows": [\n        {"a": 1, "b": [1, 2]},\n        {"a": null}\n      ]' in text
