"""``basra-engine demo``: two bots play a whole match through the RPCs, every play printed.

The first thing to run after ``make run``: it shows the contract at work (Deal, ListPlans, Play,
Score) through ``basra.client`` and prints the match as a table would see it. The seed of the
match is printed so that it can be replayed (``--seed``), when the server accepts seeds.
"""

from __future__ import annotations

import random
import secrets
import time
from collections.abc import Callable, Sequence
from typing import TextIO

from basra.client import Client, Match, RetryPolicy, greedy_choice, random_choice
from basra.client.errors import BasraError
from basra.client.render import Renderer, explain, seat_name, seats_name
from basra.v1 import basra_service_pb2 as pb
from basra.v1 import game_pb2

BOTS = ("greedy", "random")
QUICK = RetryPolicy(attempts=4, first_delay=0.1, max_delay=0.5)
"""Retries of the demo's calls: a server that is not there is reported within a second."""
NOT_REPLAYABLE = (
    "This match cannot be replayed: the server draws its own deals (a server started with "
    "--allow-seeds replays a match from its seed)."
)
"""Said after the match's first line when the server accepts no seeds."""
SERVER_PACE = (
    "The server waits before each of its bots' moves, so that people see every play "
    "(its pace: `basra-engine serve --bot-pace-seconds`, 0 to play at once)."
)
"""Said when the server's bots play: their pace is the server's."""


def create(
    client: Client,
    seed: int | None,
    rules: str | None = None,
    seats: int = 0,
    bots: dict[int, str] | None = None,
) -> tuple[Match, int | None]:
    """A new match (of ``rules`` at ``seats``, when given; with the server's ``bots``), on
    ``seed`` or on a seed of our own when the server accepts seeds, with its seed (None: the
    server drew the deal and accepts no seeds, so the match cannot be replayed)."""
    chosen = seed if seed is not None else secrets.randbits(63)
    try:
        return client.create_match(seed=chosen, rules=rules, seats=seats, bots=bots), chosen
    except BasraError as error:
        if seed is not None or error.reason != "SEEDS_DISABLED":
            raise
    return client.create_match(rules=rules, seats=seats, bots=bots), None


def pause(seconds: float) -> None:
    """Sleep in short slices, so that Ctrl-C stops a paced demo at once (a SIGINT taken by one
    of gRPC's threads would otherwise wait for the end of a long sleep)."""
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        time.sleep(min(left, 0.2))


def run(
    target: str,
    out: TextIO,
    *,
    seed: int | None = None,
    api_key: str | None = None,
    pace: float = 0.0,
    symbols: bool = True,
    retry: RetryPolicy = QUICK,
    sleep: Callable[[float], None] | None = None,
    rules: str | None = None,
    seats: int = 0,
    levels: Sequence[str] | None = None,
) -> int:
    """Play one match on the server at ``target``; returns the exit status.

    ``pace`` seconds pass between two plays, to watch the match unfold. ``rules`` and ``seats``
    choose the rule system and the seat count (default: ERAM, two seats); bots take every seat,
    greedy and random in turn. With ``levels`` (e.g. strong, greedy) the server's bots take
    every seat at those levels in turn and the demo watches the match as a spectator: the
    server paces their plays (its --bot-pace-seconds) and ``pace`` does not apply.
    """
    render = Renderer(symbols)
    sleep = sleep or pause
    with Client(target, api_key=api_key, retry=retry) as client:
        try:
            if levels:
                count = max(seats, 2)
                bots = {s: levels[s % len(levels)] for s in range(count)}
                match, used = create(client, seed, rules, count, bots)
                return _watch(match, used, bots, render, out, pace)
            match, used = create(client, seed, rules, seats)
            return _play(match, used, render, out, pace, sleep)
        except BasraError as error:
            print("error: " + explain(error, target), file=out)
            return 1


