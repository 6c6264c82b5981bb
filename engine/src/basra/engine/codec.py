"""Compact, lossless binary serialization of ``State`` (about 110 bytes mid-hand at two seats,
about 170 at four).

A stateless service stores matches with it. The format is versioned by its first byte; ``encode``
writes version 2, ``decode`` reads versions 1 and 2.

Records outlive code, so the policy is: **a rule change is a new profile field (or a new value of
a rule enum in ``engine.rules``) or a format version bump, never an edit of an existing rule.**
The profile is stored by value, every field and rule enum, so a stored match keeps the rules it
was created with whatever the registry says later; hand scores are stored as their inputs and
recomputed by ``score_hand`` with the stored profile, which is exact as long as no existing rule
changes meaning. A new field gets a new format version whose decoder reads the old versions with
the field at the value that reproduces the old behaviour (as version 1, written when only ERAM
existed, is read here). ``decode`` accepts only canonical, consistent bytes: the 52 cards exactly
once, totals that add up; anything else raises ``CorruptStateError``.
"""

from __future__ import annotations

import struct
from dataclasses import replace
from functools import lru_cache
from typing import Final

from basra.engine.cards import (
    ALL_CARDS_MASK,
    CARDS,
    DECK_SIZE,
    JACK,
    KING,
    QUEEN,
    Card,
    mask_of,
    union_of,
)
from basra.engine.errors import CorruptStateError
from basra.engine.profile import ERAM, STANDARD_POINTS, PointTable, Profile
from basra.engine.rules import BasraValue, BottomCard, MajorityTie, SevenRule
from basra.engine.scoring import score_hand
from basra.engine.state import GameResult, HandScore, LastPlay, Phase, State

FORMAT_VERSION: Final = 2
_NONE: Final = 0xFF
_MASK_BYTES: Final = 7  # 52 bits
# Version 2. Profile: seats, flags (partnerships, deal singly), target, final target, rubber
# wins, cards per deal, floor cards, buried cards, bottom card, 7D rule, majority cards, majority
# points, tie rule, basra points, basra value; then the point table as (card, points) pairs.
_PROFILE = struct.Struct(">BBHHBBB7sBBBBBBB")
_HEADER = struct.Struct(">QBHBBBBBH")
_FLAG_PARTNERSHIPS: Final = 1
_FLAG_DEAL_SINGLY: Final = 2
_FLAG_STANDARD_POINTS: Final = 4  # the point table is RULES.md's (the pairs are left out)
# In the phase byte: a rubber's game has just been won and the next is not dealt (State.game_ended).
_GAME_ENDED: Final = 0x80
_LAST_PLAY = struct.Struct(">BBBBB")  # seat, card, plan, basra points, sweep
_SIDE_HAND = struct.Struct(">BBBH")  # cards, specials, basras, basra points
# Version 1 (ERAM only, two seats; read, never written).
_V1_PROFILE = struct.Struct(">BHBBBBBBBH")


def encode(state: State) -> bytes:
    """The state as compact bytes; ``decode(encode(s)) == s``."""
    p = state.profile
    name = p.name.encode()
    out = bytearray((FORMAT_VERSION, len(name)))
    out += name
    out += _profile_bytes(p)
    out += _HEADER.pack(
        state.seed,
        state.phase | (_GAME_ENDED if state.game_ended else 0),
        state.hand_number,
        state.dealer,
        state.turn,
        state.plays,
        _NONE if state.last_capturer is None else state.last_capturer,
        _NONE if state.winner is None else state.winner,
        state.carry,
    )
    sides = p.sides
    out += struct.pack(f">{sides}H", *state.scores)
    for cards in (*state.hands, state.floor, state.stock):
        out.append(len(cards))
        out += bytes(cards)
    for mask in state.captured:
        out += mask.to_bytes(_MASK_BYTES, "big")
    out += bytes(state.basras)
    out += struct.pack(f">{sides}H", *state.basra_points)
    last = state.last_play
    if last is None:
        out.append(_NONE)
    else:
        out += _LAST_PLAY.pack(last.seat, last.card, last.plan, last.basra_points, last.sweep)
        out.append(len(last.captured))
        out += bytes(last.captured)
    out.append(len(state.games))
    for game in state.games:
        out.append(game.winner)
        out += struct.pack(f">{sides}H", *game.totals)
    out += struct.pack(">H", len(state.history))
    for score in state.history:
        for side in score.sides:
            out += _SIDE_HAND.pack(side.cards, side.specials, side.basras, side.basra_points)
    return bytes(out)


