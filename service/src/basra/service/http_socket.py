"""How the HTTP port writes to its sockets: each connection's writes held briefly and sent as one.

hypercorn writes every piece of a response as soon as its HTTP/2 (or HTTP/1.1) state machine
yields it: a unary Connect call's headers, its message and the end of its stream are three
writes, each a ``send`` system call (on loopback the receiver's side of TCP runs in it too).
Under the bench's Connect load (64 matches over 4 HTTP/2 connections) py-spy found 12 % of the
server's samples in those writes, and writing them together cut the server's CPU per call by
about a fifth. Here each connection's writes wait until the event loop has gone
``QUIET_ROUNDS`` rounds without another write on that connection (at most ``HOLD_ROUNDS``
rounds, and never past ``HOLD_BYTES`` held), then go out in one ``send``: a call's pieces, and
the responses of the other calls on the connection that finished meanwhile. Rounds of the
loop, no timer: an idle loop goes round at once, a busy one has other calls' responses to join.

hypercorn's asyncio server has no hook for its writer: ``coalesce_writes`` replaces the class its
``worker_serve`` builds each connection's server from with a function that builds it on a
``CoalescedWriter`` (hypercorn is pinned in constraints.txt; the replacement checks that the name
it replaces is still hypercorn's ``TCPServer``).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any, Final

import hypercorn.asyncio.run as hypercorn_run
from hypercorn.asyncio.tcp_server import TCPServer

QUIET_ROUNDS: Final = 2
"""Held writes go out once the event loop has gone this many rounds without another: hypercorn
writes an HTTP/2 response's headers, then two rounds later its message and end."""
HOLD_ROUNDS: Final = 8
"""The most rounds of the event loop a write waits for others to join it."""
HOLD_BYTES: Final = 64 * 1024
"""Held bytes are written at once past this: a large body (a web table asset) goes out in
pieces of about this size, each followed by hypercorn's ``drain``, which applies the socket's
flow control as before."""


class CoalescedWriter:
    """The part of ``asyncio.StreamWriter`` hypercorn's ``TCPServer`` uses, its writes held for a
    few rounds of the event loop and written together (module docstring)."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer
        self._loop = asyncio.get_running_loop()
        self._held: list[bytes] = []
        self._size = 0
        self._waiting = False  # a round is scheduled
        self._quiet = 0  # rounds since the last write
        self._rounds = 0

    def write(self, data: bytes) -> None:
        if not data:
            return
        self._held.append(data)
        self._size += len(data)
        if self._size >= HOLD_BYTES:
            self.flush()
        elif self._waiting:
            self._quiet = 0
        else:
            self._waiting, self._quiet, self._rounds = True, 0, 0
            self._loop.call_soon(self._round)

    def _round(self) -> None:
        self._rounds += 1
        self._quiet += 1
        if self._held and self._quiet < QUIET_ROUNDS and self._rounds < HOLD_ROUNDS:
            self._loop.call_soon(self._round)
            return
        self._waiting = False
        self.flush()  # nothing when a large write, write_eof or close flushed meanwhile

    def flush(self) -> None:
        """Write what is held, as one write."""
        if not self._held:
            return
        data = self._held[0] if len(self._held) == 1 else b"".join(self._held)
        self._held.clear()
        self._size = 0
        # A connection going away (written after its end): hypercorn learns it from its next
        # drain or read, as it would have from this write.
        with contextlib.suppress(ConnectionError, RuntimeError):
            self._writer.write(data)

    async def drain(self) -> None:
        await self._writer.drain()

    def write_eof(self) -> None:
        self.flush()
        self._writer.write_eof()

    def close(self) -> None:
        self.flush()
        self._writer.close()

    async def wait_closed(self) -> None:
        await self._writer.wait_closed()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self._writer.get_extra_info(name, default)


def _coalesced_server(
    app: Any,
    loop: asyncio.AbstractEventLoop,
    config: Any,
    context: Any,
    state: Any,
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
) -> TCPServer:
    # TCPServer types its writer as a StreamWriter; it uses only the methods above.
    coalesced: Any = CoalescedWriter(writer)
    return TCPServer(app, loop, config, context, state, reader, coalesced)


def coalesce_writes() -> None:
    """Make hypercorn's asyncio ``worker_serve`` serve each connection on a ``CoalescedWriter``
    (idempotent). Raises RuntimeError when hypercorn no longer builds its servers that way."""
    current = getattr(hypercorn_run, "TCPServer", None)
    if current is _coalesced_server:
        return
    if current is not TCPServer:
        raise RuntimeError(
            "hypercorn.asyncio.run no longer builds its connections' servers from TCPServer: "
            "service/src/basra/service/http_socket.py needs updating for this hypercorn"
        )
    hypercorn_run.TCPServer = _coalesced_server  # type: ignore[attr-defined,assignment]
