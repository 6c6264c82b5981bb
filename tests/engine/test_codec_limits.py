"""Every field of the state codec and of the store's record codec at its limits.

A field one byte too narrow passes every round trip of ordinary matches (a carry of 30, a score
of 140): these states put each field at the largest and smallest value its encoding must hold,
and the values one past them must be refused, never truncated.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Sequence
from dataclasses import replace

import pytest

from basra.engine import (
    ERAM,
    CorruptStateError,
    Phase,
    Profile,
    State,
    codec,
    decode,
    encode,
)
from basra.engine.cards import ALL_CARDS_MASK, CARDS, Card
from basra.engine.codec import decode_profile, encode_profile
from basra.engine.game import new_match
from basra.engine.profile import RULE_SYSTEMS, STANDARD_POINTS, PointTable, match_profile
from basra.engine.rules import BasraValue, BottomCard, MajorityTie, SevenRule
from basra.engine.scoring import score_hand
from basra.engine.state import GameResult, HandScore, LastPlay
from basra.service.store import MatchRecord
from basra.service.store.codec import decode_record, encode_record

U8, U16, U64 = 0xFF, 0xFFFF, 2**64 - 1
NO_CARDS = ALL_CARDS_MASK  # everything captured by seat 0: hands, floor and stock empty


def history(profile: Profile, hands: Sequence[Sequence[tuple[int, ...]]]) -> tuple[HandScore, ...]:
    """Hand scores from each side's (cards, specials, basras[, basra points]), dealt as the codec
    replays them (the first dealer is seat 0)."""
    carry, out = 0, []
    for number, sides in enumerate(hands, start=1):
        score = score_hand(
            profile,
            hand=number,
            dealer=(number - 1) % profile.seats,
            carry_before=carry,
            cards=[s[0] for s in sides],
            specials=[s[1] for s in sides],
            basras=[s[2] for s in sides],
            basra_points=[s[3] for s in sides] if all(len(s) == 4 for s in sides) else None,
        )
        out.append(score)
        carry = score.carry_after
    return tuple(out)


def consistent(profile: Profile, scored: tuple[HandScore, ...], **fields: object) -> State:
    """A state of ``profile`` after the hands ``scored``, all 52 cards in side 0's pile."""
    base, _ = new_match(0, profile)
    seats, sides = profile.seats, profile.sides
    state = replace(
        base,
        phase=Phase.PLAYING,
        hand_number=len(scored) + 1,
        dealer=len(scored) % seats,
        turn=0,
        hands=((),) * seats,
        floor=(),
        stock=(),
        captured=(NO_CARDS,) + (0,) * (sides - 1),
        basras=(0,) * sides,
        basra_points=(0,) * sides,
        last_capturer=None,
        plays=0,
        scores=tuple(sum(h.totals[s] for h in scored) for s in range(sides)),
        carry=scored[-1].carry_after if scored else 0,
        history=scored,
        winner=None,
    )
    return replace(state, **fields)  # type: ignore[arg-type]


def round_trips(state: State) -> State:
    data = encode(state)
    decoded = decode(data)
    assert decoded == state
    assert encode(decoded) == data
    return decoded