_PROFILE_BYTES: Final[dict[int, tuple[Profile, bytes]]] = {}
"""``_profile_bytes`` by the profile's identity, the profile kept with its bytes (so that its id
is not reused while it is here). Not an lru_cache keyed on the profile: hashing a Profile, and
comparing it with an equal one (a decoded state's against the constant a match began with),
cost every encode a few microseconds."""


def _profile_bytes(p: Profile) -> bytes:
    known = _PROFILE_BYTES.get(id(p))
    if known is not None and known[0] is p:
        return known[1]
    if len(_PROFILE_BYTES) >= 64:  # a few profiles in play at once: never reached in practice
        _PROFILE_BYTES.clear()
    data = _profile_bytes_uncached(p)
    _PROFILE_BYTES[id(p)] = (p, data)
    return data


def _profile_bytes_uncached(p: Profile) -> bytes:
    """``_profile_bytes`` without its cache: mutmut mutates no decorated function."""
    standard = p.points == STANDARD_POINTS
    flags = (
        _FLAG_PARTNERSHIPS * p.partnerships
        | _FLAG_DEAL_SINGLY * p.deal_singly
        | _FLAG_STANDARD_POINTS * standard
    )
    table = [] if standard else [(c, n) for c, n in enumerate(p.points.points) if n]
    return (
        _PROFILE.pack(
            p.seats,
            flags,
            p.target,
            p.final_target,
            p.rubber_wins,
            p.cards_per_deal,
            p.floor_cards,
            p.buried.to_bytes(_MASK_BYTES, "big"),
            p.bottom_card,
            p.seven,
            p.majority_cards,
            p.majority_points,
            p.majority_tie,
            p.basra_points,
            p.basra_value,
        )
        + bytes((len(table),))
        + bytes([x for pair in table for x in pair])
    )


def encode_profile(profile: Profile) -> bytes:
    """A profile alone, as ``encode`` stores it (its name, then every field)."""
    name = profile.name.encode()
    return bytes((len(name),)) + name + _profile_bytes(profile)


def decode_profile(data: bytes) -> Profile:
    """The profile ``encode_profile`` turned into ``data``.

    Raises:
        CorruptStateError: the bytes are not such a profile.
    """
    try:
        name_length = data[0]
        fixed_end = 1 + name_length + _PROFILE.size
        if len(data) != fixed_end + 1 + 2 * data[fixed_end]:
            raise CorruptStateError("profile bytes have the wrong length")
        fields = data[1 + name_length : fixed_end] + data[fixed_end + 1 :]
        profile = _profile(data[1 : 1 + name_length], fields)
    except (struct.error, IndexError, ValueError, UnicodeDecodeError) as exc:
        if isinstance(exc, CorruptStateError):
            raise
        raise CorruptStateError(f"profile bytes do not decode: {exc}") from exc
    return profile


