"""The sample renders under fixtures/sim are current: the seeded simulator reproduces them byte for byte."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from acceptance.cli import main
from tests.shared import FIXTURES

SCRIPT = FIXTURES / "sim" / "regenerate.sh"


def _commands() -> list[tuple[str, list[str]]]:
    variables: dict[str, str] = {}
    out = []
    for line in SCRIPT.read_text().splitlines():
        if "=" in line and line.split("=", 1)[0].isidentifier():
            key, value = line.split("=", 1)
            variables[key] = shlex.split(value)[0]
        elif line.startswith("sim "):
            expanded = line
            for key, value in variables.items():
                expanded = expanded.replace(f"${key}", value)
            words = shlex.split(expanded)
            out.append((words[1], words[2:]))
    return out


@pytest.mark.parametrize(("name", "args"), _commands(), ids=lambda v: v if isinstance(v, str) else "")
def test_sample_render_is_reproduced(name: str, args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    main(["sim", "run", *args])
    assert capsys.readouterr().out == (Path(SCRIPT.parent) / name).read_text()
