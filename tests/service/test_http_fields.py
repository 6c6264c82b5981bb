"""The HTTP port's check of received field blocks (basra.service.http_fields): the same verdict
as h2's own validation on well-formed and malformed requests and trailers, and, on a real server,
a malformed request resets only its stream: the connection goes on serving."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

import hpack
import pytest
from h2.exceptions import ProtocolError
from h2.utilities import HeaderValidationFlags, validate_headers
from hypothesis import given
from hypothesis import strategies as st

from basra.service.http_fields import malformed
from tests.halfopen import (
    DATA,
    END_HEADERS,
    END_STREAM,
    GOAWAY,
    HEADERS,
    PREFACE,
    RST_STREAM,
    SETTINGS,
    frame,
    read_frame,
)
from tests.support import ServerThread

PROTOCOL_ERROR = 0x1

REQUEST = [
    (b":method", b"POST"),
    (b":scheme", b"http"),
    (b":path", b"/basra.v1.BasraService/ListRules"),
    (b":authority", b"127.0.0.1:80"),
    (b"content-type", b"application/proto"),
    (b"te", b"trailers"),
]

NAMES = st.sampled_from(
    [
        b":method",
        b":scheme",
        b":path",
        b":authority",
        b":status",
        b":protocol",
        b":other",
        b"host",
        b"te",
        b"connection",
        b"keep-alive",
        b"upgrade",
        b"transfer-encoding",
        b"proxy-connection",
        b"content-type",
        b"x-ok",
        b"",
        b"X-Upper",
        b"a:b",
        b"::x",
        b"a b",
        b"caf\xc3\xa9",
        b"del\x7f",
        b"tab\t",
    ]
) | st.binary(max_size=6)
VALUES = st.sampled_from(
    [
        b"",
        b"POST",
        b"GET",
        b"CONNECT",
        b"http",
        b"/",
        b"127.0.0.1:80",
        b"other:1",
        b"trailers",
        b"Trailers",
        b"gzip",
        b" lead",
        b"trail ",
        b"\ttab",
        b"a\x00b",
        b"a\nb",
        b"a\rb",
        b"in side",
        b"\x80\xff",
    ]
) | st.binary(max_size=6)
FIELD = st.tuples(NAMES, VALUES)


@st.composite
def blocks(draw: st.DrawFn) -> list[tuple[bytes, bytes]]:
    """A request's field block: a well-formed one with edits, or fields drawn at random."""
    if draw(st.booleans()):
        return draw(st.lists(FIELD, max_size=8))
    fields = list(REQUEST)
    for _ in range(draw(st.integers(0, 3))):
        edit = draw(st.sampled_from(["insert", "replace", "delete", "swap"]))
        at = draw(st.integers(0, len(fields)))
        if edit == "insert":
            fields.insert(at, draw(FIELD))
        elif fields and at < len(fields):
            if edit == "replace":
                fields[at] = (fields[at][0], draw(VALUES))
            elif edit == "delete":
                del fields[at]
            elif at + 1 < len(fields):
                fields[at], fields[at + 1] = fields[at + 1], fields[at]
    return fields


def h2_accepts(fields: list[tuple[bytes, bytes]], trailers: bool) -> bool:
    flags = HeaderValidationFlags(
        is_client=False, is_trailer=trailers, is_response_header=False, is_push_promise=False
    )
    try:
        list(validate_headers([hpack.HeaderTuple(*f) for f in fields], flags))
    except ProtocolError:
        return False
    return True


@given(blocks(), st.booleans())
def test_malformed_agrees_with_h2s_validation(
    fields: list[tuple[bytes, bytes]], trailers: bool
) -> None:
    assert (malformed(fields, trailers) is None) == h2_accepts(fields, trailers), fields


def without(name: bytes) -> list[tuple[bytes, bytes]]:
    return [f for f in REQUEST if f[0] != name]


MALFORMED = {
    "upper-case name": [*REQUEST, (b"X-Upper", b"1")],
    "colon in a name": [*REQUEST, (b"a:b", b"1")],
    "empty name": [*REQUEST, (b"", b"1")],
    "CR in a value": [*REQUEST, (b"x-ok", b"a\rb")],
    "value with leading space": [*REQUEST, (b"x-ok", b" lead")],
    "te other than trailers": [*without(b"te"), (b"te", b"gzip")],
    "connection-specific field": [*REQUEST, (b"connection", b"close")],
    "repeated pseudo-header": [(b":path", b"/x"), *REQUEST],
    "pseudo-header after a regular field": [*without(b":method"), (b":method", b"POST")],
    "unknown pseudo-header": [(b":other", b"1"), *REQUEST],
    ":status in a request": [(b":status", b"200"), *REQUEST],
    ":protocol outside CONNECT": [(b":protocol", b"websocket"), *REQUEST],
    "no :method": without(b":method"),
    "no :path": without(b":path"),
    "no :scheme": without(b":scheme"),
    "empty :path": [(b":path", b""), *without(b":path")],
    "neither :authority nor host": without(b":authority"),
    "repeated host": [*REQUEST, (b"host", b"127.0.0.1:80"), (b"host", b"127.0.0.1:80")],
    ":authority and host differ": [*REQUEST, (b"host", b"other:1")],
    "CONNECT with :path": [(b":method", b"CONNECT"), (b":authority", b"a:1"), (b":path", b"/")],
}