def decode(data: bytes) -> State:
    """The state that ``encode`` (of this or an earlier format version) turned into ``data``.

    Raises:
        CorruptStateError: the bytes are not a canonical encoding of a consistent state.
    """
    try:
        reader = _Reader(data)
        state = reader.state()
    except (struct.error, IndexError, ValueError, UnicodeDecodeError) as exc:
        if isinstance(exc, CorruptStateError):
            raise
        raise CorruptStateError(f"state bytes do not decode: {exc}") from exc
    canonical = encode(state) if reader.version == FORMAT_VERSION else _encode_v1(state)
    if canonical != data:
        raise CorruptStateError("state bytes are not in canonical form")
    _check_consistent(state)
    return state


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = memoryview(data)
        self.at = 0
        self.version = 0

    def take(self, n: int) -> bytes:
        chunk = bytes(self.data[self.at : self.at + n])
        if len(chunk) != n:
            raise CorruptStateError("state bytes end early")
        self.at += n
        return chunk

    def byte(self) -> int:
        return self.take(1)[0]

    def unpack(self, fmt: struct.Struct) -> tuple[int, ...]:
        return fmt.unpack(self.take(fmt.size))

    def words(self, n: int) -> tuple[int, ...]:
        return struct.unpack(f">{n}H", self.take(2 * n))

    def cards(self) -> tuple[Card, ...]:
        raw = self.take(self.byte())
        if raw and max(raw) >= DECK_SIZE:
            raise CorruptStateError("state bytes hold an invalid card")
        return tuple(map(CARDS.__getitem__, raw))

    def state(self) -> State:
        self.version, name_length = self.take(2)
        if self.version == 1:
            return self._state_v1(name_length)
        if self.version != FORMAT_VERSION:
            raise CorruptStateError(f"unknown state format version {self.version}")
        name = self.take(name_length)
        fixed = self.take(_PROFILE.size)
        pairs = self.byte()
        profile = _profile(name, fixed + self.take(2 * pairs))
        seats, sides = profile.seats, profile.sides
        seed, phase, hand_number, dealer, turn, plays, last, winner, carry = self.unpack(_HEADER)
        game_ended = bool(phase & _GAME_ENDED)
        phase &= ~_GAME_ENDED
        scores = self.words(sides)
        hands = tuple(self.cards() for _ in range(seats))
        floor = self.cards()
        stock = self.cards()
        captured = tuple(int.from_bytes(self.take(_MASK_BYTES), "big") for _ in range(sides))
        basras = tuple(self.take(sides))
        basra_points = self.words(sides)
        last_play = None
        if self.data[self.at] != _NONE:
            play_seat, card, plan, points, sweep = self.unpack(_LAST_PLAY)
            if play_seat >= seats or card >= DECK_SIZE or sweep > 1:
                raise CorruptStateError("state bytes hold an invalid last play")
            last_play = LastPlay(play_seat, CARDS[card], plan, self.cards(), points, bool(sweep))
        else:
            self.at += 1
        games = []
        for _ in range(self.byte()):
            game_winner = self.byte()
            if game_winner >= sides:
                raise CorruptStateError(f"state names side {game_winner} of {sides}")
            games.append(GameResult(game_winner, self.words(sides)))
        (hands_played,) = struct.unpack(">H", self.take(2))
        in_game = hands_played + (phase == Phase.PLAYING)
        history = _replay_scores(
            profile,
            self.take(_SIDE_HAND.size * sides * hands_played),
            first_hand=hand_number - in_game + 1,
            first_dealer=(dealer - (in_game - 1)) % seats,
        )
        if self.at != len(self.data):
            raise CorruptStateError("state bytes have trailing data")
        for seat in (dealer, turn, *[s for s in (last,) if s != _NONE]):
            if seat >= seats:
                raise CorruptStateError(f"state names seat {seat} of {seats}")
        if winner != _NONE and winner >= sides:
            raise CorruptStateError(f"state names side {winner} of {sides}")
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
            basra_points=basra_points,
            last_capturer=None if last == _NONE else last,
            last_play=last_play,
            plays=plays,
            scores=scores,
            carry=carry,
            history=history,
            games=tuple(games),
            winner=None if winner == _NONE else winner,
            game_ended=game_ended,
        )

    def _state_v1(self, name_length: int) -> State:
        """Version 1: ERAM at two seats, no last play, basras worth 10 (see ``_encode_v1``)."""
        profile = _profile_v1(self.take(name_length) + self.take(_V1_PROFILE.size))
        seed, phase, hand_number, dealer, turn, plays, last, winner, carry = self.unpack(_HEADER)
        scores = self.words(2)
        hands = (self.cards(), self.cards())
        floor = self.cards()
        stock = self.cards()
        captured = tuple(int.from_bytes(self.take(_MASK_BYTES), "big") for _ in range(2))
        basras = tuple(self.take(2))
        (hands_played,) = struct.unpack(">H", self.take(2))
        inputs = self.take(3 * 2 * hands_played)
        history = _replay_scores(
            profile,
            b"".join(
                [
                    _SIDE_HAND.pack(*inputs[i : i + 3], inputs[i + 2] * profile.basra_points)
                    for i in range(0, len(inputs), 3)
                ]
            ),
            first_hand=1,
            first_dealer=(dealer - (hand_number - 1)) % 2,
        )
        if self.at != len(self.data):
            raise CorruptStateError("state bytes have trailing data")
        for seat in (dealer, turn, *[s for s in (last, winner) if s != _NONE]):
            if seat >= 2:
                raise CorruptStateError(f"state names seat {seat} of 2")
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
            basra_points=tuple(n * profile.basra_points for n in basras),
            last_capturer=None if last == _NONE else last,
            last_play=None,
            plays=plays,
            scores=scores,
            carry=carry,
            history=history,
            games=(),
            winner=None if winner == _NONE else winner,
        )


