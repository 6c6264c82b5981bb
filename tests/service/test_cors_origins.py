"""The CORS allow-list matches whole origins, over real HTTP requests to the HTTP port: an origin
is allowed only when it is one of the list, character for character, never by a shared prefix,
suffix or host."""

from __future__ import annotations

import http.client
from collections.abc import Callable

import pytest

from basra.service.servicer import SERVICE
from tests.support import ServerThread

ALLOWED = "https://table.example"


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
