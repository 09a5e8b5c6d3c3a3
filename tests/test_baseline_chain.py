"""A signed baseline is this cluster's agreement, and only its own signed history can amend it.

Fast: the loader, `acceptance baseline verify` and `acceptance baseline amend` in process, on a
copy of the shipped sim agreement (signed with the simulator's demo key).
"""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime, timedelta, tzinfo
from pathlib import Path
from typing import Any

import pytest

from acceptance.baseline import STAMP, BaselineStore, LoadedBaseline, sha256_of, utc_stamp
from acceptance.baseline_trust import trust
from acceptance.cli import main
from acceptance.errors import BaselineError
from acceptance.profile import load_profile_file
from tests.suite_process import runpytest
from tests.suite_run import ROOT, countersign_as_demo, demo_key, sign_as_demo, sim_cluster_folder


def _verify(folder: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["baseline", "verify", folder.name, "--baselines-dir", str(folder.parent)])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def _amend(folder: Path, key: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str]:
    code = main(["baseline", "amend", folder.name, "--margins-from-profile", "--reason", "x",
                 "--baselines-dir", str(folder.parent), "--sign-key", str(key), *extra])  # fmt: skip
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def _load(folder: Path) -> LoadedBaseline:
    """What a run does before judging: the latest baseline, through the one trust gate."""
    loaded = BaselineStore(folder).latest()
    trust(loaded, load_profile_file(folder / "cluster.yaml"), allow_unsigned=False)
    return loaded


def _tolerance(folder: Path, value: float) -> None:
    path = folder / "cluster.yaml"
    text = path.read_text()
    start = text.index("busbw_tolerance: ")
    end = text.index(" ", start + len("busbw_tolerance: "))
    path.write_text(text[:start] + f"busbw_tolerance: {value}" + text[end:])


def _halve_busbw(path: Path) -> None:
    data = json.loads(path.read_text())
    for run in data["results"]["nccl"].values():
        for row in run["rows"]:
            row["oop"]["busbw"] = round(row["oop"]["busbw"] / 2, 2)
    path.write_text(json.dumps(data, indent=1) + "\n")


def _newer_copy(folder: Path, data: dict[str, Any], sign: bool = True) -> Path:
    """`data` as the newest baseline of `folder` (its recording time a day after the latest), signed by the demo key."""
    when = BaselineStore(folder).latest().baseline.agreed_utc + timedelta(days=1)
    data["provenance"]["recorded_utc"] = utc_stamp(when)
    path = folder / f"handover-{when.strftime(STAMP)}.json"
    path.write_text(json.dumps(data, indent=1) + "\n")
    if sign:
        _resign(path)
    return path


def _resign(path: Path) -> None:
    """Sign `path` again with the demo key (ssh-keygen keeps an existing signature file)."""
    Path(f"{path}.sig").unlink(missing_ok=True)
    sign_as_demo(path)
    if Path(f"{path}.customer.sig").exists():  # the customer's countersignature is of the old content
        countersign_as_demo(path)


