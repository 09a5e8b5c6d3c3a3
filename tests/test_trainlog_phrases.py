"""Each framework's own wording of a start, a resume (checkpoint load), a save, a skipped and a NaN step.

The fixtures named here are hand-made in the real formats (fixtures/trainlogs/README.md); the
inline lines are the frameworks' logging calls with invented values.
"""

from __future__ import annotations

import pytest

from acceptance.cmd.parse_trainlog import read_trainlog
from acceptance.tools.trainlog import parse
from tests.shared import FIXTURES

TL = FIXTURES / "trainlogs"
MEGATRON_RECORD = (
    " [2025-03-20 10:22:37] iteration {step:8d}/    2000 | consumed samples: {samples:12d} | "
    "elapsed time per iteration (ms): 1200.0 | learning rate: 3.0E-04 | global batch size:   128 | "
    "lm loss: 2.5E+00 | loss scale: 1.0 | number of skipped iterations:   0 | number of nan iterations:   0 |\n"
)


def _events(log: object) -> list[tuple[str, int | None]]:
    return [(e.type, e.step) for e in log.events]  # type: ignore[attr-defined]


def _megatron(*steps: int) -> list[str]:
    return [MEGATRON_RECORD.format(step=s, samples=s * 128) for s in steps]


def test_a_fresh_torchtitan_run_is_a_start_never_a_resume_at_step_0() -> None:
    """`Training starts at step 1.` after a step-0 seed checkpoint: the run starts, nothing is restored."""
    log = read_trainlog(TL / "torchtitan_fresh_start.log")
    assert _events(log) == [("start", 1), ("checkpoint_save", 10), ("checkpoint_save", 20)]
    assert log.frame()["step"].tolist() == list(range(1, 21))


def test_torchtitan_training_starts_after_a_load_is_the_load_s_resume_only() -> None:
    log = read_trainlog(TL / "torchtitan_resume.log")
    assert [e for e in _events(log) if e[0] in ("resume", "start")] == [("resume", 10)]


def test_torchtitan_training_starts_alone_past_step_1_is_a_resume() -> None:
    """Without the load line (a filtered log), `Training starts at step 11.` still says step 10 was restored."""
    lines = [
        "[rank0]:[titan] 2025-04-22 09:12:12,431 - root - INFO - Training starts at step 11.\n",
        "[rank0]:[titan] 2025-04-22 09:12:24,000 - root - INFO - step: 11  loss:  7.8800  mfu: 43.50%\n",
    ]
    assert _events(parse(lines)) == [("resume", 10)]


def test_megatron_start_from_random_load_and_saves() -> None:
    fresh = [
        "WARNING: could not find the metadata file /ckpt/latest_checkpointed_iteration.txt \n",
        "    will not load any checkpoints and will start from random\n",
        *_megatron(1, 2),
        "saving checkpoint at iteration       2 to /ckpt in torch_dist format\n",
        "  successfully saved checkpoint from iteration       2 to /ckpt [ t 1/4, p 1/1 ]\n",
    ]
    assert _events(parse(fresh)) == [("start", None), ("checkpoint_save", 2)]
    resumed = [
        " loading distributed checkpoint from /ckpt at iteration 2\n",
        "  successfully loaded checkpoint from /ckpt [ t 1/4, p 1/1 ] at iteration 2\n",
        *_megatron(3),
    ]
    assert _events(parse(resumed)) == [("resume", 2)]


def test_megatron_skipped_and_nan_iterations() -> None:
    line = MEGATRON_RECORD.format(step=7, samples=896)
    bad = line.replace("skipped iterations:   0", "skipped iterations:   1").replace(
        "nan iterations:   0", "nan iterations:   1"
    )
    assert _events(parse([*_megatron(6), bad])) == [("nan", 7), ("skip", 7)]


def test_hf_trainer_resume_and_save_lines() -> None:
    """`Continuing training from global step 1000` was not recognised before (no event hint matched it)."""
    log = read_trainlog(TL / "hf_trainer_console_resume_info.log")
    assert _events(log) == [("resume", 1000), ("checkpoint_save", 1500)]


def test_deepspeed_overflow_lines_are_skips_the_counter_does_not_count_again() -> None:
    log = read_trainlog(TL / "deepspeed_engine_fp16_overflow.log")
    assert _events(log) == [("skip", None)] * 3
    counted_only = [
        line
        for line in (TL / "deepspeed_engine_fp16_overflow.log").read_text().splitlines(keepends=True)
        if "OVERFLOW" not in line
    ]
    assert _events(parse(counted_only)) == [("skip", 10), ("skip", 20)]


@pytest.mark.parametrize(
    ("restore", "expected"),
    [
        ("Restored all states from the checkpoint at /r/checkpoints/model--step=99-consumed_samples=3200.0.ckpt", 99),
        ("Restored all states from the checkpoint at /r/checkpoints/last.ckpt", 99),  # the next record says
    ],
)
def test_lightning_and_nemo2_restore_and_save(restore: str, expected: int) -> None:
    record = (
        "Training epoch 0, iteration {i}/199 | lr: 3e-06 | global_batch_size: 32 | global_step: {i} | "
        "reduced_train_loss: 10.9800 | train_step_timing in s: 0.70 | consumed_samples: {s}\n"
    )
    lines = [
        "Restoring states from the checkpoint path at /r/checkpoints/x.ckpt\n",
        restore + "\n",
        record.format(i=100, s=3232),
        "Epoch 0, global step 100: 'reduced_train_loss' reached 10.98000 (best 10.98000), saving model to "
        "'/r/checkpoints/model--step=100.ckpt' as top 1\n",
    ]
    assert _events(parse(lines)) == [("resume", expected), ("checkpoint_save", 100)]


def test_nanogpt_start_resume_save_and_nan() -> None:
    fresh = read_trainlog(TL / "nanogpt.log")
    assert _events(fresh)[0] == ("start", None)
    assert ("nan", 29) in _events(fresh)
    resumed = [
        "Resuming training from out\n",
        "iter 2000: loss 1.2000, time 120.00ms, mfu 7.00%\n",
        "saving checkpoint to out\n",
    ]
    assert _events(parse(resumed)) == [("resume", 1999), ("checkpoint_save", 2000)]
