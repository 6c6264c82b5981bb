"""Bounds on what a client may hold open before its request has even arrived.

A gRPC call exists as soon as its headers arrive; a unary handler then waits, for as long as the
client likes, for the request message. A client that sends headers and one byte of a message on
thousands of streams holds thousands of calls (about 23 KB each, measured) and never sends the
rest. ``RequestDeadline`` gives every call ``timeout_s`` for its request message to arrive, and
bounds how many may wait so at once (``RequestDeadline.pending``), and ``CallLimit`` bounds how
many calls exist at once, on both ports together, so that a flood on both at once holds no more
than one on either; both limits also hold per client address, so that one client cannot take
what every other client needs (the HTTP port's calls:
``basra.service.http.ConnectApp.serve``); HTTP/2's max_concurrent_streams bounds them per
connection. Every handler of the gRPC port is registered already bounded: the transport's own
(``grpc_transport.register``) wait for their request message with ``RequestDeadline.first`` and
count themselves, the health and reflection services are wrapped once by
``RequestDeadline.bound`` (``grpc_transport.register_bounded``). Neither a server interceptor
nor gRPC's own ``maximum_concurrent_rpcs`` is used: each cost every call a coroutine, and the
latter an asyncio task and condition, for what these counts already bound (about 1.5 % of a
Play's server instructions together, by ``tests.bench.callgrind_play``).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import sys
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Final, NoReturn, TypeAlias, TypeVar

import grpc

from basra.service.errors import Reason, ServiceError

TOO_MANY_CALLS: Final = "Concurrent RPC limit exceeded"
"""The status message of a call refused past the limit (as gRPC's own limit words it)."""
T = TypeVar("T")
_EOF: Final[object] = grpc.aio.EOF  # type: ignore[attr-defined]  # not in grpc-stubs
"""What ``context.read()`` answers once the client has sent all it will."""

Handler: TypeAlias = "grpc.RpcMethodHandler[Any, Any]"


def _is_generator(function: Any) -> bool:
    """Whether ``function`` (or the function of a bound method) is an async generator."""
    return inspect.isasyncgenfunction(function) or inspect.isasyncgenfunction(
        getattr(function, "__func__", None)
    )


class CallLimit:
    """The calls one process serves at once on both its ports, open streams included: at most
    ``limit`` in all and ``peer_limit`` from one client address; past either a new call fails
    RESOURCE_EXHAUSTED at once.

    It counts the calls each port's handlers hold, every handler of the gRPC port included
    (see the module docstring), so that a flood of calls on both ports at once holds no more
    calls, and so no more memory, than one on either, and one client address cannot take the
    calls every other client needs. Behind a proxy every call comes from the proxy's own
    addresses: the operator guide says how to size ``peer_limit`` there.
    """

    __slots__ = ("grpc", "http", "limit", "peer_limit", "peers")

    def __init__(self, limit: int, peer_limit: int | None = None) -> None:
        self.limit = limit
        self.peer_limit = limit if peer_limit is None else peer_limit
        self.grpc = 0
        """Calls held by the gRPC port's handlers."""
        self.http = 0
        """Calls held by the HTTP port's application."""
        self.peers: dict[str, int] = {}
        """Calls held per client address (``peer_host``), only addresses holding some."""

    @property
    def full(self) -> bool:
        return self.grpc + self.http >= self.limit

    def take(self, peer: str) -> bool:
        """Count a call from ``peer`` in, if the process and that address may hold one more;
        False (nothing counted) when either is at its limit."""
        held = self.peers.get(peer, 0)
        if held >= self.peer_limit or self.grpc + self.http >= self.limit:
            return False
        self.peers[peer] = held + 1
        return True

    def give(self, peer: str) -> None:
        """Count a call from ``peer`` out (it was ``take``n)."""
        held = self.peers[peer] - 1
        if held:
            self.peers[peer] = held
        else:
            del self.peers[peer]


def peer_host(peer: str) -> str:
    """The client address of a gRPC peer string (``ipv4:10.0.0.1:5000``, ``ipv6:[::1]:5000``),
    without its port: the key of the per-address limits. Other forms (``unix:...``) are kept
    whole."""
    kind, _, address = peer.partition(":")
    if kind == "ipv4":
        return address.rpartition(":")[0]
    if kind == "ipv6":
        return address.rpartition(":")[0].strip("[]")
    return peer


async def refuse(context: Any) -> NoReturn:
    """End a gRPC call RESOURCE_EXHAUSTED because the process's calls are at their limit."""
    await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, TOO_MANY_CALLS)
    raise AssertionError("abort raises")  # pragma: no cover


