"""Rejections as gRPC statuses with rich details (Google AIP-193), and the one registry of
their reasons.

Every rejection is one ``ServiceError`` raised by its reason alone: a ``Reason`` (the
``basra.v1.ErrorReason`` values of errors.proto), metadata with the dynamic values, and, for
malformed input, the offending fields. ``REASONS`` gives each reason its status code and whether
the same request may be retried; ``status_details`` turns the error into the ``google.rpc.Status``
that travels in the ``grpc-status-details-bin`` trailer with exactly one ``ErrorInfo``.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Final, NamedTuple

import grpc
from google.protobuf import any_pb2, duration_pb2
from google.rpc import error_details_pb2, status_pb2

from basra.engine import (
    BasraError,
    CaptureRequiredError,
    CardNotInHandError,
    DuplicateCardError,
    HandInProgressError,
    HandOverError,
    IllegalPlayError,
    InvalidCardError,
    InvalidInputError,
    InvalidPlanIdError,
    InvalidSeatError,
    MatchOverError,
    NotYourTurnError,
    OptionNotAvailableError,
    PlanRequiredError,
    SeatsNotAllowedError,
    UnknownPlanError,
    UnknownRulesError,
)
from basra.v1 import errors_pb2

DOMAIN: Final = "basra.v1"
DETAILS_KEY: Final = "grpc-status-details-bin"


class Reason(enum.IntEnum):
    """The ErrorInfo reasons the service sends: ``basra.v1.ErrorReason`` without its prefix."""

    INVALID_ARGUMENT = errors_pb2.ERROR_REASON_INVALID_ARGUMENT
    INVALID_CARD = errors_pb2.ERROR_REASON_INVALID_CARD
    REQUEST_ID_REUSED = errors_pb2.ERROR_REASON_REQUEST_ID_REUSED
    UNKNOWN_RULES = errors_pb2.ERROR_REASON_UNKNOWN_RULES
    SEATS_NOT_ALLOWED = errors_pb2.ERROR_REASON_SEATS_NOT_ALLOWED
    OPTION_NOT_AVAILABLE = errors_pb2.ERROR_REASON_OPTION_NOT_AVAILABLE
    DISPLAY_NAME_INVALID = errors_pb2.ERROR_REASON_DISPLAY_NAME_INVALID
    TOKEN_MISSING = errors_pb2.ERROR_REASON_TOKEN_MISSING
    TOKEN_INVALID = errors_pb2.ERROR_REASON_TOKEN_INVALID
    API_KEY_MISSING = errors_pb2.ERROR_REASON_API_KEY_MISSING
    API_KEY_INVALID = errors_pb2.ERROR_REASON_API_KEY_INVALID
    SEEDS_DISABLED = errors_pb2.ERROR_REASON_SEEDS_DISABLED
    WATCH_TOKEN_READ_ONLY = errors_pb2.ERROR_REASON_WATCH_TOKEN_READ_ONLY
    WATCH_TOKENS_UNSUPPORTED = errors_pb2.ERROR_REASON_WATCH_TOKENS_UNSUPPORTED
    WATCH_TOKEN_REVOKED = errors_pb2.ERROR_REASON_WATCH_TOKEN_REVOKED
    SEAT_TOKEN_REVOKED = errors_pb2.ERROR_REASON_SEAT_TOKEN_REVOKED
    INVITATION_INVALID = errors_pb2.ERROR_REASON_INVITATION_INVALID
    NOT_MATCH_CREATOR = errors_pb2.ERROR_REASON_NOT_MATCH_CREATOR
    MATCH_NOT_FOUND = errors_pb2.ERROR_REASON_MATCH_NOT_FOUND
    NOT_YOUR_TURN = errors_pb2.ERROR_REASON_NOT_YOUR_TURN
    CARD_NOT_IN_HAND = errors_pb2.ERROR_REASON_CARD_NOT_IN_HAND
    PLAN_REQUIRED = errors_pb2.ERROR_REASON_PLAN_REQUIRED
    UNKNOWN_PLAN = errors_pb2.ERROR_REASON_UNKNOWN_PLAN
    CAPTURE_REQUIRED = errors_pb2.ERROR_REASON_CAPTURE_REQUIRED
    HAND_IN_PROGRESS = errors_pb2.ERROR_REASON_HAND_IN_PROGRESS
    HAND_OVER = errors_pb2.ERROR_REASON_HAND_OVER
    MATCH_OVER = errors_pb2.ERROR_REASON_MATCH_OVER
    INVITATION_CLAIMED = errors_pb2.ERROR_REASON_INVITATION_CLAIMED
    VERSION_MISMATCH = errors_pb2.ERROR_REASON_VERSION_MISMATCH
    HISTORY_TRIMMED = errors_pb2.ERROR_REASON_HISTORY_TRIMMED
    RATE_LIMITED = errors_pb2.ERROR_REASON_RATE_LIMITED
    STORE_FULL = errors_pb2.ERROR_REASON_STORE_FULL
    REQUEST_TIMEOUT = errors_pb2.ERROR_REASON_REQUEST_TIMEOUT
    VERSION_AHEAD = errors_pb2.ERROR_REASON_VERSION_AHEAD
    STORE_UNAVAILABLE = errors_pb2.ERROR_REASON_STORE_UNAVAILABLE
    STATE_CORRUPT = errors_pb2.ERROR_REASON_STATE_CORRUPT
    INTERNAL = errors_pb2.ERROR_REASON_INTERNAL


class Rule(NamedTuple):
    """How a reason travels: its gRPC status code, and whether the same request (same
    ``request_id``) may simply be sent again later."""

    code: grpc.StatusCode
    retryable: bool


_C = grpc.StatusCode
REASONS: Final[Mapping[Reason, Rule]] = {
    # Malformed input: fix the client.
    Reason.INVALID_ARGUMENT: Rule(_C.INVALID_ARGUMENT, retryable=False),
    Reason.INVALID_CARD: Rule(_C.INVALID_ARGUMENT, retryable=False),
    Reason.REQUEST_ID_REUSED: Rule(_C.INVALID_ARGUMENT, retryable=False),
    Reason.UNKNOWN_RULES: Rule(_C.INVALID_ARGUMENT, retryable=False),
    Reason.SEATS_NOT_ALLOWED: Rule(_C.INVALID_ARGUMENT, retryable=False),
    Reason.OPTION_NOT_AVAILABLE: Rule(_C.INVALID_ARGUMENT, retryable=False),
    Reason.DISPLAY_NAME_INVALID: Rule(_C.INVALID_ARGUMENT, retryable=False),
    # Credentials.
    Reason.TOKEN_MISSING: Rule(_C.UNAUTHENTICATED, retryable=False),
    Reason.TOKEN_INVALID: Rule(_C.PERMISSION_DENIED, retryable=False),
    Reason.API_KEY_MISSING: Rule(_C.UNAUTHENTICATED, retryable=False),
    Reason.API_KEY_INVALID: Rule(_C.PERMISSION_DENIED, retryable=False),
    Reason.SEEDS_DISABLED: Rule(_C.PERMISSION_DENIED, retryable=False),
    Reason.WATCH_TOKEN_READ_ONLY: Rule(_C.PERMISSION_DENIED, retryable=False),
    Reason.WATCH_TOKENS_UNSUPPORTED: Rule(_C.FAILED_PRECONDITION, retryable=False),
    Reason.WATCH_TOKEN_REVOKED: Rule(_C.PERMISSION_DENIED, retryable=False),
    Reason.SEAT_TOKEN_REVOKED: Rule(_C.PERMISSION_DENIED, retryable=False),
    Reason.INVITATION_INVALID: Rule(_C.PERMISSION_DENIED, retryable=False),
    Reason.NOT_MATCH_CREATOR: Rule(_C.PERMISSION_DENIED, retryable=False),
    Reason.MATCH_NOT_FOUND: Rule(_C.NOT_FOUND, retryable=False),
    # The rules forbid the move now: refresh and decide again.
    Reason.NOT_YOUR_TURN: Rule(_C.FAILED_PRECONDITION, retryable=False),
    Reason.CARD_NOT_IN_HAND: Rule(_C.FAILED_PRECONDITION, retryable=False),
    Reason.PLAN_REQUIRED: Rule(_C.FAILED_PRECONDITION, retryable=False),
    Reason.UNKNOWN_PLAN: Rule(_C.FAILED_PRECONDITION, retryable=False),
    Reason.CAPTURE_REQUIRED: Rule(_C.FAILED_PRECONDITION, retryable=False),
    Reason.HAND_IN_PROGRESS: Rule(_C.FAILED_PRECONDITION, retryable=False),
    Reason.HAND_OVER: Rule(_C.FAILED_PRECONDITION, retryable=False),
    Reason.MATCH_OVER: Rule(_C.FAILED_PRECONDITION, retryable=False),
    Reason.INVITATION_CLAIMED: Rule(_C.FAILED_PRECONDITION, retryable=False),
    # The match moved on: reload, decide again, new request_id.
    Reason.VERSION_MISMATCH: Rule(_C.ABORTED, retryable=False),
    Reason.HISTORY_TRIMMED: Rule(_C.OUT_OF_RANGE, retryable=False),
    Reason.VERSION_AHEAD: Rule(_C.OUT_OF_RANGE, retryable=False),
    # The service's capacity or health: the same request goes through later.
    Reason.RATE_LIMITED: Rule(_C.RESOURCE_EXHAUSTED, retryable=True),
    Reason.STORE_FULL: Rule(_C.RESOURCE_EXHAUSTED, retryable=True),
    Reason.REQUEST_TIMEOUT: Rule(_C.DEADLINE_EXCEEDED, retryable=True),
    Reason.STORE_UNAVAILABLE: Rule(_C.UNAVAILABLE, retryable=True),
    Reason.STATE_CORRUPT: Rule(_C.DATA_LOSS, retryable=False),
    Reason.INTERNAL: Rule(_C.INTERNAL, retryable=True),
}
"""Every reason's status code and retry rule (the API guide's "Every reason" table)."""


class ServiceError(Exception):
    """A call rejected for ``reason``; nothing was changed. The status code and the retry rule
    come from the reason (``REASONS``)."""

    def __init__(
        self,
        reason: Reason,
        message: str,
        metadata: Mapping[str, object] | None = None,
        *,
        field_violations: Mapping[str, str] | None = None,
        retry_after_s: float | None = None,
    ) -> None:
        super().__init__(message)
        rule = REASONS[reason]
        self.code = rule.code
        self.retryable = rule.retryable
        self.reason = reason.name
        self.message = message
        self.metadata = {k: str(v) for k, v in (metadata or {}).items()}
        self.field_violations = dict(field_violations or {})
        self.retry_after_s = retry_after_s

    def status_details(self) -> status_pb2.Status:
        """The google.rpc.Status for the grpc-status-details-bin trailer."""
        info = error_details_pb2.ErrorInfo(
            reason=self.reason, domain=DOMAIN, metadata=self.metadata
        )
        details = [_pack(info)]
        if self.field_violations:
            bad = error_details_pb2.BadRequest(
                field_violations=[
                    error_details_pb2.BadRequest.FieldViolation(field=f, description=d)
                    for f, d in self.field_violations.items()
                ]
            )
            details.append(_pack(bad))
        if self.retry_after_s is not None:
            delay = duration_pb2.Duration()
            delay.FromMilliseconds(round(self.retry_after_s * 1000))
            details.append(_pack(error_details_pb2.RetryInfo(retry_delay=delay)))
        return status_pb2.Status(code=self.code.value[0], message=self.message, details=details)

    def trailing_metadata(self) -> tuple[tuple[str, bytes], ...]:
        """The trailer that carries ``status_details``."""
        return ((DETAILS_KEY, self.status_details().SerializeToString()),)


def _pack(
    message: error_details_pb2.ErrorInfo
    | error_details_pb2.BadRequest
    | error_details_pb2.RetryInfo,
) -> any_pb2.Any:
    packed = any_pb2.Any()
    packed.Pack(message)
    return packed


def invalid_argument(
    field: str, description: str, reason: Reason = Reason.INVALID_ARGUMENT
) -> ServiceError:
    """Malformed input: INVALID_ARGUMENT naming the field (BadRequest)."""
    return ServiceError(
        reason, f"{field}: {description}", {"field": field}, field_violations={field: description}
    )


# Engine errors of malformed input: the request field each concerns, and its reason (those
# without an ErrorReason of their own are INVALID_ARGUMENT).
_ENGINE_INPUT: Final[Mapping[type[InvalidInputError], tuple[str, Reason]]] = {
    InvalidInputError: ("plan_id", Reason.INVALID_ARGUMENT),
    InvalidCardError: ("card", Reason.INVALID_CARD),
    DuplicateCardError: ("card", Reason.INVALID_ARGUMENT),
    InvalidSeatError: ("seat", Reason.INVALID_ARGUMENT),
    InvalidPlanIdError: ("plan_id", Reason.INVALID_ARGUMENT),
    UnknownRulesError: ("rules", Reason.UNKNOWN_RULES),
    SeatsNotAllowedError: ("seats", Reason.SEATS_NOT_ALLOWED),
    OptionNotAvailableError: ("options", Reason.OPTION_NOT_AVAILABLE),
}
# Engine errors of a play the rules forbid now, each with its reason.
_ENGINE_ILLEGAL: Final[Mapping[type[IllegalPlayError], Reason]] = {
    NotYourTurnError: Reason.NOT_YOUR_TURN,
    CardNotInHandError: Reason.CARD_NOT_IN_HAND,
    PlanRequiredError: Reason.PLAN_REQUIRED,
    UnknownPlanError: Reason.UNKNOWN_PLAN,
    CaptureRequiredError: Reason.CAPTURE_REQUIRED,
    HandOverError: Reason.HAND_OVER,
    HandInProgressError: Reason.HAND_IN_PROGRESS,
    MatchOverError: Reason.MATCH_OVER,
}


def from_engine(error: BasraError) -> ServiceError:
    """The status for an engine error: malformed input or a play illegal now."""
    if isinstance(error, InvalidInputError):
        field, reason = _ENGINE_INPUT.get(type(error), ("request", Reason.INVALID_ARGUMENT))
        if isinstance(error, OptionNotAvailableError):
            field = f"options.{error.metadata['option']}"
        return ServiceError(
            reason,
            str(error),
            {**error.metadata, "field": field},
            field_violations={field: str(error)},
        )
    if isinstance(error, IllegalPlayError) and type(error) in _ENGINE_ILLEGAL:
        return ServiceError(_ENGINE_ILLEGAL[type(error)], str(error), error.metadata)
    return ServiceError(Reason.STATE_CORRUPT, "the stored match is corrupt")


def store_unavailable() -> ServiceError:
    """The store cannot be reached: retry later with the same request_id."""
    return ServiceError(
        Reason.STORE_UNAVAILABLE, "the match store is unavailable; retry with the same request_id"
    )


def store_full() -> ServiceError:
    """The store refuses writes for want of memory: retry later with the same request_id."""
    return ServiceError(
        Reason.STORE_FULL, "the match store is full; retry later with the same request_id"
    )


def internal() -> ServiceError:
    """An unexpected fault; the message never reveals internals."""
    return ServiceError(Reason.INTERNAL, "internal error; retry with the same request_id")
