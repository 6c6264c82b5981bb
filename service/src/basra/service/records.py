"""Serialization of what the service stores besides the engine state: request records, the
creation record, event batches and replay commands."""

from __future__ import annotations

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
        else:
            seat, card, plan = args
            state, _ = apply(state, Play(seat, CARDS[card], plan or None, trail=not plan))
        expected += 1
    return state if expected == version + 1 else None


def decode_command(data: bytes) -> tuple[bytes, tuple[int, ...]]:
    """(kind, arguments) of a replay command.

    (N, (seed,)), (P, (seat, card, plan)) or (D, (seat,)); a NEW_MATCH's profile is
    ``new_match_profile(data)``.
    """
    kind, body = data[:1], data[1:]
    if kind == NEW_MATCH:
        return kind, (int.from_bytes(body[:8], "big"),)
    return kind, tuple(body)
