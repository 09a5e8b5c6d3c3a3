"""The schema check remembers the documents it checked: never the answer of another document."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from typing import Any

from acceptance import schemas
from tests.shared import ROOT

SHIPPED = next((ROOT / "baselines" / "sim").glob("handover-*.json"))


def baseline() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(SHIPPED.read_text())
    return data


def found(data: Any) -> list[tuple[Any, ...]]:
    return [(tuple(path), what, expected) for path, what, expected in schemas.problems("baseline", data)]


def test_a_document_changed_after_its_check_is_checked_again() -> None:
    data = baseline()
    assert found(data) == []
    data["provenance"]["simulated"] = "yes"  # the same object, edited in place
    assert found(data) == [(("provenance", "simulated"), '"yes"', "a value of type boolean")]
    data["provenance"]["simulated"] = True
    assert found(data) == []


def test_values_json_tells_apart_are_never_taken_for_each_other() -> None:
    valid, one, number = baseline(), baseline(), baseline()
    one["provenance"]["simulated"] = 1
    number["margins"]["smoke_min_steps"] = 50.5
    assert found(valid) == []
    assert found(one) == [(("provenance", "simulated"), "1", "a value of type boolean")]
    assert found(number) != []
    assert found(copy.deepcopy(valid)) == []
    as_tuple = baseline()
    as_tuple["identity"]["nodes"] = tuple(as_tuple["identity"]["nodes"])  # the same JSON text as the valid one's
    [(path, _, expected)] = found(as_tuple)
    assert (path, expected) == (("identity", "nodes"), "a value of type array")


def test_a_document_that_is_not_json_data_is_still_checked() -> None:
    data = baseline()
    data["provenance"]["recorded_utc"] = datetime(2026, 12, 1, tzinfo=UTC)  # as a YAML timestamp loads
    [(path, _, expected)] = found(data)
    assert path == ("provenance", "recorded_utc")
    assert "string" in expected


def test_the_same_answer_twice_and_no_caller_can_change_it() -> None:
    data = baseline()
    del data["cluster"]
    first = list(schemas.problems("baseline", data))
    assert first == [((), "nothing", "the field 'cluster'")]
    assert all(isinstance(path, tuple) for path, _, _ in first)
    assert list(schemas.problems("baseline", copy.deepcopy(data))) == first
