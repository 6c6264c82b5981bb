"""The HTTP port's Connect unary fast path (``ConnectApp.serve_unary``): every call it takes is
answered with exactly the ASGI messages connectrpc's own path sends for the same request, and
every call it does not take is left to connectrpc untouched (nothing read).

Both paths run on a real server's application, on the server's loop, with the same scope and
body: the fast path first, then connectrpc's (``ConnectApp.__call__``), and their messages are
compared status, headers and body (a gzip body after decompressing: gzip writes the time).
"""

from __future__ import annotations

import asyncio
import gzip
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

import pytest

from basra.service.http import HttpApp
from basra.v1 import basra_service_pb2 as pb
from tests.service.conftest import new_match
from tests.support import ServerThread

MAX_BYTES: Final = 4096
PREFIX: Final = "/basra.v1.BasraService/"


@dataclass
class Exchange:
    """What an ASGI application did with one request."""

    served: bool
    """The fast path's answer (always True for connectrpc's)."""
    received: int
    """receive() calls answered with a body part."""
    sent: list[dict[str, Any]]


def scope(rpc: str, headers: Sequence[tuple[bytes, bytes]], method: str = "POST") -> dict[str, Any]:
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "2",
        "method": method,
        "scheme": "http",
        "path": PREFIX + rpc,
        "raw_path": (PREFIX + rpc).encode(),
        "query_string": b"",
        "root_path": "",
        "headers": list(headers),
        "client": ("127.0.0.1", 40000),
        "server": ("127.0.0.1", 8080),
        "extensions": {"http.response.trailers": {}},
    }


async def exchange(
    call: Callable[..., Any], request_scope: dict[str, Any], parts: Sequence[bytes]
) -> Exchange:
    """Run one application on one request whose body arrives in ``parts``; after the body the
    client stays (receive() waits, as a server's does until the client leaves)."""
    sent: list[dict[str, Any]] = []
    received = 0
    stay: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def receive() -> dict[str, Any]:
        nonlocal received
        if received < len(parts):
            received += 1
            return {
                "type": "http.request",
                "body": parts[received - 1],
                "more_body": received < len(parts),
            }
        await stay
        raise AssertionError("unreachable")

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    served = await call(request_scope, receive, send)
    return Exchange(served is not False, received, sent)


def app_of(server: ServerThread) -> HttpApp:
    assert server.server.http is not None
    return server.server.http.app


def both(
    server: ServerThread, request_scope: dict[str, Any], parts: Sequence[bytes]
) -> tuple[Exchange, Exchange]:
    connect = app_of(server).connect
    fast = server.run(exchange(connect.serve_unary, request_scope, parts))
    slow = server.run(exchange(connect.__call__, request_scope, parts))
    return fast, slow


