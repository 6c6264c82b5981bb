"""Serialization of what the service stores besides the engine state: request records, the
creation record, event batches and replay commands."""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from basra.engine import CARDS, Card, Play
from basra.v1 import game_pb2

_HASH: Final = 16


@dataclass(frozen=True, slots=True)
class SeatRequest:
    """A seat's latest idempotent request: who asked (hash of the request_id), what was asked
    (fingerprint) and the response that was returned."""

    request_hash: bytes
    fingerprint: bytes
    response: bytes

    def encode(self) -> bytes:
        return self.request_hash + self.fingerprint + self.response

    @classmethod
    def decode(cls, data: bytes) -> SeatRequest | None:
        if len(data) < 2 * _HASH:
            return None
        return cls(data[:_HASH], data[_HASH : 2 * _HASH], data[2 * _HASH :])


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


def new_match_command(seed: int) -> bytes:
    return NEW_MATCH + seed.to_bytes(8, "big")


def play_command(play: Play, plan: int) -> bytes:
    """A play as applied (``plan``: the plan taken, 0 for a trail)."""
    return PLAY + bytes((play.seat, play.card, plan))


def deal_command(seat: int) -> bytes:
    return DEAL + bytes((seat,))


def decode_command(data: bytes) -> tuple[bytes, tuple[int, ...]]:
    """(kind, arguments) of a replay command.

    (N, (seed,)), (P, (seat, card, plan)) or (D, (seat,)).
    """
    kind, body = data[:1], data[1:]
    if kind == NEW_MATCH:
        return kind, (int.from_bytes(body, "big"),)
    return kind, tuple(body)
