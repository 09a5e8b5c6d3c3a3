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
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fuzz.targets import TARGETS, seeds
from tests.shared import FIXTURES, ROOT

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


@pytest.mark.heavy
@pytest.mark.skipif(not HAVE_ATHERIS, reason="atheris is not installed (hypothesis drives the targets instead)")
@pytest.mark.parametrize("target", sorted(TARGETS))
def test_a_bounded_coverage_guided_run_finds_no_crash(
    target: str, tmp_path: Path, record_property: pytest.RecordProperty
) -> None:
    corpus, scratch = tmp_path / "corpus", tmp_path / "scratch"
    corpus.mkdir()
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
            f"-artifact_prefix={tmp_path}/",
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
    output = done.stdout + done.stderr
    crashes = sorted(tmp_path.glob("crash-*"))
    assert not crashes, f"{target}: {crashes}\n{output[-4000:]}"
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
