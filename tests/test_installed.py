"""Issue 16 part 1: the installed package runs the simulated clusters from any directory.

The simulated clusters' agreements (profile, signed baseline, allowed signers) and the simulator's
scenarios are package data; a profile under the user's own baselines folder wins over a shipped one.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from acceptance.errors import ProfileError, UsageError
from acceptance.profile import SHIPPED_DIR, load_profile, profile_path, refuse_writing_shipped
from acceptance.sim.model.scenario import load_scenario
from tests.suite_run import sim_profile_text

ROOT = Path(__file__).resolve().parents[1]


def test_without_a_local_profile_the_shipped_agreement_is_used(tmp_path: Path) -> None:
    profile = load_profile("sim", tmp_path / "baselines")
    assert profile.path == SHIPPED_DIR / "sim" / "cluster.yaml"
    assert profile.allowed_signers == SHIPPED_DIR / "sim" / "allowed_signers"
    assert profile.sim is not None
    assert load_scenario(profile.sim.scenario).name == "healthy-16"
    assert sorted(p.name for p in (SHIPPED_DIR / "sim").glob("handover-*.json*"))[-1].endswith(".json.sig")


def test_a_local_profile_of_the_same_name_wins(tmp_path: Path) -> None:
    folder = tmp_path / "baselines" / "sim"
    folder.mkdir(parents=True)
    (folder / "cluster.yaml").write_text(sim_profile_text().replace("description: ", "description: mine, "))
    profile = load_profile("sim", tmp_path / "baselines")
    assert profile.path == folder / "cluster.yaml"
    assert profile.description.startswith("mine, ")


def test_an_unknown_cluster_names_both_places(tmp_path: Path) -> None:
    with pytest.raises(ProfileError, match=r"no profile for cluster 'nope'.*shipped with the package: sim"):
        load_profile("nope", tmp_path / "baselines")
    assert profile_path("../sim", tmp_path) == tmp_path / "../sim" / "cluster.yaml", "only plain names are looked up"


@pytest.mark.heavy
def test_recording_into_the_shipped_agreement_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"shipped with the package and is read-only; copy it"):
        refuse_writing_shipped(SHIPPED_DIR / "sim", "--record-baseline")
    refuse_writing_shipped(tmp_path / "baselines" / "sim", "--record-baseline")  # a user's own folder: fine
    before = sorted(p.name for p in (SHIPPED_DIR / "sim").iterdir())
    run = subprocess.run(
        [sys.executable, "-m", "pytest", str(ROOT / "acceptance"), "--cluster=sim", "--record-baseline",
         "-p", "no:cacheprovider", "-q"],
        capture_output=True, text=True, cwd=tmp_path, timeout=120, check=False,
    )  # fmt: skip
    assert run.returncode == 4, run.stdout[-2000:] + run.stderr[-2000:]
    assert "read-only" in run.stderr
    assert sorted(p.name for p in (SHIPPED_DIR / "sim").iterdir()) == before, "the shipped agreement is unchanged"
    assert not (tmp_path / "reports").exists(), "nothing ran"


@pytest.mark.slow
def test_a_built_wheel_installed_in_a_fresh_environment_runs_the_suite_from_an_empty_folder(tmp_path: Path) -> None:
    # the wheel, from a copy of the sources (a build writes into its source folder)
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        (src / name).write_bytes((ROOT / name).read_bytes())
    subprocess.run(["cp", "-r", str(ROOT / "acceptance"), str(src)], check=True, timeout=60)
    dist = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(dist), str(src)],
        check=True, timeout=300, capture_output=True,
    )  # fmt: skip
    [wheel] = dist.glob("recovery_acceptance-*.whl")
    # a fresh environment; its dependencies (not this checkout) come from this one's site-packages by a
    # path line, which adds the folder without running its .pth files (so not the editable install's)
    venv = tmp_path / "venv"
    base = Path(sys.base_prefix, "bin", "python3")
    subprocess.run([str(base), "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout.strip()  # fmt: skip
    Path(purelib, "zz-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", "--no-index", str(wheel)],
        check=True, timeout=300, capture_output=True,
    )  # fmt: skip
    empty = tmp_path / "empty"
    empty.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "ACCEPTANCE_"))}
    where = subprocess.run(
        [str(python), "-c", "import acceptance; print(acceptance.__file__)"],
        capture_output=True, text=True, cwd=empty, env=env, check=True, timeout=60,
    ).stdout.strip()  # fmt: skip
    assert where.startswith(purelib), f"the installed package is imported, not the checkout: {where}"
    run = subprocess.run(
        [str(python), "-m", "pytest", "--pyargs", "acceptance", "--cluster=sim", "-q", "-p", "no:cacheprovider",
         "--junitxml=junit.xml"],
        capture_output=True, text=True, cwd=empty, env=env, timeout=900, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    suite = ET.parse(empty / "junit.xml").getroot().find("testsuite")
    assert suite is not None
    assert int(suite.get("tests", 0)) >= 20
    assert (int(suite.get("failures", 0)), int(suite.get("errors", 0))) == (0, 0)
    [report] = (empty / "reports" / "sim").iterdir()
    assert (report / "report.html").is_file()
    props = {p.get("name"): p.get("value") or "" for p in ET.parse(report / "junit.xml").getroot().iter("property")}
    shipped = Path(purelib, "acceptance", "sim", "agreements", "sim")
    assert props["profile"] == str(shipped / "cluster.yaml")
    assert Path(props["baseline"]).parent == shipped, "judged against the shipped, signed baseline"
    assert "good signature" in props["baseline_signature"]
    assert props["agreement"] == "provider and customer signed", "the shipped countersignature is packaged"
    assert sorted(p.name for p in empty.iterdir()) == ["junit.xml", "reports"], "nothing else written there"


def test_a_local_folder_without_a_profile_is_not_replaced_by_the_shipped_one(tmp_path: Path) -> None:
    (tmp_path / "baselines" / "sim").mkdir(parents=True)
    with pytest.raises(ProfileError, match=r"no profile for cluster 'sim'"):
        load_profile("sim", tmp_path / "baselines")
