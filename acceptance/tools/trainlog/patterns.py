"""Patterns of the line-oriented training-log formats: record starts, events, fields."""

from __future__ import annotations

import re

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
PREFIX = re.compile(r"^\s*(?:>\s?)?(?:\[[A-Za-z_]*?(\d+)\]:|(\d+):\s|\[[Rr]ank\s?(\d+)\]:?\s)")

# Record starts, one per format.
MEGATRON = re.compile(r"iteration\s+(\d+)/\s*(\d+)\s*\|")
NEMO2 = re.compile(r"Training epoch (\d+), iteration (\d+)/(\d+)\s*\|")
TITAN = re.compile(r"step:\s*(\d+)(?:/\d+\s*=\s*[\d.]+%)?\s+loss:\s*([-+\w.]+)")  # newer: `step: 640/644 = 99.3789%`
NANOGPT = re.compile(r"iter (\d+): loss ([-+\w.]+), time ([\d.]+)ms")
DS_STEP = re.compile(r"step=(\d+), skipped=(\d+), lr=\[([^\],]*)")
DS_TIMER = re.compile(
    r"\[timer\.py:\d+:stop\] (?:epoch=\d+/micro_step=\d+/global_step=(\d+)|\d+/(\d+)), "
    r"(?:RunningAvgSamplesPerSec=[\d.]+, CurrSamplesPerSec=([\d.]+)|SamplesPerSec=([\d.]+))"
)
HF_DICT = re.compile(r"\{\s*['‘’\"](?:loss|eval_loss|train_runtime)['‘’\"]\s*:")
STRAGGLER = re.compile(r"Mn(\w+)/Rnk:\s*([-\d.]+)([A-Za-z%]*)/(\d+)\s*\|\s*Mx\1/Rnk:\s*([-\d.]+)[A-Za-z%]*/(\d+)")

DETECTORS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("nemo2", NEMO2),
    ("megatron-lm", MEGATRON),
    ("torchtitan", TITAN),
    ("nanogpt", NANOGPT),
    ("deepspeed", re.compile(DS_STEP.pattern + "|" + DS_TIMER.pattern)),
    ("hf-trainer-console", HF_DICT),
    ("megatron-straggler", STRAGGLER),
)
TEXT_FORMATS = (
    "megatron-lm",
    "megatron-deepspeed",
    "gpt-neox",
    "nemo2",
    "torchtitan",
    "nanogpt",
    "deepspeed",
    "hf-trainer-console",
    "megatron-straggler",
)

