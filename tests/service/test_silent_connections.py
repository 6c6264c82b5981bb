"""Connections that send nothing on the HTTP port: it speaks HTTP/1.1 unless told to speak
cleartext HTTP/2 too, so such a connection is closed after the read timeout, like one idle
between requests, and cannot hold one of the connections the port serves at once for longer.
The full-size flood (8,000 held) is in the load tier, ``tests/load/test_silent_load.py``."""

from __future__ import annotations

import socket
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager

import pytest

from basra.service.config import Settings
from basra.service.http import connections_served_at_once
from tests.support import ServerThread


@contextmanager
def silent(host: str, port: int, count: int) -> Iterator[list[socket.socket]]:
    """``count`` connections to (host, port) that send nothing, closed as the block ends."""
    with ExitStack() as held:
        yield [
            held.enter_context(socket.create_connection((host, port), timeout=30))
            for _ in range(count)
        ]


def test_silent_connections_that_fill_the_port_are_closed_and_a_new_client_served(
    start_server: Callable[..., ServerThread],
) -> None:
    """As many silent connections as the port serves at once: each is closed after the read
    timeout, so a client connecting after them is served rather than left unaccepted."""
    server = start_server(http_read_timeout_s=1, http_max_connections=8)
    host, port = server.http_address
    with silent(host, port, 8) as connections:
        with urllib.request.urlopen(f"{server.http_url}/healthz", timeout=30) as page:
            assert page.status == 200
        for connection in connections:
            assert connection.recv(1) == b""  # the server's close; a timeout raises


def test_cleartext_http2_is_spoken_only_when_asked(
    start_server: Callable[..., ServerThread],
) -> None:
    """HTTP/1.1 alone by default: an HTTP/2 connection preface (prior knowledge) is no request
    of HTTP/1.1's, and the connection is closed with no HTTP/2 answer; with ``http2_cleartext``
    the server answers it with its HTTP/2 SETTINGS."""
    preface = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])
    for http2 in (False, True):
        server = start_server(http2_cleartext=http2)
        host, port = server.http_address
        with socket.create_connection((host, port), timeout=30) as connection:
            connection.sendall(preface)
            answer = connection.recv(65536)
        settings_frame = len(answer) >= 9 and answer[3] == 4
        assert settings_frame == http2, (http2, answer[:40])
        if not http2:
            assert answer == b"" or answer.startswith(b"HTTP/1.1 4"), answer[:40]


@pytest.mark.parametrize(("limit", "files", "served"), [(16384, 1024, 512), (100, 1024, 100)])
def test_the_port_serves_its_bound_or_half_the_open_files(
    monkeypatch: pytest.MonkeyPatch, limit: int, files: int, served: int
) -> None:
    """At most ``http_max_connections`` at once, and never more than half the file descriptors
    the process may open: silent connections past that would leave none for the gRPC port or
    the store."""
    monkeypatch.setattr("resource.getrlimit", lambda _: (files, files))
    assert connections_served_at_once(Settings(http_max_connections=limit)) == served
