"""The bots of ``engine.bots``: legal moves at every level and rule system, the strong level's
determinism from a seat's view alone, and what it may read."""

from __future__ import annotations

import ast
import dataclasses
import random
from pathlib import Path

import pytest

from basra.engine import (
    CARDS,
    ERAM,
    RULE_SYSTEMS,
    Card,
    HandOverError,
    InvalidInputError,
    NotYourTurnError,
    Phase,
    Play,
    SeatView,
    State,
    apply,
    bots,
    deal_next_hand,
    match_profile,
    new_match,
    strong,
    view,
)
from basra.engine.bots import LEVELS, cards_gone, choose, greedy_play, random_play
from basra.engine.cards import mask_of
from basra.engine.game import legal_plays
from tests.engine.builders import position

SMALL = 24
"""A small strong budget: enough worlds to compare moves, quick on the pure engine."""

CONFIGS = [
    (name, seats, shown)
    for name, system in RULE_SYSTEMS.items()
    for seats in system.seat_counts
    for shown in ((False, True) if seats in system.bottom_card_seats else (False,))
]
"""Every rule system at every seat count (partnerships at four where the system has them),
with the every-seat bottom card option where it exists."""


def as_play(seat: int, card: Card, plan: int) -> Play:
    return Play(seat, card, plan) if plan else Play(seat, card, trail=True)


def config_id(config: tuple[str, int, bool]) -> str:
    name, seats, shown = config
    return f"{name}-{seats}" + ("-bottom-shown" if shown else "")


@pytest.mark.parametrize("config", CONFIGS, ids=config_id)
def test_every_level_plays_a_legal_move_through_whole_hands(config: tuple[str, int, bool]) -> None:
    """Property over seeds: the seats at different levels, a hand played to its end, every move
    legal (``apply`` would raise otherwise, and the move is among ``legal_plays``)."""
    name, seats, shown = config
    profile = match_profile(name, seats, bottom_card_shown=shown)
    for seed in range(3):
        state, events = new_match(seed, profile)
        rng = random.Random(seed)
        hand_events = list(events)
        strong_moves = 0
        while state.phase is Phase.PLAYING:  # the first hand, to its end
            seat = state.turn
            # One seat (a different one each seed) strong, the others random or greedy.
            level = "strong" if seat == seed % seats else LEVELS[(seat + seed) % 2]
            gone = cards_gone(hand_events)
            card, plan = choose(level, view(state, seat), profile, rng, iterations=SMALL, gone=gone)
            play = as_play(seat, card, plan)
            assert play in legal_plays(state)
            strong_moves += level == "strong"
            state, events = apply(state, play)
            hand_events.extend(events)
        assert strong_moves > 0


def test_the_greedy_and_random_levels_are_the_self_play_policies() -> None:
    """From the view, ``greedy`` is ``greedy_play`` and ``random`` draws what ``random_play``
    draws (golden transcripts and the client's greedy policy rely on both)."""
    for name, seats, _ in CONFIGS:
        profile = match_profile(name, seats)
        state, _ = new_match(11, profile)
        rng = random.Random(3)
        for _ in range(60):
            if state.phase is not Phase.PLAYING:
                break
            seat = state.turn
            expected = greedy_play(state)
            assert choose("greedy", view(state, seat), profile, rng) == (
                expected.card,
                expected.plan or 0,
            )
            mine, theirs = random.Random(len(state.floor)), random.Random(len(state.floor))
            card, plan = choose("random", view(state, seat), profile, mine)
            drawn = random_play(state, theirs)
            assert (card, plan) == (drawn.card, drawn.plan or 0)
            state, _ = apply(state, random_play(state, rng))


def hidden_shuffle(state: State, seat: int, rng: random.Random) -> State:
    """The same position with the cards ``seat`` cannot see dealt differently: the other hands
    and the stock (its bottom card kept when the seat sees it) share out their cards anew."""
    others = [s for s in range(state.seats) if s != seat]
    seen_bottom = view(state, seat).bottom_card is not None
    stock = list(state.stock[:-1] if seen_bottom else state.stock)
    pool = [c for s in others for c in state.hands[s]] + stock
    rng.shuffle(pool)
    hands = list(state.hands)
    at = 0
    for s in others:
        hands[s] = tuple(pool[at : at + len(state.hands[s])])
        at += len(state.hands[s])
    new_stock = tuple(pool[at:]) + ((state.stock[-1],) if seen_bottom else ())
    return dataclasses.replace(state, hands=tuple(hands), stock=new_stock)


