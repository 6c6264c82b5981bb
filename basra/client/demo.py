"""``basra-engine demo``: two bots play a whole match through the RPCs, every play printed.

The first thing to run after ``make run``: it shows the contract at work (Deal, ListPlans, Play,
Score) and prints the match as a table would see it.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import TextIO

import grpc

from basra.client.match import MatchClient, Rejection, to_card
from basra.engine import format_cards
from basra.v1 import game_pb2

BOTS = ("greedy", "random")


def show(cards: Sequence[game_pb2.Card]) -> str:
    """Cards with suit symbols: 10♦ 4♠."""
    return format_cards((to_card(c) for c in cards), symbols=True) or "(none)"


def choose(
    bot: str, options: Sequence[game_pb2.CardPlans], rng: random.Random
) -> tuple[game_pb2.Card, int]:
    """A bot's play from ListPlans: (card, plan id; 0 for a trail)."""
    if bot == "random":
        pick = rng.choice(options)
        return pick.card, rng.randint(1, len(pick.plans)) if pick.plans else 0
    best: tuple[tuple[int, int, int], game_pb2.Card, int] | None = None
    for option in options:
        for plan in option.plans:
            points = sum(to_card(c).points for c in plan.captures) + to_card(option.card).points
            key = (int(plan.basra), points, len(plan.captures))
            if best is None or key > best[0]:
                best = (key, option.card, plan.id)
    if best is not None:
        return best[1], best[2]
    # Nothing captures: trail the card worth least.
    card = min((o.card for o in options), key=lambda c: (to_card(c).points, to_card(c).value))
    return card, 0


def describe(event: game_pb2.MatchEvent) -> str | None:
    """One line for an event, or None for those the play line already tells."""
    kind = event.WhichOneof("event")
    if kind == "hand_started":
        e = event.hand_started
        return (
            f"== Hand {e.hand}: dealer seat {e.dealer}, seat {e.leader} leads; "
            f"floor {show(e.floor)}"
        )
    if kind == "cards_dealt":
        e2 = event.cards_dealt
        return f"   deal {e2.deal}: {e2.cards_each} cards each, {e2.stock_left} left in the stock"
    if kind == "floor_collected":
        e3 = event.floor_collected
        who = f"seat {e3.seat}" if e3.HasField("seat") else "nobody"
        return f"   leftover {show(e3.cards)} goes to {who} (not a basra)"
    if kind == "hand_scored":
        e4 = event.hand_scored
        parts = [
            f"seat {s.seat}: {s.cards} cards, majority {s.majority}"
            + (f" + carry {s.carry}" if s.carry else "")
            + f", specials {s.specials}, basras {s.basras} = {s.total}"
            for s in e4.score.seats
        ]
        extra = "  (tie at the target: an extra hand)" if e4.extra_hand else ""
        totals = " - ".join(map(str, e4.totals))
        return (
            f"   hand {e4.score.hand} scored: "
            + "; ".join(parts)
            + f"\n   totals {totals}, carry {e4.score.carry_after}{extra}"
        )
    return None


def play_line(played: game_pb2.CardPlayed, plans: int, bot: str, number: int) -> str:
    action = (
        f"takes {show(played.captured)} (plan {played.plan_id} of {plans})"
        if not played.trail
        else "trails"
    )
    flags = "".join(f"  {f.upper()}!" for f in ("basra", "sweep") if getattr(played, f))
    return f"  {number:2}. seat {played.seat} ({bot}) plays {show([played.card])}: {action}{flags}"


def scoreboard(
    client: MatchClient, out: TextIO, names: Sequence[str] = ("greedy bot", "random bot")
) -> None:
    """Print every hand's totals, the match totals and the winner."""
    board = client.score(0).scoreboard
    print("\nScoreboard", file=out)
    print(f"  {'hand':>4} {'dealer':>6} {'seat 0':>7} {'seat 1':>7} {'carry':>6}", file=out)
    for hand in board.hands:
        totals = [s.total for s in hand.seats]
        print(
            f"  {hand.hand:>4} {hand.dealer:>6} {totals[0]:>7} {totals[1]:>7} "
            f"{hand.carry_after:>6}",
            file=out,
        )
    print(f"  {'total':>11} {board.totals[0]:>7} {board.totals[1]:>7}", file=out)
    if board.HasField("winner"):
        print(
            f"Seat {board.winner} ({names[board.winner]}) wins, "
            f"{board.totals[board.winner]} to {board.totals[1 - board.winner]}.",
            file=out,
        )


def run(
    target: str,
    out: TextIO,
    seed: int | None = None,
    api_key: str | None = None,
    connect_timeout_s: float = 10,
) -> int:
    """Play one match on the server at ``target``; returns the exit status."""
    rng = random.Random(seed)  # noqa: S311 - a bot's choices, not a secret
    with grpc.insecure_channel(target) as channel:
        try:
            grpc.channel_ready_future(channel).result(timeout=connect_timeout_s)
            client, created = MatchClient.create(channel, seed=seed, api_key=api_key)
        except grpc.FutureTimeoutError:
            print(f"error: no server answers at {target} (start one with `make run`)", file=out)
            return 1
        except grpc.RpcError as error:
            rejection = Rejection.of(error)
            print(
                f"error: {rejection.reason or rejection.code.name}: {rejection.message}", file=out
            )
            return 1
        print(
            f"Match {client.match_id}: seat 0 {BOTS[0]} bot against seat 1 {BOTS[1]} bot", file=out
        )
        events = list(created.events)
        plays = 0
        while True:
            for event in events:
                if (line := describe(event)) is not None:
                    print(line, file=out)
            view = client.view(0)
            if view.status == game_pb2.MATCH_STATUS_MATCH_OVER:
                break
            if view.status == game_pb2.MATCH_STATUS_HAND_OVER:
                events = list(client.deal(0).events)
                plays = 0
                continue
            seat = view.turn
            options = client.plans(seat)
            card, plan_id = choose(BOTS[seat], options, rng)
            offered = next(len(o.plans) for o in options if o.card == card)
            response = client.play(seat, card, plan_id, expected_version=view.version)
            plays += 1
            print(play_line(response.played, offered, BOTS[seat], plays), file=out)
            events = list(response.events[1:])
        scoreboard(client, out)
    return 0