def _shipped(cluster: str) -> dict[str, Any]:
    (path,) = (ROOT / "baselines" / cluster).glob("handover-*.json")
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def test_another_clusters_signed_baseline_is_refused_naming_both(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """simb's baseline, signed by an allowed key, copied into sim/ as the newest file: it was judged with."""
    folder = sim_cluster_folder(tmp_path)
    data = _shipped("sim")
    data["cluster"] = "simb"
    data["identity"] = {**data["identity"], "cluster": "simb", "provider_cluster_id": "simb-h200-0002"}
    path = _newer_copy(folder, data)
    with pytest.raises(BaselineError) as refused:
        _load(folder)
    said = str(refused.value)
    assert f"{path}: refused: the baseline is another cluster's agreement" in said
    assert "cluster 'simb' in the baseline, 'sim' in the profile" in said
    assert "provider cluster id simb-h200-0002 in the baseline, sim-h200-0001 in the profile" in said
    assert "the baseline names cluster 'simb', provider cluster id simb-h200-0002" in said
    assert "names cluster 'sim', provider cluster id sim-h200-0001" in said
    code, out = _verify(folder, capsys)
    assert code == 1
    assert "FAIL" in out
    assert "another cluster's agreement" in out


def test_the_shipped_sim_ssh_baseline_dropped_into_sim_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = sim_cluster_folder(tmp_path)
    (shipped,) = (ROOT / "baselines" / "sim-ssh").glob("handover-*.json")
    for part in (shipped, shipped.with_name(shipped.name + ".sig")):
        (folder / part.name).write_bytes(part.read_bytes())  # newer than sim's own, signed by the demo key
    assert BaselineStore(folder).latest().path.name == shipped.name
    with pytest.raises(BaselineError, match="cluster 'sim-ssh' in the baseline, 'sim' in the profile"):
        _load(folder)
    code, out = _verify(folder, capsys)
    assert code == 1
    assert "provider cluster id sim-ssh-h200-0001 in the baseline, sim-h200-0001 in the profile" in out


def test_the_same_cluster_with_another_node_set_is_refused(tmp_path: Path) -> None:
    folder = sim_cluster_folder(tmp_path)
    path = folder / "cluster.yaml"
    path.write_text(path.read_text().replace("    - sim-node-16\n", "    - sim-node-17\n"))
    with pytest.raises(BaselineError) as refused:
        _load(folder)
    assert "nodes sim-node-16 only in the baseline; nodes sim-node-17 only in the profile" in str(refused.value)


def _legacy(folder: Path, cluster: str = "sim") -> Path:
    """The shipped baseline as it was recorded before baselines named their identity, signed again."""
    (path,) = BaselineStore(folder).files()
    data = json.loads(path.read_text())
    del data["identity"]
    data["cluster"] = cluster
    path.write_text(json.dumps(data, indent=1) + "\n")
    _resign(path)
    return path


def test_a_baseline_recorded_before_identity_is_accepted_only_for_its_own_name_and_node_set(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = sim_cluster_folder(tmp_path)
    _legacy(folder)
    found = trust(BaselineStore(folder).latest(), load_profile_file(folder / "cluster.yaml"), allow_unsigned=False)
    assert found.signed
    assert "recorded before baselines named their cluster" in found.line
    assert "acceptance baseline amend sim --margins-from-profile" in found.line
    # amending records the identity, even with no margin to change; afterwards no note
    code, out = _amend(folder, demo_key(tmp_path), capsys)
    assert code == 0, out
    assert "identity recorded: cluster 'sim', provider cluster id sim-h200-0001" in out
    new = _load(folder)
    assert new.baseline.identity is not None
    assert new.baseline.identity.provider_cluster_id == "sim-h200-0001"
    code, out = _verify(folder, capsys)
    assert code == 0, out
    assert "recorded before" not in out

    other = sim_cluster_folder(tmp_path / "other")
    _legacy(other, cluster="simb")
    with pytest.raises(BaselineError, match=r"cluster 'simb' in the baseline.*provider cluster id not recorded"):
        _load(other)


def test_amending_a_tampered_baseline_is_refused_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Halved busbw, tolerance +1 point, amend: it wrote a validly signed baseline from the tampered numbers."""
    folder = sim_cluster_folder(tmp_path)
    (path,) = BaselineStore(folder).files()
    _halve_busbw(path)
    _tolerance(folder, 0.06)
    before = sorted(p.name for p in folder.iterdir())
    code, out = _amend(folder, demo_key(tmp_path), capsys)
    assert code == 2
    assert f"{path.name} does not verify, not amended" in out
    assert "content does not match the signature" in out
    assert sorted(p.name for p in folder.iterdir()) == before


def test_amending_an_unsigned_baseline_needs_the_lab_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = sim_cluster_folder(tmp_path)
    (path,) = BaselineStore(folder).files()
    Path(f"{path}.sig").unlink()
    _tolerance(folder, 0.06)
    code, out = _amend(folder, demo_key(tmp_path), capsys)
    assert code == 2
    assert "the baseline is not signed" in out
    assert len(BaselineStore(folder).files()) == 1
    code, out = _amend(folder, demo_key(tmp_path), capsys, "--allow-unsigned-baseline")
    assert code == 0, out
    new = BaselineStore(folder).latest()
    assert new.baseline.data["provenance"]["amended"]["from_signature_sha256"] is None
    code, out = _verify(folder, capsys)  # the signed amendment of an unsigned file is not the agreement
    assert code == 1
    assert f"the chain of amendments is broken at {path.name}" in out
    assert "not signed" in out


class _Clock(datetime):
    """Each amendment a minute after the last: two in one second would want the same file name."""

    ticks = 0

    @classmethod
    def now(cls, tz: tzinfo | None = None) -> _Clock:
        cls.ticks += 1
        return cls(2027, 1, 1, 0, cls.ticks, tzinfo=UTC)


def _two_amendments(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> tuple[Path, list[Path]]:
    import acceptance.cmd.baseline

    monkeypatch.setattr(acceptance.cmd.baseline, "datetime", _Clock)
    folder = sim_cluster_folder(tmp_path)
    key = demo_key(tmp_path)
    for tolerance in (0.06, 0.07):
        _tolerance(folder, tolerance)
        code, out = _amend(folder, key, capsys)
        assert code == 0, out
    files = BaselineStore(folder).files()
    assert len(files) == 3
    return folder, files


def test_a_normal_amendment_names_its_predecessor_and_is_trusted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, (recorded, middle, newest) = _two_amendments(tmp_path, capsys, monkeypatch)
    step = json.loads(newest.read_text())["provenance"]["amended"]
    assert step["from"] == middle.name
    assert step["from_sha256"] == sha256_of(middle)
    assert step["from_signature_sha256"] == sha256_of(Path(f"{middle}.sig"))
    assert _load(folder).path == newest
    assert _load(folder).baseline.margins.busbw_tolerance == 0.07
    code, out = _verify(folder, capsys)
    assert code == 0, out
    assert f"amends {middle.name} <- {recorded.name} (each link verified)" in out


def test_a_chain_with_a_tampered_middle_link_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, (_, middle, newest) = _two_amendments(tmp_path, capsys, monkeypatch)
    original = middle.read_bytes()
    _halve_busbw(middle)
    _resign(middle)  # even validly re-signed, it is not the file the newest amendment names
    with pytest.raises(BaselineError) as refused:
        _load(folder)
    said = str(refused.value)
    assert f"{newest}: the chain of amendments is broken at {middle.name}: its sha256 is" in said
    assert "changed since" in said
    code, out = _verify(folder, capsys)
    assert code == 1
    assert f"broken at {middle.name}" in out

    middle.write_bytes(original)  # the bytes back, the signature not: a replaced signature is named
    with pytest.raises(BaselineError, match=r"its signature is not the one this amendment names"):
        _load(folder)

    middle.unlink()
    with pytest.raises(BaselineError, match=rf"it amends {middle.name}, which is not in {folder}"):
        _load(folder)


def test_a_signed_amendment_that_changes_measurements_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, (_, _, newest) = _two_amendments(tmp_path, capsys, monkeypatch)
    _halve_busbw(newest)  # signed by an allowed key, its chain intact, but the numbers are not the handover's
    _resign(newest)
    with pytest.raises(BaselineError, match=r"the amendment's results differ from those of the file it amends"):
        _load(folder)


def test_amend_with_a_key_the_profile_does_not_allow_is_refused_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It wrote a baseline signed by a stranger, which then blocked every run."""
    folder = sim_cluster_folder(tmp_path)
    _tolerance(folder, 0.06)
    stranger = tmp_path / "stranger"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(stranger)], check=True)
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    code, out = _amend(folder, stranger, capsys)
    assert code == 2
    assert f"key {stranger} is not allowed to sign this cluster's baselines" in out
    assert "nothing was written" in out
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    assert _load(folder).baseline.margins.busbw_tolerance == 0.05


