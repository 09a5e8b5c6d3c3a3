"""Running the acceptance suite end to end on the simulated cluster, from tests."""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import json
import os
import shutil
import threading
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.suite_process import run_pytest, runpytest

ROOT = Path(__file__).resolve().parents[1]
SUITE = ROOT / "acceptance"
SCENARIOS = ROOT / "fixtures" / "scenarios"


#: the shipped sim profile's pace: 15 simulated minutes of DCGM r3 take 1.8 s of wall time
SHIPPED_TIME_SCALE = 0.002
#: the pace of test runs that judge verdicts, not timing: a whole suite run waits ~0.5 s instead of ~12 s
#: (the emulator's start, the workers' imports and the judging stay); tests of streaming, signals and deadlines
#: pass SHIPPED_TIME_SCALE (or their own) so that a job still runs long enough to be stopped
TEST_TIME_SCALE = 0.0001


def sim_profile_text(cluster: str = "sim", time_scale: float = TEST_TIME_SCALE) -> str:
    """The shipped sim profile, renamed, with the scenario as an absolute path (tests swap it for another)."""
    text = (ROOT / "baselines" / "sim" / "cluster.yaml").read_text()
    assert "scenario: healthy-16 " in text, "the shipped sim profile names its scenario"
    text = text.replace("scenario: healthy-16 ", f"scenario: {SCENARIOS}/healthy-16.yaml ")
    shipped = f"time_scale: {SHIPPED_TIME_SCALE} "
    assert shipped in text, "the shipped sim profile names its time scale"
    text = text.replace(shipped, f"time_scale: {time_scale} ")
    return text.replace("cluster: sim", f"cluster: {cluster}")


def sim_cluster_folder(base: Path, with_baseline: bool = True, time_scale: float = TEST_TIME_SCALE) -> Path:
    """A copy of baselines/sim (profile with an absolute scenario path, and its baseline) at `time_scale`."""
    folder = base / "baselines" / "sim"
    if folder.is_dir():
        return folder
    folder.mkdir(parents=True)
    (folder / "cluster.yaml").write_text(sim_profile_text(time_scale=time_scale))
    copy_agreement(folder, with_baseline=with_baseline)
    return folder


DEMO_KEY = ROOT / "fixtures" / "keys" / "sim-baseline-demo-key"


def demo_key(folder: Path) -> Path:
    """A usable copy of the simulator's demo signing key (git does not keep a private key's 0600)."""
    key = folder / "sim-baseline-demo-key"
    shutil.copy(DEMO_KEY, key)
    key.chmod(0o600)
    return key


def sign_as_demo(path: Path) -> Path:
    """Sign a simulated baseline with the simulator's demo key (fixtures/keys/README.md); the .sig path."""
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        key = demo_key(Path(tmp))
        subprocess.run(["ssh-keygen", "-q", "-Y", "sign", "-n", "recovery-acceptance", "-f", str(key), str(path)],
                       check=True, capture_output=True)  # fmt: skip
    return path.with_name(path.name + ".sig")


CUSTOMER_KEY = ROOT / "fixtures" / "keys" / "sim-customer-demo-key"


def countersign_as_demo(path: Path) -> Path:
    """Countersign a simulated baseline as the simulated customer (stock ssh-keygen); the .customer.sig path."""
    import subprocess
    import tempfile

    target = path.with_name(path.name + ".customer.sig")
    target.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        key, copy = Path(tmp) / "customer-key", Path(tmp) / path.name
        shutil.copy(CUSTOMER_KEY, key)
        key.chmod(0o600)
        shutil.copy(path, copy)
        subprocess.run(["ssh-keygen", "-q", "-Y", "sign", "-n", "recovery-acceptance", "-f", str(key), str(copy)],
                       check=True, capture_output=True)  # fmt: skip
        shutil.copy(copy.with_name(copy.name + ".sig"), target)
    return target


