"""The strong bot: determinized Monte Carlo search from one seat's view.

The search sees what the seat sees (a ``SeatView``), the match's rules (its ``Profile``, public)
and, optionally, a set of cards the seat has watched leave play; never the state. Each iteration
deals the cards the seat cannot see at random, consistently with the view (a *determinization*:
the other hands get their known sizes, the stock its known size with its bottom card in place
when the seat sees it, and every scoring card not shown anywhere is among them), then plays each
candidate move in that world and finishes the hand with every seat following the greedy policy
(a random move instead with a small probability). A move's value is its side's hand points
minus the best other side's, the majority counted as RULES.md scores it; the move with the best
mean value over the worlds is chosen. Every move is tried in the same worlds, so their
comparison does not suffer the worlds' luck.

The budget is a number of rollouts (deterministic: the same view, rules, budget and random
generator state give the same choice), with an optional wall-clock cap for a server that must
answer in time; the cap makes the choice depend on the machine's speed.
"""

from __future__ import annotations

import random
import time
from typing import Final

from basra.engine.cards import ALL_CARDS_MASK, CARDS, VALUES, Card, mask_of
from basra.engine.chance import below
from basra.engine.errors import InvalidInputError
from basra.engine.game import deal_round
from basra.engine.plans import Plan, capture_plans
from basra.engine.profile import Profile
from basra.engine.rules import BASRA_VALUE
from basra.engine.view import SeatView

DEFAULT_ITERATIONS: Final = 200
"""Rollouts per move of the ``strong`` level unless told otherwise."""
EPSILON_PERCENT: Final = 10
"""Chance, in percent, that a seat in a rollout plays a random move instead of the greedy one."""


class Move:
    """One candidate move at the root: a card and a plan of it (``plan`` None: a trail)."""

    __slots__ = ("card", "plan")

    def __init__(self, card: Card, plan: Plan | None) -> None:
        self.card = card
        self.plan = plan

    @property
    def plan_id(self) -> int:
        """The plan's id, 0 for a trail."""
        plan = self.plan
        return 0 if plan is None else plan.id


def root_moves(view: SeatView, profile: Profile) -> list[Move]:
    """Every legal move of the seat, greedy's choice first, then in hand order and plan order.

    A card with plans must capture by one of them; a card without plans trails.
    """
    floor = mask_of(view.floor)
    points = profile.points.points
    moves: list[Move] = []
    best = -1
    best_key = (-1, -1, -1, -1)
    trail = -1
    trail_key = (0, 0, 0)
    for card in view.hand:
        plans = capture_plans(floor, card, profile)
        if not plans:
            key_trail = (points[card], VALUES[card], int(card))
            if trail < 0 or key_trail < trail_key:
                trail, trail_key = len(moves), key_trail
            moves.append(Move(card, None))
        for plan in plans:
            taken = profile.points.of(plan.mask) + points[card]
            key = (int(plan.basra), taken, len(plan.captures), -int(card))
            if key > best_key:
                best_key, best = key, len(moves)
            moves.append(Move(card, plan))
    first = best if best >= 0 else trail
    moves.insert(0, moves.pop(first))
    return moves


class World:
    """One hand in progress as the search plays it: sets of cards as masks, per seat and side."""

    __slots__ = (
        "basra_points",
        "captured",
        "dealer",
        "floor",
        "hands",
        "last_capturer",
        "specials",
        "stock",
        "turn",
    )

    def __init__(
        self,
        hands: list[int],
        floor: int,
        stock: tuple[Card, ...],
        captured: list[int],
        specials: list[int],
        basra_points: list[int],
        last_capturer: int,
        turn: int,
        dealer: int,
    ) -> None:
        self.hands = hands
        self.floor = floor
        self.stock = stock
        self.captured = captured
        """Cards each side has captured (counts)."""
        self.specials = specials
        """Special points each side has captured."""
        self.basra_points = basra_points
        self.last_capturer = last_capturer
        """-1 while nobody has captured this hand."""
        self.turn = turn
        self.dealer = dealer

    def copy(self) -> World:
        return World(
            list(self.hands),
            self.floor,
            self.stock,
            list(self.captured),
            list(self.specials),
            list(self.basra_points),
            self.last_capturer,
            self.turn,
            self.dealer,
        )


