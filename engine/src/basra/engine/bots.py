"""Computer players at three levels, and the simple players of self-play, tests and benchmarks.

Pure: randomness is an argument. ``choose`` is the one entry point a program (or the service)
uses for a seat's move, from that seat's view only:

    import random
    from basra.engine import Play, apply, new_match, view
    from basra.engine.bots import cards_gone, choose

    state, events = new_match(42)
    seat = state.turn
    card, plan = choose("strong", view(state, seat), state.profile, random.Random(7),
                        gone=cards_gone(events))
    play = Play(seat, card, plan) if plan else Play(seat, card, trail=True)
    state, events = apply(state, play)

Levels (``LEVELS``):

* ``random``: a uniformly random card of the hand, then a uniformly random plan of it.
* ``greedy``: the play that takes the most now (``greedy_choice``).
* ``strong``: determinized Monte Carlo search over the cards the seat cannot see, with greedy
  rollouts (``engine.strong``); a budget of rollouts per move, optionally capped in seconds.

``random_play`` and ``greedy_play`` are the same two policies read from a full state, for
self-play where nothing is hidden from the program running every seat.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from typing import Final

from basra.engine.cards import POINTS, Card, mask_of
from basra.engine.chance import below
from basra.engine.errors import HandOverError, InvalidInputError, NotYourTurnError
from basra.engine.events import CardPlayed, Event, HandStarted
from basra.engine.game import legal_plans
from basra.engine.plans import Plan, capture_plans
from basra.engine.profile import Profile
from basra.engine.state import Play, State
from basra.engine.strong import DEFAULT_ITERATIONS, strong_choice
from basra.engine.view import SeatView

LEVELS: Final = ("random", "greedy", "strong")
"""The bot levels ``choose`` plays, weakest first."""


def choose(
    level: str,
    view: SeatView,
    profile: Profile,
    rng: random.Random,
    *,
    iterations: int = DEFAULT_ITERATIONS,
    seconds: float | None = None,
    gone: int = 0,
) -> tuple[Card, int]:
    """The move of the seat of ``view`` at ``level``: (card, plan id), plan id 0 to trail.

    Decides from what that seat may see: its view, the match's rules ``profile`` and, for
    ``strong``, ``gone``, a set (mask) of cards the seat watched leave play this hand (see
    ``cards_gone``; 0 when the caller keeps no such memory). ``rng`` is the only randomness:
    the same arguments and generator state give the same move. ``iterations`` is the strong
    level's budget of rollouts; ``seconds``, when given, also caps its search in wall-clock time
    (the move then depends on the machine's speed). ``random`` draws as ``random_play`` does.

    Raises:
        InvalidInputError: an unknown level, or a budget below one rollout.
        HandOverError: no hand is in progress.
        NotYourTurnError: the view's seat is not the one to play.
    """
    if level not in LEVELS:
        raise InvalidInputError(
            f"unknown bot level {level!r}: the levels are {', '.join(LEVELS)}", level=level
        )
    if iterations < 1:
        raise InvalidInputError(
            f"iterations {iterations!r} must be 1 or more", iterations=iterations
        )
    if view.turn is None:
        raise HandOverError(view.hand_number)
    if view.turn != view.seat:
        raise NotYourTurnError(view.seat, view.turn)
    if level == "strong":
        return strong_choice(view, profile, rng, iterations, seconds, gone)
    floor = mask_of(view.floor)
    if level == "greedy":
        options = [(card, capture_plans(floor, card, profile)) for card in view.hand]
        return greedy_choice(options, profile.points.points)
    hand = view.hand
    card = hand[below(rng, len(hand))]
    plans = capture_plans(floor, card, profile)
    return card, below(rng, len(plans)) + 1 if plans else 0


def cards_gone(events: Iterable[Event]) -> int:
    """The cards seen leaving play in the current hand, as a set (mask), from public events.

    ``events`` are what every seat is shown, oldest first (a match's events, or those since the
    hand began): each capture's card and captured cards; a new hand starts the set afresh. Pass
    it to ``choose`` as ``gone`` so the strong level remembers what a player at the table does.
    """
    gone = 0
    for event in events:
        if isinstance(event, HandStarted):
            gone = 0
        elif isinstance(event, CardPlayed) and event.plan:
            gone |= 1 << int(event.card)
            gone |= mask_of(event.captured)
    return gone


def random_play(state: State, rng: random.Random) -> Play:
    """A uniformly random card of the seat to move, then a uniformly random plan of it."""
    seat = state.turn
    hand = state.hands[seat]
    # rng.choice and rng.randrange draw exactly these (chance.below), without random.py's frames.
    card = hand[below(rng, len(hand))]
    plans = legal_plans(state, card)
    if not plans:
        return Play(seat, card, trail=True)
    return Play(seat, card, below(rng, len(plans)) + 1)


def greedy_play(state: State) -> Play:
    """The play that takes the most: basra first, then points, then cards; else the lowest trail."""
    seat = state.turn
    options = [(card, legal_plans(state, card)) for card in state.hands[seat]]
    card, plan_id = greedy_choice(options, state.profile.points.points)
    return Play(seat, card, plan_id) if plan_id else Play(seat, card, trail=True)


def greedy_choice(
    options: Iterable[tuple[Card, Sequence[Plan]]], points: Sequence[int] = POINTS
) -> tuple[Card, int]:
    """The greedy policy over (card, its plans) pairs: (card, plan id), plan id 0 to trail.

    Basra first, then special points (the card's and the captured ones, from the point table
    ``points`` indexed by card), then cards taken, then the lower card; when nothing captures,
    the card worth least to the opponent trails. Clients of the service apply the same policy to
    ListPlans answers (``basra.client.greedy_choice``).
    """
    options = list(options)
    best: tuple[tuple[int, int, int, int], Card, int] | None = None
    for card, plans in options:
        for plan in plans:
            taken = sum(points[c] for c in plan.captures) + points[card]
            key = (plan.basra, taken, len(plan.captures), -card)
            if best is None or key > best[0]:
                best = (key, card, plan.id)
    if best is not None:
        return best[1], best[2]
    card = min((card for card, _ in options), key=lambda c: (points[c], c.value, c))
    return card, 0
