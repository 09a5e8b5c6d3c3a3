"""Run fuzz targets under atheris (libFuzzer): `python -m tests.fuzz TARGET|all [libFuzzer options] [DIR...]`.

Without a corpus directory the target's seeds (corpus samples and fixtures) are written to a
fresh temporary one. The `acceptance` package is instrumented for coverage; an input that raises
anything but the expected refusals, or breaks a property, is a crash that libFuzzer saves
(`-artifact_prefix=DIR/`). Examples::

    python -m tests.fuzz nccl_text -runs=2000 -seed=1
    python -m tests.fuzz dcgm_output -max_total_time=600 -print_final_stats=1
    python -m tests.fuzz all -max_total_time=300     # every target in turn, then a summary

`all` runs each target in its own process (libFuzzer ends the process) with crashes saved under
`fuzz-crashes/TARGET/`, and prints inputs run, executions per second and crashes per target; its
exit status is 1 when any target crashed.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path


def _all(options: list[str]) -> int:
    from tests.fuzz.targets import TARGETS

    failed = 0
    print(f"{'target':<16} {'inputs':>8} {'exec/s':>7}  crashes")
    for name in TARGETS:
        crashes = Path("fuzz-crashes") / name
        crashes.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "tests.fuzz",
                name,
                "-print_final_stats=1",
                f"-artifact_prefix={crashes}/",
                *options,
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        out = done.stdout + done.stderr
        runs = re.search(r"stat::number_of_executed_units:\s*(\d+)", out)
        rate = re.search(r"stat::average_exec_per_sec:\s*(\d+)", out)
        found = sorted(crashes.glob("crash-*"))
        failed += bool(found) or done.returncode != 0
        shown = ", ".join(str(p) for p in found) or ("none" if done.returncode == 0 else f"exit {done.returncode}")
        print(f"{name:<16} {runs.group(1) if runs else '?':>8} {rate.group(1) if rate else '?':>7}  {shown}")
    return 1 if failed else 0


def main() -> None:
    import atheris

    if len(sys.argv) < 2 or sys.argv[1].startswith("-"):
        raise SystemExit(__doc__)
    name, rest = sys.argv[1], sys.argv[2:]
    if name == "all":
        raise SystemExit(_all(rest))
    with atheris.instrument_imports(include=["acceptance"]):
        from tests.fuzz import targets
    if name not in targets.TARGETS:
        raise SystemExit(f"unknown target {name!r}: one of {', '.join(targets.TARGETS)}")
    if not any(not arg.startswith("-") for arg in rest):
        folder = Path(tempfile.mkdtemp(prefix=f"fuzz-{name}-"))
        for i, seed in enumerate(targets.seeds(name)):
            (folder / f"seed-{i:03d}").write_bytes(seed)
        rest.append(str(folder))
    atheris.Setup([sys.argv[0], *rest], targets.TARGETS[name])
    atheris.Fuzz()


if __name__ == "__main__":
    main()
