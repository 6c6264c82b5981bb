"""Hand-built positions for rule tests: any consistent state, near any moment of a hand."""

from __future__ import annotations

import random
from collections.abc import Sequence

from basra.engine import ERAM, Phase, Profile, State, parse_cards
from basra.engine.bots import random_play
from basra.engine.cards import ALL_CARDS_MASK, Card, mask_of
from basra.engine.game import apply, deal_next_hand, new_match
from basra.engine.scoring import score_hand
from basra.engine.state import HandScore


def position(
    hands: Sequence[str],
    floor: str = "",
    *,
    turn: int = 0,
    dealer: int = 1,
    stock: str = "",
    captured: Sequence[str] | None = None,
    basras: Sequence[int] | None = None,
    basra_points: Sequence[int] | None = None,
    last_capturer: int | None = 0,
    scores: Sequence[int] | None = None,
    carry: int = 0,
    profile: Profile = ERAM,
) -> State:
    """A mid-hand state. Cards not placed anywhere go to side 0's captured pile (or, when
    ``captured`` is given, must be placed explicitly, one pile per side), so the 52 cards are
    always conserved. Basras, their points and scores are per side (default 0)."""
    sides = profile.sides
    basras = tuple(basras) if basras is not None else (0,) * sides
    if basra_points is None:
        basra_points = tuple(n * profile.basra_points for n in basras)
    scores = tuple(scores) if scores is not None else (0,) * sides
    hand_cards = tuple(parse_cards(h) for h in hands)
    floor_cards = parse_cards(floor)
    stock_cards = parse_cards(stock)
    placed = mask_of(c for h in hand_cards for c in h) | mask_of(floor_cards) | mask_of(stock_cards)
    if captured is None:
        piles = [ALL_CARDS_MASK & ~placed] + [0] * (sides - 1)
    else:
        piles = [mask_of(parse_cards(c)) for c in captured]
    assert sum(m.bit_count() for m in piles) + placed.bit_count() == 52, "cards must add to 52"
    history: tuple[HandScore, ...] = ()
    if any(scores) or carry:
        history = (earlier_hand(profile, scores, carry, dealer=(dealer - 1) % profile.seats),)
    plays = profile.plays_per_hand - sum(len(h) for h in hand_cards) - len(stock_cards)
    return State(
        profile=profile,
        seed=7,
        phase=Phase.PLAYING,
        hand_number=len(history) + 1,
        dealer=dealer,
        turn=turn,
        hands=hand_cards,
        floor=floor_cards,
        stock=stock_cards,
        captured=tuple(piles),
        basras=basras,
        basra_points=tuple(basra_points),
        last_capturer=last_capturer,
        last_play=None,
        plays=plays,
        scores=scores,
        carry=carry,
        history=history,
        games=(),
        winner=None,
    )


def earlier_hand(profile: Profile, scores: Sequence[int], carry: int, dealer: int) -> HandScore:
    """A two-side hand 1 that leaves exactly ``scores`` and ``carry`` (carry 0 or 30)."""
    assert carry in (0, 30)
    assert profile.sides == 2
    assert profile.majority_points == 30
    if carry:  # 26/26: no majority, 30 carried; the special points make the totals.
        cards, specials = [26, 26], list(scores)
    elif scores[0] >= 30:
        cards, specials = [27, 25], [scores[0] - 30, scores[1]]
    else:
        cards, specials = [25, 27], [scores[0], scores[1] - 30]
    score = score_hand(
        profile,
        hand=1,
        dealer=dealer,
        carry_before=0,
        cards=cards,
        specials=specials,
        basras=[0, 0],
    )
    assert (score.totals, score.carry_after) == (tuple(scores), carry)
    return score


def random_match(seed: int, rng: random.Random, profile: Profile = ERAM) -> list[State]:
    """Every state of one random self-play match, from the first deal to the winner."""
    state, _ = new_match(seed, profile)
    states = [state]
    while state.phase is not Phase.MATCH_OVER:
        if state.phase is Phase.PLAYING:
            state, _ = apply(state, random_play(state, rng))
        else:
            state, _ = deal_next_hand(state)
        states.append(state)
    return states


def cards(text: str) -> tuple[Card, ...]:
    return parse_cards(text)
