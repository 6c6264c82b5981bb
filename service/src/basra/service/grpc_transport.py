"""BasraService over gRPC: the adapter between grpc.aio and the transport-neutral core.

It parses requests without ever raising (bytes that are not a valid request reach the core as a
``MalformedRequest`` and get INVALID_ARGUMENT with an ErrorInfo like any other bad input; gRPC's
own parsing would answer UNKNOWN without details), turns the call's metadata into a ``Caller``,
and a ``ServiceError`` into a status with its details in the ``grpc-status-details-bin`` trailer.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc
from google.protobuf import message_factory
from google.protobuf.message import DecodeError, Message

from basra.service import auth
from basra.service.errors import ServiceError
from basra.service.limits import RequestDeadline, peer_host, refuse
from basra.service.servicer import SERVICE, Caller, MalformedRequest, Servicer

Context = grpc.aio.ServicerContext[Any, Any]


def register(server: grpc.aio.Server, core: Servicer, deadline: RequestDeadline) -> None:
    """Serve BasraService on ``server``: one handler per RPC of the contract's descriptor.

    Every RPC is registered as a request stream that takes its one request within ``deadline``
    itself (on the wire a unary request is a stream of one message) and counts itself in the
    call limit: no wrapper per call, and none around a stream for its whole life."""
    handlers = {}
    for method in SERVICE.methods:
        request = message_factory.GetMessageClass(method.input_type)
        response = message_factory.GetMessageClass(method.output_type)
        if method.server_streaming:
            handler = grpc.stream_stream_rpc_method_handler(
                _streaming(core, method.name, deadline),
                request_deserializer=_parser(request),
                response_serializer=_serialized,
            )
        else:
            handler = grpc.stream_unary_rpc_method_handler(
                _unary(core, method.name, deadline),
                request_deserializer=_parser(request),
                response_serializer=response.SerializeToString,
            )
        handlers[method.name] = handler
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(SERVICE.full_name, handlers),)
    )


class _Bounding:
    """Stands in for the server to a generated ``add_*Servicer_to_server``: it takes the
    servicer's method handlers and registers them on ``server`` bounded by ``deadline``, as a
    generic handler only. Methods pre-registered with gRPC core (what the generated code also
    asks for) made every other call dearer: BasraService's Play ran 0.890 M instructions on the
    server with the health and reflection methods pre-registered, 0.857 M without
    (``tests.bench.callgrind_play``)."""

    def __init__(self, server: grpc.aio.Server, deadline: RequestDeadline) -> None:
        self._server = server
        self._deadline = deadline
        self.registered = 0

    def add_generic_rpc_handlers(self, handlers: Any) -> None:
        """Left out: the same handlers come to ``add_registered_method_handlers`` by name."""

    def add_registered_method_handlers(self, service: str, handlers: dict[str, Any]) -> None:
        bound = self._deadline.bound
        bounded = {name: bound(handler) for name, handler in handlers.items()}
        self._server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler(service, bounded),)
        )
        self.registered += len(handlers)


def register_bounded(
    server: grpc.aio.Server,
    deadline: RequestDeadline,
    add: Callable[[Any, Any], None],
    servicer: Any,
) -> None:
    """``add(servicer, server)`` (a generated ``add_*Servicer_to_server``), every method of it
    counted in the call limit and a single request taken within ``deadline``
    (``RequestDeadline.bound``): the health and reflection services."""
    bounding = _Bounding(server, deadline)
    add(servicer, bounding)
    if not bounding.registered:  # code generated before grpcio-tools 1.63 names no methods
        raise RuntimeError(f"{add.__name__} registered no method handlers by name")


def _parser(message: type[Message]) -> Callable[[bytes], Message | MalformedRequest]:
    def parse(data: bytes) -> Message | MalformedRequest:
        try:
            return message.FromString(data)
        except DecodeError:
            return MalformedRequest(message.DESCRIPTOR.full_name)

    return parse


def _caller(context: Context, ended: asyncio.Future[None]) -> Caller:
    raw: Any = context.invocation_metadata() or ()
    metadata: auth.Metadata = [(str(key), value) for key, value in raw]
    return Caller(metadata, context.peer(), ended)


def _unary(
    core: Servicer, method: str, deadline: RequestDeadline
) -> Callable[[AsyncIterator[Any], Context], Any]:
    calls = deadline.calls

    async def call(requests: AsyncIterator[Any], context: Context) -> Any:
        peer = peer_host(context.peer())
        if not calls.take(peer):
            await refuse(context)
        calls.grpc += 1
        try:
            request = await deadline.first(context)
            # grpc.aio cancels a unary handler whose client left: nothing waits on ``ended``.
            caller = _caller(context, asyncio.get_running_loop().create_future())
            return await core.handle(method, request, caller)
        except ServiceError as error:
            await context.abort(error.code, error.message, error.trailing_metadata())
            raise  # abort raises; this keeps type checkers informed
        finally:
            calls.grpc -= 1
            calls.give(peer)

    return call


def _serialized(response: bytes) -> bytes:
    return response


def _streaming(
    core: Servicer, method: str, deadline: RequestDeadline
) -> Callable[[AsyncIterator[Any], Context], Awaitable[None]]:
    """A server-streaming handler that writes its responses serialized with ``context.write``
    (memory per idle stream): a protobuf message costs about a kilobyte where its bytes cost a
    tenth of that, and a coroutine handler spares the async generator gRPC would otherwise
    iterate for the stream's whole life, which also kept the last message sent."""

    calls = deadline.calls

    async def call(requests: AsyncIterator[Any], context: Context) -> None:
        peer = peer_host(context.peer())
        if not calls.take(peer):
            await refuse(context)
        calls.grpc += 1
        responses = None
        try:
            request = await deadline.first(context)
            # The call's end is this coroutine's end: gRPC cancels the handler's task when the
            # client leaves (or the server stops), which raises here. Not
            # context.add_done_callback: gRPC keeps the callback, bound to the context, in the
            # call's own state (a reference cycle per stream, freed only by a full collection,
            # never while frozen: basra.service.gc_policy).
            ended: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            responses = core.handle_stream(method, request, _caller(context, ended))
            # Not kept while the stream is open: a parsed message holds its own protobuf
            # arena, about half a KiB per idle stream (measured), and the core took what it
            # needs.
            del request
            async for response in responses:
                await context.write(response.SerializeToString())
                del response  # not kept while the stream waits for the next one
        except ServiceError as error:
            await context.abort(error.code, error.message, error.trailing_metadata())
        finally:
            calls.grpc -= 1
            calls.give(peer)
            if responses is not None:
                _settle(ended)
                # Closed here when a write failed (gRPC does not iterate it: the handler is a
                # coroutine that writes); a no-op once the responses ended or raised.
                await responses.aclose()

    return call


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
