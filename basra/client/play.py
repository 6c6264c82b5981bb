"""``basra-engine play``: play a match in the terminal through the RPCs.

A person plays seat 0 against a bot, or two people share the keyboard (``--hot-seat``). Cards are
shown with suit symbols, a card's capture plans are numbered, and every rejection the server
sends is explained in words, with what to do about it.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Final, TextIO

import grpc

from basra.client.demo import choose, describe, scoreboard, show
from basra.client.match import MatchClient, Rejection, to_card
from basra.v1 import game_pb2

EXPLANATIONS: Final = {
    "NOT_YOUR_TURN": "It is not your turn: seat {turn} plays now.",
    "CARD_NOT_IN_HAND": "You do not hold {card}.",
    "PLAN_REQUIRED": "{card} can capture in {plan_count} ways: choose one of the plans.",
    "UNKNOWN_PLAN": "{card} has no plan {plan_id}.",
    "CAPTURE_REQUIRED": "{card} can capture, and capture is mandatory: it cannot trail.",
    "HAND_IN_PROGRESS": "The hand is still being played.",
    "HAND_OVER": "This hand is over: deal the next one first.",
    "MATCH_OVER": "The match is over: seat {winner} won.",
    "VERSION_MISMATCH": "The table changed while you were choosing: look again and replay.",
    "STORE_UNAVAILABLE": "The server cannot reach its match store right now: try again shortly.",
    "API_KEY_MISSING": "This server needs an API key to create matches: pass --api-key.",
    "API_KEY_INVALID": "The API key was refused: check --api-key.",
    "SEEDS_DISABLED": "This server does not accept seeds: leave out --seed.",
    "RATE_LIMITED": "Too many matches are being created: wait {retry_after_s} s and try again.",
    "MATCH_NOT_FOUND": "The match no longer exists (it may have expired).",
    "TOKEN_INVALID": "The server did not accept this seat's token.",
}


def explain(rejection: Rejection) -> str:
    """A rejection in words a player understands."""
    template = EXPLANATIONS.get(rejection.reason)
    if template is None:
        return (
            f"The server refused: {rejection.message} ({rejection.reason or rejection.code.name})"
        )
    try:
        return template.format(**rejection.metadata)
    except KeyError:
        return template


class QuitRequest(Exception):  # noqa: N818 - a request to leave, not an error
    """The player asked to leave (q, or end of input)."""


class Terminal:
    """Prompts and answers on a text stream pair."""

    def __init__(self, read: Callable[[str], str], out: TextIO) -> None:
        self._read = read
        self.out = out

    def say(self, text: str = "") -> None:
        print(text, file=self.out, flush=True)

    def ask(self, prompt: str) -> str:
        try:
            answer = self._read(prompt).strip().lower()
        except EOFError:
            raise QuitRequest from None
        if answer in ("q", "quit", "exit"):
            raise QuitRequest
        return answer

    def choose(self, prompt: str, count: int, *, back: bool = False) -> int | None:
        """A number 1..count (None: go back)."""
        while True:
            answer = self.ask(f"{prompt} [1-{count}{', b = back' if back else ''}, q = quit]: ")
            if back and answer == "b":
                return None
            if answer.isdigit() and 1 <= int(answer) <= count:
                return int(answer)
            self.say(f"Please type a number from 1 to {count}.")


def table(view: game_pb2.MatchView, seat: int) -> str:
    """What ``seat`` sees, as text."""
    other = view.seats[1 - seat]
    mine = view.seats[seat]
    hand = "  ".join(f"{i}) {show([c])}" for i, c in enumerate(view.hand, start=1))
    return "\n".join(
        [
            f"-- Hand {view.hand_number}, deal {view.deal_number} of 6 -- you are seat {seat}; "
            f"dealer seat {view.dealer}; stock {view.stock_size}",
            f"   Scores: you {mine.score}, opponent {other.score}; carry {view.carry}; "
            f"first to {view.target}",
            f"   Opponent: {plural(other.hand_size, 'card')} in hand, "
            f"{other.captured_count} captured, {other.basras} basras",
            f"   You: {mine.captured_count} captured, {mine.basras} basras",
            f"   Floor: {show(view.floor)}",
            f"   Your hand: {hand}",
        ]
    )


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def plan_text(plan: game_pb2.Plan) -> str:
    flags = "".join(f", {f}!" for f in ("basra", "sweep") if getattr(plan, f))
    return f"takes {show(plan.captures)}{flags}"


def human_turn(term: Terminal, client: MatchClient, seat: int) -> None:
    """Let the person at ``seat`` choose a card and a plan, and play it."""
    while True:
        view = client.view(seat)
        term.say(table(view, seat))
        index = term.choose("Play which card?", len(view.hand))
        assert index is not None
        card = view.hand[index - 1]
        (options,) = client.plans(seat, to_card(card))
        plan_id = 0
        if not options.plans:
            term.say(f"{show([card])} captures nothing: it stays on the floor.")
        elif len(options.plans) == 1:
            term.say(f"{show([card])} {plan_text(options.plans[0])}.")
        else:
            for plan in options.plans:
                term.say(f"   plan {plan.id}: {plan_text(plan)}")
            chosen = term.choose(f"Which plan for {show([card])}?", len(options.plans), back=True)
            if chosen is None:
                continue
            plan_id = chosen
        try:
            response = client.play(seat, card, plan_id, expected_version=view.version)
        except grpc.RpcError as error:
            term.say("!! " + explain(Rejection.of(error)))
            continue
        report(term, response.events, seat)
        return


def report(term: Terminal, events: Sequence[game_pb2.MatchEvent], viewer: int) -> None:
    for event in events:
        if event.HasField("card_played"):
            played = event.card_played
            who = "You play" if played.seat == viewer else f"Seat {played.seat} plays"
            action = "it stays on the floor" if played.trail else f"takes {show(played.captured)}"
            flags = "".join(f"  {f.upper()}!" for f in ("basra", "sweep") if getattr(played, f))
            term.say(f">> {who} {show([played.card])}: {action}{flags}")
        elif (line := describe(event)) is not None:
            term.say(line)


def run(
    target: str,
    out: TextIO,
    read: Callable[[str], str] = input,
    *,
    hot_seat: bool = False,
    seed: int | None = None,
    api_key: str | None = None,
) -> int:
    """Play one match in the terminal; returns the exit status."""
    term = Terminal(read, out)
    rng = random.Random(seed)  # noqa: S311 - the bot's choices, not a secret
    with grpc.insecure_channel(target) as channel:
        try:
            grpc.channel_ready_future(channel).result(timeout=10)
            client, created = MatchClient.create(channel, seed=seed, api_key=api_key)
        except grpc.FutureTimeoutError:
            term.say(f"No server answers at {target}: start one with `make run`.")
            return 1
        except grpc.RpcError as error:
            term.say("!! " + explain(Rejection.of(error)))
            return 1
        humans = (0, 1) if hot_seat else (0,)
        term.say(
            "Basra (ERAM rules). "
            + ("Two players share this keyboard." if hot_seat else "You are seat 0 against a bot.")
        )
        report(term, created.events, 0)
        try:
            while True:
                view = client.view(0)
                if view.status == game_pb2.MATCH_STATUS_MATCH_OVER:
                    break
                if view.status == game_pb2.MATCH_STATUS_HAND_OVER:
                    term.ask("Press Enter to deal the next hand: ")
                    report(term, client.deal(0).events, 0)
                    continue
                seat = view.turn
                if seat in humans:
                    if hot_seat:
                        term.ask(
                            f"Seat {seat}, your turn (the other player looks away). Press Enter: "
                        )
                    human_turn(term, client, seat)
                else:
                    options = client.plans(seat)
                    card, plan_id = choose("greedy", options, rng)
                    response = client.play(seat, card, plan_id, expected_version=view.version)
                    report(term, response.events, 0)
        except QuitRequest:
            term.say(f"Left the match {client.match_id}.")
            return 0
        except grpc.RpcError as error:
            term.say("!! " + explain(Rejection.of(error)))
            return 1
        scoreboard(client, out, ("player 1", "player 2") if hot_seat else ("you", "the bot"))
    return 0
