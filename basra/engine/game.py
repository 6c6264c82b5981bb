"""The rules in motion: start a match, deal hands, apply plays (RULES.md, top to bottom).

Every function is pure: a state (and, for a new match, a seed) in, a new state and the events
out. Randomness comes only from the match seed, so the same seed and plays replay the same match.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import replace
from typing import Final

from basra.engine.cards import (
    CARDS,
    JACK_MASK,
    SEVEN_OF_DIAMONDS,
    Card,
    format_cards,
    mask_of,
    points_of,
)
from basra.engine.errors import (
    CaptureRequiredError,
    CardNotInHandError,
    HandInProgressError,
    HandOverError,
    InvalidInputError,
    InvalidPlanIdError,
    InvalidSeatError,
    MatchOverError,
    NotYourTurnError,
    PlanRequiredError,
    UnknownPlanError,
)
from basra.engine.events import (
    CardPlayed,
    CardsDealt,
    Event,
    FloorCollected,
    HandScored,
    HandStarted,
    MatchEnded,
)
from basra.engine.plans import Plan, capture_plans
from basra.engine.profile import ERAM, Profile
from basra.engine.scoring import match_winner, score_hand
from basra.engine.state import Phase, Play, State

MAX_SEED: Final = (1 << 64) - 1
_FLOOR_FORBIDDEN: Final = JACK_MASK | SEVEN_OF_DIAMONDS.bit


def new_match(seed: int, profile: Profile = ERAM) -> tuple[State, tuple[Event, ...]]:
    """Start a match: the seed draws the first dealer and every shuffle; deals hand 1.

    Raises:
        InvalidInputError: the seed is not in 0..2**64-1.
    """
    if not 0 <= seed <= MAX_SEED:
        raise InvalidInputError(f"seed {seed!r} must be in 0..{MAX_SEED}", seed=seed)
    # The first dealer of a match is chosen at random.
    dealer = random.Random(f"basra/{seed}/dealer").randrange(profile.seats)
    blank = State(
        profile=profile,
        seed=seed,
        phase=Phase.HAND_OVER,
        hand_number=0,
        dealer=dealer,
        turn=dealer,
        hands=((),) * profile.seats,
        floor=(),
        stock=(),
        captured=(0,) * profile.seats,
        basras=(0,) * profile.seats,
        last_capturer=None,
        plays=0,
        scores=(0,) * profile.seats,
        carry=0,
        history=(),
        winner=None,
    )
    return _start_hand(blank, dealer)


def deal_next_hand(state: State) -> tuple[State, tuple[Event, ...]]:
    """Deal the next hand of a match whose hand is over; the dealer alternates (extra hands too).

    Raises:
        HandInProgressError: the current hand is still being played.
        MatchOverError: the match has a winner.
    """
    _check_not_over(state)
    if state.phase is Phase.PLAYING:
        raise HandInProgressError(state.hand_number, state.plays_left)
    return _start_hand(state, (state.dealer + 1) % state.seats)


def legal_plans(state: State, card: Card) -> tuple[Plan, ...]:
    """The plans ``card`` has on the current floor, in offering order (empty: it trails)."""
    return capture_plans(mask_of(state.floor), card, state.profile)


def legal_plays(state: State) -> tuple[Play, ...]:
    """Every legal play of the seat to move, sorted by card then plan (empty when not playing).

    A card with plans is listed once per plan id; a card without plans once, as a trail.
    """
    if state.phase is not Phase.PLAYING:
        return ()
    seat = state.turn
    plays: list[Play] = []
    for card in sorted(state.hands[seat]):
        plans = legal_plans(state, card)
        if plans:
            plays.extend(Play(seat, card, plan.id) for plan in plans)
        else:
            plays.append(Play(seat, card, trail=True))
    return tuple(plays)


def apply(state: State, play: Play) -> tuple[State, tuple[Event, ...]]:
    """Apply one play: capture by the chosen plan or trail, then deal or end the hand as due.

    Raises (the state is never changed; it is immutable):
        InvalidInputError: an unknown seat, a plan id below 1, or a plan named with a trail.
        MatchOverError, HandOverError: no hand is in progress.
        NotYourTurnError: the seat is not the one to play.
        CardNotInHandError: the seat does not hold the card.
        PlanRequiredError: several plans exist and none is named.
        UnknownPlanError: the named plan does not exist for this card.
        CaptureRequiredError: a trail was declared for a card that can capture.
    """
    plan = _validate(state, play)
    seat, card = play.seat, play.card
    hands = list(state.hands)
    hands[seat] = tuple(c for c in hands[seat] if c != card)
    captured, basras = state.captured, state.basras
    last_capturer = state.last_capturer
    if plan is None:
        floor = (*state.floor, card)  # Trail: the card stays on the floor.
        played = CardPlayed(seat, card, 0, (), basra=False, sweep=False)
    else:
        floor = tuple(c for c in state.floor if not plan.mask >> c & 1)
        captured = _with(captured, seat, captured[seat] | plan.mask | card.bit)
        basras = _with(basras, seat, basras[seat] + plan.basra)
        last_capturer = seat
        played = CardPlayed(seat, card, plan.id, plan.captures, plan.basra, plan.sweep)
    # Built field by field, not with dataclasses.replace: this is the engine's hot path.
    after = State(
        profile=state.profile,
        seed=state.seed,
        phase=state.phase,
        hand_number=state.hand_number,
        dealer=state.dealer,
        turn=(seat + 1) % state.seats,  # Strict alternation.
        hands=tuple(hands),
        floor=floor,
        stock=state.stock,
        captured=captured,
        basras=basras,
        last_capturer=last_capturer,
        plays=state.plays + 1,
        scores=state.scores,
        carry=state.carry,
        history=state.history,
        winner=state.winner,
    )
    if any(after.hands):
        return after, (played,)
    if after.stock:
        return _redeal(after, played)
    return _end_hand(after, played)


def _validate(state: State, play: Play) -> Plan | None:
    """The plan the play takes (None: a trail), or the error that rejects the play."""
    if not 0 <= play.seat < state.seats:
        raise InvalidSeatError(play.seat, state.seats)
    if play.plan is not None and play.plan < 1:
        raise InvalidPlanIdError(play.plan)
    if play.plan is not None and play.trail:
        raise InvalidInputError(
            f"a play cannot both take plan {play.plan!r} and trail", plan_id=play.plan
        )
    _check_not_over(state)
    if state.phase is not Phase.PLAYING:
        raise HandOverError(state.hand_number)
    if play.seat != state.turn:
        raise NotYourTurnError(play.seat, state.turn)
    hand = state.hands[play.seat]
    if play.card not in hand:
        raise CardNotInHandError(play.card, format_cards(sorted(hand)))
    plans = legal_plans(state, play.card)
    if play.trail:
        if plans:  # Capture is mandatory: a card that has a plan cannot trail.
            raise CaptureRequiredError(play.card, len(plans))
        return None
    if play.plan is None:
        if len(plans) > 1:  # With several plans the player must name one.
            raise PlanRequiredError(play.card, len(plans))
        return plans[0] if plans else None  # One plan need not be named; none: a trail.
    if play.plan > len(plans):
        raise UnknownPlanError(play.card, play.plan, len(plans))
    return plans[play.plan - 1]


def _check_not_over(state: State) -> None:
    if state.phase is Phase.MATCH_OVER:
        assert state.winner is not None
        raise MatchOverError(state.winner)


def _start_hand(state: State, dealer: int) -> tuple[State, tuple[Event, ...]]:
    """Shuffle and deal a hand: cards to each seat from the dealer's left, then the floor."""
    profile = state.profile
    hand_number = state.hand_number + 1
    rng = random.Random(f"basra/{state.seed}/hand/{hand_number}")
    stock = list(CARDS)
    rng.shuffle(stock)
    hands: list[tuple[Card, ...]] = [()] * profile.seats
    for i in range(profile.seats):
        seat = (dealer + 1 + i) % profile.seats
        hands[seat] = tuple(stock[: profile.cards_per_deal])
        del stock[: profile.cards_per_deal]
    floor, rest = clean_floor(stock[: profile.floor_cards], stock[profile.floor_cards :], rng)
    leader = (dealer + 1) % profile.seats  # The non-dealer plays first.
    started = replace(
        state,
        phase=Phase.PLAYING,
        hand_number=hand_number,
        dealer=dealer,
        turn=leader,
        hands=tuple(hands),
        floor=floor,
        stock=rest,
        captured=(0,) * profile.seats,
        basras=(0,) * profile.seats,
        last_capturer=None,
        plays=0,
    )
    return started, (HandStarted(hand_number, dealer, leader, floor),)


