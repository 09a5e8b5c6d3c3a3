"""What a user hits at the command line with odd input: a clear error naming the file, exit 2, no traceback.

Deep JSON everywhere a document is read, directories given for files, a malformed kubeconfig,
absurd simulator settings.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from acceptance.cli import main
from tests.test_profile import SIM_PROFILE

DEEP = '{"a":' * 50_000 + "1" + "}" * 50_000


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own usage errors
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


@pytest.mark.parametrize("kind", ["nccl", "dcgm", "trainlog"])
def test_deep_json_to_parse_is_a_clear_error(kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "deep.json"
    path.write_text(DEEP)
    code, out, err = _run(["parse", kind, str(path)], capsys)
    assert (code, out) == (2, "")
    assert str(path) in err
    assert "nests too deeply" in err


def test_deep_json_to_analyze_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "deep.json"
    path.write_text(DEEP)
    code, _, err = _run(["analyze", "loss", "--before", str(path), "--after", str(path)], capsys)
    assert code == 2
    assert f"{path}:1" in err


def test_deep_json_baseline_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "c1"
    folder.mkdir()
    (folder / "handover-20260101T000000Z.json").write_text(DEEP)
    code, _, err = _run(["baseline", "show", "c1", "--baselines-dir", str(tmp_path)], capsys)
    assert code == 2
    assert "handover-20260101T000000Z.json: not a baseline: its JSON nests deeper" in err


def test_deep_json_manifest_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "MANIFEST.json").write_text(DEEP)
    code, _, err = _run(["verify", str(tmp_path)], capsys)
    assert code == 2
    assert "MANIFEST.json:1: expected a JSON manifest (this one nests too deeply to read)" in err


@pytest.mark.parametrize("kind", ["nccl", "dcgm", "trainlog"])
def test_a_directory_to_parse_is_a_directory(kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(["parse", kind, str(tmp_path)], capsys)
    assert (code, out) == (2, "")
    assert f"{tmp_path}: is a directory" in err


def test_a_directory_as_allowed_signers_is_a_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    signed = tmp_path / "report.xml"
    signed.write_text("<testsuites/>")
    code, _, err = _run(["verify", str(signed), "--allowed-signers", str(tmp_path)], capsys)
    assert code == 2
    assert f"{tmp_path}: is a directory, not an allowed signers file" in err


def test_a_malformed_kubeconfig_in_cleanup_names_the_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nclusters: [\n  - {name: a\nkind: Config\n")
    data = yaml.safe_load(SIM_PROFILE.read_text())
    data["backend"] = "kube"
    del data["sim"]
    data["kube"]["kubeconfig"] = str(kubeconfig)
    folder = tmp_path / "baselines" / "k1"
    folder.mkdir(parents=True)
    (folder / "cluster.yaml").write_text(yaml.safe_dump(data))
    code, _, err = _run(["cleanup", "--cluster", "k1", "--baselines-dir", str(tmp_path / "baselines")], capsys)
    assert code == 2
    assert f"cannot load Kubernetes credentials from {kubeconfig}" in err
    assert "not valid YAML" in err
    assert "line 3" in err


def test_sim_run_refuses_a_training_run_it_could_never_print(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["sim", "run", "--", "python", "pretrain_gpt.py", "--train-iters", "99999999999"]
    code, out, err = _run(argv, capsys)
    assert code == 2
    assert "at most 200,000 iterations" in out + err


@pytest.mark.parametrize(
    ("option", "value"),
    [("--time-scale", "-1"), ("--time-scale", "nan"), ("--error-rate", "5"), ("--error-rate", "inf")],
)
def test_sim_serve_refuses_settings_out_of_range(option: str, value: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(["sim", "serve", option, value], capsys)
    assert code == 2
    assert f"{option} {value!r}: expected a number from 0 to" in err


@pytest.mark.parametrize("rate", [-0.1, 1.5, float("nan")])
def test_the_emulator_refuses_an_error_share_outside_0_to_1(rate: float) -> None:
    from acceptance.sim.kubeapi.faults import Faults

    with pytest.raises(ValueError, match="expected a share from 0 to 1"):
        Faults(error_rate=rate)