# Events, whatever the format (each phrase from the framework's own source or logs; see the
# README's list of frameworks): a checkpoint load is a resume from that step unless the step is 0
# (a seed checkpoint); "Training starts at step 1" and the frameworks' fresh-start lines are starts.
LOAD = re.compile(
    r"load(?:ed|ing) (?:\w+ )?checkpoint .*?at iteration\s+(\d+)"  # Megatron-LM / -DeepSpeed / GPT-NeoX
    r"|Loading the checkpoint at step (\d+)"  # torchtitan
    r"|Continuing training from global step (\d+)"  # HF Trainer
    r"|[Ll]oad(?:ed|ing) (?:model )?checkpoint:? \S*global_step(\d+)"  # DeepSpeed engine
)
START_AT = re.compile(r"Training starts at step (\d+)")  # torchtitan (step + 1 after a load)
START = re.compile(
    r"Initializing a new model from scratch"  # nanoGPT
    r"|will not load any checkpoints and will start from random"  # Megatron-LM
)
SAVE = re.compile(
    r"(?:saving checkpoint at iteration|successfully saved checkpoint from iteration)\s+(\d+)"  # Megatron
    r"|Saving model checkpoint(?: to|:) \S*?(?:checkpoint-|global_step)(\d+)"  # HF Trainer, DeepSpeed
    r"|Saving a (?:full|model weights only) checkpoint .*?at last step, step (\d+)"  # torchtitan, last step
    r"|Epoch \d+, global step (\d+): .*saving model to"  # Lightning ModelCheckpoint (NeMo 2)
    r"|[Ss]aving (?:the )?checkpoint(?: at step (\d+))?"  # torchtitan, nanoGPT
)
EVENT_HINT = re.compile(
    r"heckpoint|Training starts|Resuming training|Continuing training from global step|Restored all states"
    r"|from scratch|will start from random|validation loss|val loss|saving model to"
)
# a resume without its step in the line (nanoGPT), or with it only in the checkpoint's name (Lightning, NeMo 2)
RESUME_NOSTEP = re.compile(r"Resuming training from |Restored all states from the checkpoint at \S*?(?:step=(\d+))?")
SKIP_LINE = re.compile(r"\[deep(?:speed|scale)\] (?:fp16 dynamic loss scale overflow|OVERFLOW)! Rank \d+ Skipping step")
EVAL = re.compile(r"validation loss at iteration\s+(\d+)|^\s*step (\d+): train loss [-\w.]+, val loss")
#: how a whole record line of each text format ends (a cut last line does not end so)
RECORD_END: dict[str, tuple[str, ...]] = {
    "megatron-lm": ("|",),
    "megatron-deepspeed": ("|",),
    "gpt-neox": ("|",),
    "torchtitan": ("%",),
    "nanogpt": ("%", "ms"),
    "hf-trainer-console": ("}",),
    "deepspeed": ("]", "GB"),
}
DS_RECORD = re.compile(r"step=\d+, skipped=|\[timer\.py:\d+:stop\]")

# Megatron / NeMo 2 `key: value |` fields → (column, factor).
FIELDS: dict[str, tuple[str, float]] = {
    "consumed samples": ("consumed_samples", 1.0),
    "consumed tokens": ("consumed_tokens", 1.0),
    "elapsed time per iteration (ms)": ("step_time_s", 1e-3),
    "elapsed time per iteration (s)": ("step_time_s", 1.0),
    "learning rate": ("lr", 1.0),
    "global batch size": ("global_batch_size", 1.0),
    "lm loss": ("loss", 1.0),
    "lm_loss": ("loss", 1.0),
    "loss scale": ("loss_scale", 1.0),
    "grad norm": ("grad_norm", 1.0),
    "number of skipped iterations": ("skipped", 1.0),
    "number of nan iterations": ("nan", 1.0),
    "samples per second": ("samples_per_s", 1.0),
    "samples/sec": ("samples_per_s", 1.0),
    "tflops": ("tflops", 1.0),
    "throughput per gpu (tflop/s/gpu)": ("tflops", 1.0),
    "reduced_train_loss": ("loss", 1.0),
    "train_step_timing in s": ("step_time_s", 1.0),
    "lr": ("lr", 1.0),
    "consumed_samples": ("consumed_samples", 1.0),
    "global_batch_size": ("global_batch_size", 1.0),
    "grad_norm": ("grad_norm", 1.0),
    "global_step": ("step", 1.0),
}
HF_KV = re.compile(r"['‘’\"]([A-Za-z_/]+)['‘’\"]\s*:\s*([-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|nan|inf|NaN|Infinity))")
TITAN_KV = re.compile(r"(grad_norm|tps|tflops|mfu):\s*([-\d.,]+)")
KV = re.compile(r"([A-Za-z][^:|]*?)\s*:\s*([^\s|]+)")
MAX_JOIN = 4


def subformat(fmt: str, line: str) -> str:
    """Refine `megatron-lm` from a record line: DeepSpeed fork or GPT-NeoX."""
    if fmt != "megatron-lm":
        return fmt
    if "samples/sec" in line or "lm_loss" in line:
        return "gpt-neox"
    if "consumed tokens" in line or "TFLOPs:" in line or "samples per second" in line:
        return "megatron-deepspeed"
    return fmt
