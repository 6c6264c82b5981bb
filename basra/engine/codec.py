"""Compact, lossless binary serialization of ``State`` (about 120 bytes mid-hand).

A stateless service stores matches with it. The format is versioned by its first byte. Hand
scores are stored as their inputs (cards, special points, basras per seat) and recomputed, since
every other figure follows from them. ``decode`` accepts only canonical, consistent bytes: the 52
cards exactly once, totals that add up; anything else raises ``CorruptStateError``.
"""

from __future__ import annotations

import struct
from functools import lru_cache
from typing import Final

from basra.engine.cards import ALL_CARDS_MASK, CARDS, DECK_SIZE, Card, mask_of, union_of
from basra.engine.errors import CorruptStateError
from basra.engine.profile import Profile, SevenMeasure
from basra.engine.scoring import score_hand
from basra.engine.state import HandScore, Phase, State

FORMAT_VERSION: Final = 1
_NONE: Final = 0xFF
_PROFILE = struct.Struct(">BHBBBBBBBH")
_HEADER = struct.Struct(">QBHBBBBBH")
_MASK_BYTES: Final = 7  # 52 bits


def encode(state: State) -> bytes:
    """The state as compact bytes; ``decode(encode(s)) == s``."""
    p = state.profile
    name = p.name.encode()
    out = bytearray((FORMAT_VERSION, len(name)))
    out += name
    out += _PROFILE.pack(
        p.seats,
        p.target,
        p.cards_per_deal,
        p.floor_cards,
        p.majority_cards,
        p.majority_points,
        p.basra_points,
        p.seven_measure,
        p.seven_limit,
        sum(1 << r for r in p.seven_excluded_ranks),
    )
    out += _HEADER.pack(
        state.seed,
        state.phase,
        state.hand_number,
        state.dealer,
        state.turn,
        state.plays,
        _NONE if state.last_capturer is None else state.last_capturer,
        _NONE if state.winner is None else state.winner,
        state.carry,
    )
    out += struct.pack(f">{p.seats}H", *state.scores)
    for cards in (*state.hands, state.floor, state.stock):
        out.append(len(cards))
        out += bytes(cards)
    for mask in state.captured:
        out += mask.to_bytes(_MASK_BYTES, "big")
    out += bytes(state.basras)
    out += struct.pack(">H", len(state.history))
    for score in state.history:
        for seat in score.seats:
            out += bytes((seat.cards, seat.specials, seat.basras))
    return bytes(out)


def decode(data: bytes) -> State:
    """The state that ``encode`` turned into ``data``.

    Raises:
        CorruptStateError: the bytes are not a canonical encoding of a consistent state.
    """
    try:
        state = _Reader(data).state()
    except (struct.error, IndexError, ValueError, UnicodeDecodeError) as exc:
        if isinstance(exc, CorruptStateError):
            raise
        raise CorruptStateError(f"state bytes do not decode: {exc}") from exc
    if encode(state) != data:
        raise CorruptStateError("state bytes are not in canonical form")
    _check_consistent(state)
    return state


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = memoryview(data)
        self.at = 0

    def take(self, n: int) -> bytes:
        chunk = bytes(self.data[self.at : self.at + n])
        if len(chunk) != n:
            raise CorruptStateError("state bytes end early")
        self.at += n
        return chunk

    def unpack(self, fmt: struct.Struct) -> tuple[int, ...]:
        return fmt.unpack(self.take(fmt.size))

    def cards(self) -> tuple[Card, ...]:
        raw = self.take(self.take(1)[0])
        if raw and max(raw) >= DECK_SIZE:
            raise CorruptStateError("state bytes hold an invalid card")
        return tuple(map(CARDS.__getitem__, raw))

    def state(self) -> State:
        version, name_length = self.take(2)
        if version != FORMAT_VERSION:
            raise CorruptStateError(f"unknown state format version {version}")
        profile = _profile(self.take(name_length) + self.take(_PROFILE.size))
        seats = profile.seats
        seed, phase, hand_number, dealer, turn, plays, last, winner, carry = self.unpack(_HEADER)
        scores = struct.unpack(f">{seats}H", self.take(2 * seats))
        hands = tuple(self.cards() for _ in range(seats))
        floor = self.cards()
        stock = self.cards()
        captured = tuple(int.from_bytes(self.take(_MASK_BYTES), "big") for _ in range(seats))
        basras = tuple(self.take(seats))
        (hands_played,) = struct.unpack(">H", self.take(2))
        history = _replay_scores(
            profile,
            self.take(3 * seats * hands_played),
            first_dealer=(dealer - (hand_number - 1)) % seats,
        )
        if self.at != len(self.data):
            raise CorruptStateError("state bytes have trailing data")
        for seat in (dealer, turn, *(s for s in (last, winner) if s != _NONE)):
            if seat >= seats:
                raise CorruptStateError(f"state names seat {seat} of {seats}")
        return State(
            profile=profile,
            seed=seed,
            phase=Phase(phase),
            hand_number=hand_number,
            dealer=dealer,
            turn=turn,
            hands=hands,
            floor=floor,
            stock=stock,
            captured=captured,
            basras=basras,
            last_capturer=None if last == _NONE else last,
            plays=plays,
            scores=scores,
            carry=carry,
            history=history,
            winner=None if winner == _NONE else winner,
        )


