"""Serialization of what the service stores besides the engine state: request records, the
creation record, the seat table (who holds each seat), event batches and replay commands."""

from __future__ import annotations

import functools
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final, NamedTuple

from basra.engine import (
    CARDS,
    ERAM,
    Card,
    Play,
    Profile,
    State,
    apply,
    deal_next_hand,
    new_match,
)
from basra.engine.codec import decode_profile, encode_profile
from basra.v1 import game_pb2

_HASH: Final = 16
_VERSION_MARK: Final = b"\x00"


class SeatRequest(NamedTuple):
    """A seat's latest idempotent request: who asked (hash of the request_id), what was asked
    (fingerprint) and the version it produced.

    A retry is answered by running the same request again on the state it ran on (rebuilt from
    the match's event entries): the engine and the conversions are deterministic, so the answer
    is the original response, and the record stays 41 bytes whatever the seat count. Records
    written before (``response``: the response bytes themselves) are still answered from them.
    """

    request_hash: bytes
    fingerprint: bytes
    version: int = 0
    """The version the request produced."""
    response: bytes | None = None
    """The stored response, in records of the format without versions (read, never written)."""

    def encode(self) -> bytes:
        return (
            self.request_hash + self.fingerprint + _VERSION_MARK + self.version.to_bytes(8, "big")
        )

    @classmethod
    def decode(cls, data: bytes) -> SeatRequest | None:
        if len(data) < 2 * _HASH:
            return None
        head, body = data[: 2 * _HASH], data[2 * _HASH :]
        # A response message never starts with a zero byte (field number 0 does not exist).
        if body[:1] == _VERSION_MARK and len(body) == 9:
            return cls(head[:_HASH], head[_HASH:], int.from_bytes(body[1:], "big"))
        return cls(head[:_HASH], head[_HASH:], response=body)


@dataclass(frozen=True, slots=True)
class Creation:
    """How a match was created by a request_id: the request's fingerprint, the creator's seat
    and the sealed seat tokens (service.auth.seal_tokens)."""

    fingerprint: bytes
    seat: int
    sealed_tokens: bytes

    def encode(self) -> bytes:
        return self.fingerprint + bytes((self.seat,)) + self.sealed_tokens

    @classmethod
    def decode(cls, data: bytes) -> Creation | None:
        if len(data) <= _HASH + 1:
            return None
        return cls(data[:_HASH], data[_HASH], data[_HASH + 1 :])


# SeatClaim values (basra.v1.SeatClaim): how the seat table records each person seat.
CLAIM_NONE: Final = game_pb2.SEAT_CLAIM_UNSPECIFIED
CLAIM_CREATOR: Final = game_pb2.SEAT_CLAIM_CREATOR
CLAIM_TOKEN: Final = game_pb2.SEAT_CLAIM_TOKEN
CLAIM_OPEN: Final = game_pb2.SEAT_CLAIM_OPEN
CLAIMED: Final = game_pb2.SEAT_CLAIM_CLAIMED
_TABLE_FORMAT: Final = 1
_NO_CREATOR: Final = 0xFF


@dataclass(frozen=True, slots=True)
class SeatHolder:
    """Who holds one seat: how (a SeatClaim value), under which display name, and for a seat
    given an invitation, what a claim and its retries need. Secrets only as hashes, or sealed
    under a secret the server does not keep."""

    claim: int
    name: str = ""
    invitation: bytes = b""
    """The hash of the seat's invitation (service.auth.token_hash); empty for a seat never
    invited. Kept once claimed, so that a second claim is told INVITATION_CLAIMED."""
    sealed: bytes = b""
    """The seat's token sealed under its invitation (service.auth.seal_for_invitation), for a
    claim and for the retries of the claim that sent a request_id; empty otherwise."""
    claim_request: bytes = b""
    """The claim's request_id hash and fingerprint (16 bytes each), when it sent one."""