def test_each_rule_is_checked() -> None:
    """One block per rule, each malformed for h2 too (random blocks may miss a rule)."""
    for rule, fields in MALFORMED.items():
        assert not h2_accepts(fields, False), rule
        assert malformed(fields) is not None, rule
    well_formed = [
        REQUEST,
        [*REQUEST, (b"host", b"127.0.0.1:80"), (b"x-empty", b"")],
        [(b":method", b"CONNECT"), (b":authority", b"a:1")],
        [(b":method", b"CONNECT"), (b":protocol", b"websocket"), *without(b":method")],
    ]
    for fields in well_formed:
        assert h2_accepts(fields, False), fields
        assert malformed(fields) is None, fields
    assert malformed([(b"grpc-status", b"0")], trailers=True) is None
    assert malformed([(b":path", b"/")], trailers=True) is not None
    assert malformed([(b"te", b"gzip")], trailers=True) is not None


@pytest.mark.parametrize("block", ["request", "trailers"])
def test_a_malformed_block_resets_its_stream_and_the_connection_serves_on(
    start_server: Callable[..., ServerThread], block: str
) -> None:
    """Before, h2 ended the whole connection (GOAWAY) on a malformed block, taking every other
    call on it; now only the stream is reset (PROTOCOL_ERROR), as RFC 9113 section 8.1.1 asks."""
    server = start_server()
    host, port = server.http_address
    request = [(n, v.replace(b"127.0.0.1:80", f"{host}:{port}".encode())) for n, v in REQUEST]
    # Encoded in the order they are sent: each block may refer to the ones before it.
    encoder = hpack.Encoder()
    if block == "request":
        first = encoder.encode([*request, (b"X-Upper", b"1")], huffman=False)
        opening = frame(HEADERS, END_HEADERS | END_STREAM, 1, first) + first
    else:
        first = encoder.encode(request, huffman=False)
        trailers = encoder.encode([(b":path", b"/")], huffman=False)
        opening = frame(HEADERS, END_HEADERS, 1, first) + first
        opening += frame(DATA, 0, 1, b"\x00") + b"\x00"
        opening += frame(HEADERS, END_HEADERS | END_STREAM, 1, trailers) + trailers
    good = encoder.encode(request, huffman=False)

    async def exchange() -> list[tuple[int, int, int, bytes]]:
        reader, writer = await asyncio.open_connection(host, port)
        seen = []
        try:
            writer.write(PREFACE + frame(SETTINGS, 0, 0))
            writer.write(opening)
            writer.write(frame(HEADERS, END_HEADERS, 3, good) + good)
            writer.write(frame(DATA, END_STREAM, 3, b"\x00") + b"\x00")
            with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
                while True:
                    kind, flags, on, payload = await read_frame(reader)
                    if kind == SETTINGS and not flags & 0x1:
                        writer.write(frame(SETTINGS, 0x1, 0))
                    seen.append((kind, flags, on, payload))
                    if kind == GOAWAY or (on == 3 and flags & END_STREAM and kind != SETTINGS):
                        break
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()
        return seen

    seen = asyncio.run(asyncio.wait_for(exchange(), 30))
    assert (RST_STREAM, 0, 1, PROTOCOL_ERROR.to_bytes(4, "big")) in seen
    assert not [f for f in seen if f[0] == GOAWAY]
    assert [f for f in seen if f[2] == 3 and f[0] in (HEADERS, DATA) and f[1] & END_STREAM]


@pytest.mark.parametrize("value", [b"trailers", b"Trailers", b"TRAILERS"])
def test_te_trailers_is_accepted_in_any_case_as_http_compares_it(value: bytes) -> None:
    # RFC 9110: a transfer coding name is case-insensitive; RFC 9113 allows te only as
    # "trailers" in HTTP/2. h2 lower-cases it before comparing, and so must the port.
    fields = [*without(b"te"), (b"te", value)]
    assert malformed(fields) is None
    assert h2_accepts(fields, trailers=False)
