"""Whether a request's HTTP/2 field block is well-formed (RFC 9113 sections 8.2 and 8.3), in one
pass.

h2 checks every received field block through a chain of seven generators, most of them looping
over every byte of every name and value in Python: about a tenth of the server's profiled time
per Connect call. The HTTP port's connections switch that off (``validate_inbound_headers``) and
check the blocks here instead, with the same rules: h2's, for a server receiving a request or
its trailers (tests/service/test_http_fields.py compares the two on random and malformed blocks).
What changes is what a malformed block costs: h2 ends the whole connection with every call on
it; ``DirectH2Protocol`` resets only the stream with PROTOCOL_ERROR, as RFC 9113 section 8.1.1
asks ("a stream error of type PROTOCOL_ERROR").
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from h2.utilities import CONNECTION_HEADERS

_BAD_NAME = re.compile(rb"[\x00-\x20A-Z\x7f-\xff]|.:")
"""A name character outside RFC 9113's (controls, space, upper case, DEL and above), or a colon
after the first character."""

_BAD_VALUE = re.compile(rb"[\x00\n\r]|^[ \t]|[ \t]$")
"""A NUL, LF or CR, or white space at either end of a value."""

_PSEUDO_FIELDS = frozenset(
    (b":method", b":scheme", b":authority", b":path", b":status", b":protocol")
)
_COLON = ord(":")


def malformed(fields: Iterable[tuple[bytes, bytes]], trailers: bool = False) -> str | None:
    """Why a received request's field block (or, with ``trailers``, its trailers) is malformed,
    or None when it is well-formed."""
    pseudo: set[bytes] = set()
    regular = False
    method = authority = host = None
    for name, value in fields:
        if not name:
            return "empty field name"
        if _BAD_NAME.search(name):
            return f"illegal field name {name[:64]!r}"
        if value and _BAD_VALUE.search(value):
            return f"illegal value of {name[:64]!r}"
        if name[0] == _COLON:
            if name in pseudo:
                return f"repeated {name!r}"
            if regular:
                return f"{name[:64]!r} after a regular field"
            if name not in _PSEUDO_FIELDS:
                return f"unknown pseudo-header {name[:64]!r}"
            pseudo.add(name)
            if name == b":method":
                method = value
            elif name == b":authority":
                authority = value
            elif name == b":path" and not value and not trailers:
                return "empty :path"
            continue
        regular = True
        if name == b"te" and value.lower() != b"trailers":
            return "te other than trailers"
        if name in CONNECTION_HEADERS:
            return f"connection-specific field {name!r}"
        if name == b"host" and not trailers:
            if host is not None:
                return "repeated host"
            host = value
    if trailers:
        return "pseudo-header in trailers" if pseudo else None
    if b":method" not in pseudo:
        return "no :method"
    connect = method == b"CONNECT"
    if connect and b":protocol" not in pseudo:
        if b":scheme" in pseudo or b":path" in pseudo:
            return "CONNECT with :scheme or :path"
    elif b":scheme" not in pseudo or b":path" not in pseudo:
        return "no :scheme or :path"
    if b":status" in pseudo:
        return ":status in a request"
    if not connect and b":protocol" in pseudo:
        return ":protocol outside CONNECT"
    if authority is None and host is None:
        return "neither :authority nor host"
    if authority is not None and host is not None and authority != host:
        return ":authority and host differ"
    return None
