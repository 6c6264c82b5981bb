"""The Redis store's own client for its hot commands: pipelined, no task and no pool checkout.

A Play's store call through redis-py costs several event-loop iterations and a pool checkout
(a connection leaves the pool, the command is written, a StreamReader wakes a task to read the
reply, the connection goes back). Here a command is one future and its bytes on a shared
connection, written together with every other command of the same event-loop iteration (one
system call for all of them); the replies of every command in flight on that connection are
read by one ``data_received`` callback with hiredis, in order, each settling its future. Connections
are still opened by redis-py (``redis.asyncio.ConnectionPool.make_connection``): the URL's
address or the master Sentinel names, TLS, AUTH, username and database are redis-py's, as
before. Once its handshake is done, the connection's transport is handed to a ``_Pipe``.

What a caller is promised:

- **A deadline.** Every command is answered within ``timeout_s`` (the connection's set-up
  included) or fails with StoreUnavailableError. A connection whose oldest command is not
  answered by its deadline is closed.
- **Connection faults.** A command whose connection is lost before its reply (a Redis restart,
  a reset) is sent again on another connection, at most twice, while its deadline allows; so is
  one a demoted master refused (READONLY: the connection is closed, and the next one asks
  Sentinel again). This is safe only because every command the store sends here is safe to
  apply twice: reads, the version-checked commit (a commit that was applied but whose reply was
  lost answers, when sent again, the record it wrote: the caller sees a lost race and decides
  on it), the create-if-absent script, the watch-access compare-and-swap (sent again after it
  applied, it finds the access changed and changes nothing), the watch key's expiry (PEXPIRE,
  PEXPIREAT, PERSIST or DEL: the same outcome twice) and the probe write. A connection that
  cannot be opened fails its commands with StoreUnavailableError at once.
- **Error replies.** ``OOM`` is StoreFullError; ``LOADING``, ``BUSY``, ``MASTERDOWN``,
  ``TRYAGAIN`` and ``CLUSTERDOWN`` are StoreUnavailableError; ``NOSCRIPT`` is NoScriptError (the
  caller sends the script itself); any other is ``redis.exceptions.ResponseError``.
- **Cancellation.** A caller cancelled while waiting gets CancelledError, never a reply; the
  reply, when it comes, is read and dropped, so the connection stays in step.
- **Bounds.** At most ``size`` connections; a command goes to the connection with the fewest
  commands in flight, and a new one is opened only when every open one has ``depth`` or more.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from typing import Any, Final

import hiredis
from redis import exceptions as redis_errors
from redis.asyncio.connection import ConnectionPool

from basra.service.store.base import StoreFullError, StoreUnavailableError

RESENDS: Final = 2
"""Times a command whose connection was lost is sent again (within its deadline)."""
_UNAVAILABLE_REPLIES: Final = ("LOADING", "BUSY", "MASTERDOWN", "TRYAGAIN", "CLUSTERDOWN")


class NoScriptError(Exception):
    """EVALSHA of a script Redis does not hold (it restarted, or SCRIPT FLUSH)."""


class _Call:
    """One command: its packed bytes, its future, its deadline (loop time) and resends so far."""

    __slots__ = ("deadline", "future", "packed", "resends")

    def __init__(self, future: asyncio.Future[Any], packed: bytes, deadline: float) -> None:
        self.future = future
        self.packed = packed
        self.deadline = deadline
        self.resends = 0


class _Pipe(asyncio.Protocol):
    """One connection: commands written in order, their replies read in order."""

    def __init__(self, owner: PipelinedClient) -> None:
        self.owner = owner
        self.calls: deque[_Call] = deque()
        """Sent (or waiting for the connection), not yet answered; oldest first."""
        self.transport: asyncio.Transport | None = None
        self.reader = hiredis.Reader()
        self.waiting: list[bytes] = []
        """Commands not written yet (this loop iteration's, or while connecting)."""
        self.flushing = False
        self.writer: Any = None
        """redis-py's StreamWriter of the transport, kept so that collecting it does not close
        the transport under us."""
        self.connecting: asyncio.Task[None] | None = None
        self.gone = False
        self.closed = asyncio.get_running_loop().create_future()
        """Done once the connection is closed (or was never opened)."""

    def push(self, call: _Call) -> None:
        self.calls.append(call)
        # Written once per loop iteration: the commands of every call that reached the store
        # in this iteration leave in one write (one system call, one read for Redis).
        self.waiting.append(call.packed)
        if self.transport is not None and not self.flushing:
            self.flushing = True
            self.owner.loop.call_soon(self.flush)

    def flush(self) -> None:
        self.flushing = False
        if self.transport is not None and self.waiting:
            self.transport.write(b"".join(self.waiting))
            self.waiting = []

    def data_received(self, data: bytes) -> None:
        reader = self.reader
        reader.feed(data)
        calls = self.calls
        while True:
            try:
                reply = reader.gets()
            except hiredis.ProtocolError:
                self.owner.drop(self)
                return
            if reply is False:
                return
            call = calls.popleft()
            if call.future.done():  # its caller was cancelled, or it timed out
                continue
            if isinstance(reply, hiredis.ReplyError):
                self.owner.refused(self, call, str(reply))
            else:
                call.future.set_result(reply)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(None)
        self.owner.lost(self)


class PipelinedClient:
    """Commands pipelined on at most ``size`` connections made by ``pool`` (see the module
    docstring). Bound to the event loop of its first command."""

    def __init__(
        self, pool: ConnectionPool, *, size: int, timeout_s: float, depth: int = 16
    ) -> None:
        self._pool = pool
        self._size = max(1, size)
        self._depth = depth
        self._timeout_s = timeout_s
        self._pipes: list[_Pipe] = []
        self._timer: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = False

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        assert self._loop is not None
        return self._loop

    @property
    def connections(self) -> int:
        """Connections open or being opened."""
        return len(self._pipes)

    def execute(self, *args: bytes | str | int | float) -> asyncio.Future[Any]:
        """Send one command; its future has the reply.

        The future raises StoreUnavailableError, StoreFullError, NoScriptError or
        ``redis.exceptions.ResponseError`` (see the module docstring).
        """
        loop = self._loop
        if loop is None:
            loop = self._loop = asyncio.get_running_loop()
        future = loop.create_future()
        if self._closed:
            future.set_exception(StoreUnavailableError("the store client is closed"))
            return future
        packed = hiredis.pack_command(args)  # type: ignore[arg-type]  # its stub wants 1-tuples
        call = _Call(future, packed, loop.time() + self._timeout_s)
        self._send(call)
        if self._timer is None:  # else it is set for an earlier deadline than this one
            self._timer = loop.call_at(call.deadline, self._expire)
        return future

    def execute_together(
        self, *commands: tuple[bytes | str | int | float, ...]
    ) -> list[asyncio.Future[Any]]:
        """Send several commands on one connection, in order, in the same write: Redis runs
        them one after the other (unless the connection is lost: each is then sent again on
        its own). One future per command, as ``execute`` gives."""
        loop = self._loop
        if loop is None:
            loop = self._loop = asyncio.get_running_loop()
        futures = [loop.create_future() for _ in commands]
        if self._closed:
            for future in futures:
                future.set_exception(StoreUnavailableError("the store client is closed"))
            return futures
        deadline = loop.time() + self._timeout_s
        pipe = self._choose()
        for future, args in zip(futures, commands, strict=True):
            packed = hiredis.pack_command(args)  # type: ignore[arg-type]  # stub wants 1-tuples
            pipe.push(_Call(future, packed, deadline))
        if self._timer is None:  # else it is set for an earlier deadline than this one
            self._timer = loop.call_at(deadline, self._expire)
        return futures

    async def close(self) -> None:
        """Close every connection; commands in flight fail with StoreUnavailableError."""
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        closing = []
        for pipe in list(self._pipes):
            self._remove(pipe)
            if pipe.connecting is not None:
                pipe.connecting.cancel()
                with contextlib.suppress(BaseException):
                    await pipe.connecting
            if pipe.transport is not None:
                pipe.transport.close()
                closing.append(pipe.closed)
            self._fail(pipe, "the store client is closed")
        if closing:  # let the transports finish closing (a TLS one says goodbye first)
            await asyncio.wait(closing, timeout=self._timeout_s)

    # -- Choosing and opening connections -------------------------------------------------------

    def _send(self, call: _Call) -> None:
        self._choose().push(call)

    def _choose(self) -> _Pipe:
        """The connection for the next command: the one with the fewest in flight, or a new
        one when every one has ``depth`` or more."""
        best: _Pipe | None = None
        opening = False
        for pipe in self._pipes:
            if best is None or len(pipe.calls) < len(best.calls):
                best = pipe
            opening = opening or pipe.transport is None
        if best is None or (
            len(best.calls) >= self._depth and len(self._pipes) < self._size and not opening
        ):
            best = self._open()
        return best

    def _open(self) -> _Pipe:
        pipe = _Pipe(self)
        self._pipes.append(pipe)
        assert self._loop is not None
        pipe.connecting = self._loop.create_task(self._connect(pipe))
        return pipe

    async def _connect(self, pipe: _Pipe) -> None:
        connection: Any = self._pool.make_connection()  # type: ignore[no-untyped-call]
        try:
            # redis-py bounds the TCP connect, not the handshake's replies: the deadline does.
            async with asyncio.timeout(self._timeout_s):
                await connection.connect()
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await connection.disconnect()
            raise
        except Exception as exc:  # every failure to connect is the same to callers
            with contextlib.suppress(Exception):
                await connection.disconnect()
            pipe.connecting = None
            self._remove(pipe)
            self._fail(pipe, f"cannot connect to Redis: {type(exc).__name__}: {exc}")
            return
        pipe.connecting = None
        writer = connection._writer
        # The connection is ours from here: redis-py must not close it when collected.
        connection._writer = connection._reader = None
        transport: asyncio.Transport = writer.transport
        pipe.writer = writer
        if pipe.gone or transport.is_closing():
            transport.close()
            self._remove(pipe)
            self._resend(pipe)
            return
        transport.set_protocol(pipe)
        pipe.transport = transport
        pipe.flush()

    # -- What connections report ----------------------------------------------------------------

    def refused(self, pipe: _Pipe, call: _Call, message: str) -> None:
        """An error reply to ``call``."""
        if message.startswith("OOM"):
            call.future.set_exception(StoreFullError(message))
        elif message.startswith("NOSCRIPT"):
            call.future.set_exception(NoScriptError(message))
        elif message.startswith("READONLY"):
            # The master this connection reached is a replica now (a Sentinel failover): the
            # command was refused, not applied. Ask again on a new connection, which Sentinel
            # points at the new master.
            self.drop(pipe)
            self._again(call, message)
        elif message.startswith(_UNAVAILABLE_REPLIES):
            call.future.set_exception(StoreUnavailableError(message))
        else:
            call.future.set_exception(redis_errors.ResponseError(message))

    def lost(self, pipe: _Pipe) -> None:
        """The connection closed (Redis went away, or we closed it)."""
        if not pipe.gone:
            self._remove(pipe)
        self._resend(pipe)

    def drop(self, pipe: _Pipe) -> None:
        """Close a connection that cannot be trusted any more; its commands are sent again."""
        self._remove(pipe)
        if pipe.transport is not None:
            pipe.transport.abort()  # connection_lost follows: lost() resends
        elif pipe.connecting is not None:
            pipe.connecting.cancel()
            self._resend(pipe)

    # -- Internals -------------------------------------------------------------------------------

    def _remove(self, pipe: _Pipe) -> None:
        pipe.gone = True
        if pipe in self._pipes:
            self._pipes.remove(pipe)

    def _resend(self, pipe: _Pipe) -> None:
        calls, pipe.calls = pipe.calls, deque()
        pipe.waiting = []
        for call in calls:
            if not call.future.done():
                self._again(call, "the connection to Redis was lost")

    def _again(self, call: _Call, why: str) -> None:
        assert self._loop is not None
        if self._closed or call.resends >= RESENDS or self._loop.time() >= call.deadline:
            call.future.set_exception(StoreUnavailableError(why))
            return
        call.resends += 1
        self._send(call)
        if self._timer is None or call.deadline < self._timer.when():
            if self._timer is not None:
                self._timer.cancel()
            self._timer = self._loop.call_at(call.deadline, self._expire)

    def _fail(self, pipe: _Pipe, why: str) -> None:
        calls, pipe.calls = pipe.calls, deque()
        pipe.waiting = []
        for call in calls:
            if not call.future.done():
                call.future.set_exception(StoreUnavailableError(why))

    def _expire(self) -> None:
        """At the earliest deadline of the commands in flight: close the connections whose
        oldest command is past its deadline, failing their commands that are past it."""
        self._timer = None
        assert self._loop is not None
        now = self._loop.time()
        for pipe in list(self._pipes):
            if pipe.calls and pipe.calls[0].deadline <= now:
                for call in pipe.calls:
                    if call.deadline <= now and not call.future.done():
                        call.future.set_exception(
                            StoreUnavailableError(
                                f"Redis did not answer within {self._timeout_s:g} s"
                            )
                        )
                self.drop(pipe)
        heads = [pipe.calls[0].deadline for pipe in self._pipes if pipe.calls]
        if heads and not self._closed:
            self._timer = self._loop.call_at(min(heads), self._expire)
