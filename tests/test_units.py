"""Sizes and durations as people write them."""

import pytest

from acceptance.units import format_duration, format_size, parse_duration, parse_size


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (8, 8),
        ("8", 8),
        ("1K", 1024),
        ("1MiB", 1 << 20),
        ("16G", 16 << 30),
        ("16GB", 16 << 30),
        ("1.5K", 1536),
    ],
)
def test_sizes_are_binary_like_nccl_tests(text: int | str, expected: int) -> None:
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", ["", "16X", "-1", "1 MB B", "G"])
def test_bad_sizes_say_the_form_expected(text: str) -> None:
    with pytest.raises(ValueError, match=r"expected e\.g"):
        parse_size(text)


def test_size_formatting_keeps_exact_units() -> None:
    assert format_size(1 << 30) == "1 GiB"
    assert format_size(3 << 20) == "3 MiB"
    assert format_size(1000) == "1000 B"


@pytest.mark.parametrize(
    ("text", "seconds"), [(90, 90.0), ("90s", 90.0), ("15m", 900.0), ("24h", 86400.0), ("1h30m", 5400.0)]
)
def test_durations(text: int | str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "15", "15 m", "1x", "h"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(ValueError, match="not a duration"):
        parse_duration(text)


@pytest.mark.parametrize("value", [0, "0s", -5, float("nan"), float("inf")])
def test_durations_are_positive_and_finite(value: float | str) -> None:
    with pytest.raises(ValueError, match="positive and finite"):
        parse_duration(value)


def test_zero_is_a_duration_only_where_allowed() -> None:
    assert parse_duration(0, allow_zero=True) == 0.0
    assert parse_duration("0s", allow_zero=True) == 0.0
    with pytest.raises(ValueError, match=">= 0"):
        parse_duration(-1, allow_zero=True)


def test_duration_formatting() -> None:
    assert format_duration(5400) == "1h30m"
    assert format_duration(86400) == "1d"
    assert format_duration(1.5) == "1.5s"
