"""Fuzzing as part of the tests (issue 19, part 4): a bounded run of every fuzz target, and its crashes.

With atheris installed (x86_64 wheels; `pyproject.toml` test extra) each target of
`tests/fuzz/targets.py` runs coverage-guided for a fixed number of inputs with a fixed seed, in
its own process (libFuzzer exits when done); without it, hypothesis drives the same targets with
structured mutations of the same seeds (cuts, splices, byte flips). Every input that once broke a
target is kept under fixtures/fuzz/TARGET/ and replayed. The long run is `nox -s fuzz`.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fuzz.targets import TARGETS, seeds
from tests.shared import FIXTURES, ROOT
from tests.suite_run import module_items

HAVE_ATHERIS = importlib.util.find_spec("atheris") is not None
#: inputs per target in the test run (each target's seeds come first), about ten seconds each
RUNS = {
    "nccl_text": 600,
    "nccl_json": 500,
    "dcgm_output": 3000,
    "trainlog_output": 500,
    "profile": 600,
    "baseline": 2000,
    "manifest": 2000,
    "signature": 5000,
}
CRASHES = sorted((FIXTURES / "fuzz").glob("*/crash-*"))


@pytest.mark.parametrize("crash", CRASHES, ids=[f"{p.parent.name}/{p.name[:14]}" for p in CRASHES])
def test_every_input_that_once_broke_a_target_now_passes(crash: Path) -> None:
    TARGETS[crash.parent.name](crash.read_bytes())


@dataclass(frozen=True)
class Fuzzed:
    """A bounded coverage-guided run of one target: its output and the crash files it left."""

    returncode: int
    output: str
    crashes: list[Path]


def fuzz(target: str, folder: Path) -> Fuzzed:
    """Run `target` for its number of inputs (``RUNS``) with a fixed seed, in a process of its own."""
    corpus, scratch = folder / "corpus", folder / "scratch"
    corpus.mkdir(parents=True)
    scratch.mkdir()
    for i, seed in enumerate(seeds(target)):
        (corpus / f"seed-{i:03d}").write_bytes(seed)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.fuzz",
            target,
            f"-runs={RUNS[target]}",
            "-seed=19",
            "-print_final_stats=1",
            f"-artifact_prefix={folder}/",
            "-max_total_time=120",
            str(corpus),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "ACCEPTANCE_FUZZ_SCRATCH": str(scratch)},
        timeout=300,
        check=False,
    )
    return Fuzzed(done.returncode, done.stdout + done.stderr, sorted(folder.glob("crash-*")))


#: targets fuzzed at once: each run is one busy process, and the module sits where the other worker mostly waits
#: (one after the other, the eight took 42 s of a full run's middle with the CPU 60 % busy)
FUZZED_AT_ONCE = 2


@pytest.fixture(scope="module")
def fuzzed(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Future[Fuzzed]]]:
    """The bounded run of each target the module's selected tests name, two at a time from the first of them on."""
    base = tmp_path_factory.mktemp("fuzz")
    wanted = sorted({item.callspec.params["target"] for item in module_items(request)
                     if "fuzzed" in getattr(item, "fixturenames", ())})  # fmt: skip
    with ThreadPoolExecutor(FUZZED_AT_ONCE, thread_name_prefix="fuzz") as pool:
        yield {target: pool.submit(fuzz, target, base / target) for target in wanted}


@pytest.mark.heavy
@pytest.mark.skipif(not HAVE_ATHERIS, reason="atheris is not installed (hypothesis drives the targets instead)")
@pytest.mark.parametrize("target", sorted(TARGETS))
def test_a_bounded_coverage_guided_run_finds_no_crash(
    target: str, fuzzed: dict[str, Future[Fuzzed]], record_property: pytest.RecordProperty
) -> None:
    done = fuzzed[target].result()
    output = done.output
    assert not done.crashes, f"{target}: {done.crashes}\n{output[-4000:]}"
    assert done.returncode == 0, f"{target}: exit {done.returncode}\n{output[-4000:]}"
    executed = re.search(r"stat::number_of_executed_units:\s*(\d+)", output)
    rate = re.search(r"stat::average_exec_per_sec:\s*(\d+)", output)
    assert executed is not None
    assert int(executed.group(1)) >= RUNS[target]
    record_property("executions", int(executed.group(1)))
    record_property("exec_per_sec", int(rate.group(1)) if rate else None)
    print(f"{target}: {executed.group(1)} inputs, {rate.group(1) if rate else '?'} exec/s, no crash")


@st.composite
def _mutated(draw: st.DrawFn, target: str) -> bytes:
    data = bytearray(draw(st.sampled_from(seeds(target))))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(data)))
        kind = draw(st.sampled_from(["cut", "splice", "flip", "drop"]))
        if kind == "cut":
            del data[at:]
        elif kind == "splice":
            data[at:at] = draw(st.binary(max_size=24))
        elif kind == "flip" and at < len(data):
            data[at] ^= draw(st.integers(1, 255))
        else:
            del data[at : at + draw(st.integers(1, 200))]
    return bytes(data)


@pytest.mark.heavy
@pytest.mark.skipif(HAVE_ATHERIS, reason="atheris runs the targets coverage-guided")
@pytest.mark.parametrize("target", sorted(TARGETS))
def test_structured_mutations_of_the_seeds_break_no_target(target: str) -> None:
    @settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
    @given(_mutated(target))
    def run(data: bytes) -> None:
        TARGETS[target](data)

    run()