class Sampler:
    """Deals the cards a seat cannot see, consistently with its view."""

    __slots__ = (
        "base",
        "bottom",
        "carry",
        "forced",
        "others",
        "pool",
        "seat",
        "sizes",
        "stock_size",
    )

    def __init__(self, view: SeatView, profile: Profile, gone: int) -> None:
        points = profile.points.points
        hand = mask_of(view.hand)
        floor = mask_of(view.floor)
        seen = hand | floor | (gone & ALL_CARDS_MASK)
        specials = [0] * len(view.captured_specials)
        for side, cards in enumerate(view.captured_specials):
            for card in cards:
                seen |= 1 << int(card)
                specials[side] += points[card]
        last = view.last_play
        if last is not None:
            seen |= 1 << int(last.card)
            seen |= mask_of(last.captured)
        bottom = view.bottom_card
        if bottom is not None:
            seen |= 1 << int(bottom)
        unseen = ALL_CARDS_MASK & ~seen
        forced: list[int] = []
        pool: list[int] = []
        for c in range(len(CARDS)):
            if unseen >> c & 1:
                # A scoring card that no side has captured and that is not shown is hidden.
                (forced if points[c] else pool).append(c)
        self.forced = forced
        self.pool = pool
        self.bottom = -1 if bottom is None else int(bottom)
        self.seat = view.seat
        self.carry = view.carry
        self.sizes = view.hand_sizes
        self.stock_size = view.stock_size
        self.others = [s for s in range(len(view.hand_sizes)) if s != view.seat]
        self.base = World(
            [0] * len(view.hand_sizes),
            floor,
            (),
            list(view.captured_counts),
            specials,
            list(view.basra_points),
            -1 if view.last_capturer is None else view.last_capturer,
            view.seat,
            view.dealer,
        )
        self.base.hands[view.seat] = hand
        if len(forced) + len(pool) < self.hidden():
            raise InvalidInputError(
                f"gone {gone:#x} leaves fewer unseen cards than the other hands and the stock hold",
                gone=f"{gone:#x}",
            )

    def hidden(self) -> int:
        """How many cards the seat cannot see: the other hands and the stock (less a visible
        bottom card)."""
        hidden = self.stock_size - (1 if self.bottom >= 0 else 0)
        for seat in self.others:
            hidden += self.sizes[seat]
        return hidden

    def sample(self, rng: random.Random) -> World:
        """A world: the hidden hands and the stock drawn uniformly among those the view allows."""
        hidden = self.hidden()
        cards = list(self.forced)
        pool = list(self.pool)
        # A partial Fisher-Yates draw of the unforced hidden cards from the pool.
        need = min(max(hidden - len(cards), 0), len(pool))
        for i in range(need):
            j = i + below(rng, len(pool) - i)
            pool[i], pool[j] = pool[j], pool[i]
            cards.append(pool[i])
        for i in range(len(cards) - 1, 0, -1):
            j = below(rng, i + 1)
            cards[i], cards[j] = cards[j], cards[i]
        world = self.base.copy()
        at = 0
        for seat in self.others:
            mask = 0
            for k in range(at, at + self.sizes[seat]):
                mask |= 1 << cards[k]
            world.hands[seat] = mask
            at += self.sizes[seat]
        stock = [CARDS[c] for c in cards[at:]]
        if self.bottom >= 0 and self.stock_size:
            stock.append(CARDS[self.bottom])
        world.stock = tuple(stock)
        return world


def play_move(world: World, profile: Profile, card: int, plan: Plan | None) -> None:
    """Play ``card`` by ``plan`` (None: trail) for the seat to move, and deal when due."""
    seat = world.turn
    bit = 1 << card
    world.hands[seat] &= ~bit
    if plan is None:
        world.floor |= bit
    else:
        side = profile.side_of(seat)
        world.floor &= ~plan.mask
        taken = plan.mask | bit
        world.captured[side] += taken.bit_count()
        world.specials[side] += profile.points.of(taken)
        if plan.basra:
            value = BASRA_VALUE[profile.basra_value](CARDS[card], profile.basra_points)
            world.basra_points[side] += value
        world.last_capturer = seat
    world.turn = (seat + 1) % len(world.hands)
    for hand in world.hands:
        if hand:
            return
    if world.stock:
        hands, rest = deal_round(world.stock, world.dealer, profile)
        for s in range(len(hands)):
            world.hands[s] = mask_of(hands[s])
        world.stock = rest


