"""HPACK (RFC 7541) for the HTTP port's HTTP/2 connections, at a fraction of hpack's cost.

Under the bench's Connect load, hpack's ``Decoder.decode`` and ``Encoder.encode`` were a fifth of
the server's profiled time per call: every field goes through several function calls, each with
a ``log.debug``, every request's ``:path`` is Huffman-decoded nibble by nibble again, and every
response's fields are searched for in the dynamic table and Huffman-encoded again.
``LeanDecoder`` and ``LeanEncoder`` are hpack's classes (the attributes h2 sets on them when
settings change are hpack's own) with those two methods written again:

- ``LeanDecoder.decode`` reads a header block in one loop with hpack's own table, Huffman
  decoder and errors: the same fields, the same exceptions for the same malformed blocks
  (tests/service/test_http_hpack.py compares both on random and malformed blocks). A Huffman
  string is decoded once and remembered when it is a field name or the value of a field named in
  ``_REMEMBERED_VALUES`` (paths, content types and the like, never a credential: an
  ``authorization`` value or any field sent never-indexed is decoded every time).
- ``LeanEncoder.encode`` never adds to the dynamic table: a field the static table holds whole
  is sent as its index, every other field as a literal without indexing (never indexed when h2
  marks it sensitive), its name indexed when the static table has it. Such an encoding depends
  on the field alone, so it is computed once per distinct field and remembered (sensitive fields
  are not remembered). A response's header block costs a few bytes more than with a dynamic
  table (about 30 for a Connect response), which the server's CPU is worth more than. Table
  size updates the peer asked for are still sent first, as RFC 7541 section 4.2 requires.

Both caches are bounded (emptied when full), shared by the port's connections, and hold nothing
a client sends as a secret.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import h2.connection
import hpack
from hpack.exceptions import HPACKDecodingError, InvalidTableSizeError, OversizedHeaderListError
from hpack.hpack import INDEX_NEVER, INDEX_NONE, VARINT_MAX_LENGTH
from hpack.huffman_table import decode_huffman
from hpack.struct import HeaderTuple, NeverIndexedHeaderTuple
from hpack.table import HeaderTable

_CACHE_LIMIT = 1024
"""Entries per cache; a full cache is emptied (a client sending ever new strings gains nothing)."""

_CACHED_LENGTH = 256
"""Longest string (encoded) a cache keeps."""

_REMEMBERED_VALUES = frozenset(
    (
        b":authority",
        b":method",
        b":path",
        b":scheme",
        b"accept",
        b"accept-encoding",
        b"connect-accept-encoding",
        b"connect-content-encoding",
        b"connect-protocol-version",
        b"connect-timeout-ms",
        b"content-encoding",
        b"content-length",
        b"content-type",
        b"grpc-accept-encoding",
        b"grpc-encoding",
        b"grpc-timeout",
        b"te",
        b"user-agent",
        b"x-grpc-web",
        b"x-user-agent",
    )
)
"""Fields whose Huffman-coded values the decoder remembers: none of them carries a secret."""

_huffman_decoded: dict[bytes, bytes] = {}


def _remember(cache: dict[Any, bytes], key: Any, value: bytes) -> bytes:
    """Keep ``value`` under ``key`` in a cache of at most ``_CACHE_LIMIT`` entries; answer it."""
    if len(cache) >= _CACHE_LIMIT:
        cache.clear()
    cache[key] = value
    return value


def _integer(data: bytes, index: int, mask: int) -> tuple[int, int]:
    """The integer at ``data[index]`` (its prefix ``mask``, 2**N - 1) and the index after it."""
    try:
        number = data[index] & mask
        index += 1
        if number == mask:
            shift = 0
            start = index
            while True:
                byte = data[index]
                index += 1
                number += (byte & 0x7F) << shift
                if byte < 0x80:
                    break
                shift += 7
                if index - start >= VARINT_MAX_LENGTH:
                    message = f"Variable integer representation is too long: {data!r}"
                    raise HPACKDecodingError(message)
    except IndexError as err:
        message = f"Unable to decode HPACK integer representation from {data!r}"
        raise HPACKDecodingError(message) from err
    return number, index


def _string(data: bytes, index: int, remember: bool) -> tuple[bytes, int]:
    """The string literal at ``data[index]`` (Huffman-decoded), and the index after it."""
    huffman = data[index] & 0x80 if index < len(data) else 0
    length, index = _integer(data, index, 0x7F)
    end = index + length
    if end > len(data):
        raise HPACKDecodingError("Truncated header block")
    raw = data[index:end]
    if not huffman:
        return raw, end
    if not remember or length > _CACHED_LENGTH:
        return decode_huffman(raw), end
    decoded = _huffman_decoded.get(raw)
    if decoded is None:
        decoded = _remember(_huffman_decoded, raw, decode_huffman(raw))
    return decoded, end


class LeanDecoder(hpack.Decoder):
    """hpack's decoder, its ``decode`` in one loop (see the module's docstring)."""

    def decode(self, data: bytes, raw: bool = False) -> Iterable[HeaderTuple]:
        if type(data) is not bytes:
            data = bytes(data)
        table = self.header_table
        limit = self.max_header_list_size
        headers: list[HeaderTuple] = []
        inflated = 0
        index = 0
        end = len(data)
        while index < end:
            first = data[index]
            header: HeaderTuple
            if first & 0x80:  # indexed field (section 6.1)
                position, index = _integer(data, index, 0x7F)
                header = HeaderTuple(*table.get_by_index(position))
            elif first & 0x40:  # literal with incremental indexing (6.2.1)
                name, value, index = self._literal(data, index, 0x3F, False)
                table.add(name, value)
                header = HeaderTuple(name, value)
            elif first & 0x20:  # dynamic table size update (6.3)
                if headers:
                    raise HPACKDecodingError("Table size update not at the start of the block")
                size, index = _integer(data, index, 0x1F)
                if size > self.max_allowed_table_size:
                    raise InvalidTableSizeError("Encoder exceeded max allowable table size")
                self.header_table_size = size
                continue
            else:  # literal without indexing (6.2.2) or never indexed (6.2.3)
                never = first & 0x10
                name, value, index = self._literal(data, index, 0x0F, bool(never))
                header = NeverIndexedHeaderTuple(name, value) if never else HeaderTuple(name, value)
            headers.append(header)
            inflated += 32 + len(header[0]) + len(header[1])
            if inflated > limit:
                raise OversizedHeaderListError(
                    f"A header list larger than {limit} has been received"
                )
        self._assert_valid_table_size()
        if raw:
            return headers
        try:
            return [type(h)(h[0].decode("utf-8"), h[1].decode("utf-8")) for h in headers]
        except UnicodeDecodeError as err:
            raise HPACKDecodingError("Unable to decode headers as UTF-8") from err

    def _literal(self, data: bytes, index: int, mask: int, never: bool) -> tuple[bytes, bytes, int]:
        """A literal field's name and value, and the index after it."""
        if data[index] & mask:
            position, index = _integer(data, index, mask)
            name = self.header_table.get_by_index(position)[0]
        else:
            name, index = _string(data, index + 1, True)
        value, index = _string(data, index, not never and name in _REMEMBERED_VALUES)
        return name, value, index


