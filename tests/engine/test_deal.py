"""The deal, seats, dealer and turns (RULES.md, "Seats, dealer, turns" and "The deal")."""

from __future__ import annotations

import random
from collections import Counter
from itertools import pairwise

from basra.engine import CardPlayed, CardsDealt, HandStarted, Phase, new_match
from basra.engine.bots import random_play
from basra.engine.cards import CARDS, Card
from basra.engine.game import apply, clean_floor, deal_next_hand
from tests.engine.builders import cards, random_match


def test_deal_gives_four_to_each_seat_and_four_to_the_floor() -> None:
    state, events = new_match(seed=1)
    assert [len(h) for h in state.hands] == [4, 4]
    assert len(state.floor) == 4
    assert len(state.stock) == 40
    assert events == (HandStarted(1, state.dealer, 1 - state.dealer, state.floor),)


def test_same_seed_gives_the_same_match_and_other_seeds_differ() -> None:
    assert new_match(seed=99) == new_match(seed=99)
    deals = {(new_match(seed)[0].hands, new_match(seed)[0].floor) for seed in range(50)}
    assert len(deals) == 50


def test_floor_never_starts_with_a_jack_or_seven_of_diamonds() -> None:
    forbidden = {Card.parse(c) for c in ("JC", "JD", "JH", "JS", "7D")}
    for seed in range(3000):
        state, _ = new_match(seed)
        assert not forbidden & set(state.floor), seed


class _BottomRng:
    """Puts every returned card at the bottom, recording the positions it was offered."""

    def __init__(self) -> None:
        self.ranges: list[tuple[int, int]] = []

    def randint(self, low: int, high: int) -> int:
        self.ranges.append((low, high))
        return high


def test_floor_jack_goes_back_into_the_stock_not_on_top_and_the_top_card_replaces_it() -> None:
    rng = _BottomRng()
    floor, stock = clean_floor(cards("2C JH 5D 9S"), cards("7D 3C 4C 8H"), rng)  # type: ignore[arg-type]
    # JH is replaced by the top card 7D, which is replaced in turn by 3C.
    assert floor == cards("2C 3C 5D 9S")
    assert stock == cards("4C 8H JH 7D")
    assert all(low == 1 for low, _ in rng.ranges), "a returned card never goes on top"


def test_returned_card_may_land_anywhere_below_the_top() -> None:
    positions: Counter[int] = Counter()
    for seed in range(400):
        _, stock = clean_floor(cards("JH 2C 3C 4C"), cards("5C 6C 7C 8C 9C"), random.Random(seed))
        positions[stock.index(Card.parse("JH"))] += 1
    assert set(positions) == {0, 1, 2, 3, 4}  # after the top card 5C left to replace it


def test_first_dealer_is_random_per_match() -> None:
    dealers = Counter(new_match(seed)[0].dealer for seed in range(400))
    assert dealers[0] > 150
    assert dealers[1] > 150


def test_non_dealer_leads_and_turns_alternate_strictly_through_six_deals() -> None:
    rng = random.Random(3)
    state, _ = new_match(seed=3)
    seats, deals, floor_before = [], [], None
    while state.phase is Phase.PLAYING:
        floor_before = state.floor
        state, events = apply(state, random_play(state, rng))
        for event in events:
            if isinstance(event, CardPlayed):
                seats.append(event.seat)
            if isinstance(event, CardsDealt):
                deals.append((event.hand, event.deal, event.cards_each, event.stock_left))
                assert [len(h) for h in state.hands] == [4, 4]
        if any(isinstance(e, CardsDealt) for e in events):
            played = next(e for e in events if isinstance(e, CardPlayed))
            # No new floor cards on a redeal: the floor changed only by the play itself.
            assert len(state.floor) <= len(floor_before) + (1 if played.trail else 0)
    leader = 1 - state.dealer
    assert seats == [leader, 1 - leader] * 24  # 48 plays
    # All within the match's first hand.
    assert deals == [(1, 2, 4, 32), (1, 3, 4, 24), (1, 4, 4, 16), (1, 5, 4, 8), (1, 6, 4, 0)]


def test_dealer_alternates_every_hand() -> None:
    states = random_match(seed=11, rng=random.Random(11))
    dealers = [s.dealer for s in states if s.plays == 0 and s.phase is Phase.PLAYING]
    assert len(dealers) >= 2
    assert all(a != b for a, b in pairwise(dealers))


def test_each_hand_of_a_match_uses_its_own_shuffle() -> None:
    state, _ = new_match(seed=5)
    rng = random.Random(0)
    while state.phase is Phase.PLAYING:
        state, _ = apply(state, random_play(state, rng))
    first_floor = new_match(seed=5)[0].floor
    second, _ = deal_next_hand(state)
    assert second.hand_number == 2
    assert second.floor != first_floor
    assert sorted(second.stock + second.floor + second.hands[0] + second.hands[1]) == list(CARDS)