def test_the_recorded_identity_is_the_profiles(tmp_path: Path) -> None:
    from acceptance.baseline import Identity

    profile = load_profile_file(sim_cluster_folder(tmp_path) / "cluster.yaml")
    identity = Identity.of_profile(profile).to_json()
    assert identity == {"cluster": "sim", "provider_cluster_id": "sim-h200-0001", "nodes": list(profile.nodes)}
    assert _shipped("sim")["identity"] == identity


def _run_refused(pytester: pytest.Pytester, folder: Path, *extra: str) -> str:
    result = runpytest(
        pytester,
        str(ROOT / "acceptance"), "--cluster=sim", f"--baselines-dir={folder.parent}", "-p", "no:cacheprovider",
        f"--report-dir={pytester.path / 'report'}", "-k", "cluster_answers", *extra, timeout=120,
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()[-2000:]
    return result.stderr.str()


@pytest.mark.heavy
def test_a_run_refuses_another_clusters_baseline_before_anything_runs(pytester: pytest.Pytester) -> None:
    folder = sim_cluster_folder(pytester.path)
    (shipped,) = (ROOT / "baselines" / "sim-ssh").glob("handover-*.json")
    for part in (shipped, shipped.with_name(shipped.name + ".sig")):
        (folder / part.name).write_bytes(part.read_bytes())
    err = _run_refused(pytester, folder, "--no-sign", "--sim-fault=nic-degraded@sim-node-07")
    assert "another cluster's agreement (cluster 'sim-ssh' in the baseline, 'sim' in the profile" in err


@pytest.mark.heavy
def test_recording_with_a_key_the_profile_does_not_allow_is_refused_before_the_run(pytester: pytest.Pytester) -> None:
    folder = sim_cluster_folder(pytester.path, with_baseline=False)
    stranger = pytester.path / "stranger"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(stranger)], check=True)
    err = _run_refused(pytester, folder, "--record-baseline", f"--sign-key={stranger}")
    assert "--record-baseline: the new baseline would be refused by every run: key" in err
    assert "is not allowed to sign this cluster's baselines" in err
    assert not list(folder.glob("handover-*"))


