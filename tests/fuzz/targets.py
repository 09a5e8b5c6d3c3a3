"""Fuzz targets: every parser and loader the harness feeds with files it did not write.

Each target takes the fuzzer's bytes as the file's content (seeded with the corpus samples and
the fixtures, so that mutations start from real outputs) and checks, beyond "no exception other
than ParseError/AcceptanceError naming the file":

* nccl text: a cut of the input is `ok` only as the complete reports before the cut, exactly;
  a noise line inserted anywhere changes no row; no non-finite number in any row; the JSON
  document is valid JSON (no NaN);
* nccl `-J` JSON, DCGM, training logs: the same JSON and finiteness checks, statuses from the
  documented sets; a cut training log never yields a value its whole log does not have;
* profile, baseline, manifest and SSHSIG readers: refusals are AcceptanceErrors, never tracebacks.

The same targets run under atheris (coverage-guided, `python -m tests.fuzz TARGET ...`) and under
hypothesis (`tests/test_fuzz.py`, when atheris is not installed).
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import functools
import io
import json
import math
import os
import shutil
import struct
import tempfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from acceptance.errors import AcceptanceError, ParseError
from acceptance.tools import dcgm, nccl, trainlog
from tests.hostile import NOISE_LINES, dcgm_files, nccl_files, trainlog_files

ROOT = Path(__file__).resolve().parents[2]
MAX_SEED = 16_000  # bytes of a seed kept (the fuzzer's -max_len follows the largest seed)


@functools.cache
def _scratch_folder() -> Path:
    """Where file-reading targets write their input (a test passes its own folder): made at the first input, not
    on import (a collection of the tests made one, and the session's summary listed it as left)."""
    given = os.environ.get("ACCEPTANCE_FUZZ_SCRATCH")
    if given:
        return Path(given)
    folder = Path(tempfile.mkdtemp(prefix="acceptance-fuzz-"))
    atexit.register(shutil.rmtree, folder, True)
    return folder


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _pick(data: bytes, n: int, salt: int = 0) -> int:
    """A number in [0, n) derived from the input: every input has its own cut and insertion point."""
    return (zlib.crc32(data) ^ salt) % n if n > 0 else 0


def _refused(exc: ParseError, source: str) -> None:
    """A refusal must name the input it refuses (and it is an AcceptanceError by its type)."""
    assert exc.source == source


def _json_ok(document: dict[str, Any]) -> None:
    json.dumps(document, allow_nan=False)  # ValueError on NaN/Infinity: a number that must not be handed on


# ---------------------------------------------------------------------- nccl-tests
def _data(run: nccl.NcclRun) -> dict[str, Any]:
    doc = run.to_json()
    del doc["status"], doc["errors"]
    return doc


def _parse_nccl(text: str) -> nccl.NcclCapture | None:
    try:
        return nccl.parse_text(text, "fuzz.txt")
    except ParseError as exc:
        _refused(exc, "fuzz.txt")
        return None


def nccl_text(data: bytes) -> None:
    text = _text(data)
    full = _parse_nccl(text)
    if full is None:
        return
    _json_ok(full.to_json())
    assert full.status in ("ok", "failed", "incomplete")
    cut = _pick(data, len(text))
    part = _parse_nccl(text[:cut])
    if part is not None and part.status == "ok":
        k = len(part.runs)
        assert [_data(r) for r in part.runs] == [_data(r) for r in full.runs[:k]]
        before = text[:cut]
        tail = before[before.rfind("\n") + 1 :].strip()
        started = before.count("\n") + (1 if tail not in ("", "#") else 0)
        assert k == len(full.runs) or full.runs[k].lines[0] > started
    lines = io.StringIO(text).readlines()
    if lines:
        at = _pick(data, len(lines), 0x5EED)
        noise = NOISE_LINES[_pick(data, len(NOISE_LINES), 0xBEEF)]
        noisy = _parse_nccl("".join([*lines[:at], noise + "\n", *lines[at:]]))
        assert noisy is not None
        assert [row for r in noisy.runs for row in r.rows] == [row for r in full.runs for row in r.rows]


def nccl_json(data: bytes) -> None:
    capture = _parse_nccl(_text(data))
    if capture is not None:
        _json_ok(capture.to_json())
        assert capture.status in ("ok", "failed", "incomplete")


# ---------------------------------------------------------------------- DCGM
def dcgm_output(data: bytes) -> None:
    try:
        report = dcgm.parse(_text(data), "fuzz.txt")
    except ParseError as exc:
        _refused(exc, "fuzz.txt")
        return
    _json_ok(report.to_json())
    assert report.status in ("pass", "fail", "error", "skip")
    assert report.status != "pass" or not report.errors
    # a failed GPU or other entity row fails its test, and the run, whatever the summary said
    assert all(t.status == "fail" for t in report.tests if t.failed_rows())
    assert report.status == "fail" or not any(t.failed_rows() for t in report.tests)


# ---------------------------------------------------------------------- training logs
def _steps(log: trainlog.TrainLog) -> list[dict[str, Any]]:
    ignore = {"segment", "nan", "skipped", "rank"}
    return [
        {k: v for k, v in record.items() if k not in ignore and not (isinstance(v, float) and math.isnan(v))}
        for record in log.frame().to_dict(orient="records")
    ]


def trainlog_output(data: bytes) -> None:
    text = _text(data)
    try:
        full = trainlog.parse(io.StringIO(text), "fuzz.log")
    except ParseError as exc:
        _refused(exc, "fuzz.log")
        return
    _json_ok(full.to_json())
    if full.format in ("hf-trainer-state", "megatron-golden-json", "lightning-csv"):
        return  # whole documents, and sparse rows merged per step
    try:
        part = trainlog.parse(io.StringIO(text[: _pick(data, len(text))]), "fuzz.log", full.format)
    except ParseError:
        return
    by_step: dict[Any, list[dict[str, Any]]] = {}
    for row in _steps(full):
        by_step.setdefault(row.get("step"), []).append(row)
    for row in _steps(part):  # every value read from the cut log is one its whole log has, at that step
        assert any(all(whole.get(k) == v for k, v in row.items()) for whole in by_step.get(row.get("step"), []))


# ---------------------------------------------------------------------- files the harness reads
def _scratch(name: str, data: bytes) -> Path:
    path = _scratch_folder() / name
    path.write_bytes(data)
    return path


def profile(data: bytes) -> None:
    from acceptance.profile import load_profile_file

    folder = _scratch_folder() / "fuzz-profile"
    folder.mkdir(exist_ok=True)
    path = folder / "cluster.yaml"
    path.write_bytes(data)
    with contextlib.suppress(AcceptanceError):
        load_profile_file(path)


def baseline(data: bytes) -> None:
    from acceptance.baseline import load

    with contextlib.suppress(AcceptanceError):
        load(_scratch("handover-20260101T000000Z.json", data))


def manifest(data: bytes) -> None:
    from acceptance.report.manifest import check_files, read_manifest

    folder = _scratch_folder() / "fuzz-report"
    folder.mkdir(exist_ok=True)
    (folder / "MANIFEST.json").write_bytes(data)
    with contextlib.suppress(AcceptanceError):
        check_files(folder, read_manifest(folder / "MANIFEST.json"))


def signature(data: bytes) -> None:
    from acceptance.report.sshsig import parse_signature

    try:
        info = parse_signature(_text(data), "fuzz.sig")
    except ParseError as exc:
        _refused(exc, "fuzz.sig")
        return
    assert info.fingerprint.startswith("SHA256:")


# ---------------------------------------------------------------------- seeds
def _ssh_string(value: bytes) -> bytes:
    return struct.pack(">I", len(value)) + value


def _sshsig_seed() -> bytes:
    """An SSHSIG armor in the layout of PROTOCOL.sshsig (an ed25519 key of zeros, an empty signature)."""
    key = _ssh_string(b"ssh-ed25519") + _ssh_string(bytes(32))
    blob = b"SSHSIG" + struct.pack(">I", 1) + _ssh_string(key) + _ssh_string(b"recovery-acceptance")
    blob += _ssh_string(b"") + _ssh_string(b"sha512") + _ssh_string(_ssh_string(b"ssh-ed25519") + bytes(64))
    body = base64.b64encode(blob).decode()
    lines = [body[i : i + 70] for i in range(0, len(body), 70)]
    return "\n".join(["-----BEGIN SSH SIGNATURE-----", *lines, "-----END SSH SIGNATURE-----", ""]).encode()


def _files(paths: list[Path]) -> list[bytes]:
    return [p.read_bytes()[:MAX_SEED] for p in paths]


def seeds(target: str) -> list[bytes]:
    """The starting inputs of a target: the real samples and fixtures of its kind."""
    if target == "nccl_text":
        return _files([p for p in nccl_files() if p.suffix != ".json"])
    if target == "nccl_json":
        return _files([p for p in nccl_files() if p.suffix == ".json"])
    if target == "dcgm_output":
        return _files(dcgm_files())
    if target == "trainlog_output":
        return _files(trainlog_files())
    if target == "profile":
        return [(ROOT / "baselines" / "sim" / "cluster.yaml").read_bytes()]
    if target == "baseline":
        return _files(sorted((ROOT / "baselines" / "sim").glob("handover-*.json")))
    if target == "manifest":
        entry = {"path": "report.xml", "sha256": "0" * 64, "size": 12}
        return [json.dumps({"format": "recovery-acceptance-manifest/1", "files": [entry]}).encode()]
    if target == "signature":
        return [_sshsig_seed()]
    raise KeyError(target)


TARGETS: dict[str, Callable[[bytes], None]] = {
    "nccl_text": nccl_text,
    "nccl_json": nccl_json,
    "dcgm_output": dcgm_output,
    "trainlog_output": trainlog_output,
    "profile": profile,
    "baseline": baseline,
    "manifest": manifest,
    "signature": signature,
}
