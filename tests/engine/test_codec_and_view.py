"""Serialization round trips and what a seat may see."""

from __future__ import annotations

import dataclasses
import json
import random
from pathlib import Path

import pytest

from basra.engine import (
    ERAM,
    RULE_SYSTEMS,
    CorruptStateError,
    InvalidSeatError,
    Phase,
    codec,
    decode,
    encode,
    match_profile,
    view,
)
from basra.engine.cards import CARDS
from basra.engine.codec import FORMAT_VERSION
from basra.engine.profile import STANDARD_POINTS
from tests.engine.builders import random_match


def test_every_state_of_random_matches_round_trips_losslessly() -> None:
    egyptian, four = match_profile("egyptian", 2), match_profile("persian", 4)
    for seed, profile in [(1, None), (2, None), (3, egyptian), (4, four)]:
        states = random_match(seed, random.Random(seed), *(p for p in [profile] if p))
        for state in states:
            data = encode(state)
            assert decode(data) == state
            assert len(data) <= 220 + 5 * state.profile.sides * len(state.history)


@pytest.mark.parametrize(
    ("name", "seats", "rubber"),
    [(n, s, r) for n, sys in RULE_SYSTEMS.items() for s in sys.seat_counts for r in (False, True)
     if not r or sys.rubber],
)  # fmt: skip
def test_every_profiles_states_round_trip_and_keep_their_profile(
    name: str, seats: int, rubber: bool
) -> None:
    profile = match_profile(name, seats, rubber=rubber)
    for state in random_match(seats, random.Random(name), profile)[::7]:
        data = encode(state)
        assert data[0] == FORMAT_VERSION
        assert decode(data) == state
        assert decode(data).profile == profile


def test_a_four_seat_partnership_state_is_under_140_bytes_mid_hand() -> None:
    """The figure the service's Redis budget (1 KiB per match) rests on; `make bench` prints it."""
    states = random_match(8, random.Random(8), match_profile("egyptian", 4))
    mid = next(s for s in states if s.plays == 20)
    assert len(encode(mid)) <= 140


def test_format_1_records_written_before_rule_profiles_still_decode_as_eram() -> None:
    """Records outlive code: states stored by the two-seat ERAM-only engine (format 1, taken
    from that code) decode to the same match under the `eram` profile."""
    fixtures = json.loads(
        (Path(__file__).parent / "fixtures" / "format-v1-states.json").read_text(encoding="utf-8")
    )
    for fixture in fixtures:
        data = bytes.fromhex(fixture["hex"])
        state = decode(data)
        assert state.profile == ERAM
        assert state.phase is Phase[fixture["phase"]]
        assert (state.hand_number, state.plays) == (fixture["hand_number"], fixture["plays"])
        assert list(state.scores) == fixture["scores"]
        assert state.carry == fixture["carry"]
        assert state.winner == fixture["winner"]
        assert [[str(c) for c in h] for h in state.hands] == fixture["hands"]
        assert [str(c) for c in state.floor] == fixture["floor"]
        assert list(state.captured) == fixture["captured"]
        assert list(state.basras) == fixture["basras"]
        assert [list(h.totals) for h in state.history] == fixture["history_totals"]
        assert decode(encode(state)) == state  # and it is stored again in format 2
        corrupt = bytearray(data)
        corrupt[-1] ^= 1
        with pytest.raises(CorruptStateError):
            decode(bytes(corrupt))


def test_a_two_seat_state_is_about_a_hundred_and_twenty_bytes_mid_hand() -> None:
    states = random_match(8, random.Random(8))
    mid = next(s for s in states if s.plays == 20)
    assert len(encode(mid)) <= 120


@pytest.mark.parametrize("cut", [0, 1, 5, 30, -1])
def test_truncated_bytes_are_rejected(cut: int) -> None:
    data = encode(random_match(1, random.Random(1))[10])
    with pytest.raises(CorruptStateError):
        decode(data[:cut])


def test_any_flipped_byte_is_rejected_or_still_consistent() -> None:
    data = encode(random_match(1, random.Random(1))[30])
    rejected = 0
    for i in range(len(data)):
        for flip in (1, 0x80):
            corrupt = bytearray(data)
            corrupt[i] ^= flip
            try:
                state = decode(bytes(corrupt))
            except CorruptStateError:
                rejected += 1
            else:  # a different but self-consistent state (say, another seed) is acceptable
                assert encode(state) == bytes(corrupt)
    assert rejected > len(data)


def test_trailing_bytes_and_unknown_versions_are_rejected() -> None:
    data = encode(random_match(1, random.Random(1))[3])
    for bad in (data + b"\x00", b"\x09" + data[1:], b""):
        with pytest.raises(CorruptStateError):
            decode(bad)


def test_a_seat_view_shows_its_own_hand_and_never_the_other_hand_or_the_stock() -> None:
    for state in random_match(21, random.Random(21))[:60]:
        for seat in (0, 1):
            seen = view(state, seat)
            other = set(state.hands[1 - seat])
            shown = set(seen.hand) | set(seen.floor)
            assert seen.hand == state.hands[seat]
            assert not other & shown
            assert not set(state.stock) & shown
            assert seen.hand_sizes == tuple(len(h) for h in state.hands)
            assert seen.stock_size == len(state.stock)
            assert not hasattr(seen, "seed")
            assert not hasattr(seen, "stock")
            # Nothing in the view's text mentions a hidden card.
            text = repr(seen)
            hidden = {str(c) for c in CARDS if c in other or c in state.stock}
            assert not any(f"'{h}'" in text for h in hidden)


