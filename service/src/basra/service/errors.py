"""Rejections as gRPC statuses with rich details (Google AIP-193).

Every rejection is one ``ServiceError``: a status code, an UPPER_SNAKE reason from
``basra.v1.ErrorReason``, metadata with the dynamic values, and, for malformed input, the
offending fields. ``status_details`` turns it into the ``google.rpc.Status`` that travels in the
``grpc-status-details-bin`` trailer with exactly one ``ErrorInfo``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import grpc
from google.protobuf import any_pb2, duration_pb2
from google.rpc import error_details_pb2, status_pb2

from basra.engine import BasraError, IllegalPlayError, InvalidInputError

DOMAIN: Final = "basra.v1"
DETAILS_KEY: Final = "grpc-status-details-bin"


class ServiceError(Exception):
    """A call rejected with a status code and an ErrorInfo reason; nothing was changed."""

    def __init__(
        self,
        code: grpc.StatusCode,
        reason: str,
        message: str,
        metadata: Mapping[str, object] | None = None,
        *,
        field_violations: Mapping[str, str] | None = None,
        retry_after_s: float | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
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
    field: str, description: str, reason: str = "INVALID_ARGUMENT"
) -> ServiceError:
    """Malformed input: INVALID_ARGUMENT naming the field (BadRequest)."""
    return ServiceError(
        grpc.StatusCode.INVALID_ARGUMENT,
        reason,
        f"{field}: {description}",
        {"field": field},
        field_violations={field: description},
    )


# Engine reasons whose input is malformed, and the request field they concern.
_INPUT_FIELDS: Final = {
    "INVALID_CARD": "card",
    "DUPLICATE_CARD": "card",
    "INVALID_SEAT": "seat",
    "INVALID_PLAN_ID": "plan_id",
    "INVALID_INPUT": "plan_id",
    "UNKNOWN_RULES": "rules",
    "SEATS_NOT_ALLOWED": "seats",
    "OPTION_NOT_AVAILABLE": "options",
}
# Engine reasons that are ErrorReason values of their own; the others become INVALID_ARGUMENT.
_OWN_REASONS: Final = frozenset(
    {"INVALID_CARD", "UNKNOWN_RULES", "SEATS_NOT_ALLOWED", "OPTION_NOT_AVAILABLE"}
)


def from_engine(error: BasraError) -> ServiceError:
    """The status for an engine error: malformed input or a play illegal now."""
    if isinstance(error, InvalidInputError):
        field = _INPUT_FIELDS.get(error.reason, "request")
        if error.reason == "OPTION_NOT_AVAILABLE":
            field = f"options.{error.metadata['option']}"
        reason = error.reason if error.reason in _OWN_REASONS else "INVALID_ARGUMENT"
        return ServiceError(
            grpc.StatusCode.INVALID_ARGUMENT,
            reason,
            str(error),
            {**error.metadata, "field": field},
            field_violations={field: str(error)},
        )
    if isinstance(error, IllegalPlayError):
        return ServiceError(
            grpc.StatusCode.FAILED_PRECONDITION, error.reason, str(error), error.metadata
        )
    return ServiceError(grpc.StatusCode.DATA_LOSS, "STATE_CORRUPT", "the stored match is corrupt")


def store_unavailable() -> ServiceError:
    """The store cannot be reached: retry later with the same request_id."""
    return ServiceError(
        grpc.StatusCode.UNAVAILABLE,
        "STORE_UNAVAILABLE",
        "the match store is unavailable; retry with the same request_id",
    )


def store_full() -> ServiceError:
    """The store refuses writes for want of memory: retry later with the same request_id."""
    return ServiceError(
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        "STORE_FULL",
        "the match store is full; retry later with the same request_id",
    )


def internal() -> ServiceError:
    """An unexpected fault; the message never reveals internals."""
    return ServiceError(
        grpc.StatusCode.INTERNAL,
        "INTERNAL",
        "internal error; retry with the same request_id",
    )
