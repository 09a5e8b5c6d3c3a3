"""`acceptance bundle` reads its input files one at a time (issue 24: a capture of 900 MiB must not be held).

Listing a file says what must be said of it (too long, not UTF-8) without keeping its text; the text is
read when its turn comes, parsed, copied scrubbed into the evidence and let go.
"""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path

import pytest

from acceptance.cli import main
from acceptance.cmd import bundle as bundle_cmd
from acceptance.cmd import bundle_sources as src
from acceptance.incident.inputs import Input
from tests.incident_logs import write

ROOT = Path(__file__).resolve().parents[1]


def _listed(*paths: Path) -> src.Gathered:
    gathered = src.Gathered()
    src.read_files([str(p) for p in paths], "file", gathered)
    return gathered


def test_listing_keeps_no_text_and_the_text_is_read_in_turn(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    log.write_text("first\n")
    gathered = _listed(log)
    assert [(i.text, i.path) for i in gathered.inputs] == [("", str(log))]
    log.write_text("read later\n")
    assert src.loaded(gathered.inputs[0], gathered.notes).text == "read later\n"
    assert src.loaded(gathered.inputs[0], gathered.notes).path is None


@pytest.mark.parametrize(
    ("raw", "noted"),
    [
        (b"plain ascii\n", False),
        ("caf\u00e9 \ufffd already a replacement character\n".encode(), False),
        (b"bad \xff byte\n", True),
        (b"bad \xff byte and a real \xef\xbf\xbd\n", False),  # as before: a text that holds U+FFFD is not noted
        (b"x" * 5 + b"\xe2\x82", True),  # cut inside a character at the end
    ],
)
def test_not_utf8_note_as_when_the_whole_file_was_decoded(tmp_path: Path, raw: bytes, noted: bool) -> None:
    path = tmp_path / "l.log"
    path.write_bytes(raw)
    gathered = _listed(path)
    assert any("not UTF-8 throughout" in n for n in gathered.notes) is noted
    assert src.loaded(gathered.inputs[0], []).text == raw.decode("utf-8", "replace")


def test_a_file_over_the_limit_is_noted_and_only_its_end_read(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(src, "MAX_BYTES", 10)
    path = tmp_path / "long.log"
    path.write_bytes(b"0123456789abcdefghij")
    gathered = _listed(path)
    assert gathered.notes == [f"{path}: 20 bytes, over 10: only the last 10 read"]
    assert src.loaded(gathered.inputs[0], []).text == "abcdefghij"


def test_a_file_that_vanished_before_its_turn_is_noted(tmp_path: Path) -> None:
    path = tmp_path / "gone.log"
    path.write_text("x\n")
    gathered = _listed(path)
    path.unlink()
    notes: list[str] = []
    assert src.loaded(gathered.inputs[0], notes).text == ""
    assert notes
    assert "cannot be read" in notes[0]


def test_each_input_is_read_parsed_and_copied_before_the_next_is_read(tmp_path: Path, monkeypatch) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    xid = write(folder, only=("xid",))["xid"]
    (folder / "again.log").write_text(xid.read_text())
    seen: list[tuple[str, int]] = []
    real = src.loaded

    def spy(item, notes):
        copies = sorted((tmp_path / "b" / "evidence" / "inputs").glob("*")) if (tmp_path / "b").exists() else []
        seen.append((Path(item.label).name, len(copies)))
        return real(item, notes)

    monkeypatch.setattr(src, "loaded", spy)
    status = main(["bundle", "--cluster", "sim", "--baselines-dir", str(ROOT / "baselines"), "--no-sign",
                   "--reports-dir", str(tmp_path / "reports"), "--out", str(tmp_path / "b"),
                   "--job-logs", str(folder)])  # fmt: skip
    assert status == 0
    assert len(seen) >= 2
    assert [n for _, n in seen] == list(range(len(seen)))  # the n-th read finds n copies written
    doc = json.loads((tmp_path / "b" / "bundle.json").read_text())
    assert len(list((tmp_path / "b" / "evidence" / "inputs").iterdir())) == len(seen)
    assert doc["cluster"]["affected"]


def _masked(folder: Path) -> str:
    text = (folder / "bundle.json").read_text().replace(str(folder), "OUT")
    return re.sub(r'"20\d\d-\d\d-\d\dT\d\d:\d\d:\d\dZ"', '"T"', text)  # the bundle's own creation time


@pytest.mark.heavy
def test_a_process_pool_reads_big_inputs_into_the_same_bundle(tmp_path: Path, monkeypatch) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    xid = write(folder, only=("xid",))["xid"]
    (folder / "b-copy.log").write_text(xid.read_text().replace("sim-node-00", "sim-node-0O"))
    (folder / "c-kernel.log").write_text("Dec  2 10:00:00 sim-node-03 kernel: NVRM: Xid (PCI:0000:1b:00): 79, pid=1\n")
    outs = {}
    pools: list[int] = []
    real_pool = bundle_cmd.ProcessPoolExecutor

    def pool(workers: int, **kwargs):
        pools.append(workers)
        return real_pool(workers, **kwargs)

    monkeypatch.setattr(bundle_cmd, "ProcessPoolExecutor", pool)
    monkeypatch.setattr(bundle_cmd.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    for name, limit in (("serial", 1 << 40), ("pool", 0)):
        monkeypatch.setattr(bundle_cmd, "PARALLEL_BYTES", limit)
        status = main(["bundle", "--cluster", "sim", "--baselines-dir", str(ROOT / "baselines"), "--no-sign",
                       "--reports-dir", str(tmp_path / "reports"), "--out", str(tmp_path / name),
                       "--job-logs", str(folder)])  # fmt: skip
        assert status == 0
        outs[name] = tmp_path / name
    assert pools == [2]  # the second run only
    assert _masked(outs["pool"]) == _masked(outs["serial"])
    for copy in sorted((outs["serial"] / "evidence" / "inputs").iterdir()):
        assert (outs["pool"] / "evidence" / "inputs" / copy.name).read_bytes() == copy.read_bytes()
    serial = json.loads((outs["serial"] / "MANIFEST.json").read_text())
    pool = json.loads((outs["pool"] / "MANIFEST.json").read_text())

    def evidence(manifest: dict) -> object:
        return json.dumps(manifest["files"], sort_keys=True).count("evidence/inputs/")

    assert evidence(serial) == evidence(pool) == 3


def test_no_process_pool_from_a_process_that_runs_threads(tmp_path: Path, monkeypatch) -> None:
    big = [Input(f"{n}.log", "x" * 10) for n in range(4)]
    monkeypatch.setattr(bundle_cmd, "PARALLEL_BYTES", 0)
    monkeypatch.setattr(bundle_cmd.os, "sched_getaffinity", lambda pid: {0, 1, 2}, raising=False)
    assert bundle_cmd._workers(big) == 3
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        assert bundle_cmd._workers(big) == 1
    finally:
        stop.set()
        thread.join()