# The profile fields at their limits, each in a profile that is still playable.
WIDE = Profile(
    name="x" * 255,
    seats=2,
    target=U16,
    cards_per_deal=26,
    floor_cards=0,
    majority_cards=52,
    majority_points=U8,
    basra_points=U8,
)
NARROW = Profile(
    name="",
    seats=2,
    target=1,
    cards_per_deal=1,
    floor_cards=0,
    majority_cards=1,
    majority_points=0,
    basra_points=0,
)
FOUR = Profile("four-wide", seats=4, cards_per_deal=13, floor_cards=0, majority_points=U8)
# Two partnerships with every field at its largest value (deals of 13 need an empty floor, the
# largest floor of 8 deals of 11: one profile each)
PARTNERS_WIDE = Profile(
    name="p" * 255,
    seats=4,
    partnerships=True,
    target=U16,
    cards_per_deal=13,
    deal_singly=True,
    floor_cards=0,
    buried=ALL_CARDS_MASK,
    bottom_card=max(BottomCard),
    seven=max(SevenRule),
    majority_cards=52,
    majority_points=U8,
    majority_tie=max(MajorityTie),
    basra_points=U8,
    basra_value=max(BasraValue),
    points=PointTable((U8,) * 52),
    rubber_wins=9,
    final_target=U16,
)
# (one deal of 11 empties the stock, so nothing can be buried in it: no buried cards).
PARTNERS_FLOOR = replace(
    PARTNERS_WIDE, name="partners-floor", cards_per_deal=11, floor_cards=8, buried=0
)
# Every rule system at every seat count and option it allows, partnerships included.
RULE_SYSTEM_PROFILES = [
    system.profile(n, rubber=rubber, bottom_card_shown=shown)
    for system in RULE_SYSTEMS.values()
    for n in system.seat_counts
    for rubber in sorted({False, system.rubber})
    for shown in sorted({False, n in system.bottom_card_seats})
]
PARTNERSHIP_PROFILES = [
    *(p for p in RULE_SYSTEM_PROFILES if p.partnerships),
    PARTNERS_WIDE,
    PARTNERS_FLOOR,
]
# A point table of one card (written out as one pair), none of them at the start of the deck.
SPARSE = Profile("sparse", points=PointTable((0,) * 51 + (U8,)))
PROFILES = [ERAM, *RULE_SYSTEM_PROFILES, WIDE, NARROW, FOUR, PARTNERS_WIDE, PARTNERS_FLOOR, SPARSE]


def describe(p: Profile) -> str:
    options = "".join(
        f"-{flag}"
        for flag, on in (
            ("rubber", p.rubber_wins),
            ("shown", p.bottom_card is BottomCard.EVERY_SEAT),
        )
        if on
    )
    return f"{p.name[:12] or 'empty'}-{p.seats}{options}"


@pytest.mark.parametrize("profile", PROFILES, ids=describe)
def test_the_profile_round_trips_at_its_limits(profile: Profile) -> None:
    decoded = round_trips(consistent(profile, ()))
    assert decoded.profile == profile


def test_the_partnership_profiles_are_the_ones_the_rule_systems_name() -> None:
    """persian-partnership and the four-seat egyptian, jordanian and lobashev setups (with and
    without the rubber): the list above misses none."""
    named = {(p.name, p.rubber_wins) for p in PARTNERSHIP_PROFILES if p.name in RULE_SYSTEMS}
    assert named == {
        ("persian-partnership", 0),
        ("egyptian", 0),
        ("egyptian", 3),
        ("jordanian", 0),
        ("jordanian", 3),
        ("lobashev", 0),
    }
    assert all(p.seats == 4 and p.sides == 2 for p in PARTNERSHIP_PROFILES)


@pytest.mark.parametrize("profile", PARTNERSHIP_PROFILES, ids=describe)
def test_partnership_sides_round_trip_at_their_largest_values(profile: Profile) -> None:
    """Each side's total, pile, basras and basra points, a finished game's totals and winner,
    and the last seat as dealer, turn and capturer, all at the top of their fields."""
    # Side 0: 65535 basra points in one hand (the stored per-side word); side 1 reaches 65535
    # through 255 basras of U8 points, 255 special points and its specials again next hand.
    # A third hand scoring nothing makes seat 3 the dealer of the fourth.
    hands = [
        [(26, 0, 1, U16), (26, 255, 255, 255 * U8)],
        [(26, 0, 0, 0), (26, 255, 0, 0)],
        [(26, 0, 0, 0), (26, 0, 0, 0)],
    ]
    scored = history(profile, hands)
    games = tuple(GameResult(winner=1, totals=(U16, U16)) for _ in range(U8))
    state = consistent(
        profile,
        scored,
        captured=(0, NO_CARDS),
        basras=(U8, U8),
        basra_points=(U16, U16),
        games=games,
        turn=3,
        last_capturer=3,
    )
    assert state.dealer == 3
    decoded = round_trips(state)
    assert decoded.profile == profile
    assert decoded.scores == (U16, U16)
    assert decoded.captured == (0, NO_CARDS)
    assert (decoded.basras, decoded.basra_points) == ((U8, U8), (U16, U16))
    assert [(s.basras, s.basra_points) for s in decoded.history[0].sides] == [
        (1, U16),
        (255, 255 * U8),
    ]
    assert len(decoded.games) == U8
    assert decoded.games[-1] == GameResult(1, (U16, U16))
    assert (decoded.dealer, decoded.turn, decoded.last_capturer) == (3, 3, 3)