@pytest.mark.parametrize(
    "config", [("eram", 2, False), ("egyptian", 4, False), ("egyptian", 2, True)], ids=config_id
)
def test_two_deals_the_same_in_a_seats_view_give_the_same_choice(
    config: tuple[str, int, bool],
) -> None:
    name, seats, shown = config
    profile = match_profile(name, seats, bottom_card_shown=shown)
    choices = 0
    for seed in range(40):
        state, _ = new_match(seed, profile)
        rng = random.Random(seed)
        for _ in range(seed % 9):  # somewhere in the first deals
            state, _ = apply(state, random_play(state, rng))
        seat = state.turn
        other = hidden_shuffle(state, seat, random.Random(seed + 1))
        assert other.hands != state.hands or other.stock != state.stock
        assert view(other, seat) == view(state, seat)
        first = choose("strong", view(state, seat), profile, random.Random(seed), iterations=SMALL)
        again = choose("strong", view(other, seat), profile, random.Random(seed), iterations=SMALL)
        assert first == again
        choices += len(strong.root_moves(view(state, seat), profile)) > 1
    assert choices >= 20  # most of these positions offer a real choice


def test_it_takes_a_basra_when_one_is_there() -> None:
    """The 5C sweeps 2D 3H: a basra (10 points); the other cards trail or take nothing."""
    state = position(["5C KD QH 9S", "4S 6S 8S 3D"], "2D 3H", stock="", turn=0)
    card, plan = choose("strong", view(state, 0), ERAM, random.Random(1), iterations=200)
    assert (card, plan) == (Card.parse("5C"), 1)


def test_it_takes_the_ten_of_diamonds_before_the_opponent_does() -> None:
    """Every other card captured by seat 0's side and remembered, so the opponent's 10H is
    known: taking the 10D (3 points) with the 10S now, rather than the 4C with the 4H (which
    leaves the 10D alone for the 10H, a basra) or trailing a face card (the 10H then takes the
    10D)."""
    state = position(["10S 4H KC QC", "10H 8H 7S 6S"], "10D 4C", turn=0, last_capturer=1)
    gone = state.captured[0]
    card, plan = choose("strong", view(state, 0), ERAM, random.Random(2), iterations=200, gone=gone)
    assert (card, plan) == (Card.parse("10S"), 1)


def test_it_does_not_leave_a_basra_that_greedy_play_leaves() -> None:
    """The last two cards each, every other card captured by seat 0's side (remembered, so the
    opponent's hand is known). Taking the 2H with the 2C (2 points, greedy's choice) leaves the
    7S alone for the opponent's 7H: a basra, 10 points. Trailing the KD first keeps the 2C's
    points for later and leaves no basra."""
    state = position(["2C KD", "7H QS"], "2H 7S", turn=0, last_capturer=0)
    assert greedy_play(state) == Play(0, Card.parse("2C"), 1)
    gone = state.captured[0]
    card, plan = choose("strong", view(state, 0), ERAM, random.Random(3), iterations=200, gone=gone)
    assert (card, plan) == (Card.parse("KD"), 0)


def test_the_search_reads_only_the_view_rules_and_public_memory() -> None:
    """By signature: the strong search and ``choose`` take a view, never a state; and the view
    type holds no other hand, no stock and no seed."""
    fields = {f.name for f in dataclasses.fields(SeatView)}
    assert not fields & {"hands", "stock", "seed", "history", "captured"}
    expected = {
        "strong_choice": ["SeatView", "Profile", "random.Random", "int", "float | None", "int"],
        "choose": ["str", "SeatView", "Profile", "random.Random", "int", "float | None", "int"],
    }
    for module, function in ((strong, "strong_choice"), (bots, "choose")):
        tree = ast.parse(source_of(module.__name__))
        [node] = [
            n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == function
        ]
        arguments = node.args.args + node.args.kwonlyargs
        annotations = [ast.unparse(a.annotation) for a in arguments if a.annotation]
        assert len(annotations) == len(arguments)
        assert annotations == expected[function]
    strong_tree = ast.parse(source_of(strong.__name__))
    imported = {
        alias.name
        for n in ast.walk(strong_tree)
        if isinstance(n, ast.ImportFrom)
        for alias in n.names
    }
    assert not imported & {"State", "view"}