@dataclass(frozen=True, slots=True)
class Table:
    """The seat table of a match: the creator's seat and each seat's holder."""

    creator: int | None
    holders: tuple[SeatHolder, ...]

    def encode(self) -> bytes:
        """format (u8, 1), creator seat (u8, 0xFF: none), seats (u8), then per seat: claim (u8)
        and, each as u8 length + bytes, the name (UTF-8), invitation hash, sealed token and
        claim request."""
        creator = _NO_CREATOR if self.creator is None else self.creator
        out = bytearray((_TABLE_FORMAT, creator, len(self.holders)))
        for holder in self.holders:
            out.append(holder.claim)
            for part in (
                holder.name.encode(),
                holder.invitation,
                holder.sealed,
                holder.claim_request,
            ):
                out.append(len(part))
                out += part
        return bytes(out)

    @classmethod
    def decode(cls, data: bytes) -> Table:
        """The table ``encode`` wrote.

        Raises:
            ValueError: the bytes are not a seat table of a known format.
        """
        if len(data) < 3 or data[0] != _TABLE_FORMAT:
            raise ValueError("not a seat table of a known format")
        creator = None if data[1] == _NO_CREATOR else data[1]
        at = 3
        holders = []
        for _ in range(data[2]):
            claim = data[at]
            at += 1
            parts = []
            for _ in range(4):
                length = data[at]
                parts.append(data[at + 1 : at + 1 + length])
                at += 1 + length
            holders.append(SeatHolder(claim, parts[0].decode(), parts[1], parts[2], parts[3]))
        if at != len(data):
            raise ValueError("not a seat table")
        return cls(creator, tuple(holders))

    def with_holder(self, seat: int, holder: SeatHolder) -> Table:
        holders = list(self.holders)
        holders[seat] = holder
        return Table(self.creator, tuple(holders))


class Seating(NamedTuple):
    """What every view shows of each seat's holder: its SeatClaim and its display name."""

    claims: tuple[int, ...]
    names: tuple[str, ...]


@functools.lru_cache(maxsize=4096)
def seating(table: bytes, bots: bytes, seats: int) -> Seating:
    """The seating of a match record's table and bot levels (cached: a record's table bytes
    change only with its seats). A record without a table (a match created before tables) has
    every person seat's token handed out, creator unknown."""
    held = Table.decode(table).holders if table else ()
    claims: list[int] = []
    names: list[str] = []
    for seat in range(seats):
        if seat < len(bots) and bots[seat]:
            claims.append(CLAIM_NONE)
            names.append("")
        elif seat < len(held):
            claims.append(held[seat].claim)
            names.append(held[seat].name)
        else:
            claims.append(CLAIM_TOKEN)
            names.append("")
    return Seating(tuple(claims), tuple(names))


def encode_events(events: Iterable[game_pb2.MatchEvent]) -> bytes:
    """Length-prefixed MatchEvent messages."""
    out = bytearray()
    for event in events:
        body = event.SerializeToString()
        out += struct.pack(">H", len(body)) + body
    return bytes(out)


def decode_events(data: bytes) -> list[game_pb2.MatchEvent]:
    """The MatchEvent messages ``encode_events`` wrote."""
    events = []
    at = 0
    while at < len(data):
        (length,) = struct.unpack_from(">H", data, at)
        events.append(game_pb2.MatchEvent.FromString(data[at + 2 : at + 2 + length]))
        at += 2 + length
    return events


def encode_cards(cards: Sequence[Card]) -> bytes:
    return bytes(cards)


def decode_cards(data: bytes) -> tuple[Card, ...]:
    return tuple(CARDS[b] for b in data)


# Replay commands: what the engine was given to produce each version.
NEW_MATCH: Final = b"N"
PLAY: Final = b"P"
DEAL: Final = b"D"
SEAT: Final = b"S"
"""A seat's holder changed (a claim, a reissued invitation): the state does not change."""