class PendingLimitError(Exception):
    """A call may not wait for its request: as many as may wait already do (answered like a
    call past the call limit, RESOURCE_EXHAUSTED at once)."""


class _Waiting:
    """A call waiting for its request message."""

    __slots__ = ("deadline", "expired", "task")

    def __init__(self, deadline: float, task: asyncio.Task[Any] | None) -> None:
        self.deadline = deadline
        self.task = task
        """None once the message arrived."""
        self.expired = False


class RequestDeadline:
    """A single request message must arrive within ``timeout_s`` (``first``, ``within``); past
    it the call ends DEADLINE_EXCEEDED / REQUEST_TIMEOUT. ``bound`` serves a single-request
    method as a request stream that waits so.

    On the wire a unary request is a stream of one message, so clients see no difference; the
    handler only gains a deadline on the wait gRPC would otherwise leave unbounded.

    The waits share one timer, set for the oldest: a timer per call (``asyncio.timeout``) cost
    each call about 35 us of server CPU, as asyncio keeps a cancelled timer in its heap, ordered
    by Python comparisons, until its time (15 s) comes.
    """

    def __init__(
        self,
        timeout_s: float,
        on_timeout: Callable[[], None] = lambda: None,
        calls: CallLimit | None = None,
        pending: CallLimit | None = None,
    ) -> None:
        self._timeout_s = timeout_s
        self._on_timeout = on_timeout
        self.calls = calls if calls is not None else CallLimit(sys.maxsize)
        """The process's calls, which every call this serves counts in while it runs (the HTTP
        port's application and the gRPC transport count theirs in the same)."""
        self.pending = pending if pending is not None else CallLimit(sys.maxsize)
        """The calls waiting for their request message, in all and per client address: a call
        waiting costs what a served one does (the gRPC core's or hyper's stream, its task)
        while its client may hold it for the whole deadline at no cost of its own, so fewer
        may wait than may be served (``BASRA_MAX_PENDING_REQUESTS``)."""
        # Oldest first; the deadlines grow in that order (one timeout for all).
        self._waiting: deque[_Waiting] = deque()
        self._timer: asyncio.TimerHandle | None = None

    def bound(self, handler: Handler) -> Handler:
        """``handler`` bounded like the service's own calls: counted in the call limit (``held``),
        and a single request message taken within the deadline (``first``) by a request stream
        in its place. For the handlers the gRPC transport does not build itself (health,
        reflection: ``grpc_transport.register_bounded``), wrapped once when registered."""
        first, held = self.first, self.held
        streams_in = handler.request_streaming
        behaviour: Any = (
            handler.stream_unary or handler.stream_stream
            if streams_in
            else handler.unary_unary or handler.unary_stream
        )

        async def argument(requests: AsyncIterator[Any], context: Any) -> Any:
            return requests if streams_in else await first(context)

        async def awaited(requests: AsyncIterator[Any], context: Any) -> Any:
            # A response, or (a handler that writes with context.write, as the health
            # service's Watch) None once it has written them all.
            async with held(context):
                return await behaviour(await argument(requests, context), context)

        async def iterated(requests: AsyncIterator[Any], context: Any) -> AsyncIterator[Any]:
            async with held(context):
                async for response in behaviour(await argument(requests, context), context):
                    yield response

        if not handler.response_streaming:
            return grpc.stream_unary_rpc_method_handler(
                awaited, handler.request_deserializer, handler.response_serializer
            )
        return grpc.stream_stream_rpc_method_handler(
            iterated if _is_generator(behaviour) else awaited,
            handler.request_deserializer,
            handler.response_serializer,
        )

    @contextlib.asynccontextmanager
    async def held(self, context: Any) -> AsyncIterator[None]:
        """The call counted in the call limit while it runs; past the limit it is refused
        RESOURCE_EXHAUSTED at once (the transport's own handlers count themselves inline)."""
        calls, peer = self.calls, peer_host(context.peer())
        if not calls.take(peer):
            await refuse(context)
        calls.grpc += 1
        try:
            yield
        finally:
            calls.grpc -= 1
            calls.give(peer)

    async def first(self, context: Any) -> Any:
        """The call's one request message, once it has arrived within the deadline; else the
        call ends DEADLINE_EXCEEDED / REQUEST_TIMEOUT (INVALID_ARGUMENT when none was sent).

        It reads with ``context.read()``, never through the request iterator gRPC hands the
        handler: iterating that makes an async generator that refers back to its iterator, left
        suspended after the first message, so every call would end as cyclic garbage that only
        a collection (then asyncio's generator finalizer, a task per call) frees. Read this way
        a call's objects are freed by reference counting when it ends, which keeping them
        frozen (``basra.service.gc_policy``) relies on."""
        try:
            request = await self.within(context.read, peer_host(context.peer()))
        except PendingLimitError:
            await refuse(context)
        except ServiceError as late:
            await context.abort(late.code, late.message, late.trailing_metadata())
            raise AssertionError("abort raises") from None  # pragma: no cover
        if request is not _EOF:
            return request
        error = ServiceError(
            Reason.INVALID_ARGUMENT,
            "request: no request message was sent",
            {"field": "request"},
            field_violations={"request": "no request message was sent"},
        )
        await context.abort(error.code, error.message, error.trailing_metadata())
        raise AssertionError("abort raises")  # pragma: no cover

    async def within(self, read: Callable[[], Awaitable[T]], peer: str) -> T:
        """What ``read()`` answers, once it has within ``timeout_s`` from now; past that the read
        is cancelled and ServiceError DEADLINE_EXCEEDED / REQUEST_TIMEOUT raised (a call's own
        cancellation still propagates). The gRPC calls' ``first`` and the HTTP port's request
        bodies (``basra.service.http``) wait this way.

        Raises:
            PendingLimitError: as many calls as may wait already wait, in all or from
                ``peer``'s address; nothing was read.
        """
        pending = self.pending
        if not pending.take(peer):
            raise PendingLimitError
        pending.grpc += 1
        try:
            return await self._within(read)
        finally:
            pending.grpc -= 1
            pending.give(peer)

    async def _within(self, read: Callable[[], Awaitable[T]]) -> T:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        waiting = _Waiting(loop.time() + self._timeout_s, task)
        self._waiting.append(waiting)
        if self._timer is None:
            self._timer = loop.call_at(waiting.deadline, self._expire)
        cancelling = task.cancelling() if task is not None else 0
        try:
            return await read()
        except asyncio.CancelledError:
            # Our own cancellation (the deadline), not the call's: answer it.
            if not waiting.expired or task is None or task.uncancel() > cancelling:
                raise
            self._on_timeout()
            raise ServiceError(
                Reason.REQUEST_TIMEOUT,
                f"the request message did not arrive within {self._timeout_s:g} s",
                {"timeout_s": self._timeout_s},
            ) from None
        finally:
            waiting.task = None
            self._settle()

    def _settle(self) -> None:
        """Forget the waits that are over, from the oldest."""
        waiting = self._waiting
        while waiting and waiting[0].task is None:
            waiting.popleft()

    def _expire(self) -> None:
        """At the oldest wait's deadline: cancel the calls whose message is late."""
        self._timer = None
        self._settle()
        loop = asyncio.get_running_loop()
        now = loop.time()
        for waiting in self._waiting:
            if waiting.deadline > now:
                break
            if waiting.task is not None and not waiting.expired:
                waiting.expired = True
                waiting.task.cancel()
        for waiting in self._waiting:
            if not waiting.expired and waiting.task is not None:
                self._timer = loop.call_at(waiting.deadline, self._expire)
                break