def clean_floor(
    floor: Sequence[Card], stock: Sequence[Card], rng: random.Random
) -> tuple[tuple[Card, ...], tuple[Card, ...]]:
    """Deal step 2: the floor and stock once no J or 7D lies among the floor cards.

    While a J or 7D lies on the floor, it goes back into the stock at a random position (not on
    top) and the top card of the stock replaces it, in its place on the floor.
    """
    floor, stock = list(floor), list(stock)
    while forbidden := [i for i, c in enumerate(floor) if _FLOOR_FORBIDDEN >> c & 1]:
        stock.insert(rng.randint(1, len(stock)), floor[forbidden[0]])
        floor[forbidden[0]] = stock.pop(0)
    return tuple(floor), tuple(stock)


def _redeal(state: State, played: CardPlayed) -> tuple[State, tuple[Event, ...]]:
    """Both hands are empty and the stock is not: deal more to each seat, none to the floor."""
    per_seat = state.profile.cards_per_deal
    stock = state.stock
    hands: list[tuple[Card, ...]] = [()] * state.seats
    for i in range(state.seats):
        seat = (state.dealer + 1 + i) % state.seats
        hands[seat], stock = stock[:per_seat], stock[per_seat:]
    after = replace(state, hands=tuple(hands), stock=stock)
    return after, (
        played,
        CardsDealt(state.hand_number, after.deal_number, per_seat, len(stock)),
    )