@lru_cache(maxsize=256)
def _profile(name: bytes, data: bytes) -> Profile:
    """The profile of its version 2 encoding (matches share a few profiles: cached)."""
    return _profile_uncached(name, data)


def _profile_uncached(name: bytes, data: bytes) -> Profile:
    """``_profile`` without its cache: mutmut mutates no decorated function."""
    (
        seats,
        flags,
        target,
        final_target,
        rubber_wins,
        per_deal,
        floor_cards,
        buried,
        bottom_card,
        seven,
        majority_cards,
        majority_points,
        tie,
        basra_points,
        basra_value,
    ) = _PROFILE.unpack(data[: _PROFILE.size])
    pairs = data[_PROFILE.size :]
    points = [0] * DECK_SIZE
    for i in range(0, len(pairs), 2):
        if pairs[i] >= DECK_SIZE:
            raise CorruptStateError("state bytes hold an invalid point table")
        points[pairs[i]] = pairs[i + 1]
    if flags & ~(_FLAG_PARTNERSHIPS | _FLAG_DEAL_SINGLY | _FLAG_STANDARD_POINTS):
        raise CorruptStateError(f"unknown profile flags {flags:#x}")
    table = STANDARD_POINTS if flags & _FLAG_STANDARD_POINTS else PointTable(tuple(points))
    return Profile(
        name=name.decode(),
        seats=seats,
        partnerships=bool(flags & _FLAG_PARTNERSHIPS),
        target=target,
        cards_per_deal=per_deal,
        deal_singly=bool(flags & _FLAG_DEAL_SINGLY),
        floor_cards=floor_cards,
        buried=int.from_bytes(buried, "big"),
        bottom_card=BottomCard(bottom_card),
        seven=SevenRule(seven),
        majority_cards=majority_cards,
        majority_points=majority_points,
        majority_tie=MajorityTie(tie),
        basra_points=basra_points,
        basra_value=BasraValue(basra_value),
        points=table,
        rubber_wins=rubber_wins,
        final_target=final_target,
    )


# Version 1 stored the 7D rule as (measure, limit, excluded ranks): 1 counted cards, 2 summed.
_V1_QK: Final = 1 << QUEEN | 1 << KING
_V1_JQK: Final = 1 << JACK | _V1_QK
_V1_SEVEN: Final = {
    (1, 10, _V1_QK): SevenRule.COUNT_NO_QUEEN_OR_KING,
    (2, 10, _V1_JQK): SevenRule.SUM_OF_NUMBERS,
}


@lru_cache(maxsize=16)
def _profile_v1(data: bytes) -> Profile:
    return _profile_v1_uncached(data)