@lru_cache(maxsize=256)
def _profile(data: bytes) -> Profile:
    """The profile of its encoding: the name, then _PROFILE (matches share a few profiles)."""
    name = data[: -_PROFILE.size].decode()
    seats, target, per_deal, floor_cards, majority, majority_pts, basra_pts, *seven = (
        _PROFILE.unpack(data[-_PROFILE.size :])
    )
    measure, limit, excluded = seven
    return Profile(
        name=name,
        seats=seats,
        target=target,
        cards_per_deal=per_deal,
        floor_cards=floor_cards,
        majority_cards=majority,
        majority_points=majority_pts,
        basra_points=basra_pts,
        seven_measure=SevenMeasure(measure),
        seven_limit=limit,
        seven_excluded_ranks=frozenset(r for r in range(13) if excluded >> r & 1),
    )


@lru_cache(maxsize=4096)
def _replay_scores(profile: Profile, data: bytes, first_dealer: int) -> tuple[HandScore, ...]:
    """Hand scores from their inputs: 3 bytes (cards, specials, basras) per seat per hand.

    Pure and immutable, so cached: every call of a match reloads the same history.
    """
    seats_per_hand = 3 * profile.seats
    hands = [
        [tuple(data[i + 3 * s : i + 3 * s + 3]) for s in range(profile.seats)]
        for i in range(0, len(data), seats_per_hand)
    ]
    carry = 0
    history = []
    for number, seats in enumerate(hands, start=1):
        score = score_hand(
            profile,
            hand=number,
            dealer=(first_dealer + number - 1) % profile.seats,
            carry_before=carry,
            cards=[s[0] for s in seats],
            specials=[s[1] for s in seats],
            basras=[s[2] for s in seats],
        )
        history.append(score)
        carry = score.carry_after
    return tuple(history)


def _check_consistent(state: State) -> None:
    piles = [mask_of(h) for h in state.hands] + [mask_of(state.floor), mask_of(state.stock)]
    piles += state.captured
    if sum(p.bit_count() for p in piles) != DECK_SIZE or union_of(piles) != ALL_CARDS_MASK:
        raise CorruptStateError("state does not hold each of the 52 cards exactly once")
    totals = [sum(h.totals[s] for h in state.history) for s in range(state.seats)]
    if list(state.scores) != totals:
        raise CorruptStateError("match totals do not add up to the hand scores")
    if state.carry != (state.history[-1].carry_after if state.history else 0):
        raise CorruptStateError("carry does not follow from the hand scores")
    if (state.winner is None) != (state.phase is not Phase.MATCH_OVER):
        raise CorruptStateError("winner and phase disagree")
