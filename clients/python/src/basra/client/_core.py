"""What the sync and asyncio clients share: requests, metadata and the watch resumption."""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from basra.client import cards
from basra.v1 import basra_service_pb2 as pb
from basra.v1 import game_pb2


def request_id() -> str:
    """A fresh idempotency key: a UUIDv4 (random, 36 characters)."""
    return str(uuid.uuid4())


def bearer(token: str) -> tuple[tuple[str, str], ...]:
    """The metadata that authenticates a seat."""
    return (("authorization", f"Bearer {token}"),)


def api_key_metadata(api_key: str | None) -> tuple[tuple[str, str], ...]:
    return (("x-api-key", api_key),) if api_key else ()


def create_request(seed: int | None, seat: int, rid: str | None) -> pb.DealRequest:
    request = pb.DealRequest(seat=seat, request_id=rid or request_id())
    if seed is not None:
        request.seed = seed
    return request


BOT_LEVELS = {
    "random": game_pb2.BOT_LEVEL_RANDOM,
    "greedy": game_pb2.BOT_LEVEL_GREEDY,
    "strong": game_pb2.BOT_LEVEL_STRONG,
}
"""The levels of the service's bots, by the names ``create_match(bots=...)`` takes."""


def bot_levels(bots: Mapping[int, str]) -> list[game_pb2.BotLevel.ValueType]:
    """CreateMatchRequest.bots from {seat: level name}: indexed by seat, 0 for a person.

    Raises:
        ValueError: a level that is none of ``BOT_LEVELS`` or a negative seat.
    """
    for seat, level in bots.items():
        if level not in BOT_LEVELS:
            raise ValueError(f"bot level {level!r} of seat {seat}: not one of {sorted(BOT_LEVELS)}")
        if seat < 0:
            raise ValueError(f"seat {seat} is negative")
    levels = [game_pb2.BOT_LEVEL_UNSPECIFIED] * (max(bots) + 1 if bots else 0)
    for seat, level in bots.items():
        levels[seat] = BOT_LEVELS[level]
    return levels


def create_match_request(
    rules: str,
    seats: int,
    options: game_pb2.MatchOptions,
    seed: int | None,
    seat: int,
    rid: str | None,
    bots: Mapping[int, str] | None = None,
    *,
    invitations: bool = False,
    display_name: str = "",
) -> pb.CreateMatchRequest:
    request = pb.CreateMatchRequest(
        rules=rules,
        seats=seats,
        options=options,
        seat=seat,
        request_id=rid or request_id(),
        bots=bot_levels(bots or {}),
        invitations=invitations,
        display_name=display_name,
    )
    if seed is not None:
        request.seed = seed
    return request


def claim_request(
    match_id: str, invitation: str, display_name: str, rid: str | None
) -> pb.ClaimSeatRequest:
    return pb.ClaimSeatRequest(
        match_id=match_id,
        invitation=invitation,
        display_name=display_name,
        request_id=rid or request_id(),
    )


def deal_request(match_id: str, expected_version: int | None, rid: str | None) -> pb.DealRequest:
    request = pb.DealRequest(match_id=match_id, request_id=rid or request_id())
    if expected_version is not None:
        request.expected_version = expected_version
    return request


def plans_request(match_id: str, card: cards.CardLike | None) -> pb.ListPlansRequest:
    request = pb.ListPlansRequest(match_id=match_id)
    if card is not None:
        request.card.CopyFrom(cards.to_pb(card))
    return request


def play_request(
    match_id: str,
    card: cards.CardLike,
    plan_id: int,
    trail: bool,
    expected_version: int | None,
    rid: str | None,
) -> pb.PlayRequest:
    request = pb.PlayRequest(
        match_id=match_id,
        card=cards.to_pb(card),
        plan_id=plan_id,
        trail=trail,
        request_id=rid or request_id(),
    )
    if expected_version is not None:
        request.expected_version = expected_version
    return request


class Resumption:
    """Where a watch stands, so that a new stream continues exactly where the last one broke.

    A stream resumes after the last version whose every event arrived (``version_complete``).
    The server then sends the partly delivered version again from its first event: those
    already handed out are dropped, so every event is delivered exactly once, in order.
    """

    def __init__(self, after_version: int) -> None:
        self.after_version = after_version
        """The last complete version: the next stream starts after it."""
        self.ended = False
        """The match ended and its last event was delivered: nothing will follow."""
        self._partial_version: int | None = None
        self._delivered = 0  # events of the partial version handed out
        self._resent = 0  # events of the partial version seen on the current stream

    def reconnecting(self) -> None:
        """A new stream starts: it repeats the partial version from its first event."""
        self._resent = 0

    def accept(self, event: game_pb2.MatchEvent) -> bool:
        """Whether to hand ``event`` out (False: a repeat of one already delivered)."""
        if event.version <= self.after_version:
            return False
        if event.version == self._partial_version:
            self._resent += 1
            if self._resent <= self._delivered:
                return False
            self._delivered += 1
        else:
            self._partial_version, self._delivered, self._resent = event.version, 1, 1
        if event.version_complete:
            self.after_version = event.version
            self._partial_version, self._delivered, self._resent = None, 0, 0
        if event.HasField("match_ended"):
            self.ended = True
        return True
