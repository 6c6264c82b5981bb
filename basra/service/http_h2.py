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

hypercorn has no hook for its protocols: ``send_bodies_directly`` replaces the name hypercorn's
``ProtocolWrapper`` builds HTTP/2 connections from (hypercorn is pinned in constraints.txt; the
replacement checks that the name it replaces is still hypercorn's ``H2Protocol``).
"""

from __future__ import annotations

import h2.exceptions
import hypercorn.protocol as hypercorn_protocol
from hypercorn.protocol.events import Body, EndBody
from hypercorn.protocol.events import Event as StreamEvent
from hypercorn.protocol.h2 import H2Protocol
from priority.priority import MissingStreamError


class DirectH2Protocol(H2Protocol):
    """hypercorn's HTTP/2 protocol, a body piece written at once when nothing waits before it."""

    async def stream_send(self, event: StreamEvent) -> None:
        direct = type(event) in (Body, EndBody)
        if not direct or not self._sendable(event.stream_id, len(getattr(event, "data", b""))):
            await super().stream_send(event)
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
            "basra/service/http_h2.py needs updating for this hypercorn"
        )
    hypercorn_protocol.H2Protocol = DirectH2Protocol  # type: ignore[attr-defined]
