"""Running a call, whatever its RPC: the per-call wrapper both transports go through.

``Dispatcher.handle`` (unary) and ``Dispatcher.handle_stream`` (server-streaming) run the
method of the RPC's name, turn every failure into one ``ServiceError`` (``reject``: the
store's and the engine's errors mapped, anything else INTERNAL and logged), count and time the
call (metrics.py, with its log line) and, traced, give it its server span (tracing.py). They
know no RPC: what a call does, its checks and refusals included, is its method's.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import Any, Final

from google.protobuf.message import Message
from opentelemetry import trace
from opentelemetry.trace import SpanContext

from basra.engine import BasraError
from basra.service.callers import Caller
from basra.service.errors import (
    ServiceError,
    from_engine,
    internal,
    invalid_argument,
    store_full,
    store_unavailable,
)
from basra.service.metrics import Metrics
from basra.service.store import StoreFullError, StoreUnavailableError
from basra.service.tracing import ServerCall, Tracing, protocol

log = logging.getLogger("basra.rpc")
_UNTRACED: Final = contextlib.nullcontext()


class MalformedRequest:
    """What a request that does not parse as its message becomes: the transports pass it to
    ``Dispatcher.handle``, which rejects it like any other bad input."""

    def __init__(self, message: str) -> None:
        self.message = message
        self.match_id = ""


def _check_parsed(request: object) -> None:
    if isinstance(request, MalformedRequest):
        raise invalid_argument("request", f"is not a valid {request.message} message")


def reject(error: BaseException) -> ServiceError:
    """The status a failure of a call becomes."""
    if isinstance(error, ServiceError):
        return error
    if isinstance(error, StoreUnavailableError):
        log.warning("store unavailable", extra={"cause": str(error)})
        return store_unavailable()
    if isinstance(error, StoreFullError):
        # No traceback: an expected operating condition, counted and alerted on (metrics.py).
        log.warning("store full", extra={"cause": str(error)})
        return store_full()
    if isinstance(error, BasraError):
        return from_engine(error)
    log.error("unexpected failure", exc_info=error)
    return internal()


class Dispatcher:
    """Runs its own methods by RPC name: a subclass has one method per RPC, taking the request
    and the ``Caller``."""

    def __init__(self, metrics: Metrics, tracing: Tracing | None) -> None:
        self._metrics = metrics
        self._tracing = tracing
        """Traces, when the OpenTelemetry environment turns them on (None: no span at all)."""

    async def handle(self, method: str, request: Message | MalformedRequest, caller: Caller) -> Any:
        """Run the unary RPC ``method``: its response, or ServiceError (the only exception).

        Traced (``basra.service.tracing``), the call's server span is current throughout, the
        log line included."""
        start = time.perf_counter()
        handler: Callable[[Any, Caller], Awaitable[Message]] = getattr(self, method)
        traced = None
        if self._tracing is not None:
            traced = self._tracing.server(method, caller.metadata, getattr(request, "match_id", ""))
        try:
            _check_parsed(request)
            response = await handler(request, caller)
        except Exception as exc:
            error = reject(exc)
            self._observe(method, request, start, error, caller)
            _unfinished(traced, error)
            raise error from exc
        except BaseException:
            _unfinished(traced, None)
            raise
        self._observe(method, request, start, None, caller)
        if traced is not None:
            traced.end(ok=True)
        return response

    async def handle_stream(
        self, method: str, request: Message | MalformedRequest, caller: Caller
    ) -> AsyncGenerator[Any, None]:
        """Run the server-streaming RPC ``method`` (a coroutine that checks the call and returns
        its responses' iterator): its responses, then ServiceError if it fails (the only
        exception)."""
        start = time.perf_counter()
        match_id = getattr(request, "match_id", "")
        port = protocol(caller.metadata)[0]
        # Traced, the stream's setup has a span of its own, ended once the stream is open; each
        # version it then sends whole is an event of a span of its own (``Tracing.delivered``).
        traced = setup = None
        if self._tracing is not None:
            traced = self._tracing.server(method, caller.metadata, match_id)
        deliveries = self._metrics.watch_deliveries
        try:
            _check_parsed(request)
            handler: Callable[[Any, Caller], Awaitable[AsyncIterator[Message]]] = getattr(
                self, method
            )
            opened = await handler(request, caller)
            if traced is not None:
                if traced.span.is_recording():
                    setup = traced.span.get_span_context()
                traced.end(ok=True)
                traced = None
            # An open stream waits here for as long as its client stays: it keeps neither the
            # request nor the caller (memory per idle stream, see watch.py).
            del request, caller
            async with contextlib.aclosing(opened) as responses:  # type: ignore[type-var]
                async for response in responses:
                    deliveries.inc()
                    if setup is not None:
                        self._delivered(setup, response)
                    yield response
                    del response  # not kept while the stream waits for the next one
        except Exception as exc:
            error = reject(exc)
            with _within(setup):
                self._metrics.observe_call(
                    method, match_id, time.perf_counter() - start, error, port
                )
            _unfinished(traced, error)
            raise error from exc
        except BaseException:
            _unfinished(traced, None)
            raise
        else:
            with _within(setup):
                self._metrics.observe_call(
                    method, match_id, time.perf_counter() - start, None, port
                )

    def _delivered(self, setup: SpanContext, response: Any) -> None:
        """Trace a streamed response that completes a version."""
        event = response.event
        if event.version_complete and self._tracing is not None:
            self._tracing.delivered(setup, event.version)

    def _observe(
        self, method: str, request: Any, start: float, error: ServiceError | None, caller: Caller
    ) -> None:
        match_id = getattr(request, "match_id", "")
        port = protocol(caller.metadata)[0]
        self._metrics.observe_call(method, match_id, time.perf_counter() - start, error, port)


def _unfinished(traced: ServerCall | None, error: ServiceError | None) -> None:
    """End the span of a call that did not finish: failed with ``error``, or cancelled (None)."""
    if traced is None:
        return
    if error is None:
        traced.cancelled()
    else:
        traced.failed(error)
    traced.end(ok=False)


def _within(setup: SpanContext | None) -> contextlib.AbstractContextManager[Any]:
    """The stream's setup span current again (its log line names it), when it was traced."""
    if setup is None:
        return _UNTRACED
    return trace.use_span(trace.NonRecordingSpan(setup))
