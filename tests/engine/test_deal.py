"""The deal, seats, dealer and turns (RULES.md, "Seats, dealer, turns" and "The deal")."""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import replace
from itertools import pairwise

from basra.engine import (
    ERAM,
    CardPlayed,
    CardsDealt,
    HandStarted,
    Phase,
    match_profile,
    new_match,
    view,
)
from basra.engine.bots import random_play
from basra.engine.cards import CARDS, Card
from basra.engine.game import apply, clean_floor, deal_next_hand, deal_round
from basra.engine.scoring import game_winner
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


# -- One test per dealing rule, each against an account written from the rule itself ---------
# The hand's shuffle is random.Random(key).shuffle of the 52 cards in index order (engine.chance
# says it is that, card for card), the first dealer random.Random(key).randrange(seats): the
# expected deals below are built with the standard library, not with the engine's own functions.


def shuffled(seed: int, hand: int) -> list[Card]:
    """The 52 cards as the shuffle of hand ``hand`` of the match of ``seed`` leaves them."""
    deck = list(CARDS)
    random.Random(f"basra/{seed}/hand/{hand}").shuffle(deck)
    return deck


def clean_deal_seed() -> int:
    """A seed whose first floor holds no J and no 7D (nothing is buried and replaced)."""
    forbidden = {Card.parse(c) for c in ("JC", "JD", "JH", "JS", "7D")}
    return next(s for s in range(100) if not forbidden & set(shuffled(s, 1)[8:12]))


def test_deal_order_4_to_the_seat_after_the_dealer_then_4_to_the_dealer_then_4_to_the_floor() -> (
    None
):
    seed = clean_deal_seed()
    deck = shuffled(seed, 1)
    state, _ = new_match(seed)
    leader = 1 - state.dealer
    assert state.hands[leader] == tuple(deck[0:4])
    assert state.hands[state.dealer] == tuple(deck[4:8])
    assert state.floor == tuple(deck[8:12])
    assert state.stock == tuple(deck[12:]), "the rest is the stock, top first"


def test_deal_order_at_four_seats_a_packet_each_round_the_table_from_the_dealers_left() -> None:
    profile = match_profile("egyptian", 4)
    hands, rest = deal_round(CARDS, dealer=1, profile=profile)
    assert hands == (CARDS[8:12], CARDS[12:16], CARDS[0:4], CARDS[4:8])
    assert rest == CARDS[16:]


def test_each_hand_is_dealt_from_its_own_shuffle_of_the_seed() -> None:
    for seed in range(20):
        state, _ = new_match(seed)
        rng = random.Random(seed)
        while state.phase is Phase.PLAYING:
            state, _ = apply(state, random_play(state, rng))
        second, _ = deal_next_hand(state)
        deck = shuffled(seed, 2)
        assert second.hands[1 - second.dealer] == tuple(deck[0:4])
        assert second.hands[second.dealer] == tuple(deck[4:8])


def test_redeal_4_more_each_from_the_top_of_the_stock_the_same_order_none_to_the_floor() -> None:
    state, _ = new_match(seed=21)
    rng = random.Random(21)
    for _ in range(8):
        stock, floor_before = state.stock, state.floor
        state, events = apply(state, random_play(state, rng))
    assert any(isinstance(e, CardsDealt) for e in events), "the 8th play empties both hands"
    assert state.hands[1 - state.dealer] == stock[0:4]
    assert state.hands[state.dealer] == stock[4:8]
    assert state.stock == stock[8:]
    played = next(e for e in events if isinstance(e, CardPlayed))
    if played.trail:
        assert state.floor == (*floor_before, played.card), "no new card on the floor"
    else:
        assert set(state.floor) < set(floor_before), "no new card on the floor"


def test_the_first_dealer_of_a_match_is_drawn_from_the_seed() -> None:
    dealers = [new_match(seed)[0].dealer for seed in range(40)]
    assert dealers == [random.Random(f"basra/{seed}/dealer").randrange(2) for seed in range(40)]
    assert set(dealers) == {0, 1}


def test_who_deals_next_the_other_seat_after_every_hand_an_extra_hand_after_a_tie_too() -> None:
    for seed in range(10):
        state, _ = new_match(seed)
        rng = random.Random(seed)
        while state.phase is Phase.PLAYING:
            state, _ = apply(state, random_play(state, rng))
        nxt, _ = deal_next_hand(state)
        assert (nxt.dealer, nxt.turn) == (1 - state.dealer, state.dealer)
        # Both at 125: equal at the target, another hand is played, and the deal passes too.
        tied = replace(state, scores=(125, 125))
        assert game_winner(ERAM.target, tied.scores) == (None, True)
        extra, _ = deal_next_hand(tied)
        assert (extra.dealer, extra.turn) == (1 - state.dealer, state.dealer)


def test_the_bottom_card_is_shown_to_nobody_and_dealt_last_to_the_dealer() -> None:
    """ERAM shows the bottom card to no seat (the egyptian family's dealer sees it: test_variants);
    in every profile the stock is dealt from the top, so the bottom card is the last card of the
    dealer's last packet."""
    state, _ = new_match(seed=13)
    assert [view(state, seat).bottom_card for seat in (0, 1)] == [None, None]
    for profile in (ERAM, match_profile("egyptian", 2), match_profile("egyptian", 4)):
        state, _ = new_match(13, profile)
        bottom = state.stock[-1]
        rng = random.Random(13)
        while state.stock:
            state, _ = apply(state, random_play(state, rng))
        assert state.hands[state.dealer][-1] == bottom, profile.name
