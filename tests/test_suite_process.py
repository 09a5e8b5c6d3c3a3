"""tests/suite_process.py: a run from the fork server is what ``python -m pytest`` in a process of its own is."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.shared import ROOT
from tests.suite_process import fresh_process_wanted, own_session_env, run_pytest, runpytest

pytestmark = pytest.mark.heavy

PROBE = """
import os, sys

def test_where_it_runs(pytestconfig):
    print("\\ncwd", os.getcwd())  # on a line of its own, after the file's name
    print("probe", os.environ.get("RA_PROBE"))
    print("plugin", pytestconfig.pluginmanager.has_plugin("hypothesispytest"))
    print("path0", sys.path[0])
    print("to stderr", file=sys.stderr)

def test_that_fails():
    assert 1 + 1 == 3
"""


def _run(folder: Path, fresh: bool) -> tuple[int, list[str], str]:
    folder.mkdir()
    (folder / "test_probe.py").write_text(PROBE)
    env = {**os.environ, "RA_PROBE": "from-the-caller", "RA_TESTS_FRESH_PROCESS": "1" if fresh else "0"}
    done = run_pytest(["-s", "-p", "no:cacheprovider", "-p", "no:randomly", "test_probe.py"], folder, env=env)
    said = [line for line in done.stdout.splitlines() if line.startswith(("cwd ", "probe ", "plugin ", "path0 "))]
    return done.returncode, said, done.stderr


def test_a_forked_run_has_the_status_folder_environment_and_output_of_a_fresh_one(tmp_path: Path) -> None:
    forked, fresh = _run(tmp_path / "forked", fresh=False), _run(tmp_path / "fresh", fresh=True)
    assert forked[0] == fresh[0] == pytest.ExitCode.TESTS_FAILED
    # hypothesis's plugin is the test environment's, not the user's: a run goes without it
    assert forked[1] == [f"cwd {tmp_path / 'forked'}", "probe from-the-caller", "plugin False",
                         f"path0 {tmp_path / 'forked'}"]  # fmt: skip
    assert fresh[1] == [line.replace(str(tmp_path / "forked"), str(tmp_path / "fresh")) for line in forked[1]]
    assert "to stderr" in forked[2]
    assert "to stderr" in fresh[2]
    assert (tmp_path / "forked" / "pytest-stdout.txt").read_text().count("1 failed, 1 passed") == 1


def test_a_run_past_its_timeout_is_killed_and_raises(tmp_path: Path) -> None:
    (tmp_path / "test_slow.py").write_text(
        "import os, time\n\ndef test_slow():\n    open('pid', 'w').write(str(os.getpid()))\n    time.sleep(60)\n"
    )
    env = {**os.environ, "RA_TESTS_FRESH_PROCESS": "0"}
    started = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        run_pytest(["-p", "no:cacheprovider", "test_slow.py"], tmp_path, env=env, timeout=5)
    assert time.monotonic() - started < 30
    pid = int((tmp_path / "pid").read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_pytesters_runs_keep_a_temp_folder_each(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_one="def test_tmp(tmp_path):\n    print('\\ntmp', tmp_path)\n")
    first = runpytest(pytester, "-s", "-p", "no:cacheprovider")
    second = runpytest(pytester, "-s", "-p", "no:cacheprovider")
    assert first.ret == second.ret == 0
    paths = [next(line for line in r.outlines if line.startswith("tmp ")) for r in (first, second)]
    assert str(pytester.path / "runpytest-0") in paths[0]
    assert str(pytester.path / "runpytest-1") in paths[1]


def test_coverage_or_the_switch_asks_for_a_fresh_interpreter() -> None:
    assert fresh_process_wanted({"COV_CORE_SOURCE": "acceptance"})
    assert fresh_process_wanted({"COVERAGE_PROCESS_START": "pyproject.toml"})
    assert fresh_process_wanted({"RA_TESTS_FRESH_PROCESS": "1"})
    assert not fresh_process_wanted({"RA_TESTS_FRESH_PROCESS": "0", "PATH": "/usr/bin"})


def test_a_session_that_used_the_fork_server_ends_without_a_traceback_and_leaves_no_temp_folder() -> None:
    """A session run without xdist (one module, as a developer runs it) starts the fork server in its own process:
    its session temp folder was removed before multiprocessing's exit removed the server's folder inside it,
    which printed a FileNotFoundError traceback after the summary."""
    with tempfile.TemporaryDirectory(prefix="tb-") as tmp:  # short: the server's socket path must fit AF_UNIX
        env = {**own_session_env(Path(tmp)), "RA_TESTS_FRESH_PROCESS": "0"}
        test = "tests/test_suite_process.py::test_pytesters_runs_keep_a_temp_folder_each"
        done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider", test],
                              cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
        said = done.stdout + done.stderr
        assert done.returncode == 0, said[-3000:]
        assert "1 passed" in done.stdout, said[-3000:]
        assert "Traceback" not in said, said[-3000:]
        assert not list(Path(tmp).glob("ra-tests-tmp-*")), said[-3000:]