def _end_hand(state: State, played: CardPlayed) -> tuple[State, tuple[Event, ...]]:
    """After the last play: the leftover floor goes to the last capturer, then the hand scores."""
    events: list[Event] = [played]
    captured, floor = state.captured, state.floor
    if floor:
        # Not a basra. With no capturer the cards belong to no one and stay where they lie.
        events.append(FloorCollected(state.last_capturer, floor))
        if state.last_capturer is not None:
            seat = state.last_capturer
            captured = _with(captured, seat, captured[seat] | mask_of(floor))
            floor = ()
    score = score_hand(
        state.profile,
        hand=state.hand_number,
        dealer=state.dealer,
        carry_before=state.carry,
        cards=[m.bit_count() for m in captured],
        specials=[points_of(m) for m in captured],
        basras=state.basras,
    )
    totals = tuple(t + s for t, s in zip(state.scores, score.totals, strict=True))
    winner, extra_hand = match_winner(state.profile, totals)
    events.append(HandScored(score, totals, extra_hand))
    if winner is not None:
        events.append(MatchEnded(winner, totals))
    after = replace(
        state,
        phase=Phase.HAND_OVER if winner is None else Phase.MATCH_OVER,
        floor=floor,
        captured=captured,
        scores=totals,
        carry=score.carry_after,
        history=(*state.history, score),
        winner=winner,
    )
    return after, tuple(events)


def _with(values: tuple[int, ...], index: int, value: int) -> tuple[int, ...]:
    return (*values[:index], value, *values[index + 1 :])