def _watch(
    match: Match,
    seed: int | None,
    bots: dict[int, str],
    render: Renderer,
    out: TextIO,
    pace: float,
) -> int:
    """Follow a match the server's bots play, as a spectator, every play printed (``pace``:
    the demo's own pause, which the server's bots do not take)."""
    assert isinstance(match.created, pb.CreateMatchResponse)
    first = match.created.view
    players = ", ".join(f"{seat_name(s)} {level}" for s, level in sorted(bots.items()))
    print(f"Match {match.id}, {first.rules} rules: the server's bots, {players}", file=out)
    if seed is None:
        print(NOT_REPLAYABLE, file=out)
    else:
        print(f"Seed {seed}", file=out)
    print(SERVER_PACE + (" --pace paces only the demo's own bots." if pace else ""), file=out)
    spectator = match.spectate(match.created.watch_token)
    plays = 0
    for event in spectator.watch():
        if event.WhichOneof("event") == "card_played":
            played = event.card_played
            plays += 1
            text = render.played(played, f"{seat_name(played.seat)} ({bots[played.seat]}) plays")
            print(f"  {plays:2}. {text}", file=out)
        elif (line := render.event(event)) is not None:
            print(line, file=out)
            if event.WhichOneof("event") == "hand_started":
                plays = 0
    names = [f"{bots[s]} bot" for s in range(len(first.seats))]
    for line in render.scoreboard(spectator.score(), names):
        print(line, file=out)
    return 0


def _play(
    match: Match,
    seed: int | None,
    render: Renderer,
    out: TextIO,
    pace: float,
    sleep: Callable[[float], None],
) -> int:
    rng = random.Random(seed)  # noqa: S311 - the random bot's choices, not a secret
    assert match.created is not None
    first = match.created.view
    if first.seat_count <= 2 and first.rules == "eram":
        print(
            f"Match {match.id}: {seat_name(0)} {BOTS[0]} bot against {seat_name(1)} {BOTS[1]} bot",
            file=out,
        )
    else:
        players = ", ".join(
            f"{seat_name(s)} {BOTS[s % len(BOTS)]}" for s in range(first.seat_count)
        )
        sides = sorted({s.side for s in first.seats})
        partners = [[s.seat for s in first.seats if s.side == side] for side in sides]
        teams = (
            f" in partnerships (seats {', '.join(seats_name(p) for p in partners)})"
            if len(sides) < first.seat_count
            else ""
        )
        print(f"Match {match.id}, {first.rules} rules{teams}: {players} bots", file=out)
    if seed is None:
        print(NOT_REPLAYABLE, file=out)
    else:
        again = f"--seed {seed}"
        if first.rules != "eram" or first.seat_count != 2:
            again += f" --rules {first.rules} --seats {first.seat_count}"
        print(f"Seed {seed} (replay this match: basra-engine demo {again})", file=out)
    events = list(match.created.events)
    plays = 0
    while True:
        for event in events:
            if (line := render.event(event)) is not None:
                print(line, file=out)
        view = match.view()
        if view.status == game_pb2.MATCH_STATUS_MATCH_OVER:
            break
        if view.status == game_pb2.MATCH_STATUS_HAND_OVER:
            events = list(match.deal(expected_version=view.version).events)
            plays = 0
            continue
        seat = match.seat(view.turn)
        bot = BOTS[view.turn % len(BOTS)]
        options = seat.plans()
        card, plan_id = greedy_choice(options) if bot == "greedy" else random_choice(options, rng)
        offered = next(len(o.plans) for o in options if o.card == card)
        if plays and pace > 0:
            sleep(pace)
        response = seat.play(card, plan_id, expected_version=view.version)
        plays += 1
        played = response.played
        detail = f" (plan {played.plan_id} of {offered})"
        line = render.played(played, f"{seat_name(played.seat)} ({bot}) plays", detail)
        print(f"  {plays:2}. {line}", file=out)
        events = list(response.events[1:])
    names = [f"{BOTS[s % len(BOTS)]} bot" for s in range(len(view.seats))]
    for line in render.scoreboard(match.score(), names):
        print(line, file=out)
    return 0
