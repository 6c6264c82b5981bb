"""How the HTTP port sends an HTTP/2 response's body: at once, when nothing of it waits.

hypercorn's HTTP/2 protocol hands every piece of a body to a send task of its connection: the
piece goes into the stream's buffer, the stream is unblocked in the connection's priority tree,
and the send task wakes, picks a stream by priority, takes the piece out of the buffer and
writes it; the end of the body waits for that task the same way. For a unary call's response
(one message, far below any flow-control window) that is two task wake-ups and a priority tree
walk per call: 7.5 % of the server's py-spy samples under the bench's Connect load.
``DirectH2Protocol`` writes a piece itself when its stream has nothing buffered and the
flow-control windows take the whole piece, and ends the stream itself when nothing of it is
buffered: what the send task would have written, in the same order (nothing of the stream is
waiting ahead of it), without the wake-ups. Anything else (a piece larger than the windows, a
stream whose earlier pieces still wait, trailers, WebSocket data) goes the send task's way as
before, so flow control and priorities still apply where they matter.

It also bounds the HTTP/2 streams open on the port, across all its connections
(``StreamBudget``): each stream costs hypercorn about 20 KB (a stream object, an application
task, h2's stream state, the request's scope) before the application sees it, so the
application's own call limit (``ConnectApp``) cannot bound a burst: issue 9's half-open flood
(250 connections x 100 streams, headers and one byte each) took the server past 570 MiB with
every call refused at once. A request past the budget is reset with REFUSED_STREAM (HTTP/2's
"not processed, safe to retry", what gRPC's own server sends past its stream limit) before
hypercorn builds anything for it.

Each connection also encodes and decodes its header blocks with ``http_hpack``'s lean HPACK and
checks received field blocks with ``http_fields.malformed`` in place of h2's validation (a
malformed request or trailers reset with PROTOCOL_ERROR, the connection serving on): together
16 % of the instructions of a Connect call (``python -m tests.bench.callgrind_play
--connect-only``).

A piece of a response that waits longer than the request deadline to be written (the client's
flow-control window left shut, as by a client that reads nothing) has its stream reset with
CANCEL and its application let go (``SendDeadline``). Before, such a client held its streams,
answered or not, for as long as it kept its connection: a few connections held the whole
budget, and the port refused everyone else.

When a connection closes, its streams' buffers are closed with it (hypercorn left them open, and
an application answering a stream of a closed connection waited for ever to write).

hypercorn has no hook for its protocols: ``send_bodies_directly`` replaces the name hypercorn's
``ProtocolWrapper`` builds HTTP/2 connections from (hypercorn is pinned in constraints.txt; the
replacement checks that the name it replaces is still hypercorn's ``H2Protocol``).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import h2.errors
import h2.events
import h2.exceptions
import hypercorn.protocol as hypercorn_protocol
from hypercorn.config import Config as HypercornConfig
from hypercorn.events import Closed, Event
from hypercorn.protocol.events import Body, EndBody, Trailers
from hypercorn.protocol.events import Event as StreamEvent
from hypercorn.protocol.h2 import H2Protocol
from priority.priority import MissingStreamError

from basra.service.http_fields import malformed
from basra.service.http_hpack import use_lean_hpack
from basra.service.limits import CallLimit
from basra.service.metrics import Tally


@dataclass
class StreamBudget:
    """The HTTP/2 streams open on one port, across its connections: at most ``limit``, less the
    calls the process's gRPC port holds (they spend the same memory)."""

    limit: int
    refusals: Tally
    """Requests reset with REFUSED_STREAM because the budget was spent."""
    calls: CallLimit
    """The process's calls, the gRPC port's among them."""
    open: int = 0

    @property
    def spent(self) -> bool:
        return self.open + self.calls.grpc >= self.limit


@dataclass
class SendDeadline:
    """How long a piece of a response may wait for the client to take it."""

    seconds: float
    stalls: Tally
    """Streams reset because a piece of their response waited longer."""


class BudgetedConfig(HypercornConfig):
    """hypercorn's configuration, carrying the port's stream budget and send deadline to its
    protocols."""

    def __init__(self, budget: StreamBudget, send_deadline: SendDeadline) -> None:
        super().__init__()
        self.stream_budget = budget
        self.send_deadline = send_deadline