def test_a_view_shows_no_card_of_another_hand_or_the_stock() -> None:
    """Every card anywhere in a seat's view is its own, on the floor, captured or just played,
    or the stock's bottom card where the rules show it to that seat."""
    for name, seats, _ in CONFIGS:
        profile = match_profile(name, seats)
        state, _ = new_match(5, profile)
        rng = random.Random(5)
        for _ in range(17):
            state, _ = apply(state, random_play(state, rng))
        for seat in range(seats):
            hidden = mask_of(state.stock)
            for s in range(seats):
                if s != seat:
                    hidden |= mask_of(state.hands[s])
            seat_view = view(state, seat)
            if seat_view.bottom_card is not None:
                assert seat_view.bottom_card == state.stock[-1]
                hidden &= ~(1 << int(seat_view.bottom_card))
            assert not cards_in(seat_view) & hidden


def source_of(module: str) -> str:
    """A engine module's source, read beside the package (the module may run compiled)."""
    return Path(bots.__file__).parent.joinpath(module.rsplit(".", 1)[1] + ".py").read_text()


def cards_in(value: object) -> int:
    """Every card held anywhere in ``value`` (a view, its records, tuples of them), as a set."""
    if isinstance(value, Card):
        return 1 << int(value)
    if isinstance(value, tuple):
        found = 0
        for item in value:
            found |= cards_in(item)
        return found
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        found = 0
        for f in dataclasses.fields(value):
            found |= cards_in(getattr(value, f.name))
        return found
    return 0


def test_cards_gone_remembers_the_captures_of_the_current_hand() -> None:
    state, events = new_match(9)
    rng = random.Random(9)
    seen = list(events)
    while state.phase is Phase.PLAYING:
        state, events = apply(state, greedy_play(state) if state.turn else random_play(state, rng))
        seen.extend(events)
        gone = cards_gone(seen)
        piles = 0
        for pile in state.captured:
            piles |= pile
        if state.phase is Phase.PLAYING:
            assert gone == piles
    state, events = deal_next_hand(state)
    assert cards_gone([*seen, *events]) == 0


def test_bad_requests_are_refused_with_typed_errors() -> None:
    state, _ = new_match(1)
    seat = state.turn
    with pytest.raises(InvalidInputError, match="unknown bot level 'expert'"):
        choose("expert", view(state, seat), ERAM, random.Random(1))
    with pytest.raises(InvalidInputError, match="iterations 0"):
        choose("strong", view(state, seat), ERAM, random.Random(1), iterations=0)
    with pytest.raises(NotYourTurnError):
        choose("strong", view(state, 1 - seat), ERAM, random.Random(1))
    hidden = 0
    for hand in state.hands[:seat] + state.hands[seat + 1 :]:
        hidden |= mask_of(hand)
    with pytest.raises(InvalidInputError, match="fewer unseen cards"):
        choose("strong", view(state, seat), ERAM, random.Random(1), gone=hidden)
    while state.phase is Phase.PLAYING:
        state, _ = apply(state, random_play(state, random.Random(1)))
    with pytest.raises(HandOverError):
        choose("greedy", view(state, 0), ERAM, random.Random(1))


def test_a_wall_clock_cap_still_searches_one_world() -> None:
    """A cap already spent stops the search after its first world: the move is still legal."""
    state, _ = new_match(4)
    seat = state.turn
    card, plan = choose("strong", view(state, seat), ERAM, random.Random(4), seconds=0.0)
    assert as_play(seat, card, plan) in legal_plays(state)


def test_unseen_cards_exclude_what_the_view_and_memory_show() -> None:
    """A sampled world deals the hidden hands and the stock only cards the seat has not seen,
    and every scoring card nobody has captured is among them."""
    profile = match_profile("eram", 2)
    state, events = new_match(21, profile)
    rng = random.Random(21)
    seen = list(events)
    for _ in range(13):
        state, events = apply(state, random_play(state, rng))
        seen.extend(events)
    seat = state.turn
    seat_view = view(state, seat)
    gone = cards_gone(seen)
    sampler = strong.Sampler(seat_view, profile, gone)
    shown = mask_of(seat_view.hand) | mask_of(seat_view.floor) | gone
    for draw in range(20):
        world = sampler.sample(random.Random(draw))
        dealt = mask_of(world.stock)
        for s in range(state.seats):
            if s != seat:
                assert world.hands[s].bit_count() == len(state.hands[s])
                dealt |= world.hands[s]
        assert len(world.stock) == len(state.stock)
        assert not dealt & shown
        captured = mask_of(c for pile in seat_view.captured_specials for c in pile)
        scoring = mask_of(c for c in CARDS if profile.points.points[c])
        assert scoring & ~(shown | captured) & ~dealt == 0