_STATIC_NAMES: dict[bytes, int] = {}
_STATIC_FIELDS: dict[tuple[bytes, bytes], int] = {}
for _position, (_name, _value) in enumerate(HeaderTable.STATIC_TABLE, start=1):
    _STATIC_NAMES.setdefault(_name, _position)
    _STATIC_FIELDS.setdefault((_name, _value), _position)

_encoded_fields: dict[tuple[bytes, bytes, bool], bytes] = {}


def _to_bytes(value: Any) -> bytes:
    if type(value) is bytes:
        return value
    return (value if type(value) is str else str(value)).encode("utf-8")


class LeanEncoder(hpack.Encoder):
    """hpack's encoder, its ``encode`` without the dynamic table (see the module's docstring)."""

    def encode(self, headers: Any, huffman: bool = True) -> bytes:
        block = []
        if self.header_table.resized:
            block.append(self._encode_table_size_change())
            self.header_table.resized = False
        if isinstance(headers, dict):
            headers = sorted(headers.items(), key=lambda kv: not _to_bytes(kv[0]).startswith(b":"))
        for header in headers:
            if isinstance(header, HeaderTuple):
                sensitive = not header.indexable
            else:
                sensitive = bool(header[2]) if len(header) > 2 else False
            name, value = _to_bytes(header[0]), _to_bytes(header[1])
            if sensitive:
                block.append(self._field(name, value, True, huffman))
                continue
            key = (name, value, huffman)
            encoded = _encoded_fields.get(key)
            if encoded is None:
                encoded = self._field(name, value, False, huffman)
                if len(name) + len(value) <= _CACHED_LENGTH:
                    _remember(_encoded_fields, key, encoded)
            block.append(encoded)
        return b"".join(block)

    def _field(self, name: bytes, value: bytes, sensitive: bool, huffman: bool) -> bytes:
        """One field, indexed when the static table holds it whole, else a literal that is not
        added to the dynamic table."""
        if not sensitive:
            whole = _STATIC_FIELDS.get((name, value))
            if whole is not None:
                return self._encode_indexed(whole)
        indexbit = INDEX_NEVER if sensitive else INDEX_NONE
        position = _STATIC_NAMES.get(name)
        if position is not None:
            return self._encode_indexed_literal(position, value, indexbit, huffman)
        return self._encode_literal(name, value, indexbit, huffman)


def use_lean_hpack(connection: h2.connection.H2Connection) -> None:
    """Give a new connection (nothing sent or received yet) ``LeanDecoder`` and ``LeanEncoder``
    in place of hpack's, with the limits h2 has set on hpack's."""
    old_decoder, old_encoder = connection.decoder, connection.encoder
    decoder = LeanDecoder(old_decoder.max_header_list_size)
    decoder.max_allowed_table_size = old_decoder.max_allowed_table_size
    decoder.header_table_size = old_decoder.header_table_size
    encoder = LeanEncoder()
    encoder.header_table_size = old_encoder.header_table_size
    encoder.header_table.resized = old_encoder.header_table.resized
    encoder.table_size_changes = list(old_encoder.table_size_changes)
    connection.decoder, connection.encoder = decoder, encoder
