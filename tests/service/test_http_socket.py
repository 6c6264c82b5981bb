"""How the HTTP port writes to its sockets (basra.service.http_socket): a call's response in
one write, whatever the HTTP version, and a body larger than what a write holds goes out at once.

The server runs in this process (ServerThread), so counting ``asyncio.StreamWriter.write``
counts the server's writes to its connections: the clients here are pyqwest's (Rust), which
writes no asyncio stream.
"""

from __future__ import annotations

import asyncio
import http.client
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pyqwest import HTTPVersion, SyncClient, SyncHTTPTransport

from basra.service import http_socket
from basra.v1 import basra_service_pb2 as pb
from basra.v1.basra_service_connect import BasraServiceClientSync
from tests.support import ServerThread


@pytest.fixture
def socket_writes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The size of every write the server made to a connection's socket, in order."""
    writes: list[int] = []
    write = asyncio.StreamWriter.write

    def counted(self: asyncio.StreamWriter, data: Any) -> None:
        writes.append(len(data))
        write(self, data)

    monkeypatch.setattr(asyncio.StreamWriter, "write", counted)
    return writes


@pytest.mark.parametrize("version", [HTTPVersion.HTTP1, HTTPVersion.HTTP2])
def test_a_connect_call_is_answered_in_one_write_to_its_socket(
    start_server: Callable[..., ServerThread], socket_writes: list[int], version: HTTPVersion
) -> None:
    # hypercorn alone writes a unary response's headers, message and end in three writes.
    server = start_server()
    transport = SyncHTTPTransport(http_version=version)
    client = BasraServiceClientSync(server.http_url, http_client=SyncClient(transport))
    try:
        # The first call opens the connection (HTTP/2 settings are written apart).
        client.list_rules(pb.ListRulesRequest())
        for _ in range(5):
            before = len(socket_writes)
            rules = client.list_rules(pb.ListRulesRequest())
            assert rules.rules
            assert len(socket_writes) - before == 1, socket_writes[before:]
        match = client.deal(pb.DealRequest(request_id=str(uuid.uuid4())))
        before = len(socket_writes)
        read = client.get_match(
            pb.GetMatchRequest(match_id=match.match_id),
            headers={"authorization": f"Bearer {match.seat_tokens[0].token}"},
        )
        assert read.view.match_id == match.match_id
        assert len(socket_writes) - before == 1
    finally:
        client.close()
        transport.close()


def test_a_body_larger_than_a_write_holds_arrives_whole(
    start_server: Callable[..., ServerThread], socket_writes: list[int], tmp_path: Path
) -> None:
    root = tmp_path / "dist"
    root.mkdir()
    body = bytes(range(256)) * (5 * http_socket.HOLD_BYTES // 256 + 17)
    (root / "index.html").write_text("<!doctype html>")
    (root / "big.wasm").write_bytes(body)
    server = start_server(web_root=str(root))
    host, port = server.http_address
    connection = http.client.HTTPConnection(host, port, timeout=10)
    try:
        connection.request("GET", "/big.wasm")
        response = connection.getresponse()
        assert (response.status, response.read()) == (200, body)
    finally:
        connection.close()
    # Past HOLD_BYTES a write is not held: it goes to the socket at once, as hypercorn wrote it.
    assert max(socket_writes) >= len(body)


def test_coalescing_refuses_a_hypercorn_that_builds_its_servers_otherwise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import hypercorn.asyncio.run as hypercorn_run

    monkeypatch.setattr(hypercorn_run, "TCPServer", object)
    with pytest.raises(RuntimeError, match="no longer builds its connections' servers"):
        http_socket.coalesce_writes()
