"""The CORS allow-list matches whole origins, over real HTTP requests to the HTTP port: an origin
is allowed only when it is one of the list, character for character, never by a shared prefix,
suffix or host; a list holding ``*`` allows every origin."""

from __future__ import annotations

import http.client
from collections.abc import Callable

import pytest

from basra.service import config
from basra.service.cli import build_parser
from basra.service.servicer import SERVICE
from tests.support import ServerThread

ALLOWED = "https://table.example"


def request(
    server: ServerThread, method: str, path: str, headers: dict[str, str]
) -> tuple[int, dict[str, str]]:
    """One request to the HTTP port: its status and its headers (names in lower case)."""
    host, port = server.http_address
    connection = http.client.HTTPConnection(host, port, timeout=10)
    try:
        connection.request(method, path, headers=headers)
        response = connection.getresponse()
        response.read()
        return response.status, {k.lower(): v for k, v in response.getheaders()}
    finally:
        connection.close()


def preflight(server: ServerThread, origin: str) -> tuple[int, list[str]]:
    """A CORS preflight of Play from ``origin``: its status and the CORS headers answered."""
    host, port = server.http_address
    connection = http.client.HTTPConnection(host, port, timeout=10)
    try:
        headers = {"origin": origin, "access-control-request-method": "POST"}
        connection.request("OPTIONS", f"/{SERVICE.full_name}/Play", headers=headers)
        response = connection.getresponse()
        response.read()
        cors = [k.lower() for k, _ in response.getheaders() if k.lower().startswith("access-")]
        return response.status, cors
    finally:
        connection.close()


@pytest.mark.parametrize(
    "origin",
    [
        "https://table.example.evil.com",  # the allowed origin as a prefix of another host
        "https://eviltable.example",  # as a suffix
        "https://evil.table.example",  # a subdomain of it
        "http://table.example",  # another scheme
        "https://table.example:8443",  # another port
        "https://table.example.",  # a trailing dot
        "https://TABLE.example",  # another case
        "https://table.example/",  # a trailing slash
        "https://table.exampl",  # one character short
    ],
)
def test_a_near_miss_of_an_allowed_origin_is_refused(
    start_server: Callable[..., ServerThread], origin: str
) -> None:
    server = start_server(cors_origins=(ALLOWED,))
    assert preflight(server, ALLOWED)[0] == 204  # the origin itself is allowed
    assert preflight(server, origin) == (403, [])


@pytest.mark.parametrize(
    "origin", ["https://anywhere.example", "http://localhost:5173", "https://table.example:8443"]
)
def test_an_allow_list_of_a_star_allows_every_origin(
    start_server: Callable[..., ServerThread], origin: str
) -> None:
    """``BASRA_CORS_ORIGINS=*``: a preflight from any origin is answered with that origin
    allowed, and so is the call that follows it."""
    args = build_parser().parse_args(["serve", "--store", "embedded"])
    settings = config.from_args(args, {"BASRA_CORS_ORIGINS": "*"})
    assert settings.cors_origins == ("*",)
    server = start_server(cors_origins=settings.cors_origins)
    path = f"/{SERVICE.full_name}/Play"
    status, headers = request(
        server, "OPTIONS", path, {"origin": origin, "access-control-request-method": "POST"}
    )
    assert status == 204
    assert headers["access-control-allow-origin"] == origin
    assert "POST" in headers["access-control-allow-methods"]
    status, headers = request(
        server,
        "POST",
        f"/{SERVICE.full_name}/GetMatch",
        {"origin": origin, "content-type": "application/json"},
    )
    assert status != 403
    assert headers["access-control-allow-origin"] == origin
