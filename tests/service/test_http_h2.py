"""How the HTTP port sends an HTTP/2 response's body (basra.service.http_h2): a unary call's
body written at once, bypassing hypercorn's send task; bodies larger than the flow-control
windows, streams and trailers still go the send task's way and arrive whole and in order.

The server runs in this process (ServerThread): counting hypercorn's ``StreamBuffer.push`` counts
the body pieces handed to the send task.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypercorn.protocol.h2 import StreamBuffer
from pyqwest import HTTPVersion, SyncClient, SyncHTTPTransport

from basra.service import http_h2
from basra.v1 import basra_service_pb2 as pb
from basra.v1.basra_service_connect import BasraServiceClientSync
from tests.support import ServerThread


@pytest.fixture
def buffered(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The size of every body piece the server handed to hypercorn's send task, in order."""
    pieces: list[int] = []
    push = StreamBuffer.push

    async def counted(self: StreamBuffer, data: bytes) -> None:
        pieces.append(len(data))
        await push(self, data)

    monkeypatch.setattr(StreamBuffer, "push", counted)
    return pieces


@pytest.fixture
def http2() -> Iterator[SyncClient]:
    transport = SyncHTTPTransport(http_version=HTTPVersion.HTTP2)
    client = SyncClient(transport)
    yield client
    transport.close()


def test_unary_responses_bypass_the_send_task(
    start_server: Callable[..., ServerThread], buffered: list[int], http2: SyncClient
) -> None:
    server = start_server()
    client = BasraServiceClientSync(server.http_url, http_client=http2)
    match = client.deal(pb.DealRequest(request_id=str(uuid.uuid4())))
    token = {"authorization": f"Bearer {match.seat_tokens[0].token}"}
    for _ in range(5):
        read = client.get_match(pb.GetMatchRequest(match_id=match.match_id), headers=token)
        assert read.view.match_id == match.match_id
    assert client.list_rules(pb.ListRulesRequest()).rules
    assert buffered == []


def test_a_body_larger_than_the_flow_control_window_arrives_whole(
    start_server: Callable[..., ServerThread],
    buffered: list[int],
    http2: SyncClient,
    tmp_path: Path,
) -> None:
    root = tmp_path / "dist"
    root.mkdir()
    # Past HTTP/2's initial 65,535-byte window: the rest waits for the client's window updates.
    body = bytes(range(256)) * (3 * 65_535 // 256 + 17)
    (root / "index.html").write_text("<!doctype html>")
    (root / "big.wasm").write_bytes(body)
    server = start_server(web_root=str(root))
    response = http2.get(f"{server.http_url}/big.wasm")
    assert (response.status, response.content) == (200, body)
    assert sum(buffered) == len(body)


def test_a_stream_arrives_whole_and_in_order(
    start_server: Callable[..., ServerThread], http2: SyncClient
) -> None:
    server = start_server()
    client = BasraServiceClientSync(server.http_url, http_client=http2)
    match = client.deal(pb.DealRequest(seed=11, request_id=str(uuid.uuid4())))
    token = {"authorization": f"Bearer {match.seat_tokens[0].token}"}
    # A match's events so far, up to its current version; the stream then stays open.
    events = []
    for response in client.watch_match(
        pb.WatchMatchRequest(match_id=match.match_id), headers=token
    ):
        events.append(response.event)
        if response.event.version_complete and response.event.version == match.view.version:
            break
    assert [e.version for e in events] == sorted(e.version for e in events)
    assert events[-1].version == match.view.version
    assert client.get_match(pb.GetMatchRequest(match_id=match.match_id), headers=token).view


def test_direct_bodies_refuse_a_hypercorn_that_builds_its_protocols_otherwise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import hypercorn.protocol as hypercorn_protocol

    monkeypatch.setattr(hypercorn_protocol, "H2Protocol", object)
    with pytest.raises(RuntimeError, match="no longer builds its HTTP/2 protocols"):
        http_h2.send_bodies_directly()