def policy_move(world: World, profile: Profile, rng: random.Random) -> tuple[int, Plan | None]:
    """The rollout policy's move for the seat to move: greedy, or with a small chance random."""
    hand = world.hands[world.turn]
    floor = world.floor
    if below(rng, 100) < EPSILON_PERCENT:
        cards: list[int] = []
        rest = hand
        while rest:
            low = rest & -rest
            cards.append(low.bit_length() - 1)
            rest ^= low
        card = cards[below(rng, len(cards))]
        plans = capture_plans(floor, CARDS[card], profile)
        if not plans:
            return card, None
        return card, plans[below(rng, len(plans))]
    points = profile.points.points
    table = profile.points
    best_card = -1
    best_plan: Plan | None = None
    best_basra = -1
    best_taken = -1
    best_count = -1
    trail_card = -1
    trail_points = 0
    trail_value = 0
    rest = hand
    while rest:
        low = rest & -rest
        card = low.bit_length() - 1
        rest ^= low
        plans = capture_plans(floor, CARDS[card], profile)
        if not plans:
            if trail_card < 0 or (points[card], VALUES[card]) < (trail_points, trail_value):
                trail_card, trail_points, trail_value = card, points[card], VALUES[card]
            continue
        for plan in plans:
            basra = 1 if plan.basra else 0
            taken = table.of(plan.mask) + points[card]
            count = len(plan.captures)
            # Cards come lowest first, so a strict improvement keeps the lower card on a tie.
            if (basra, taken, count) > (best_basra, best_taken, best_count):
                best_card, best_plan = card, plan
                best_basra, best_taken, best_count = basra, taken, count
    if best_plan is not None:
        return best_card, best_plan
    return trail_card, None


def rollout_value(world: World, profile: Profile, side: int, carry: int, rng: random.Random) -> int:
    """Finish the hand by the rollout policy; ``side``'s points minus the best other side's
    (``carry``: the majority points carried into the hand, which the majority takes)."""
    while True:
        empty = True
        for hand in world.hands:
            if hand:
                empty = False
                break
        if empty:
            break
        card, plan = policy_move(world, profile, rng)
        play_move(world, profile, card, plan)
    captured = world.captured
    if world.floor and world.last_capturer >= 0:
        leftover = world.floor
        taker = profile.side_of(world.last_capturer)
        captured[taker] += leftover.bit_count()
        world.specials[taker] += profile.points.of(leftover)
    top = max(captured)
    leaders = 0
    leader = -1
    for s in range(len(captured)):
        if captured[s] == top:
            leaders += 1
            leader = s
    totals = [world.specials[s] + world.basra_points[s] for s in range(len(captured))]
    if leaders == 1 and top >= profile.majority_cards:
        totals[leader] += profile.majority_points + carry
    ours = totals[side]
    other = -(1 << 30)
    for s in range(len(totals)):
        if s != side and totals[s] > other:
            other = totals[s]
    return ours - other


def strong_choice(
    view: SeatView,
    profile: Profile,
    rng: random.Random,
    iterations: int = DEFAULT_ITERATIONS,
    seconds: float | None = None,
    gone: int = 0,
) -> tuple[Card, int]:
    """The strong level's move for the seat of ``view`` (its turn): (card, plan id, 0 to trail).

    ``iterations`` rollouts in all (at least one world, every move tried in each); ``seconds``
    caps the search's wall-clock time when given; ``gone`` is a set (mask) of cards the seat
    knows have left play this hand, beyond what the view shows (see ``bots.cards_gone``).
    """
    moves = root_moves(view, profile)
    if len(moves) == 1:
        return moves[0].card, moves[0].plan_id
    sampler = Sampler(view, profile, gone)
    side = view.side
    totals = [0] * len(moves)
    deadline = -1.0 if seconds is None else time.perf_counter() + seconds
    done = 0
    while done < iterations:
        world = sampler.sample(rng)
        for i in range(len(moves)):
            trial = world.copy()
            move = moves[i]
            play_move(trial, profile, move.card, move.plan)
            totals[i] += rollout_value(trial, profile, side, sampler.carry, rng)
        done += len(moves)
        if deadline >= 0 and time.perf_counter() > deadline:
            break
    best = 0
    for i in range(1, len(moves)):
        if totals[i] > totals[best]:
            best = i
    return moves[best].card, moves[best].plan_id