class DirectH2Protocol(H2Protocol):
    """hypercorn's HTTP/2 protocol, a body piece written at once when nothing waits before it,
    its streams counted against the port's budget when its configuration carries one."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        use_lean_hpack(self.connection)
        # Received field blocks are checked by ``malformed`` instead (http_fields.py), and a
        # malformed one resets its stream instead of ending the connection.
        self.connection.config.validate_inbound_headers = False
        self._budget: StreamBudget | None = getattr(self.config, "stream_budget", None)
        self._deadline: SendDeadline | None = getattr(self.config, "send_deadline", None)
        self._counted: set[int] = set()
        """The streams of this connection counted in the budget."""

    async def handle(self, event: Event) -> None:
        await super().handle(event)
        if isinstance(event, Closed):
            # hypercorn's send task ends with the connection, and nothing else empties a
            # stream's buffer: an application still answering would wait in ``drain`` for ever,
            # its call held, and hypercorn with it (it waits for its applications before it lets
            # a connection go). A half-open request whose client left was held so, for good.
            for buffer in list(self.stream_buffers.values()):
                await buffer.close()

    async def _handle_events(self, events: list[h2.events.Event]) -> None:
        # One event at a time, so that each is judged on the connection as it is then: the
        # streams a previous event opened or an application task closed meanwhile.
        budget, streams = self._budget, self.streams
        protocol_error = h2.errors.ErrorCodes.PROTOCOL_ERROR
        for event in events:
            if isinstance(event, h2.events.DataReceived) and event.stream_id not in streams:
                self._drop(event)
            elif isinstance(event, h2.events.RequestReceived) and malformed(event.headers or ()):
                self.connection.reset_stream(event.stream_id, protocol_error)
            elif isinstance(event, h2.events.TrailersReceived) and malformed(
                event.headers or (), trailers=True
            ):
                self.connection.reset_stream(event.stream_id, protocol_error)
                await self._close_stream(event.stream_id)
            elif isinstance(event, h2.events.RequestReceived) and budget is not None:
                if not budget.spent:
                    await super()._handle_events([event])
                else:
                    self.connection.reset_stream(
                        event.stream_id, h2.errors.ErrorCodes.REFUSED_STREAM
                    )
                    budget.refusals.inc()
            else:
                await super()._handle_events([event])
        await self._flush()

    def _drop(self, event: h2.events.DataReceived) -> None:
        """Acknowledge, and otherwise ignore, data for a stream hypercorn no longer holds (or
        never held): one refused past the budget, or one whose response already ended before
        its request did (hypercorn would fail the whole connection on a KeyError). The data
        still counts in the connection's flow-control window, which the acknowledgement
        restores."""
        self.connection.acknowledge_received_data(
            event.flow_controlled_length or 0, event.stream_id
        )

    async def _create_stream(self, request: h2.events.RequestReceived) -> None:
        try:
            await super()._create_stream(request)
        finally:
            self._count(request.stream_id)

    async def _close_stream(self, stream_id: int) -> None:
        try:
            await super()._close_stream(stream_id)
        finally:
            self._count(stream_id)

    def _count(self, stream_id: int | None) -> None:
        """Count ``stream_id`` against the budget while hypercorn holds it in ``streams``."""
        budget, counted, streams = self._budget, self._counted, self.streams
        if budget is None or stream_id is None:
            return
        if stream_id in streams and stream_id not in counted:
            counted.add(stream_id)
            budget.open += 1
        elif stream_id not in streams and stream_id in counted:
            counted.discard(stream_id)
            budget.open -= 1

    async def stream_send(self, event: StreamEvent) -> None:
        direct = type(event) in (Body, EndBody)
        if not direct or not self._sendable(event.stream_id, len(getattr(event, "data", b""))):
            deadline = self._deadline
            if deadline is None or type(event) not in (Body, EndBody, Trailers):
                await super().stream_send(event)
                return
            # Each waits for the send task to write what the stream has buffered.
            try:
                async with asyncio.timeout(deadline.seconds):
                    await super().stream_send(event)
            except TimeoutError:
                await self._stalled(event.stream_id, deadline)
            return
        try:
            if type(event) is Body:
                self.connection.send_data(event.stream_id, event.data)
            else:
                self.connection.end_stream(event.stream_id)
                # What the send task does once a stream's body is complete.
                del self.stream_buffers[event.stream_id]
                self.priority.remove_stream(event.stream_id)
        except (KeyError, MissingStreamError, h2.exceptions.ProtocolError):
            return  # the connection closed meanwhile: as hypercorn's own stream_send
        await self._flush()

    async def _stalled(self, stream_id: int, deadline: SendDeadline) -> None:
        """Reset a stream a piece of whose response waited too long for its client, and let its
        application go, as hypercorn does when the client resets a stream."""
        try:
            self.connection.reset_stream(stream_id, h2.errors.ErrorCodes.CANCEL)
        except h2.exceptions.ProtocolError:
            return  # the stream ended meanwhile
        deadline.stalls.inc()
        await self._close_stream(stream_id)
        await self._window_updated(stream_id)  # the send task then lets the stream's buffer go
        await self._flush()

    def _sendable(self, stream_id: int, size: int) -> bool:
        """Whether ``size`` bytes of ``stream_id`` can be written now, in order: nothing of the
        stream is buffered or marked complete, and both flow-control windows take them."""
        buffer = self.stream_buffers.get(stream_id)
        if buffer is None or buffer.buffer or buffer.complete:
            return False
        try:
            window = self.connection.local_flow_control_window(stream_id)
        except h2.exceptions.ProtocolError:
            return False  # a closed stream: the send task's way ignores it as before
        return size <= min(window, self.connection.max_outbound_frame_size)


def send_bodies_directly() -> None:
    """Make hypercorn build its HTTP/2 connections' protocols as ``DirectH2Protocol``
    (idempotent). Raises RuntimeError when hypercorn no longer builds them from the name."""
    current = getattr(hypercorn_protocol, "H2Protocol", None)
    if current is DirectH2Protocol:
        return
    if current is not H2Protocol:
        raise RuntimeError(
            "hypercorn.protocol no longer builds its HTTP/2 protocols from H2Protocol: "
            "service/src/basra/service/http_h2.py needs updating for this hypercorn"
        )
    hypercorn_protocol.H2Protocol = DirectH2Protocol  # type: ignore[attr-defined]
