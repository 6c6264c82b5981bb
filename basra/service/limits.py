"""Bounds on what a client may hold open before its request has even arrived.

A gRPC call exists as soon as its headers arrive; a unary handler then waits, for as long as the
client likes, for the request message. A client that sends headers and one byte of a message on
thousands of streams holds thousands of calls (about 23 KB each, measured) and never sends the
rest. ``RequestDeadline`` gives every call ``timeout_s`` for its request message to arrive, and
the server's ``maximum_concurrent_rpcs`` bounds how many calls exist at once (see
``server.create_server``); HTTP/2's max_concurrent_streams bounds them per connection. The gRPC
transport registers its server-streaming handlers (WatchMatch) as request streams that wait for
their first message with ``RequestDeadline.first`` themselves (``grpc_transport.register``): the
same deadline, without a wrapper per call around a stream that may stay open for hours.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Final, TypeAlias

import grpc

from basra.service.errors import ServiceError

REASON: Final = "REQUEST_TIMEOUT"

Handler: TypeAlias = "grpc.RpcMethodHandler[Any, Any]"
Continuation: TypeAlias = Callable[[grpc.HandlerCallDetails], Awaitable[Handler]]


class RequestDeadline(grpc.aio.ServerInterceptor):  # type: ignore[type-arg]
    """Serve every single-request method as a request stream whose first message must arrive
    within ``timeout_s``; past it the call ends DEADLINE_EXCEEDED / REQUEST_TIMEOUT.

    On the wire a unary request is a stream of one message, so clients see no difference; the
    handler only gains a deadline on the wait gRPC would otherwise leave unbounded.
    """

    def __init__(self, timeout_s: float, on_timeout: Callable[[], None] = lambda: None) -> None:
        self._timeout_s = timeout_s
        self._on_timeout = on_timeout

    async def intercept_service(
        self, continuation: Continuation, handler_call_details: grpc.HandlerCallDetails
    ) -> Handler:
        handler = await continuation(handler_call_details)
        if handler is None or handler.request_streaming:
            return handler
        first = self.first
        if not handler.response_streaming:
            unary: Any = handler.unary_unary

            async def one_response(requests: AsyncIterator[Any], context: Any) -> Any:
                return await unary(await first(requests, context), context)

            return grpc.stream_unary_rpc_method_handler(
                one_response, handler.request_deserializer, handler.response_serializer
            )
        streaming: Any = handler.unary_stream
        if not (
            inspect.isasyncgenfunction(streaming)
            or inspect.isasyncgenfunction(getattr(streaming, "__func__", None))
        ):
            # A handler that writes with context.write (the standard health service's Watch):
            # left as it is, bounded by the server's call limit alone.
            return handler

        async def responses(requests: AsyncIterator[Any], context: Any) -> AsyncIterator[Any]:
            async for response in streaming(await first(requests, context), context):
                yield response

        return grpc.stream_stream_rpc_method_handler(
            responses, handler.request_deserializer, handler.response_serializer
        )

    async def first(self, requests: AsyncIterator[Any], context: Any) -> Any:
        """The call's one request message, once it has arrived within the deadline; else the
        call ends DEADLINE_EXCEEDED / REQUEST_TIMEOUT (INVALID_ARGUMENT when none was sent)."""
        try:
            async with asyncio.timeout(self._timeout_s):
                async for request in requests:
                    return request
        except TimeoutError:
            self._on_timeout()
            error = ServiceError(
                grpc.StatusCode.DEADLINE_EXCEEDED,
                REASON,
                f"the request message did not arrive within {self._timeout_s:g} s",
                {"timeout_s": self._timeout_s},
            )
            await context.abort(error.code, error.message, error.trailing_metadata())
        error = ServiceError(
            grpc.StatusCode.INVALID_ARGUMENT,
            "INVALID_ARGUMENT",
            "request: no request message was sent",
            {"field": "request"},
            field_violations={"request": "no request message was sent"},
        )
        await context.abort(error.code, error.message, error.trailing_metadata())
        raise AssertionError("abort raises")  # pragma: no cover
