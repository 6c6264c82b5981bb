"""Rejections as typed exceptions: one class per family, each carrying the full details.

Every failed call raises a ``BasraError`` subclass chosen by the gRPC status code (the family);
``reason`` is the ``google.rpc.ErrorInfo`` reason (``NOT_YOUR_TURN``, ``VERSION_MISMATCH``...,
listed in proto/basra/v1/errors.proto) and tells the cases of a family apart:

=======================  ===================================  =================================
class                    status codes                         reasons (examples)
=======================  ===================================  =================================
InvalidRequestError      INVALID_ARGUMENT                     INVALID_CARD, REQUEST_ID_REUSED
AuthError                UNAUTHENTICATED, PERMISSION_DENIED   TOKEN_INVALID, API_KEY_MISSING
MatchNotFoundError       NOT_FOUND                            MATCH_NOT_FOUND
RuleViolationError       FAILED_PRECONDITION                  NOT_YOUR_TURN, PLAN_REQUIRED
VersionMismatchError     ABORTED                              VERSION_MISMATCH
OutOfRangeError          OUT_OF_RANGE                         HISTORY_TRIMMED
RateLimitedError         RESOURCE_EXHAUSTED                   RATE_LIMITED (see retry_after)
UnavailableError         UNAVAILABLE, DEADLINE_EXCEEDED       STORE_UNAVAILABLE, or "" when no
                                                              server answered at all
ServerError              anything else (INTERNAL, DATA_LOSS)  INTERNAL, STATE_CORRUPT
=======================  ===================================  =================================

Every call this client makes is safe to repeat, so UNAVAILABLE and DEADLINE_EXCEEDED are retried
(``basra.client.retry``) before ``UnavailableError`` is raised; the others are raised at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

import grpc
from google.rpc import error_details_pb2, status_pb2

DETAILS_KEY: Final = "grpc-status-details-bin"
"""The trailer that carries the google.rpc.Status with the rich details."""


@dataclass(frozen=True)
class Details:
    """The unpacked google.rpc.Status details of a failed call."""

    reason: str = ""
    domain: str = ""
    metadata: dict[str, str] = field(default_factory=dict)
    field_violations: dict[str, str] = field(default_factory=dict)
    retry_after: float | None = None

    @classmethod
    def of(cls, trailing_metadata: object) -> Details:
        """The details in a call's trailing metadata (empty when it carries none).

        Raises:
            ValueError: the status carries more than one ErrorInfo (the contract says one).
        """
        status = status_pb2.Status()
        for key, value in trailing_metadata or ():  # type: ignore[attr-defined]
            if key == DETAILS_KEY:
                status = status_pb2.Status.FromString(value)
        info = error_details_pb2.ErrorInfo()
        violations: dict[str, str] = {}
        retry: float | None = None
        infos = 0
        for detail in status.details:
            if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
                detail.Unpack(info)
                infos += 1
            elif detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
                bad = error_details_pb2.BadRequest()
                detail.Unpack(bad)
                violations = {v.field: v.description for v in bad.field_violations}
            elif detail.Is(error_details_pb2.RetryInfo.DESCRIPTOR):
                retry_info = error_details_pb2.RetryInfo()
                detail.Unpack(retry_info)
                retry = retry_info.retry_delay.ToMilliseconds() / 1000
        if infos > 1:
            raise ValueError("a rejection carries exactly one ErrorInfo")
        return cls(info.reason, info.domain, dict(info.metadata), violations, retry)


class BasraError(Exception):
    """A call the service rejected (or could not serve); nothing was changed by it.

    Attributes:
        code: the gRPC status code.
        reason: the ErrorInfo reason (UPPER_SNAKE), "" when the server sent none (a transport
            failure: no server reachable, a deadline).
        message: the status message, for people.
        metadata: the ErrorInfo metadata (the values the reason refers to, e.g. ``turn``).
        field_violations: field -> description, for malformed requests.
        retry_after: seconds the server asks to wait (RetryInfo), or None.
    """

    def __init__(self, code: grpc.StatusCode, message: str, details: Details | None = None):
        details = details or Details()
        super().__init__(f"{details.reason or code.name}: {message}")
        self.code = code
        self.message = message
        self.reason = details.reason
        self.domain = details.domain
        self.metadata: Mapping[str, str] = details.metadata
        self.field_violations: Mapping[str, str] = details.field_violations
        self.retry_after = details.retry_after

    @property
    def unreachable(self) -> bool:
        """No server answered (UNAVAILABLE without a reason): it is down or the address wrong."""
        return self.code == grpc.StatusCode.UNAVAILABLE and not self.reason

    @staticmethod
    def of(error: grpc.RpcError) -> BasraError:
        """The typed exception of a failed gRPC call."""
        call: grpc.Call = error  # type: ignore[assignment]
        code = call.code()
        family = _FAMILIES.get(code, ServerError)
        return family(code, call.details() or "", Details.of(call.trailing_metadata()))


class InvalidRequestError(BasraError):
    """INVALID_ARGUMENT: a malformed request (``field_violations`` names the fields)."""


class AuthError(BasraError):
    """UNAUTHENTICATED or PERMISSION_DENIED: a missing or wrong seat token or API key, or a seed
    the server does not accept."""


class MatchNotFoundError(BasraError):
    """NOT_FOUND: no match has this id (it never existed or it expired)."""


class RuleViolationError(BasraError):
    """FAILED_PRECONDITION: the rules forbid the call now (``reason`` says which rule)."""


class VersionMismatchError(BasraError):
    """ABORTED: the match moved on since ``expected_version``; reload and decide again."""


class OutOfRangeError(BasraError):
    """OUT_OF_RANGE: a watch asked for versions the server cannot stream (HISTORY_TRIMMED: older
    than the kept history; call GetMatch and resume from its version)."""


class RateLimitedError(BasraError):
    """RESOURCE_EXHAUSTED: too many matches created; wait ``retry_after`` seconds."""


class UnavailableError(BasraError):
    """UNAVAILABLE or DEADLINE_EXCEEDED after the retries: the server or its store is out of
    reach (``unreachable``: no server answered at all)."""


class ServerError(BasraError):
    """INTERNAL, DATA_LOSS or another server fault."""


_FAMILIES: Final[dict[grpc.StatusCode, type[BasraError]]] = {
    grpc.StatusCode.INVALID_ARGUMENT: InvalidRequestError,
    grpc.StatusCode.UNAUTHENTICATED: AuthError,
    grpc.StatusCode.PERMISSION_DENIED: AuthError,
    grpc.StatusCode.NOT_FOUND: MatchNotFoundError,
    grpc.StatusCode.FAILED_PRECONDITION: RuleViolationError,
    grpc.StatusCode.ABORTED: VersionMismatchError,
    grpc.StatusCode.OUT_OF_RANGE: OutOfRangeError,
    grpc.StatusCode.RESOURCE_EXHAUSTED: RateLimitedError,
    grpc.StatusCode.UNAVAILABLE: UnavailableError,
    grpc.StatusCode.DEADLINE_EXCEEDED: UnavailableError,
}
