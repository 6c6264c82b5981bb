"""The Redis form of a match record: one binary string, version first.

One string instead of a hash keeps a match small: Redis stores a hash compactly only while every
value is at most 64 bytes, and a state or a request record is larger. The version is a fixed
8-byte prefix so the commit script can compare it with GETRANGE before replacing the string.

    record := version (u64) seats (u8: the seat count, 0 to 127, plus 0x80 when the record
              holds a seat table) token hashes (32 bytes each) then, each as u16 length +
              bytes: state, creation, the request record of every seat, and (with 0x80 in
              the seats byte) the seat table (service.records.Table); then,
              for a match created by a server with CreateWatchToken but before
              RevokeWatchTokens, the watch token hash of every seat (32 bytes each); then, for
              a match with bot seats, the bots mark (u8, 0xB0) and every seat's BotLevel (u8
              each, 0: a person). Records without any of the three still decode.

Watch access (``keys.watch_key``, a string of its own: see ``base.WatchAccess``) has its own
format, a leading format byte first:

    watch access := format (u8, 1) salt (16 bytes) seats (u8) then, per seat, 32 bytes: the
                    hash of its watch token, or 32 zero bytes when it has not asked for one.

Format policy, for both: a new field is a new format (a new trailing part the decoder recognises
by length for the record, a new format byte for watch access), and every format written before
keeps decoding; a decoder never guesses at bytes it does not know (ValueError).
"""

from __future__ import annotations

import struct
from typing import Final

from basra.service.store.base import SALT_BYTES, MatchRecord, WatchAccess

HASH_BYTES: Final = 32
_HEAD = struct.Struct(">QB")
_LENGTH = struct.Struct(">H")
_WATCH_FORMAT: Final = 1
_NO_HASH: Final = bytes(HASH_BYTES)
_BOTS_MARK: Final = 0xB0
_TABLE_FLAG: Final = 0x80
"""Set in the seats byte of a record that holds a seat table (matches have 2 to 4 seats: the
seat count keeps the byte's seven low bits)."""
MAX_SEATS: Final = _TABLE_FLAG - 1


def version_prefix(version: int) -> bytes:
    """The first 8 bytes of a record at ``version``."""
    return version.to_bytes(8, "big")


def encode_record(record: MatchRecord) -> bytes:
    """The record as one string."""
    seats = len(record.token_hashes)
    if seats > MAX_SEATS:
        raise ValueError(f"a record holds at most {MAX_SEATS} seats, not {seats}")
    flag = _TABLE_FLAG if record.table else 0
    parts = [_HEAD.pack(record.version, seats | flag), *record.token_hashes]
    tail = (record.table,) if record.table else ()
    for field in (record.state, record.creation, *record.requests, *tail):
        parts += (_LENGTH.pack(len(field)), field)
    parts += record.watch_hashes
    if record.bots:
        assert len(record.bots) == len(record.token_hashes)
        parts += (bytes((_BOTS_MARK,)), record.bots)
    return b"".join(parts)


def decode_record(match_id: str, data: bytes) -> MatchRecord:
    """The record ``encode_record`` wrote.

    Raises:
        ValueError: the bytes are not a record.
    """
    version, seats = _HEAD.unpack_from(data)
    has_table = bool(seats & _TABLE_FLAG)
    seats &= ~_TABLE_FLAG
    at = _HEAD.size
    hashes = tuple(data[at + i * HASH_BYTES : at + (i + 1) * HASH_BYTES] for i in range(seats))
    at += seats * HASH_BYTES
    fields = []
    for _ in range(2 + seats + has_table):
        (length,) = _LENGTH.unpack_from(data, at)
        at += _LENGTH.size
        fields.append(data[at : at + length])
        at += length
    # The optional trailing parts, told apart by their lengths: the bots part (1 + seats bytes)
    # is shorter than one watch token hash.
    bots = b""
    bots_at = len(data) - 1 - seats
    if bots_at >= at and data[bots_at] == _BOTS_MARK and bots_at in (at, at + seats * HASH_BYTES):
        bots = data[bots_at + 1 :]
        end = bots_at
    else:
        end = len(data)
    watch = tuple(data[at + i * HASH_BYTES : at + (i + 1) * HASH_BYTES] for i in range(seats))
    if end == at + seats * HASH_BYTES:
        at = len(data)
    elif end == at:
        watch = ()
        at = len(data)
    else:
        watch = ()
    if at != len(data) or any(len(h) != HASH_BYTES for h in hashes):
        raise ValueError("not a match record")
    return MatchRecord(
        match_id=match_id,
        version=version,
        state=fields[0],
        token_hashes=hashes,
        creation=fields[1],
        requests=tuple(fields[2 : 2 + seats]),
        watch_hashes=watch,
        bots=bots,
        table=fields[2 + seats] if has_table else b"",
    )


def encode_watch_access(access: WatchAccess) -> bytes:
    """Watch access as one string."""
    assert len(access.salt) == SALT_BYTES
    hashes = (h or _NO_HASH for h in access.hashes)
    return b"".join((bytes((_WATCH_FORMAT,)), access.salt, bytes((len(access.hashes),)), *hashes))


def decode_watch_access(data: bytes) -> WatchAccess:
    """The watch access ``encode_watch_access`` wrote.

    Raises:
        ValueError: the bytes are not watch access of a known format.
    """
    head = 1 + SALT_BYTES + 1
    if len(data) < head or data[0] != _WATCH_FORMAT:
        raise ValueError("not watch access of a known format")
    seats = data[head - 1]
    if len(data) != head + seats * HASH_BYTES:
        raise ValueError("not watch access")
    hashes = (data[head + i * HASH_BYTES : head + (i + 1) * HASH_BYTES] for i in range(seats))
    return WatchAccess(
        salt=data[1 : 1 + SALT_BYTES],
        hashes=tuple(b"" if not any(h) else h for h in hashes),
    )