def test_an_amendment_naming_a_file_outside_the_store_is_refused(tmp_path: Path) -> None:
    folder = sim_cluster_folder(tmp_path)
    recorded = BaselineStore(folder).latest()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / recorded.path.name).write_bytes(recorded.path.read_bytes())
    data = json.loads(recorded.path.read_text())
    when = recorded.baseline.agreed_utc + timedelta(days=1)
    data["provenance"]["amended"] = {
        "from": f"../../elsewhere/{recorded.path.name}", "from_sha256": recorded.sha256, "reason": "x", "by": "y",
        "utc": utc_stamp(when), "margins": {"busbw_tolerance": {"old": 0.05, "new": 0.5}},
    }  # fmt: skip
    data["margins"]["busbw_tolerance"] = 0.5
    path = folder / f"handover-{when.strftime(STAMP)}.json"
    path.write_text(json.dumps(data, indent=1) + "\n")
    _resign(path)
    with pytest.raises(BaselineError, match=r"which is not a baseline file name of the store"):
        _load(folder)


def _sim_ssh_dropped_into(folder: Path) -> None:
    (shipped,) = (ROOT / "baselines" / "sim-ssh").glob("handover-*.json")
    for part in (shipped, shipped.with_name(shipped.name + ".sig")):
        (folder / part.name).write_bytes(part.read_bytes())


def test_localize_refuses_another_clusters_baseline_instead_of_judging_with_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`acceptance localize` judges rounds against the baseline's pair baseline: only a trusted one."""
    folder = sim_cluster_folder(tmp_path)
    _sim_ssh_dropped_into(folder)
    code = main(["localize", "--cluster", "sim", "--baselines-dir", str(folder.parent)])
    said = capsys.readouterr().err
    assert code == 2
    assert "another cluster's agreement" in said
    assert "cluster 'sim-ssh' in the baseline, 'sim' in the profile" in said


def test_the_bundle_compares_nothing_with_another_clusters_baseline(tmp_path: Path) -> None:
    """Field 7 (change log) and severity read the latest baseline only once it is trusted."""
    from acceptance.cmd.bundle_sources import latest_baseline

    folder = sim_cluster_folder(tmp_path)
    profile = load_profile_file(folder / "cluster.yaml")
    notes: list[str] = []
    assert latest_baseline(profile, notes) is not None
    assert notes == []
    _sim_ssh_dropped_into(folder)
    assert latest_baseline(profile, notes) is None
    assert len(notes) == 1
    assert "no trusted handover baseline" in notes[0]
    assert "another cluster's agreement" in notes[0]
