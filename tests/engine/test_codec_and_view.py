"""Serialization round trips and what a seat may see."""

from __future__ import annotations

import random

import pytest

from basra.engine import CorruptStateError, decode, encode, match_profile, view
from basra.engine.cards import CARDS
from tests.engine.builders import random_match


def test_every_state_of_random_matches_round_trips_losslessly() -> None:
    egyptian, four = match_profile("egyptian", 2), match_profile("persian", 4)
    for seed, profile in [(1, None), (2, None), (3, egyptian), (4, four)]:
        states = random_match(seed, random.Random(seed), *(p for p in [profile] if p))
        for state in states:
            data = encode(state)
            assert decode(data) == state
            assert len(data) <= 220 + 5 * state.profile.sides * len(state.history)


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
