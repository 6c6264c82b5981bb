"""The one registry of error reasons: built on errors.proto's ErrorReason, one status code and
retry rule per reason, agreeing with the API guide's table; engine errors map by class."""

from __future__ import annotations

import re
from pathlib import Path

import grpc
import pytest

import basra.engine
from basra.engine import BasraError, IllegalPlayError, InvalidInputError
from basra.service.errors import REASONS, Reason, ServiceError, from_engine
from basra.v1 import errors_pb2

GUIDE = Path(__file__).resolve().parents[2] / "proto" / "README.md"
PREFIX = "ERROR_REASON_"


def test_the_registry_holds_exactly_the_reasons_of_the_contract() -> None:
    contract = {
        name.removeprefix(PREFIX): number
        for name, number in errors_pb2.ErrorReason.items()
        if name != f"{PREFIX}UNSPECIFIED"
    }
    assert {r.name: r.value for r in Reason} == contract
    assert set(REASONS) == set(Reason)


def guide_codes() -> dict[str, str]:
    """Reason -> status code, from the guide's "Every reason" table."""
    section = GUIDE.read_text().split("### Every reason", 1)[1].split("\n### ", 1)[0]
    return dict(re.findall(r"^\| `([A-Z_]+)` \| `([A-Z_]+)` \|", section, re.MULTILINE))


def test_each_reason_has_the_status_code_the_api_guide_gives_it() -> None:
    guide = guide_codes()
    assert set(guide) == {r.name for r in Reason}, "the guide's table lists every reason once"
    assert {r.name: REASONS[r].code.name for r in Reason} == guide


@pytest.mark.parametrize("reason", list(Reason), ids=lambda r: r.name)
def test_a_service_error_takes_its_code_and_retry_rule_from_its_reason(reason: Reason) -> None:
    error = ServiceError(reason, "message", {"k": 1})
    assert (error.code, error.retryable, error.reason) == (
        REASONS[reason].code,
        REASONS[reason].retryable,
        reason.name,
    )
    status = error.status_details()
    assert status.code == error.code.value[0]


def test_only_the_reasons_of_capacity_and_health_are_retryable_as_they_are() -> None:
    retryable = {r.name for r in Reason if REASONS[r].retryable}
    assert retryable == {
        "RATE_LIMITED",
        "STORE_FULL",
        "REQUEST_TIMEOUT",
        "STORE_UNAVAILABLE",
        "INTERNAL",
    }


def engine_errors(base: type[BasraError]) -> list[type[BasraError]]:
    found = [
        value
        for value in vars(basra.engine).values()
        if isinstance(value, type) and issubclass(value, base)
    ]
    assert len(found) > 3
    return found


@pytest.mark.parametrize("cls", engine_errors(IllegalPlayError), ids=lambda c: c.__name__)
def test_every_illegal_play_of_the_engine_maps_to_its_own_reason(
    cls: type[IllegalPlayError],
) -> None:
    if cls is IllegalPlayError:
        return
    error = cls.__new__(cls)
    BasraError.__init__(error, "illegal")
    mapped = from_engine(error)
    assert mapped.code == grpc.StatusCode.FAILED_PRECONDITION
    assert mapped.reason == cls.reason


@pytest.mark.parametrize("cls", engine_errors(InvalidInputError), ids=lambda c: c.__name__)
def test_every_malformed_input_of_the_engine_is_invalid_argument_naming_a_field(
    cls: type[InvalidInputError],
) -> None:
    error = cls.__new__(cls)
    BasraError.__init__(error, "bad", option="rubber")
    mapped = from_engine(error)
    assert mapped.code == grpc.StatusCode.INVALID_ARGUMENT
    assert mapped.metadata["field"] != "request", "each engine input error names its field"
    assert mapped.reason in {cls.reason, "INVALID_ARGUMENT"}
