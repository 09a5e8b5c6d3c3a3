"""The `acceptance` command's foundation: version, profile check, baseline show and diff."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from acceptance import __version__
from acceptance.cli import main

ROOT = Path(__file__).resolve().parents[1]


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out.strip() == f"recovery-acceptance {__version__}"


def test_help_documents_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    for command in ("profile", "baseline", "parse", "analyze", "verify", "sim", "cleanup"):
        assert command in out
    assert "3  inconclusive" in out


def test_profile_check_of_the_shipped_sim_profile(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["profile", "check", "sim", "--baselines-dir", str(ROOT / "baselines")]) == 0
    out = capsys.readouterr().out
    assert "valid profile for cluster sim (backend sim)" in out
    assert "nodes: 16 x 8 GPU" in out


def test_profile_check_names_the_path_of_a_typo(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "c1"
    folder.mkdir()
    text = (ROOT / "baselines" / "sim" / "cluster.yaml").read_text()
    (folder / "cluster.yaml").write_text(
        text.replace("args: [all_reduce_perf, -b, 8,", "args: [all_reduce_perf, -q, 8,")
    )
    assert main(["profile", "check", "c1", "--baselines-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "nccl.tests[0].args" in err
    assert f"{folder / 'cluster.yaml'}:" in err
    assert "Traceback" not in err


def test_baseline_show(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["baseline", "show", "sim", "--baselines-dir", str(ROOT / "baselines")]) == 0
    out = capsys.readouterr().out
    assert "SIMULATED cluster" in out
    assert "16 nodes x 8 NVIDIA H200" in out
    assert "nccl all_reduce_perf:" in out


def test_baseline_diff_lists_differences_in_words(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (shipped,) = (ROOT / "baselines" / "sim").glob("handover-*.json")
    folder = tmp_path / "sim"
    folder.mkdir()
    old = folder / "handover-20260101T000000Z.json"
    shutil.copy(shipped, old)
    data = json.loads(shipped.read_text())
    data["conditions"]["node_spec"]["driver_version"] = "575.51.03"
    data["conditions"]["nccl"]["all_reduce_perf"]["nccl_version"] = "2.27.3"
    new = folder / "handover-20270101T000000Z.json"
    new.write_text(json.dumps(data))
    assert main(["baseline", "diff", "sim", old.name, new.name, "--baselines-dir", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "NVIDIA driver 575.51.03 now, 570.133.20 at handover" in out
    assert "all_reduce_perf: NCCL 2.27.3 now, 2.26.5 at handover" in out
    assert "all_gather_perf" not in out
    assert main(["baseline", "diff", "sim", old.name, old.name, "--baselines-dir", str(tmp_path)]) == 0


def test_missing_baseline_file_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["baseline", "diff", "sim", "nope.json", "nope2.json", "--baselines-dir", str(tmp_path)]) == 2
    assert "nope.json: no such baseline file" in capsys.readouterr().err


def test_a_closed_pipe_is_not_a_traceback() -> None:
    import subprocess
    import sys

    proc = subprocess.Popen(
        [sys.executable, "-m", "acceptance", "baseline", "show", "sim", "--baselines-dir", str(ROOT / "baselines")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    assert proc.stdout is not None
    proc.stdout.close()
    _, err = proc.communicate(timeout=60)
    assert b"Traceback" not in err