def test_a_view_has_no_turn_once_a_hand_is_over_and_names_the_next_dealer() -> None:
    states = random_match(5, random.Random(5), match_profile("persian", 3))
    over = next(s for s in states if s.phase is Phase.HAND_OVER)
    seen = view(over, 0)
    assert (seen.turn, seen.next_dealer) == (None, (over.dealer + 1) % 3)
    playing = view(states[1], 2)
    assert playing.turn == states[1].turn
    assert playing.next_dealer is None


def test_a_view_shows_the_last_play_and_each_sides_captured_special_cards() -> None:
    states = random_match(6, random.Random(6), match_profile("egyptian", 4))
    state = next(s for s in states if s.plays == 30)
    seen = view(state, 1)
    assert seen.last_play is not None
    assert seen.last_play.seat == (state.turn - 1) % 4
    assert seen.last_play.card not in state.hands[seen.last_play.seat]
    for side, specials in enumerate(seen.captured_specials):
        assert all(
            state.captured[side] >> c & 1 and state.profile.points.points[c] for c in specials
        )
        assert sum(state.profile.points.points[c] for c in specials) == state.profile.points.of(
            state.captured[side]
        )


def test_any_flipped_byte_of_a_four_seat_rubber_state_is_rejected_or_still_consistent() -> None:
    profile = match_profile("jordanian", 4, rubber=True)
    states = random_match(9, random.Random(9), profile)
    data = encode(next(s for s in states if s.history and s.plays == 30))
    rejected = 0
    for i in range(len(data)):
        corrupt = bytearray(data)
        corrupt[i] ^= 0x80
        try:
            state = decode(bytes(corrupt))
        except CorruptStateError:
            rejected += 1
        else:
            assert encode(state) == bytes(corrupt)
    assert rejected > len(data) // 2  # the seed and some profile fields may take any value


@pytest.mark.parametrize("seats", [2, 3, 4])
def test_each_seat_has_its_view_and_a_seat_past_the_table_none(seats: int) -> None:
    profile = match_profile("persian", seats)
    state = random_match(seats, random.Random(seats), profile)[5]
    assert [view(state, s).seat for s in range(seats)] == list(range(seats))
    for seat in (seats, -1):
        with pytest.raises(InvalidSeatError) as caught:
            view(state, seat)
        assert str(caught.value) == f"seat {seat} does not exist: seats are 0..{seats - 1}"
        assert caught.value.metadata == {"seat": str(seat)}


def test_a_view_shows_every_public_count_of_the_state() -> None:
    """Piles, basras and totals per side, as the state holds them, at every seat (a partnership
    game, mid-hand, after a basra)."""
    states = random_match(4, random.Random(4), match_profile("egyptian", 4))
    state = next(s for s in states if any(s.basras) and s.history and s.phase is Phase.PLAYING)
    for seat in range(4):
        seen = view(state, seat)
        assert seen.captured_counts == tuple(m.bit_count() for m in state.captured)
        assert sum(seen.captured_counts) + sum(seen.hand_sizes) + len(seen.floor) == (
            52 - seen.stock_size
        )
        assert (seen.basras, seen.basra_points) == (state.basras, state.basra_points)
        assert (seen.scores, seen.carry, seen.games) == (state.scores, state.carry, state.games)
        assert (seen.dealer, seen.hand_number, seen.plays_left) == (
            state.dealer,
            state.hand_number,
            state.plays_left,
        )
        assert (seen.last_capturer, seen.last_play) == (state.last_capturer, state.last_play)
        assert (seen.phase, seen.winner) == (Phase.PLAYING, None)
        assert (seen.deal_number, seen.turn, seen.next_dealer) == (
            state.deal_number,
            state.turn,
            None,
        )
        assert (seen.side, seen.sides, seen.target) == (seat % 2, (0, 1, 0, 1), 101)
        assert seen.captured_specials == tuple(
            tuple(c for c in CARDS if m >> c & 1 and STANDARD_POINTS.points[c])
            for m in state.captured
        )
    over = states[-1]
    assert over.phase is Phase.MATCH_OVER
    assert over.winner is not None
    for seat in range(4):
        seen = view(over, seat)
        assert (seen.phase, seen.winner, seen.scores) == (
            Phase.MATCH_OVER,
            over.winner,
            over.scores,
        )


def test_a_profiles_bytes_are_written_once_and_the_memo_stays_bounded() -> None:
    """``codec._profile_bytes`` remembers each profile's bytes by the profile's identity: asked
    again for the same profile it answers the very bytes it wrote (computing them again would
    give an equal, new object), keeps the profile with them, and holds at most 64 profiles."""
    memo = codec._PROFILE_BYTES
    memo.clear()
    profile = dataclasses.replace(ERAM)  # equal to ERAM, another object
    first = codec._profile_bytes(profile)
    assert memo[id(profile)] == (profile, first)
    assert codec._profile_bytes(profile) is first
    assert first == codec._profile_bytes_uncached(profile)
    kept = [dataclasses.replace(ERAM) for _ in range(64)]
    for other in kept:
        codec._profile_bytes(other)
        assert len(memo) <= 64
    assert memo == {id(kept[-1]): (kept[-1], first)}  # cleared when full, then the 64th kept
