"""Half-open gRPC (or, on the HTTP port, Connect) requests, written as raw HTTP/2 frames: each
stream sends its headers and one byte of a request message, then nothing. A well-behaved client
cannot do this, which is why the frames are written by hand (HPACK literals, no compression:
RFC 7540 and RFC 7541).

Used by the service tests (scaled down) and by ``make bench`` (250 connections x 100 streams).
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
from dataclasses import dataclass, field
from typing import Final

PREFACE: Final = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, RST_STREAM, SETTINGS, PING, GOAWAY = 0x0, 0x1, 0x3, 0x4, 0x6, 0x7
END_STREAM, ACK, END_HEADERS = 0x1, 0x1, 0x4
REFUSED_STREAM = 0x7
SETTINGS_INITIAL_WINDOW_SIZE = 0x4


def frame(kind: int, flags: int, stream: int, payload: bytes = b"") -> bytes:
    return struct.pack(">I", len(payload))[1:] + bytes((kind, flags)) + struct.pack(">I", stream)


async def read_frame(reader: asyncio.StreamReader) -> tuple[int, int, int, bytes]:
    """The next frame from the server: its type, flags, stream and payload."""
    head = await reader.readexactly(9)
    payload = await reader.readexactly(int.from_bytes(head[:3], "big"))
    return head[3], head[4], int.from_bytes(head[5:9], "big") & 0x7FFFFFFF, payload


def _literal(name: str, value: str) -> bytes:
    """An HPACK literal header field without indexing, new name, no Huffman coding."""
    out = b"\x00"
    for text in (name.encode(), value.encode()):
        assert len(text) < 127
        out += bytes((len(text),)) + text
    return out


def request_headers(authority: str, path: str, content_type: str = "application/grpc") -> bytes:
    return b"".join(
        _literal(name, value)
        for name, value in (
            (":method", "POST"),
            (":scheme", "http"),
            (":path", path),
            (":authority", authority),
            ("content-type", content_type),
            ("te", "trailers"),
        )
    )


@dataclass
class Attack:
    """What happened to the streams of an attack."""

    opened: int = 0
    answered: int = 0
    """Streams the server ended (its last HEADERS or DATA frame, with END_STREAM, or
    RST_STREAM)."""
    refused: int = 0
    """Of those, the streams reset unprocessed (RST_STREAM with REFUSED_STREAM)."""
    dropped: int = 0
    """Streams lost with their connection before the server ended them: it was closed or reset
    (as the kernel resets a connection left unaccepted past the listen backlog)."""
    connections_closed: int = 0
    ended: set[tuple[int, int, int]] = field(default_factory=set)
    """The streams ended, by port, connection and stream id (one attack may span ports)."""


async def _connection(
    index: int,
    host: str,
    port: int,
    streams: int,
    path: str,
    attack: Attack,
    stop: asyncio.Event,
    content_type: str,
    window: int | None,
    source: str | None,
) -> None:
    local = None if source is None else (source, 0)
    reader, writer = await asyncio.open_connection(host, port, local_addr=local)
    settings = b"" if window is None else struct.pack(">HI", SETTINGS_INITIAL_WINDOW_SIZE, window)
    writer.write(PREFACE + frame(SETTINGS, 0, 0, settings) + settings)
    headers = request_headers(f"{host}:{port}", path, content_type)
    # A gRPC message is a 5-byte prefix (compressed flag, length) then the body: one byte of it.
    for n in range(streams):
        stream = 2 * n + 1
        writer.write(frame(HEADERS, END_HEADERS, stream, headers) + headers)
        writer.write(frame(DATA, 0, stream, b"\x00") + b"\x00")
        attack.opened += 1
    try:
        await writer.drain()
    except ConnectionError:
        attack.dropped += streams
        raise

    async def read() -> None:
        while True:
            kind, flags, stream, payload = await read_frame(reader)
            if kind == SETTINGS and not flags & ACK:
                writer.write(frame(SETTINGS, ACK, 0))
            elif kind == PING and not flags & ACK:
                writer.write(frame(PING, ACK, 0, payload) + payload)
            elif (kind == RST_STREAM or (kind in (HEADERS, DATA) and flags & END_STREAM)) and (
                port,
                index,
                stream,
            ) not in attack.ended:
                attack.ended.add((port, index, stream))
                attack.answered += 1
                if kind == RST_STREAM and int.from_bytes(payload, "big") == REFUSED_STREAM:
                    attack.refused += 1
            elif kind == GOAWAY:
                pass  # streams it leaves unanswered are dropped as the connection closes

    reading = asyncio.ensure_future(read())
    stopping = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait((reading, stopping), return_when=asyncio.FIRST_COMPLETED)
        if reading.done() and isinstance(reading.exception(), (ConnectionError, EOFError)):
            ended = sum(1 for key in attack.ended if key[:2] == (port, index))
            attack.dropped += streams - ended
    finally:
        for task in (reading, stopping):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, ConnectionError, EOFError):
                await task
        attack.connections_closed += 1
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()


async def half_open(
    host: str,
    port: int,
    connections: int,
    streams: int,
    stop: asyncio.Event,
    attack: Attack,
    path: str = "/basra.v1.BasraService/GetMatch",
    content_type: str = "application/grpc",
    window: int | None = None,
    source: str | None = None,
) -> None:
    """Open ``connections`` x ``streams`` half-open requests and hold them until ``stop``.
    ``window``: the flow-control window the client gives each stream of the server's (0: a
    client that reads nothing of any response body); ``source``: the client's own address
    (127.0.0.2: another peer than the tests' honest clients)."""
    await asyncio.gather(
        *(
            _connection(i, host, port, streams, path, attack, stop, content_type, window, source)
            for i in range(connections)
        ),
        return_exceptions=True,
    )


def rss_bytes(pid: int) -> int:
    """The resident set size of a process, from /proc."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for {pid}")
