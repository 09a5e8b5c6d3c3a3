"""Simulated Megatron job: step-time statistics, the loss curve across a restore, and faults."""

from __future__ import annotations

import re
import statistics

import numpy as np
import pytest

from acceptance.errors import UsageError
from acceptance.sim.model.training import parse_train_args
from acceptance.tools import trainlog
from tests.shared import CORPUS, needs_shared
from tests.test_sim_support import hosts_for, make_runner, node_names

PRE = ["python", "pretrain_gpt.py", "--train-iters", "1200", "--log-interval", "1", "--save-interval", "200",
       "--eval-interval", "500"]  # fmt: skip
RESUME = [*PRE, "--load", "/ckpt", "--ckpt-step", "1000", "--exit-interval", "1100"]


def _train(argv: list[str], faults: list[str] | None = None, seed: int = 1) -> tuple[str, int]:
    runner = make_runner(faults or [], seed=seed)
    result = runner.run(["mpirun", "-np", "128", *argv], {}, "launcher", hosts_for(node_names(16)))
    return result.stdout, result.exit_code


def _steps(text: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    frame = trainlog.parse(text.splitlines(keepends=True)).steps
    return frame["step"].to_numpy(), frame["step_time_s"].to_numpy(), frame["loss"].to_numpy()


@needs_shared
def test_iteration_line_has_megatrons_field_layout() -> None:
    text, code = _train(PRE)
    assert code == 0
    line = next(line for line in text.splitlines() if "iteration      300/" in line)
    real = (CORPUS / "trainlogs" / "megatron_deepspeed_bloom176b_loss_spike_31216.log").read_text().splitlines()[0]
    assert re.search(r" iteration +\d+/ +\d+ \| consumed samples: +\d+ \|", real)
    assert re.fullmatch(
        r" \[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\] iteration      300/    1200 \|"
        r" consumed samples:       307200 \|"
        r" elapsed time per iteration \(ms\): \d+\.\d \| throughput per GPU \(TFLOP/s/GPU\): \d+\.\d \|"
        r" learning rate: \d\.\d{6}E[-+]\d\d \| global batch size:  1024 \| lm loss: \d\.\d{6}E\+00 \|"
        r" loss scale: 1\.0 \| grad norm: \d+\.\d{3} \| number of skipped iterations:   0 \|"
        r" number of nan iterations:   0 \|",
        line,
    )
    assert text.startswith("SIMULATED (recovery-acceptance sim, seed 1)")


def test_pre_incident_log_step_time_warmup_outliers_and_checkpoints() -> None:
    text, _ = _train(PRE)
    steps, times, loss = _steps(text)
    assert list(steps) == list(range(1, 1201))
    steady = np.delete(times, [0, 1, 2, 200, 400, 500, 600, 800, 1000])
    assert 1.15 < float(np.median(steady)) < 1.25
    assert 0.008 < float(np.std(steady) / np.mean(steady)) < 0.02
    assert times[0] > 8 * np.median(steady)
    assert times[200] > np.median(steady) + 3  # iteration after the save at 200
    assert loss[0] > 10
    assert loss[-1] < 3.5
    assert loss[-1] < loss[500]
    assert [e.step for e in trainlog.parse(text.splitlines(keepends=True)).events_of("checkpoint_save")] == [
        200,
        400,
        600,
        800,
        1000,
        1200,
    ]


def test_resume_continues_the_same_loss_curve() -> None:
    pre, _ = _train(PRE, seed=3)
    resumed, code = _train(RESUME, seed=3)
    assert code == 0
    assert " loading checkpoint from /ckpt at iteration 1000" in resumed.splitlines()
    _, _, l1 = _steps(pre)
    s2, _, l2 = _steps(resumed)
    assert list(s2) == list(range(1001, 1101))
    ratio = l2 / l1[1000:1100]
    assert float(np.max(np.abs(np.log(ratio)))) < 0.01
    assert trainlog.parse(resumed.splitlines(keepends=True)).events_of("resume")[0].step == 1000


def test_bad_restore_jumps_the_loss_after_the_restored_step() -> None:
    pre, _ = _train(PRE)
    bad, _ = _train(RESUME, ["bad-restore"])
    l1 = _steps(pre)[2][1000:1020]
    l2 = _steps(bad)[2][:20]
    assert float(np.median(l2 / l1)) > 1.2


def test_bad_restore_step_off_resumes_at_the_wrong_iteration() -> None:
    runner = make_runner()
    from acceptance.sim.model.faults import FaultSet
    from acceptance.sim.model.faultspec import parse_fault

    runner.faults = FaultSet((parse_fault("bad-restore", runner.cluster, {"mode": "step-off"}),))
    text = runner.run(["mpirun", *RESUME], {}, "l", hosts_for(node_names(16))).stdout
    assert _steps(text)[0][0] == 1002


def test_throttle_raises_step_time_and_xid_kills_the_job() -> None:
    healthy = statistics.median(_steps(_train(PRE)[0])[1][10:190])
    slow = statistics.median(_steps(_train(PRE, ["gpu-throttle@sim-node-05:2"])[0])[1][10:190])
    assert slow > 1.08 * healthy
    text, code = _train(PRE, ["gpu-xid@sim-node-03:5"])
    assert code != 0
    assert "NCCL error" in text
    assert "iteration" not in text


def test_run_to_run_variation_between_seeds_is_small_but_present() -> None:
    medians = [statistics.median(_steps(_train([*PRE[:3], "300"], seed=s)[0])[1][10:]) for s in range(8)]
    assert 0.001 < statistics.stdev(medians) / statistics.mean(medians) < 0.02


def test_bad_flags_are_usage_errors() -> None:
    with pytest.raises(UsageError, match="ckpt-step"):
        parse_train_args(["pretrain_gpt.py", "--train-iters", "100", "--ckpt-step", "500"])
    assert parse_train_args(["pretrain_gpt.py", "--use-mcore-models", "--train-iters=50"]).train_iters == 50
