"""The `dcgmi diag` command line and the meaning of its exit status."""

from __future__ import annotations

import pytest

from acceptance.errors import UsageError
from acceptance.tools.dcgm import DcgmDiag, interpret_exit


def test_default_is_level_3_json() -> None:
    assert DcgmDiag().argv() == ["dcgmi", "diag", "-r", "3", "-j"]


def test_every_option() -> None:
    spec = DcgmDiag(
        level=4,
        gpus=(0, 1, 2),
        iterations=2,
        parameters=("targeted_power.test_duration=60", "memtest.test_duration=30"),
        host="10.0.0.5:5555",
        timeout_s=3600,
    )
    assert spec.argv() == [
        "dcgmi", "diag", "-r", "4", "-i", "0,1,2", "--iterations", "2",
        "-p", "targeted_power.test_duration=60;memtest.test_duration=30",
        "--host", "10.0.0.5:5555", "-j",
    ]  # fmt: skip
    assert "--timeout" not in spec.argv()  # the deadline belongs to whoever runs the command


@pytest.mark.parametrize(
    "spec",
    [
        DcgmDiag(),
        DcgmDiag(level=1, json=False),
        DcgmDiag(level=2, gpus=(3,), host="node-7"),
        DcgmDiag(level=4, iterations=3, parameters=("diagnostic.test_duration=10",)),
    ],
)
def test_argv_round_trip(spec: DcgmDiag) -> None:
    assert DcgmDiag.from_argv(spec.argv()) == spec


def test_from_argv_accepts_long_forms_and_aliases() -> None:
    spec = DcgmDiag.from_argv(
        [
            "/usr/bin/dcgmi",
            "diag",
            "--run",
            "long",
            "--entity-id",
            "0,1",
            "--json",
            "--parameters=pcie.is_allowed=true",
        ]
    )
    assert spec == DcgmDiag(level=3, gpus=(0, 1), parameters=("pcie.is_allowed=true",))
    assert DcgmDiag.from_argv(["dcgmi", "diag", "-r", "2", "--timeout", "900"]).timeout_s == 900


@pytest.mark.parametrize(
    "argv",
    [
        ["dcgmi", "diag"],
        ["dcgmi", "diag", "-r", "5"],
        ["dcgmi", "diag", "-r", "pcie"],
        ["dcgmi", "diag", "-r", "3", "--fake-gpus", "0"],
        ["dcgmi", "diag", "-r", "3", "-p", "no_equals_sign"],
        ["dcgmi", "diag", "-r"],
    ],
)
def test_from_argv_refuses_what_it_cannot_represent(argv: list[str]) -> None:
    with pytest.raises(UsageError):
        DcgmDiag.from_argv(argv)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"level": 0},
        {"iterations": 0},
        {"gpus": ()},
        {"gpus": (-1,)},
        {"parameters": ("x",)},
        {"timeout_s": 0},
    ],
)
def test_invalid_specs(kwargs: dict[str, object]) -> None:
    with pytest.raises(UsageError):
        DcgmDiag(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("code", "ran", "passed", "isolate"),
    [
        (0, True, True, False),
        (226, True, False, False),
        (-30, True, False, False),  # DCGM_ST_NVVS_ERROR before the 8-bit cast
        (205, True, False, True),
        (-51, True, False, True),
        (203, False, False, False),
        (1, False, False, False),
        (255, False, False, False),
        (137, False, False, False),
    ],
)
def test_exit_status_meaning(code: int, ran: bool, passed: bool, isolate: bool) -> None:
    meaning = interpret_exit(code)
    assert (meaning.ran, meaning.passed, meaning.isolate) == (ran, passed, isolate)
    if not ran:
        assert "did not" in meaning.meaning or "killed" in meaning.meaning
