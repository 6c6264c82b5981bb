"""The rules in motion: start a match, deal hands, apply plays (RULES.md, top to bottom).

Every function is pure: a state (and, for a new match, a seed) in, a new state and the events
out. Randomness comes only from the match seed, so the same seed and plays replay the same match
under the same profile. What differs between rule systems is read from the profile's fields and
the named rules of ``engine.rules``, never from its name.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import replace
from typing import Final

from basra.engine.cards import CARDS, Card, format_cards, mask_of
from basra.engine.chance import seeded, shuffle
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
    GameEnded,
    HandScored,
    HandStarted,
    MatchEnded,
)
from basra.engine.plans import Plan, capture_plans
from basra.engine.profile import ERAM, Profile
from basra.engine.rules import BASRA_VALUE, burial_position, rubber_game_target
from basra.engine.scoring import game_winner, score_hand
from basra.engine.state import GameResult, LastPlay, Phase, Play, State

MAX_SEED: Final = (1 << 64) - 1


def new_match(seed: int, profile: Profile = ERAM) -> tuple[State, tuple[Event, ...]]:
    """Start a match: the seed draws the first dealer and every shuffle; deals hand 1.

    Raises:
        InvalidInputError: the seed is not in 0..2**64-1.
    """
    if not 0 <= seed <= MAX_SEED:
        raise InvalidInputError(f"seed {seed!r} must be in 0..{MAX_SEED}", seed=seed)
    dealer = first_dealer(seed, 1, profile.seats)
    sides = profile.sides
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
        captured=(0,) * sides,
        basras=(0,) * sides,
        basra_points=(0,) * sides,
        last_capturer=None,
        last_play=None,
        plays=0,
        scores=(0,) * sides,
        carry=0,
        history=(),
        games=(),
        winner=None,
    )
    return _start_hand(blank, dealer)


def first_dealer(seed: int, game: int, seats: int) -> int:
    """The first dealer of game ``game`` (1 for a match without a rubber), drawn from the seed.

    RULES.md: "The first dealer of a match is chosen at random"; VARIANTS.md decides the same for
    every profile, and that each game of a rubber starts with a random first dealer.
    """
    key = f"basra/{seed}/dealer" if game == 1 else f"basra/{seed}/game/{game}/dealer"
    return seeded(key).randrange(seats)


def deal_next_hand(state: State) -> tuple[State, tuple[Event, ...]]:
    """Deal the next hand of a match whose hand is over: the deal passes to the next seat (extra
    hands too); the first hand of a rubber's next game has a random dealer.

    Raises:
        HandInProgressError: the current hand is still being played.
        MatchOverError: the match has a winner.
    """
    _check_not_over(state)
    if state.phase is Phase.PLAYING:
        raise HandInProgressError(state.hand_number, state.plays_left)
    return _start_hand(state, next_dealer(state))


def next_dealer(state: State) -> int:
    """The seat that deals the next hand (meaningful when a hand is over)."""
    # A rubber's game just ended: a new game begins. (A state stored without the game_ended
    # flag shows the same moment as a game with no hand scored yet.)
    if state.game_ended or (state.games and not state.history):
        return first_dealer(state.seed, len(state.games) + 1, state.seats)
    return (state.dealer + 1) % state.seats


def legal_plans(state: State, card: Card) -> tuple[Plan, ...]:
    """The plans ``card`` has on the current floor, in offering order (empty: it trails)."""
    floor, profile = state.floor, state.profile
    last = _LAST_PLANS[0]
    if last[0] is floor and last[1] == card and last[2] is profile:
        return last[3]
    plans = capture_plans(mask_of(floor), card, profile)
    _LAST_PLANS[0] = (floor, card, profile, plans)
    return plans


NOTHING_ASKED: Final = ((), -1, ERAM, ())
# The last question legal_plans answered, and its answer. The same question comes twice in a
# row: a player lists a card's plans, then ``apply`` checks the play against them. The floor is
# an immutable tuple and the entry holds it, so the same object is the same floor; the entry is
# one tuple, read and replaced whole (thread-safe). It lives in a list, not a module global:
# compiled, rebinding a global is a dictionary store, several times the cost of a list's. The
# mutation tests reset it to NOTHING_ASKED.
_LAST_PLANS: Final[list[tuple[tuple[Card, ...], int, Profile, tuple[Plan, ...]]]] = [NOTHING_ASKED]


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
    index: int = card  # Compiled, shifting an int is C arithmetic; shifting a Card is a call.
    bit = 1 << index
    profile = state.profile
    hands = list(state.hands)
    hands[seat] = _outside(hands[seat], bit)
    captured, basras, basra_points = state.captured, state.basras, state.basra_points
    last_capturer = state.last_capturer
    if plan is None:
        floor = (*state.floor, card)  # Trail: the card stays on the floor.
        played = CardPlayed(seat, card, 0, (), basra=False, sweep=False)
    else:
        side = profile.side_of(seat)  # Partners keep one pile and score together.
        floor = _outside(state.floor, plan.mask)
        captured = _with(captured, side, captured[side] | plan.mask | bit)
        value = BASRA_VALUE[profile.basra_value](card, profile.basra_points) if plan.basra else 0
        if plan.basra:
            basras = _with(basras, side, basras[side] + 1)
            basra_points = _with(basra_points, side, basra_points[side] + value)
        last_capturer = seat
        played = CardPlayed(seat, card, plan.id, plan.captures, plan.basra, plan.sweep, value)
    # Built field by field, not with dataclasses.replace: this is the engine's hot path (so are
    # the deals below; the rare ends of games and matches still use replace).
    after = State(
        profile=profile,
        seed=state.seed,
        phase=state.phase,
        hand_number=state.hand_number,
        dealer=state.dealer,
        turn=(seat + 1) % profile.seats,  # Each seat in turn: after seat s, seat s + 1 mod n.
        hands=tuple(hands),
        floor=floor,
        stock=state.stock,
        captured=captured,
        basras=basras,
        basra_points=basra_points,
        last_capturer=last_capturer,
        last_play=LastPlay(
            seat, card, played.plan, played.captured, played.basra_points, played.sweep
        ),
        plays=state.plays + 1,
        scores=state.scores,
        carry=state.carry,
        history=state.history,
        games=state.games,
        winner=state.winner,
    )
    for hand in hands:  # A loop, not any(): compiled, any() is a call through the builtins.
        if hand:
            return after, (played,)
    if after.stock:
        return _redeal(after, played)
    return _end_hand(after, played)


def _outside(cards: tuple[int, ...], mask: int) -> tuple[Card, ...]:
    """The cards of ``cards`` not in the set ``mask``, in their order."""
    # Read as ints, not Cards: compiled, the test is then C arithmetic rather than Python calls.
    return tuple([CARDS[c] for c in cards if not mask >> c & 1])


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
    rng = seeded(f"basra/{state.seed}/hand/{hand_number}")
    stock = list(CARDS)
    shuffle(stock, rng)
    hands, rest = deal_round(tuple(stock), dealer, profile)
    floor, rest = clean_floor(
        rest[: profile.floor_cards], rest[profile.floor_cards :], rng, profile
    )
    leader = (dealer + 1) % profile.seats  # The seat after the dealer plays first.
    sides = profile.sides
    # The first deal of a rubber's next game starts it at 0 with no carry (VARIANTS.md,
    # egyptian "Rubber", Decision); the finished game's scores stayed shown until now.
    new_game = state.game_ended
    started = State(
        profile=profile,
        seed=state.seed,
        phase=Phase.PLAYING,
        hand_number=hand_number,
        dealer=dealer,
        turn=leader,
        hands=hands,
        floor=floor,
        stock=rest,
        captured=(0,) * sides,
        basras=(0,) * sides,
        basra_points=(0,) * sides,
        last_capturer=None,
        last_play=None,
        plays=0,
        scores=(0,) * sides if new_game else state.scores,
        carry=0 if new_game else state.carry,
        history=() if new_game else state.history,
        games=state.games,
        winner=state.winner,
    )
    game = len(state.games) + 1
    return started, (HandStarted(hand_number, dealer, leader, floor, game),)


def deal_round(
    stock: tuple[Card, ...], dealer: int, profile: Profile
) -> tuple[tuple[tuple[Card, ...], ...], tuple[Card, ...]]:
    """One deal: the profile's cards to each seat from the dealer's left; the hands and the rest.

    In packets (RULES.md: "Deal 4 cards to each player"), or one card at a time round the table
    (lobashev: "dealt one at a time").
    """
    seats, per_seat = profile.seats, profile.cards_per_deal
    order = [(dealer + 1 + i) % seats for i in range(seats)]
    hands: list[tuple[Card, ...]] = [()] * seats
    if profile.deal_singly:
        for i, seat in enumerate(order):
            hands[seat] = stock[i : seats * per_seat : seats]
    else:
        for i, seat in enumerate(order):
            hands[seat] = stock[i * per_seat : (i + 1) * per_seat]
    return tuple(hands), stock[seats * per_seat :]


def clean_floor(
    floor: Sequence[Card], stock: Sequence[Card], rng: random.Random, profile: Profile = ERAM
) -> tuple[tuple[Card, ...], tuple[Card, ...]]:
    """Deal step 2: the floor and stock once no buried card (ERAM: a J or the 7D) lies there.

    While such a card lies on the floor, it goes back into the stock at a random position (never
    on top; in profiles that show the bottom card, never at the bottom either) and the top card of
    the stock replaces it, in its place on the floor.
    """
    floor, stock = list(floor), list(stock)
    while forbidden := [i for i, c in enumerate(floor) if profile.buried >> c & 1]:
        stock.insert(burial_position(rng, len(stock), profile.bottom_card), floor[forbidden[0]])
        floor[forbidden[0]] = stock.pop(0)
    return tuple(floor), tuple(stock)


def _redeal(state: State, played: CardPlayed) -> tuple[State, tuple[Event, ...]]:
    """Every hand is empty and the stock is not: deal more to each seat, none to the floor."""
    hands, stock = deal_round(state.stock, state.dealer, state.profile)
    after = State(
        profile=state.profile,
        seed=state.seed,
        phase=state.phase,
        hand_number=state.hand_number,
        dealer=state.dealer,
        turn=state.turn,
        hands=hands,
        floor=state.floor,
        stock=stock,
        captured=state.captured,
        basras=state.basras,
        basra_points=state.basra_points,
        last_capturer=state.last_capturer,
        last_play=state.last_play,
        plays=state.plays,
        scores=state.scores,
        carry=state.carry,
        history=state.history,
        games=state.games,
        winner=state.winner,
    )
    return after, (
        played,
        CardsDealt(state.hand_number, after.deal_number, state.profile.cards_per_deal, len(stock)),
    )


def _end_hand(state: State, played: CardPlayed) -> tuple[State, tuple[Event, ...]]:
    """After the last play: the leftover floor goes to the last capturer's side, then the hand
    scores, then the game (and, in a rubber, the rubber) may end."""
    profile = state.profile
    events: list[Event] = [played]
    captured, floor = state.captured, state.floor
    if floor:
        # Not a basra. With no capturer the cards belong to no one and stay where they lie.
        events.append(FloorCollected(state.last_capturer, floor))
        if state.last_capturer is not None:
            side = profile.side_of(state.last_capturer)
            captured = _with(captured, side, captured[side] | mask_of(floor))
            floor = ()
    score = score_hand(
        profile,
        hand=state.hand_number,
        dealer=state.dealer,
        carry_before=state.carry,
        cards=[m.bit_count() for m in captured],
        specials=[profile.points.of(m) for m in captured],
        basras=state.basras,
        basra_points=state.basra_points,
    )
    hand_totals = score.totals
    totals = tuple([state.scores[i] + hand_totals[i] for i in range(len(hand_totals))])
    target = rubber_game_target(
        profile.target, profile.final_target, profile.rubber_wins, state.games_won
    )
    winner, extra_hand = game_winner(target, totals)
    events.append(HandScored(score, totals, extra_hand, len(state.games) + 1))
    # Without a rubber, a game won is the match won: built over at once, not replaced after.
    match_won = winner is not None and not profile.rubber_wins
    after = State(
        profile=profile,
        seed=state.seed,
        phase=Phase.MATCH_OVER if match_won else Phase.HAND_OVER,
        hand_number=state.hand_number,
        dealer=state.dealer,
        turn=state.turn,
        hands=state.hands,
        floor=floor,
        stock=state.stock,
        captured=captured,
        basras=state.basras,
        basra_points=state.basra_points,
        last_capturer=state.last_capturer,
        last_play=state.last_play,
        plays=state.plays,
        scores=totals,
        carry=score.carry_after,
        history=(*state.history, score),
        games=state.games,
        winner=winner if match_won else state.winner,
    )
    if winner is None:
        return after, tuple(events)
    if match_won:
        events.append(MatchEnded(winner, totals))
        return after, tuple(events)
    # A rubber: the game is won; the side with enough games wins the rubber, else the next
    # deal starts a new game (``_start_hand``). Until then the finished game stays as it ended.
    games = (*state.games, GameResult(winner, totals))
    after = replace(after, games=games)
    events.append(GameEnded(len(games), winner, totals, after.games_won))
    if after.games_won[winner] >= profile.rubber_wins:
        events.append(MatchEnded(winner, totals))
        return replace(after, phase=Phase.MATCH_OVER, winner=winner), tuple(events)
    return replace(after, game_ended=True), tuple(events)


def current_target(state: State) -> int:
    """The points that win the current game (a rubber's deciding game has its own target)."""
    profile = state.profile
    finished = state.phase is Phase.MATCH_OVER or state.game_ended
    games = state.games[:-1] if finished else state.games
    won = [0] * profile.sides
    for game in games:
        won[game.winner] += 1
    return rubber_game_target(profile.target, profile.final_target, profile.rubber_wins, tuple(won))


def _with(values: tuple[int, ...], index: int, value: int) -> tuple[int, ...]:
    """``values`` with ``value`` at ``index``."""
    if len(values) == 2:  # Two sides, nearly every match: a pair built directly.
        return (value, values[1]) if index == 0 else (values[0], value)
    changed = list(values)
    changed[index] = value
    return tuple(changed)