def test_a_side_past_the_partnerships_is_refused() -> None:
    """Side 2 of a partnership game names no side: refused, never read as a seat."""
    state = consistent(PARTNERS_WIDE, ())
    data = encode(replace(state, games=(GameResult(winner=2, totals=(0, 0)),)))
    assert refusal(data) == "state names side 2 of 2"
    finished = replace(state, phase=Phase.MATCH_OVER, winner=2)
    assert refusal(encode(finished)) == "state names side 2 of 2"


def test_the_carry_round_trips_at_its_largest_value() -> None:
    """257 shared top counts at 255 points each carry 65535: the top of its two bytes."""
    tied = [[(26, 0, 0), (26, 0, 0)]] * 257
    state = round_trips(consistent(WIDE, history(WIDE, tied)))
    assert state.carry == U16
    assert len(state.history) == 257


@pytest.mark.parametrize(
    "profile", [ERAM, match_profile("egyptian", 2), FOUR], ids=lambda p: p.name
)
def test_a_carry_beyond_one_byte_round_trips_in_every_profile(profile: Profile) -> None:
    share = 52 // profile.seats
    hands = -(-256 // profile.majority_points)  # enough ties to pass 255
    tied = [[(share, 0, 0)] * profile.seats] * hands
    state = round_trips(consistent(profile, history(profile, tied)))
    assert state.carry > U8


def test_scores_round_trip_at_their_largest_value() -> None:
    """255 basras of 255 points and 255 special points in one hand, then 255 more: 65535."""
    hands = [[(40, 255, 255), (12, 0, 0)], [(40, 255, 0), (12, 0, 0)]]
    state = round_trips(consistent(WIDE, history(WIDE, hands)))
    assert state.scores == (U16, 0)
    assert [(s.specials, s.basras) for s in state.history[0].seats] == [(255, 255), (0, 0)]


def test_the_header_round_trips_at_its_largest_values() -> None:
    base = consistent(ERAM, ())
    widest = replace(
        base,
        seed=U64,
        hand_number=U16,
        plays=U8,
        basras=(U8, U8),
        last_capturer=1,
        dealer=1,
        turn=1,
    )
    # hand_number feeds the first dealer of the replayed history: keep the history empty.
    state = round_trips(widest)
    assert (state.seed, state.hand_number, state.plays, state.basras) == (U64, U16, U8, (U8, U8))


def test_the_header_round_trips_at_its_smallest_values() -> None:
    base = consistent(NARROW, ())
    state = round_trips(
        replace(base, seed=0, hand_number=0, plays=0, dealer=0, turn=0, last_capturer=0)
    )
    assert (state.seed, state.hand_number, state.plays, state.carry) == (0, 0, 0, 0)
    assert state.history == ()
    assert state.scores == (0, 0)


def test_seats_and_cards_round_trip_at_their_limits() -> None:
    """Four seats; a seat holding all 52 cards; the last seat index as turn and capturer."""
    base = consistent(FOUR, ())
    every = tuple(CARDS)
    state = round_trips(
        replace(
            base,
            hands=(every, (), (), ()),
            captured=(0, 0, 0, 0),
            turn=3,
            dealer=3,
            last_capturer=3,
        )
    )
    assert state.hands[0] == every
    assert state.turn == 3
    on_floor = round_trips(replace(base, floor=every, captured=(0, 0, 0, 0)))
    assert on_floor.floor == every
    in_stock = round_trips(replace(base, stock=every[::-1], captured=(0, 0, 0, 0)))
    assert in_stock.stock == every[::-1]
    last_pile = round_trips(replace(base, captured=(0, 0, 0, NO_CARDS)))
    assert last_pile.captured[3] == NO_CARDS


def test_a_history_past_the_signed_range_of_its_two_bytes_round_trips() -> None:
    """32768 hands (2**15), scoring nothing in a profile of zero points."""
    hands = [[(26, 0, 0), (26, 0, 0)]] * 2**15
    state = round_trips(consistent(NARROW, history(NARROW, hands)))
    assert len(state.history) == 2**15


@pytest.mark.parametrize(
    "change",
    [
        {"seed": U64 + 1},
        {"hand_number": U16 + 1},
        {"plays": U8 + 1},
        {"basras": (U8 + 1, 0)},
        {"seed": -1},
    ],
    ids=lambda c: next(iter(c)),
)
def test_one_past_a_field_is_refused_never_truncated(change: dict[str, object]) -> None:
    state = replace(consistent(ERAM, ()), **change)  # type: ignore[arg-type]
    with pytest.raises((struct.error, ValueError, OverflowError)):
        encode(state)


def test_a_carry_one_past_two_bytes_is_refused() -> None:
    tied = [[(26, 0, 0), (26, 0, 0)]] * 258  # 258 * 255 = 65790
    with pytest.raises((struct.error, ValueError, OverflowError)):
        encode(consistent(WIDE, history(WIDE, tied)))


# -- The store's record ------------------------------------------------------------------------


def record(version: int, seats: int, size: int) -> MatchRecord:
    rng = random.Random(version ^ seats ^ size)
    blob = rng.randbytes
    return MatchRecord(
        match_id="m" * 22,
        version=version,
        state=blob(size),
        token_hashes=tuple(blob(32) for _ in range(seats)),
        creation=blob(size),
        requests=tuple(blob(size) for _ in range(seats)),
    )


SEATS = 127
"""The most seats a record holds: the seats byte's high bit flags a seat table."""


@pytest.mark.parametrize(
    ("version", "seats", "size"),
    [(U64, 4, U16), (U64, SEATS, 3), (0, 0, 0), (1, 2, 0), (2**63, 4, 1)],
)
@pytest.mark.parametrize("table", [b"", b"t" * U16])
def test_the_store_record_round_trips_at_its_limits(
    version: int, seats: int, size: int, table: bytes
) -> None:
    original = record(version, seats, size)._replace(table=table)
    data = encode_record(original)
    assert decode_record(original.match_id, data) == original
    assert data[:8] == version.to_bytes(8, "big")


@pytest.mark.parametrize(
    "change",
    [
        {"version": U64 + 1},
        {"state": bytes(U16 + 1)},
        {"creation": bytes(U16 + 1)},
        {"requests": (bytes(U16 + 1), b"")},
        {"token_hashes": (bytes(32),) * (SEATS + 1), "requests": (b"",) * (SEATS + 1)},
        {"table": bytes(U16 + 1)},
    ],
    ids=lambda c: next(iter(c)),
)
def test_a_record_field_one_past_its_width_is_refused(change: dict[str, object]) -> None:
    with pytest.raises((struct.error, ValueError, OverflowError)):
        encode_record(record(1, 2, 4)._replace(**change))  # type: ignore[arg-type]


@pytest.mark.parametrize("seats", [1, 2, 4, SEATS])
def test_a_record_with_watch_token_hashes_round_trips(seats: int) -> None:
    original = record(U64, seats, 7)._replace(
        watch_hashes=tuple(bytes([i]) * 32 for i in range(1, seats + 1)),
    )
    data = encode_record(original)
    decoded = decode_record(original.match_id, data)
    assert decoded == original
    assert decoded.watch_hashes[-1] == bytes([seats]) * 32
    # A record from before watch tokens (none stored) still decodes, with none.
    assert decode_record(original.match_id, data[: -32 * seats]).watch_hashes == ()


@pytest.mark.parametrize("extra", [b"x", bytes(31), bytes(33), bytes(65)])
def test_bytes_past_a_record_are_refused_unless_they_are_its_watch_hashes(extra: bytes) -> None:
    data = encode_record(record(1, 2, 4))
    with pytest.raises(ValueError, match=r"^not a match record$"):
        decode_record("m" * 22, data + extra)


# -- What decode refuses, and why -------------------------------------------------------------


def refusal(data: bytes) -> str:
    with pytest.raises(CorruptStateError) as refused:
        decode(data)
    return str(refused.value)


def test_each_inconsistency_is_refused_with_its_own_reason() -> None:
    state = consistent(ERAM, history(ERAM, [[(26, 3, 1), (26, 2, 0)]]))
    assert decode(encode(state)) == state
    everything = list(CARDS)
    # 52 cards counted, but one twice and one missing: the count alone would pass.
    twice = replace(state, hands=((everything[0],), ()), captured=(NO_CARDS & ~(1 << 51), 0))
    assert sum(m.bit_count() for m in twice.captured) + 1 == 52
    assert refusal(encode(twice)) == "state does not hold each of the 52 cards exactly once"
    one_more = replace(state, floor=(everything[5],))
    assert refusal(encode(one_more)) == "state does not hold each of the 52 cards exactly once"
    scores = replace(state, scores=(state.scores[0] + 1, state.scores[1]))
    assert refusal(encode(scores)) == "match totals do not add up to the hand scores"
    carry = replace(state, carry=state.carry + 30)
    assert refusal(encode(carry)) == "carry does not follow from the hand scores"
    early_winner = replace(state, winner=0)
    assert refusal(encode(early_winner)) == "winner and phase disagree"
    no_winner = replace(state, phase=Phase.MATCH_OVER)
    assert refusal(encode(no_winner)) == "winner and phase disagree"


def test_malformed_bytes_are_refused_with_their_reason() -> None:
    state = consistent(ERAM, ())
    data = encode(state)
    assert refusal(data[:-1]) == "state bytes end early"
    assert refusal(data + b"\0") == "state bytes have trailing data"
    assert refusal(b"\x09" + data[1:]) == "unknown state format version 9"
    assert refusal(encode(replace(state, turn=5))) == "state names seat 5 of 2"
    assert refusal(encode(replace(state, turn=2))) == "state names seat 2 of 2"
    assert refusal(encode(replace(state, last_capturer=2))) == "state names seat 2 of 2"
    # Seat 0 holds the last card (index 51), taken from its pile; then that byte becomes 52.
    last = CARDS[51]
    held = encode(replace(state, hands=((last,), ()), captured=(NO_CARDS & ~(1 << 51), 0)))
    assert decode(held).hands[0] == (last,)
    assert held.count(bytes((1, 51))) == 1, "the hand's length byte and card byte"
    at = held.index(bytes((1, 51)))
    assert refusal(held[: at + 1] + bytes((52,)) + held[at + 2 :]) == (
        "state bytes hold an invalid card"
    )
    assert refusal(b"") == "state bytes end early"
    not_utf8 = data[:2] + b"\xff" + data[3:]  # the profile's name
    assert refusal(not_utf8).startswith("state bytes do not decode: ")


def test_a_card_missing_from_index_0_is_refused_too() -> None:
    """The union of the piles must be every card: AC missing while 2C is held twice counts 52."""
    state = consistent(ERAM, ())
    twice = replace(state, hands=((CARDS[1],), ()), captured=(NO_CARDS & ~1, 0))
    assert refusal(encode(twice)) == "state does not hold each of the 52 cards exactly once"


def test_bytes_that_decode_but_are_not_canonical_are_refused() -> None:
    """The standard point table written out as pairs (not as its flag) decodes to the same
    profile; the one encoding of that state is the flag, so these bytes are refused."""
    data = encode(consistent(ERAM, ()))
    flags_at = 2 + data[1] + 1  # version, name length, name, seats
    pairs_at = 2 + data[1] + codec._PROFILE.size
    assert data[flags_at] & codec._FLAG_STANDARD_POINTS
    assert data[pairs_at] == 0
    table = bytes(x for c, p in enumerate(ERAM.points.points) if p for x in (c, p))
    written_out = (
        data[:flags_at]
        + bytes((data[flags_at] & ~codec._FLAG_STANDARD_POINTS,))
        + data[flags_at + 1 : pairs_at]
        + bytes((len(table) // 2,))
        + table
        + data[pairs_at + 1 :]
    )
    assert refusal(written_out) == "state bytes are not in canonical form"


# -- Format 1 (read, never written): its fields at their limits ---------------------------------


def version_1(state: State) -> bytes:
    data = codec._encode_v1(state)
    assert data[0] == 1
    return data


@pytest.mark.parametrize("seven", [SevenRule.COUNT_NO_QUEEN_OR_KING, SevenRule.SUM_OF_NUMBERS])
def test_a_format_1_state_past_the_signed_range_of_its_two_bytes_decodes(
    seven: SevenRule,
) -> None:
    """32768 hands, each a basra of 1 point to seat 0: a history and a score of 2**15."""
    profile = replace(ERAM, majority_points=0, basra_points=1, seven=seven)
    hands = [[(26, 0, 1), (26, 0, 0)]] * 2**15
    state = consistent(profile, history(profile, hands))
    assert state.scores == (2**15, 0)
    assert state.last_capturer is None
    decoded = decode(version_1(state))
    assert decoded == state
    assert decoded.profile.seven is seven


def test_a_format_1_state_is_refused_with_its_reasons() -> None:
    state = consistent(ERAM, ())
    data = version_1(state)
    assert decode(data) == state
    assert refusal(data + b"\0") == "state bytes have trailing data"
    for seat in ({"turn": 2}, {"dealer": 3}, {"last_capturer": 2}):
        assert refusal(version_1(replace(state, **seat))) == (  # type: ignore[arg-type]
            f"state names seat {next(iter(seat.values()))} of 2"
        )


# -- A profile alone (the service stores a match's profile with its creation) -------------------


@pytest.mark.parametrize("profile", PROFILES, ids=describe)
def test_a_profile_alone_round_trips_as_the_state_stores_it(profile: Profile) -> None:
    data = encode_profile(profile)
    assert decode_profile(data) == profile
    assert encode(consistent(profile, ()))[1:].startswith(data)


def test_profile_bytes_are_refused_with_their_reason() -> None:
    data = encode_profile(ERAM)
    fields = 1 + data[0]  # the name's length, the name

    def refused(bad: bytes) -> str:
        with pytest.raises(CorruptStateError) as caught:
            decode_profile(bad)
        return str(caught.value)

    assert refused(data + b"\0") == "profile bytes have the wrong length"
    assert refused(data[:-1]) == "profile bytes do not decode: index out of range"
    assert refused(b"") == "profile bytes do not decode: index out of range"
    flags = bytearray(data)
    flags[fields + 1] |= 8
    assert refused(bytes(flags)) == "unknown profile flags 0xc"
    bottom = bytearray(data)
    bottom[fields + 16] = 9
    assert refused(bytes(bottom)) == "profile bytes do not decode: 9 is not a valid BottomCard"
    assert refused(data[:1] + b"\xff" + data[2:]) == (
        "profile bytes do not decode: 'utf-8' codec can't decode byte 0xff in position 0: "
        "invalid start byte"
    )


@pytest.mark.parametrize(
    ("field", "value"),
    [("seat", 2), ("seat", 3), ("card", 52), ("card", 53), ("sweep", 2), ("sweep", 3)],
)
def test_a_last_play_past_its_fields_is_refused(field: str, value: int) -> None:
    """The last play's seat (of 2), card (of 52) and sweep flag (0 or 1), each one past and two
    past its last value; the last values themselves decode."""
    state = consistent(ERAM, ())
    last = replace(state, last_play=LastPlay(1, CARDS[51], 0, (), U8, True))
    data = encode(last)
    at = len(encode(state)) - 4  # the last play's place: before the games and the history
    assert data[at : at + 5] == bytes((1, 51, 0, U8, 1))
    assert decode(data) == last
    offset = {"seat": 0, "card": 1, "sweep": 4}[field]
    bad = data[: at + offset] + bytes((value,)) + data[at + offset + 1 :]
    assert refusal(bad) == "state bytes hold an invalid last play"


# -- The cached decoders' bodies (mutation testing reached them only once they were split) -----


@pytest.mark.parametrize("profile", [WIDE, NARROW], ids=describe)
def test_a_format_1_state_keeps_every_field_of_its_profile(profile: Profile) -> None:
    """Name, target, deal, floor and majority at their limits, none of them ERAM's."""
    state = consistent(profile, ())
    decoded = decode(version_1(state))
    assert decoded == state
    assert decoded.profile == profile


@pytest.mark.parametrize("seats", [0, 1, 3, 4])
def test_a_format_1_state_of_other_than_two_seats_is_refused(seats: int) -> None:
    data = bytearray(version_1(consistent(ERAM, ())))
    at = 2 + data[1]  # the version, the name's length, the name: then the seats
    assert data[at] == 2
    data[at] = seats
    # Its 7D rule is a known one: the seats alone refuse it.
    assert refusal(bytes(data)) == "a version 1 state must be a two-seat game with a known 7D rule"


def test_a_point_table_round_trips_card_by_card() -> None:
    """Several cards, each with its own points: each pair read as (card, points)."""
    points = [0] * 52
    points[0], points[9], points[51] = 3, 7, U8
    profile = Profile("tabled", points=PointTable(tuple(points)))
    assert decode_profile(encode_profile(profile)) == profile
    assert round_trips(consistent(profile, ())).profile == profile


def test_a_custom_point_table_totalling_13_is_kept_not_read_back_as_the_standard_one() -> None:
    """RULES.md's table totals 13 points; another table with the same total (13 on the KS) is
    another table, and a reload must give it back, not the standard one."""
    points = [0] * 52
    points[CARDS.index(Card.parse("KS"))] = 13
    custom = PointTable(tuple(points))
    assert custom.total == STANDARD_POINTS.total == 13
    profile = Profile("thirteen", points=custom)
    assert decode_profile(encode_profile(profile)).points is custom
    state = round_trips(consistent(profile, ()))
    assert state.profile.points is custom
    assert state.profile.points.of(Card.parse("KS").bit) == 13


@pytest.mark.parametrize("card", [52, 53, U8])
def test_a_point_table_naming_no_card_is_refused(card: int) -> None:
    data = bytearray(encode_profile(SPARSE))
    assert data[-2:] == bytes((51, U8))  # its one pair, the last two bytes
    data[-2] = card
    with pytest.raises(CorruptStateError) as refused:
        decode_profile(bytes(data))
    assert str(refused.value) == "state bytes hold an invalid point table"


def test_a_rubber_game_just_won_round_trips_with_its_totals_and_hands() -> None:
    # The finished game stays (scores, carry, hands) until the next deal; the flag says so.
    rubber = match_profile("egyptian", 2, rubber=True)
    scored = history(rubber, [[(30, 10, 0, 0), (22, 1, 1, 10)]] * 3)
    totals = tuple(sum(h.totals[s] for h in scored) for s in range(rubber.sides))
    winner = totals.index(max(totals))
    ended = consistent(
        rubber,
        scored,
        phase=Phase.HAND_OVER,
        hand_number=3,  # the hand just scored
        dealer=0,
        games=(GameResult(winner, totals),),
        game_ended=True,
    )
    assert round_trips(ended).game == 1
    assert not round_trips(replace(ended, game_ended=False)).game_ended


@pytest.mark.parametrize(
    "fields",
    [
        {"phase": Phase.PLAYING},  # a hand in progress cannot follow a just-won game
        {"games": ()},  # no game was won
    ],
    ids=["playing", "no-game"],
)
def test_a_just_won_game_flag_on_a_state_that_won_none_is_corrupt(
    fields: dict[str, object],
) -> None:
    rubber = match_profile("egyptian", 2, rubber=True)
    scored = history(rubber, [[(30, 10, 0, 0), (22, 1, 1, 10)]])
    totals = tuple(sum(h.totals[s] for h in scored) for s in range(rubber.sides))
    state = consistent(
        rubber,
        scored,
        phase=Phase.HAND_OVER,
        hand_number=1,
        dealer=0,
        games=(GameResult(0, totals),),
        game_ended=True,
    )
    with pytest.raises(CorruptStateError, match="just-ended game"):
        decode(encode(replace(state, **fields)))  # type: ignore[arg-type]
