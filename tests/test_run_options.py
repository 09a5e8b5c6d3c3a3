"""The plugin's options are resolved once per run into one frozen RunOptions; xdist workers take the controller's."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from acceptance.options import OPTIONS, WORKERINPUT_KEY, RunOptions
from tests.suite_process import runpytest
from tests.test_plugin_activation import make_cluster

ARGS = ("--cluster=c1", "--returned-node=n1", "--returned-node=n2", "--restore-step=5", "--smoke-log=logs/a.log")


def test_every_option_is_one_typed_field() -> None:
    fields = {f.name for f in dataclasses.fields(RunOptions)} - {"origins"}
    assert fields == {option.dest for option in OPTIONS}


def test_resolved_options_are_typed_and_name_their_origin(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACCEPTANCE_TICKET", "INC-ENV")
    options = RunOptions.resolve(pytester.parseconfig(*ARGS))
    assert options.cluster == "c1"
    assert options.returned_nodes == ("n1", "n2")
    assert options.restore_step == 5
    assert options.smoke_log == Path("logs/a.log")
    assert options.baselines_dir == Path("baselines")
    assert options.progress_every == 30
    assert options.ticket == "INC-ENV"
    assert dict(options.origins)["ticket"] == "environment ACCEPTANCE_TICKET"
    assert "baselines_dir" not in dict(options.origins)  # a default names no origin
    assert "ticket='INC-ENV' (environment ACCEPTANCE_TICKET)" in options.changed()
    assert not any(line.startswith("cluster=") for line in options.changed())


def test_options_cross_to_a_worker_unchanged(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACCEPTANCE_SIM_FAULTS", "nic-degraded@n1,bad-restore")
    options = RunOptions.resolve(pytester.parseconfig(*ARGS, "--no-sign", "--sign-key=k/id"))
    plain = json.loads(json.dumps(options.to_plain()))  # what execnet carries is plain data
    assert RunOptions.from_plain(plain) == options


def test_options_are_resolved_once_per_run(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    config = pytester.parseconfig(*ARGS)
    first = RunOptions.of(config)
    monkeypatch.setenv("ACCEPTANCE_TICKET", "INC-LATER")
    assert RunOptions.of(config) is first
    assert first.ticket is None


def test_a_worker_takes_the_controllers_options_without_resolving_its_own(pytester: pytest.Pytester) -> None:
    controller = RunOptions.resolve(pytester.parseconfig(*ARGS))

    def no_getoption(name: str) -> Any:
        raise AssertionError(f"the worker resolved {name} itself")

    worker: Any = SimpleNamespace(
        stash=pytest.Stash(), workerinput={WORKERINPUT_KEY: controller.to_plain()}, getoption=no_getoption
    )
    assert RunOptions.of(worker) == controller


WORKER_CONFTEST = """
import os


def pytest_configure(config):
    if hasattr(config, "workerinput"):  # a worker whose environment differs from the controller's
        os.environ["ACCEPTANCE_TICKET"] = "INC-WORKER"
"""

WORKER_TEST = """
from acceptance.plugin import SESSION


def test_ticket(request):
    session = request.config.stash[SESSION]
    assert not session.controller
    assert session.options.ticket is None, session.options.ticket
    assert session.context.ticket is None
"""


@pytest.mark.heavy  # a pytest with an xdist worker in a subprocess: two interpreters importing the plugin
def test_xdist_workers_judge_with_the_controllers_options(pytester: pytest.Pytester) -> None:
    make_cluster(pytester)
    pytester.makeconftest(WORKER_CONFTEST)
    pytester.makepyfile(WORKER_TEST)
    result = runpytest(pytester, "--cluster=c1", "-n", "1", "-p", "no:cacheprovider")
    assert result.ret == 0, result.stdout.str()[-3000:]
    result.assert_outcomes(passed=1)
