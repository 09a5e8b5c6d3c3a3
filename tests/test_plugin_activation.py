"""The plugin is inert without --cluster, explains itself, and shows what it will judge against."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.suite_run import copy_agreement, sign_as_demo, sim_profile_text
from tests.test_baseline import document

ROOT = Path(__file__).resolve().parents[1]
SUITE = ROOT / "acceptance"

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestAssertRewriteWarning")


def make_cluster(pytester: pytest.Pytester, name: str = "c1") -> Path:
    """A cluster folder with the shipped sim profile (renamed) and a valid baseline."""
    folder = pytester.path / "baselines" / name
    folder.mkdir(parents=True)
    (folder / "cluster.yaml").write_text(sim_profile_text(name))
    import json

    baseline = document()
    nodes = [f"sim-node-{i:02d}" for i in range(1, 17)]  # this cluster's own agreement: its name, id and node set
    baseline["conditions"]["nodes"] = nodes
    baseline["identity"] = {"cluster": name, "provider_cluster_id": "sim-h200-0001", "nodes": nodes}
    (folder / "handover-20261129T230507Z.json").write_text(json.dumps(baseline))
    copy_agreement(folder, with_baseline=False)
    sign_as_demo(folder / "handover-20261129T230507Z.json")
    return folder


def test_inert_without_cluster(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_one():\n    assert True\n")
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)
    assert "cluster" not in result.stdout.str().split("collected")[0].split("plugins:")[1].split("\n", 1)[1]
    assert pytester.parseconfig().pluginmanager.get_plugin("recovery-acceptance-session") is None


def test_suite_without_cluster_is_a_usage_error_that_says_what_to_type(pytester: pytest.Pytester) -> None:
    # a fresh process: the suite's own ini (filterwarnings=error) applies, and in this process the
    # plugin is already imported, which pytest would warn about when it tries to rewrite it
    result = pytester.runpytest_subprocess(str(SUITE))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*the acceptance suite needs a cluster*pytest acceptance/ --cluster=sim*"])


def test_unknown_cluster_is_a_usage_error_listing_profiles(pytester: pytest.Pytester) -> None:
    make_cluster(pytester)
    pytester.makepyfile("def test_one():\n    assert True\n")
    result = pytester.runpytest("--cluster=nope")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*no profile for cluster 'nope'*profiles in *baselines: c1*"])


def test_header_shows_cluster_profile_baseline_and_ticket(pytester: pytest.Pytester) -> None:
    folder = make_cluster(pytester)
    pytester.makepyfile("def test_one():\n    assert True\n")
    result = pytester.runpytest("--cluster=c1", "--ticket=INC-1234", "--returned-node=sim-node-07", "-p", "no:xdist")
    result.stdout.fnmatch_lines(
        [
            "recovery-acceptance *: cluster c1 (backend sim), run ra-*",
            f"profile: {folder / 'cluster.yaml'}",
            f"baseline: {folder / 'handover-20261129T230507Z.json'} sha256:*",
            "returned nodes: sim-node-07; ticket: INC-1234",
        ]
    )


def test_ini_twin_and_environment_precedence(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    make_cluster(pytester)
    pytester.makeini("[pytest]\nacceptance_cluster = c1\nacceptance_ticket = INC-INI\n")
    pytester.makepyfile("def test_one():\n    assert True\n")
    result = pytester.runpytest()
    result.stdout.fnmatch_lines(
        ["*cluster c1 (backend sim)*", "*ticket: INC-INI*", "*ticket='INC-INI' (ini acceptance_ticket)*"]
    )
    monkeypatch.setenv("ACCEPTANCE_TICKET", "INC-ENV")
    result = pytester.runpytest()
    result.stdout.fnmatch_lines(["*ticket: INC-ENV*", "*(environment ACCEPTANCE_TICKET)*"])
    result = pytester.runpytest("--ticket=INC-CLI")
    result.stdout.fnmatch_lines(["*ticket: INC-CLI*"])


def test_returned_node_outside_the_agreement_is_refused(pytester: pytest.Pytester) -> None:
    make_cluster(pytester)
    pytester.makepyfile("def test_one():\n    assert True\n")
    result = pytester.runpytest("--cluster=c1", "--returned-node=gpu-07")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--returned-node: gpu-07 is not in the node set of*"])


def test_bad_option_value_shows_the_form_expected(pytester: pytest.Pytester) -> None:
    make_cluster(pytester)
    pytester.makepyfile("def test_one():\n    assert True\n")
    result = pytester.runpytest("--cluster=c1", "--restore-step=soon")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--restore-step: 'soon' from --restore-step is not a whole number*"])


def test_missing_baseline_says_how_to_record_one(pytester: pytest.Pytester) -> None:
    folder = make_cluster(pytester)
    for file in folder.glob("handover-*.json"):
        file.unlink()
    pytester.makepyfile("def test_one():\n    assert True\n")
    result = pytester.runpytest("--cluster=c1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*no handover baseline in *c1*--record-baseline*"])
    shutil.rmtree(folder)


@pytest.mark.heavy
def test_loading_the_plugin_loads_no_plotting_library() -> None:
    """Every pytest run of a machine with the package installed loads the plugin (an entry point); matplotlib
    (about half a second of CPU) is loaded only where a report is drawn."""
    import subprocess
    import sys

    probe = ("import sys, acceptance.plugin, acceptance.run_session\n"
             "print(sorted(m for m in sys.modules if m.startswith('matplotlib')))")  # fmt: skip
    said = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True, cwd=ROOT
    )
    assert said.stdout.strip() == "[]", said.stdout