def comparable(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages, a gzip body decompressed."""
    gzipped = any(
        (b"content-encoding", b"gzip") in m.get("headers", ())
        for m in messages
        if m["type"] == "http.response.start"
    )
    return [
        {**m, "body": gzip.decompress(m["body"])}
        if gzipped and m["type"] == "http.response.body"
        else m
        for m in messages
    ]


@pytest.fixture
def server(start_server: Callable[..., ServerThread]) -> ServerThread:
    return start_server(max_message_bytes=MAX_BYTES)


def cases(server: ServerThread) -> dict[str, tuple[str, list[tuple[bytes, bytes]], list[bytes]]]:
    """Name: (RPC, headers, body parts), each a call the fast path takes."""
    match = new_match(server)
    seat = b"authorization", f"Bearer {match.tokens[0]}".encode()
    other = "B" if match.tokens[0][-1] == "A" else "A"
    get = pb.GetMatchRequest(match_id=match.match_id).SerializeToString()
    proto = (b"content-type", b"application/proto")
    as_json = (b"content-type", b"application/json")
    return {
        "a view": ("GetMatch", [proto, seat], [get]),
        "a view, the body in pieces": ("GetMatch", [proto, seat], [get[:3], get[3:], b""]),
        "a view, protocol version 1": (
            "GetMatch",
            [proto, seat, (b"connect-protocol-version", b"1")],
            [get],
        ),
        "a view in JSON": (
            "GetMatch",
            [as_json, seat],
            [json.dumps({"matchId": match.match_id}).encode()],
        ),
        "a view, gzip accepted": (
            "GetMatch",
            [proto, seat, (b"accept-encoding", b"br, gzip")],
            [get],
        ),
        "a view, the request gzipped": (
            "GetMatch",
            [proto, seat, (b"content-encoding", b"gzip")],
            [gzip.compress(get)],
        ),
        "rules, an empty body": ("ListRules", [proto], [b""]),
        "a token one character off": (
            "GetMatch",
            [proto, (b"authorization", f"Bearer {match.tokens[0][:-1]}{other}".encode())],
            [get],
        ),
        "a play without a card": (
            "Play",
            [proto, seat],
            [pb.PlayRequest(match_id=match.match_id).SerializeToString()],
        ),
        "a body that is not the request": ("GetMatch", [proto, seat], [b"\xff\xff\xff"]),
        "JSON that is not JSON": ("GetMatch", [as_json, seat], [b"{"]),
        "a body over the largest message": ("GetMatch", [proto, seat], [b"\0" * (MAX_BYTES + 1)]),
        "a body over the largest message, in pieces": (
            "GetMatch",
            [proto, seat],
            [b"\0" * MAX_BYTES, b"\0", b"\0"],
        ),
        "a gzip body that is not gzip": (
            "GetMatch",
            [proto, seat, (b"content-encoding", b"gzip")],
            [b"not gzip"],
        ),
        "a gzip body over the largest message": (
            "GetMatch",
            [proto, seat, (b"content-encoding", b"gzip")],
            [gzip.compress(b"\0" * (MAX_BYTES + 1))],
        ),
    }


def test_every_call_the_fast_path_takes_gets_what_connectrpc_answers(
    server: ServerThread,
) -> None:
    for name, (rpc, headers, parts) in cases(server).items():
        fast, slow = both(server, scope(rpc, headers), parts)
        assert fast.served, name
        assert comparable(fast.sent) == comparable(slow.sent), name
        assert fast.received == slow.received, name
        starts = [m for m in fast.sent if m["type"] == "http.response.start"]
        assert len(starts) == 1, name


def test_the_cases_cover_success_and_each_kind_of_error(server: ServerThread) -> None:
    codes = {}
    for name, (rpc, headers, parts) in cases(server).items():
        start, body = both(server, scope(rpc, headers), parts)[0].sent
        codes[name] = "ok" if start["status"] == 200 else json.loads(body["body"])["code"]
    assert codes["a view"] == codes["a view in JSON"] == codes["rules, an empty body"] == "ok"
    assert codes["a token one character off"] == "permission_denied"
    assert codes["a play without a card"] == "invalid_argument"
    assert codes["a body that is not the request"] == codes["JSON that is not JSON"]
    assert codes["a body that is not the request"] == "invalid_argument"
    assert codes["a body over the largest message"] == "resource_exhausted"
    assert codes["a gzip body over the largest message"] == "resource_exhausted"
    assert codes["a body over the largest message, in pieces"] == "resource_exhausted"
    assert codes["a gzip body that is not gzip"] == "invalid_argument"


@pytest.mark.parametrize(
    ("why", "rpc", "headers", "method"),
    [
        ("a timeout header", "GetMatch", [(b"connect-timeout-ms", b"5000")], "POST"),
        ("another protocol version", "GetMatch", [(b"connect-protocol-version", b"2")], "POST"),
        ("an unknown request encoding", "GetMatch", [(b"content-encoding", b"br")], "POST"),
        ("a GET", "GetMatch", [], "GET"),
        ("a streaming RPC", "WatchMatch", [], "POST"),
        ("no such RPC", "NoSuchRpc", [], "POST"),
        ("the content type twice", "GetMatch", [(b"content-type", b"application/json")], "POST"),
    ],
)
def test_any_other_call_is_left_to_connectrpc_unread(
    server: ServerThread,
    why: str,
    rpc: str,
    headers: list[tuple[bytes, bytes]],
    method: str,
) -> None:
    request = scope(rpc, [(b"content-type", b"application/proto"), *headers], method)
    fast = server.run(exchange(app_of(server).connect.serve_unary, request, [b""]))
    assert (fast.served, fast.received, fast.sent) == (False, 0, []), why


@pytest.mark.parametrize(
    "content_type", [b"application/connect+proto", b"application/grpc", b"application/xml"]
)
def test_other_content_types_are_left_to_connectrpc_unread(
    server: ServerThread, content_type: bytes
) -> None:
    request = scope("GetMatch", [(b"content-type", content_type)])
    fast = server.run(exchange(app_of(server).connect.serve_unary, request, [b""]))
    assert (fast.served, fast.received, fast.sent) == (False, 0, [])


def test_a_client_that_leaves_before_its_request_gets_nothing_and_changes_nothing(
    server: ServerThread,
) -> None:
    match = new_match(server)
    before = match.view(0)
    sent: list[dict[str, Any]] = []

    async def leave() -> dict[str, Any]:
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    request = scope("Play", [(b"content-type", b"application/proto")])
    served = server.run(app_of(server).connect.serve_unary(request, leave, send))
    assert (served, sent) == (True, [])
    assert match.view(0) == before