def copy_agreement(folder: Path, with_baseline: bool = True, shipped_cluster: str = "sim") -> None:
    """The shipped baseline of `shipped_cluster` (sim, sim-ssh), its signature and allowed signers, into `folder`."""
    shipped = ROOT / "baselines" / shipped_cluster
    shutil.copy(shipped / "allowed_signers", folder / "allowed_signers")
    if with_baseline:
        for baseline in shipped.glob("handover-*.json*"):
            shutil.copy(baseline, folder / baseline.name)
        _as_own_agreement(folder)


def read_yaml(path: Path) -> Any:
    """A test's own read of a YAML file it wrote or copied, with libyaml where PyYAML has it (the sim profile:
    21 ms pure Python, 2 ms with libyaml). The harness reads agreements with its own loader (acceptance.yamlsrc),
    which refuses aliases and says where a problem stands."""
    import yaml

    return yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def _as_own_agreement(folder: Path) -> None:
    """A copied baseline names the shipped cluster; under another profile name (or provider cluster id) it
    is another cluster's agreement and refused, so the test's cluster gets it as its own, signed again."""
    profile = folder / "cluster.yaml"
    if not profile.is_file():
        return
    data = read_yaml(profile)
    name, cluster_id = data["cluster"], (data.get("provider") or {}).get("cluster_id")
    for path in folder.glob("handover-*.json"):
        doc = json.loads(path.read_text())
        identity = doc.get("identity") or {}
        if doc["cluster"] == name and identity.get("provider_cluster_id") == cluster_id:
            continue
        doc["cluster"] = name
        doc["identity"] = {**identity, "cluster": name, "provider_cluster_id": cluster_id}
        path.write_text(json.dumps(doc, indent=1) + "\n")
        path.with_name(path.name + ".sig").unlink(missing_ok=True)
        sign_as_demo(path)
        if path.with_name(path.name + ".customer.sig").exists():
            countersign_as_demo(path)


@dataclass(frozen=True)
class SuiteRun:
    result: pytest.RunResult
    junit: Path
    report_dir: Path

    @property
    def outcomes(self) -> dict[str, str]:
        """test name (without module) → passed | failed | skipped | error, from the junit file."""
        out = {}
        for case in ET.parse(self.junit).getroot().iter("testcase"):
            name = case.get("name", "")
            if case.find("failure") is not None:
                out[name] = "failed"
            elif case.find("error") is not None:
                out[name] = "error"
            elif case.find("skipped") is not None:
                out[name] = "skipped"
            else:
                out[name] = "passed"
        return out

    def message(self, name: str) -> str:
        for case in ET.parse(self.junit).getroot().iter("testcase"):
            if case.get("name") == name:
                for tag in ("failure", "error", "skipped"):
                    found = case.find(tag)
                    if found is not None:
                        return (found.get("message") or "") + "\n" + (found.text or "")
        return ""

    def properties(self, name: str) -> dict[str, str]:
        for case in ET.parse(self.junit).getroot().iter("testcase"):
            if case.get("name") == name:
                return {p.get("name", ""): p.get("value", "") for p in case.iter("property")}
        return {}

    def suite_properties(self) -> dict[str, str]:
        """The junit testsuite's properties (provenance)."""
        suite = ET.parse(self.junit).getroot().find("testsuite")
        assert suite is not None
        props = suite.find("properties")
        return {p.get("name", ""): p.get("value", "") for p in (props if props is not None else ())}

    def objects_created(self) -> list[str]:
        """kind/name of every manifest the run submitted, from the evidence folder."""
        names = []
        for path in sorted((self.report_dir / "manifests").rglob("*.yaml")):
            import yaml

            for doc in yaml.safe_load_all(path.read_text()):
                if doc:
                    names.append(f"{doc['kind']}/{doc['metadata']['name']}")
        return sorted(names)


def suite_args(cluster: str, baselines: Path, report: Path, junit: Path, *args: str) -> list[str]:
    """pytest's arguments for an unsigned suite run on `cluster`, judged against the baselines under
    `baselines`, its report folder `report` and junit file `junit`."""
    return [str(SUITE), f"--cluster={cluster}", f"--baselines-dir={baselines}", f"--report-dir={report}",
            f"--junitxml={junit}", "--no-sign", "-p", "no:cacheprovider", *args]  # fmt: skip