def new_match_command(seed: int, profile: Profile = ERAM) -> bytes:
    """``new_match(seed, profile)``: the seed, then (for any profile but ERAM, whose command is
    the seed alone as before profiles existed) the profile as the engine codec stores it."""
    command = NEW_MATCH + seed.to_bytes(8, "big")
    return command if profile == ERAM else command + encode_profile(profile)


def new_match_profile(data: bytes) -> Profile:
    """The profile of a NEW_MATCH command."""
    return ERAM if len(data) == 9 else decode_profile(data[9:])


def play_command(play: Play, plan: int) -> bytes:
    """A play as applied (``plan``: the plan taken, 0 for a trail)."""
    return PLAY + bytes((play.seat, play.card, plan))


def deal_command(seat: int) -> bytes:
    return DEAL + bytes((seat,))


def seat_command(seat: int, before: SeatHolder, revoked: bytes = b"") -> bytes:
    """A seat's holder changed from ``before`` (its claim and name, kept so that a response
    given again can show the seats as they were: ``seating_before``); ``revoked`` is the hash
    of the seat token the change revoked (a reissued invitation), which ends the WatchMatch
    streams opened with that token.

        command := "S" seat (u8) claim before (u8) name before (u8 length + UTF-8) revoked
    """
    name = before.name.encode()
    return SEAT + bytes((seat, before.claim, len(name))) + name + revoked


def _seat_parts(command: bytes) -> tuple[int, int, str, bytes]:
    """(seat, claim before, name before, revoked token hash) of a SEAT command."""
    seat, claim, length = command[1], command[2], command[3]
    return seat, claim, command[4 : 4 + length].decode(), command[4 + length :]


def revoked_by(command: bytes) -> tuple[int, bytes] | None:
    """(seat, hash of the seat token revoked) of a SEAT command that revoked one, else None."""
    if command[:1] != SEAT:
        return None
    seat, _, _, revoked = _seat_parts(command)
    return (seat, revoked) if revoked else None


def seating_before(seating: Seating, commands: Sequence[bytes]) -> Seating:
    """The seating as it was before ``commands`` (a version's commands, in order), from the
    seating after them: each SEAT command undone, the last first."""
    claims, names = list(seating.claims), list(seating.names)
    for command in reversed(commands):
        if command[:1] == SEAT:
            seat, claim, name, _ = _seat_parts(command)
            claims[seat], names[seat] = claim, name
    return Seating(tuple(claims), tuple(names))


def replay(entries: Sequence[tuple[int, bytes]], version: int) -> State | None:
    """The state at ``version``, from the commands of versions 1..``version`` (in order); None
    when they do not start at version 1 (the oldest were trimmed)."""
    state: State | None = None
    expected = 1
    for entry_version, command in entries:
        if entry_version > version:
            break
        if entry_version != expected:
            return None
        kind, args = decode_command(command)
        if kind == NEW_MATCH:
            state, _ = new_match(args[0], new_match_profile(command))
        elif state is None:
            return None
        elif kind == DEAL:
            state, _ = deal_next_hand(state)
        elif kind == SEAT:
            pass  # a seat's holder changed: no card moved
        else:
            seat, card, plan = args
            state, _ = apply(state, Play(seat, CARDS[card], plan or None, trail=not plan))
        expected += 1
    return state if expected == version + 1 else None


def decode_command(data: bytes) -> tuple[bytes, tuple[int, ...]]:
    """(kind, arguments) of a replay command.

    (N, (seed,)), (P, (seat, card, plan)), (D, (seat,)) or (S, (seat,)); a NEW_MATCH's profile
    is ``new_match_profile(data)``, a SEAT's revoked token hash ``revoked_by(data)``.
    """
    kind, body = data[:1], data[1:]
    if kind == NEW_MATCH:
        return kind, (int.from_bytes(body[:8], "big"),)
    if kind == SEAT:
        return kind, (body[0],)
    return kind, tuple(body)