def _profile_v1_uncached(data: bytes) -> Profile:
    """``_profile_v1`` without its cache: mutmut mutates no decorated function."""
    name = data[: -_V1_PROFILE.size].decode()
    seats, target, per_deal, floor_cards, majority, majority_pts, basra_pts, *seven = (
        _V1_PROFILE.unpack(data[-_V1_PROFILE.size :])
    )
    rule = _V1_SEVEN.get((seven[0], seven[1], seven[2]))
    if seats != 2 or rule is None:
        raise CorruptStateError("a version 1 state must be a two-seat game with a known 7D rule")
    return replace(
        ERAM,
        name=name,
        target=target,
        cards_per_deal=per_deal,
        floor_cards=floor_cards,
        majority_cards=majority,
        majority_points=majority_pts,
        basra_points=basra_pts,
        seven=rule,
    )


def _encode_v1(state: State) -> bytes:
    """The version 1 bytes of a state read from version 1 (for the canonical-form check)."""
    p = state.profile
    name = p.name.encode()
    measure, excluded = (1, _V1_QK)
    if p.seven is SevenRule.SUM_OF_NUMBERS:
        measure, excluded = (2, _V1_JQK)
    out = bytearray((1, len(name)))
    out += name
    out += _V1_PROFILE.pack(
        p.seats,
        p.target,
        p.cards_per_deal,
        p.floor_cards,
        p.majority_cards,
        p.majority_points,
        p.basra_points,
        measure,
        10,
        excluded,
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
    out += struct.pack(">2H", *state.scores)
    for cards in (*state.hands, state.floor, state.stock):
        out.append(len(cards))
        out += bytes(cards)
    for mask in state.captured:
        out += mask.to_bytes(_MASK_BYTES, "big")
    out += bytes(state.basras)
    out += struct.pack(">H", len(state.history))
    for score in state.history:
        for side in score.sides:
            out += bytes((side.cards, side.specials, side.basras))
    return bytes(out)


@lru_cache(maxsize=4096)
def _replay_scores(
    profile: Profile, data: bytes, first_hand: int, first_dealer: int
) -> tuple[HandScore, ...]:
    """The current game's hand scores from their inputs (cards, specials, basras, basra points
    per side per hand). Pure and immutable, so cached: every call of a match reloads the same
    history."""
    return _replay_scores_uncached(profile, data, first_hand, first_dealer)


def _replay_scores_uncached(
    profile: Profile, data: bytes, first_hand: int, first_dealer: int
) -> tuple[HandScore, ...]:
    """``_replay_scores`` without its cache: mutmut mutates no decorated function."""
    per_hand = _SIDE_HAND.size * profile.sides
    carry = 0
    history = []
    for number, at in enumerate(range(0, len(data), per_hand)):
        sides = [
            _SIDE_HAND.unpack_from(data, at + _SIDE_HAND.size * s) for s in range(profile.sides)
        ]
        score = score_hand(
            profile,
            hand=first_hand + number,
            dealer=(first_dealer + number) % profile.seats,
            carry_before=carry,
            cards=[s[0] for s in sides],
            specials=[s[1] for s in sides],
            basras=[s[2] for s in sides],
            basra_points=[s[3] for s in sides],
        )
        history.append(score)
        carry = score.carry_after
    return tuple(history)


def _check_consistent(state: State) -> None:
    piles = [mask_of(h) for h in state.hands] + [mask_of(state.floor), mask_of(state.stock)]
    piles += state.captured
    if sum(p.bit_count() for p in piles) != DECK_SIZE or union_of(piles) != ALL_CARDS_MASK:
        raise CorruptStateError("state does not hold each of the 52 cards exactly once")
    totals = [sum(h.totals[s] for h in state.history) for s in range(state.profile.sides)]
    if list(state.scores) != totals:
        raise CorruptStateError("match totals do not add up to the hand scores")
    if state.carry != (state.history[-1].carry_after if state.history else 0):
        raise CorruptStateError("carry does not follow from the hand scores")
    if (state.winner is None) != (state.phase is not Phase.MATCH_OVER):
        raise CorruptStateError("winner and phase disagree")
    if state.game_ended and (
        state.phase is not Phase.HAND_OVER
        or not state.games
        or state.games[-1].totals != state.scores
    ):
        raise CorruptStateError("a just-ended game must be the last game, its hand over")