def run_suite(pytester: pytest.Pytester, *args: str, baselines: Path | None = None) -> SuiteRun:
    base = baselines or sim_cluster_folder(pytester.path).parent
    runs = sum(1 for _ in pytester.path.glob("report*"))
    report_dir = pytester.path / ("report" if not runs else f"report-{runs + 1}")  # a report folder is never reused
    junit = pytester.path / "junit.xml"
    # the shipped baseline is signed and checked; ones recorded here are made with --no-sign
    result = runpytest(pytester, *suite_args("sim", base, report_dir, junit, "--allow-unsigned-baseline", *args))
    return SuiteRun(result, junit, report_dir)


def session_folder(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    """A folder every xdist worker of this session sees (a worker's temp folder is a child of the session's),
    so a module's shared runs are made once per session, not once per worker."""
    base = tmp_path_factory.getbasetemp()
    return (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / name


@contextmanager
def exclusive(lock: Path) -> Iterator[None]:
    """Hold `lock` (an flock, the file made if missing): the workers of one session take turns."""
    lock.parent.mkdir(parents=True, exist_ok=True)
    with lock.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


#: how many of a worker's suite runs are made at once ahead of their tests: a run waits most of its time (on
#: the simulated pace, sshd, slurmctld, the emulator's watches), so three side by side take little longer than one
AHEAD = 3


def made_once(done: Path, make: Callable[[], bytes]) -> bytes:
    """The bytes of `done`, which `make()` gives the first worker or thread of the session to ask (the others
    wait on the lock beside `done`'s folder, then read it back). A `make` that raises writes nothing: the next
    one to ask makes it again."""
    folder = done.parent
    with exclusive(folder.with_name(folder.name + ".lock")):
        if not done.is_file():
            folder.mkdir(parents=True, exist_ok=True)
            done.write_bytes(make())
        return done.read_bytes()


def module_items(request: pytest.FixtureRequest) -> list[pytest.Item]:
    """The items of the requesting module that this session runs (after -k, -m and deselection)."""
    return [item for item in request.session.items if getattr(item, "module", None) is request.module]


def marked_runs(request: pytest.FixtureRequest) -> list[tuple[str | None, tuple[str, ...]]]:
    """(variant or None, arguments) of the `suite_run` marks of the module's selected tests, once each, in order."""
    return list(dict.fromkeys((mark.kwargs.get("variant"), tuple(mark.args)) for item in module_items(request)
                              for mark in item.iter_markers("suite_run")))  # fmt: skip


def run_of(runs: Any, variant: str | None, args: tuple[str, ...]) -> Any:
    """The run with `args` from `runs` (SimRuns, SuiteRuns), or from its variant ``runs.variants[variant]``."""
    return (runs.variants[variant] if variant else runs).get(*args)


def fault_runs(cases: Sequence[tuple[str, str]]) -> list[object]:
    """(fault, expected) parameters, each marked with its run (``--sim-fault=FAULT``) and named by its fault."""
    return [pytest.param(fault, expected, marks=pytest.mark.suite_run(f"--sim-fault={fault}"), id=fault)
            for fault, expected in cases]  # fmt: skip


@contextmanager
def made_ahead(calls: Iterable[Callable[[], object]], parallel: int = AHEAD) -> Iterator[None]:
    """Each of `calls` (a run's maker: `made_once` inside, so each run is made once per session, whoever asks
    first) on `parallel` threads, while the module's tests go on: a test then finds its run made, or waits on
    the run's lock while it is made. A call that fails is left to the test that asks for the run, which makes
    it again and sees the failure. At the end of the module the calls not started are dropped and those
    going are waited for."""
    pool = _started(calls, parallel)
    try:
        yield
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _started(calls: Iterable[Callable[[], object]], parallel: int = AHEAD) -> ThreadPoolExecutor:
    """A pool running each of `calls`, `parallel` at a time (what fails is left to the test that asks again)."""
    pool = ThreadPoolExecutor(parallel, thread_name_prefix="suite-run-ahead")
    for call in calls:
        pool.submit(call)
    return pool


def marked_ahead(request: pytest.FixtureRequest, runs: Any) -> contextlib.AbstractContextManager[None]:
    """`made_ahead` for the runs the `suite_run` marks of the module's selected tests name, from `runs`."""
    return made_ahead(functools.partial(run_of, runs, variant, args) for variant, args in marked_runs(request))


class Ahead:
    """A module's runs made from the module's first test on, on a thread of their own: `make()` (which records
    the baseline the runs are judged against, a run itself), then the runs the module's `suite_run` marks name,
    `AHEAD` at a time, while the module's tests that need no run (the backend's own, placed first) go on.
    `runs()` waits for `make()` and gives its result, or raises what it raised."""

    def __init__(self, request: pytest.FixtureRequest, make: Callable[[], Any]) -> None:
        self._ready = threading.Event()
        self._made: Any = None
        self._failed: BaseException | None = None
        self._pool: ThreadPoolExecutor | None = None
        marked = marked_runs(request)
        self._thread = threading.Thread(target=self._work, args=(make, marked), name="suite-runs-ahead", daemon=True)
        self._thread.start()

    def _work(self, make: Callable[[], Any], marked: list[tuple[str | None, tuple[str, ...]]]) -> None:
        try:
            self._made = make()
        except BaseException as exc:  # the tests that ask for the runs raise it
            self._failed = exc
            return
        finally:
            self._ready.set()
        self._pool = _started(functools.partial(run_of, self._made, variant, args) for variant, args in marked)

    def runs(self, timeout: float = 900) -> Any:
        if not self._ready.wait(timeout):
            raise AssertionError(f"the module's runs were not ready within {timeout:.0f} s")
        if self._failed is not None:
            raise self._failed
        return self._made

    def join(self, timeout: float = 900) -> None:
        """At the module's end: those not started are dropped, those going waited for (each bounded by its own
        timeout)."""
        self._thread.join(timeout)
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)


def run_key(args: tuple[str, ...]) -> str:
    """A folder name for a run made with `args`: the same for every worker."""
    return "run-" + hashlib.sha256("\0".join(args).encode()).hexdigest()[:12]


class SimRuns:
    """A test module's suite runs on the simulated cluster, each made once per session on demand and shared by
    the tests that judge the same run, whichever xdist worker runs them (`base` from `session_folder`)."""

    def __init__(self, base: Path) -> None:
        self.base = base
        with exclusive(base.with_name(base.name + ".lock")):
            self.baselines = sim_cluster_folder(base).parent

    def get(self, *args: str) -> SuiteRun:
        """The run with `args`: made by the first worker that asks, read back from its folder by the others."""
        folder = self.base / run_key(args)
        said = json.loads(made_once(folder / "result.json", lambda: self._run(folder, args)))
        result = pytest.RunResult(said["ret"], said["stdout"], said["stderr"], said["duration"])
        return SuiteRun(result, folder / "junit.xml", folder / "report")

    def _run(self, folder: Path, args: tuple[str, ...]) -> bytes:
        folder.mkdir(exist_ok=True)  # a worker that died mid-run leaves it without result.json: run again
        junit, report_dir = folder / "junit.xml", folder / f"report-{os.getpid()}"
        argv = suite_args("sim", self.baselines, report_dir, junit, "--allow-unsigned-baseline", *args)
        finished = run_pytest(argv, folder, timeout=300)
        if report_dir.is_dir():
            report_dir.rename(folder / "report")
        said = {"ret": finished.returncode, "stdout": finished.stdout.splitlines(),
                "stderr": finished.stderr.splitlines(), "duration": finished.duration}  # fmt: skip
        return json.dumps(said).encode()


def read_json(path: Path) -> object:
    return json.loads(path.read_text())
