"""``basra-engine play``: play a match in the terminal through ``basra.client``.

A person plays the first seat against the greedy bot, or several people share the keyboard
(``--hot-seat``): the screen is then cleared at every handover, so nobody sees another's hand.
Cards are typed by number or by name (``8C``, ``8♣``); each card shows whether it captures;
``h`` shows help and ``q`` (or Ctrl-C) leaves. A left match is resumed with ``--resume``: its
seat tokens are kept in a file only the user may read (``saved_path``), removed when the match
ends.
"""

from __future__ import annotations

import json
import os
import re
import select
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, TextIO

from basra.client import Client, Match, RetryPolicy, greedy_choice
from basra.client.errors import BasraError, UnavailableError
from basra.client.render import Renderer, explain, number, plural, seat_name
from basra.engine import Card, InvalidCardError
from basra.v1 import game_pb2

CLEAR: Final = "\x1b[2J\x1b[H"
"""ANSI: erase the screen and put the cursor at its top left."""
QUICK = RetryPolicy(attempts=4, first_delay=0.1, max_delay=0.5)
HELP: Final = """\
   Type the number of a card (1, 2, ...) or its name (8C, 10D, Q♠; T for ten).
   A card marked "takes" captures; "trails" means it stays on the floor.
   When a card can capture in several ways, choose a plan by its number (b: back).
   h: this help    q or Ctrl-C: leave (the match is kept and can be resumed)"""


def read_line(prompt: str) -> str:
    """``input()`` that Ctrl-C always interrupts.

    A SIGINT that lands just before ``input()`` blocks in ``read()`` (or on another thread: gRPC
    runs several) would wait for the next Enter: waiting in short ``select`` slices lets Python
    raise KeyboardInterrupt at once.
    """
    print(prompt, end="", flush=True)
    try:
        descriptor = sys.stdin.fileno()
    except (AttributeError, OSError, ValueError):  # not a real file: no select
        return input()
    while not select.select([descriptor], [], [], 0.2)[0]:
        pass  # the interpreter handles a pending signal between two slices
    line = sys.stdin.readline()
    if not line:
        raise EOFError
    return line.rstrip("\n")


def state_dir() -> Path:
    """Where left matches are kept: $XDG_STATE_HOME/basra-engine (~/.local/state/...)."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "basra-engine"


def saved_path(match_id: str) -> Path:
    """Raises ValueError for an id that is not a match id (it names a file)."""
    if not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", match_id):
        raise ValueError(f"{match_id!r} is not a match id")
    return state_dir() / f"{match_id}.json"


def resume_command(target: str, match_id: str) -> str:
    return f"basra-engine play --target {target} --resume={match_id}"


@dataclass
class Saved:
    """What resuming a match needs: where it is served, its id, the seats' tokens, who plays."""

    target: str
    match_id: str
    tokens: dict[int, str]
    humans: list[int]
    hot_seat: bool

    def save(self) -> Path:
        """Write it readable by its owner only (0600, in a 0700 directory)."""
        path = saved_path(self.match_id)
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        data = {
            "target": self.target,
            "match_id": self.match_id,
            "tokens": {str(s): t for s, t in self.tokens.items()},
            "humans": self.humans,
            "hot_seat": self.hot_seat,
        }
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            json.dump(data, file)
        os.chmod(path, 0o600)  # an older file keeps its mode through O_CREAT
        return path

    @classmethod
    def load(cls, match_id: str) -> Saved:
        """Raises OSError (no such file) or ValueError (not a saved match)."""
        data = json.loads(saved_path(match_id).read_text(encoding="utf-8"))
        try:
            return cls(
                str(data["target"]),
                str(data["match_id"]),
                {int(s): str(t) for s, t in data["tokens"].items()},
                [int(s) for s in data["humans"]],
                bool(data["hot_seat"]),
            )
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"{saved_path(match_id)} is not a saved match") from exc


class QuitRequest(Exception):  # noqa: N818 - a request to leave, not an error
    """The player asked to leave (q, Ctrl-C or end of input)."""


@dataclass
class Terminal:
    """Prompts and answers on a text stream pair."""

    read: Callable[[str], str]
    out: TextIO

    def say(self, text: str = "") -> None:
        print(text, file=self.out, flush=True)

    def clear(self) -> None:
        self.out.write(CLEAR)
        self.out.flush()

    def ask(self, prompt: str) -> str:
        """An answer, trimmed (q and end of input raise ``QuitRequest``)."""
        try:
            answer = self.read(prompt).strip()
        except EOFError:
            self.say()
            raise QuitRequest from None
        if answer.lower() in ("q", "quit", "exit"):
            raise QuitRequest
        return answer

    def choose(self, prompt: str, count: int, *, back: bool = False) -> int | None:
        """A number 1..count (None: go back)."""
        while True:
            answer = self.ask(
                f"{prompt} [{numbers(count)}{', b = back' if back else ''}, h = help]: "
            )
            if back and answer.lower() == "b":
                return None
            if answer.lower() in ("h", "help", "?"):
                self.say(HELP)
                continue
            if answer.isdigit() and 1 <= int(answer) <= count:
                return int(answer)
            self.say(f"Please type {a_number(count)} (h for help).")


def numbers(count: int) -> str:
    """The numbers a prompt offers: ``1-3``, or ``1`` when there is one."""
    return "1" if count == 1 else f"1-{count}"


def a_number(count: int) -> str:
    """What to type, in words: ``a number from 1 to 3``, or ``1`` when there is one."""
    return "1" if count == 1 else f"a number from 1 to {count}"


@dataclass
class Table:
    """One terminal match: who plays which seat, and what has yet to be shown."""

    term: Terminal
    match: Match
    render: Renderer
    humans: Sequence[int]
    hot_seat: bool
    target: str
    pending: list[str] = field(default_factory=list)

    def report(self, events: Sequence[game_pb2.MatchEvent], viewer: int | None) -> None:
        """Each event once: at once against the bot, on the next screen in hot-seat play."""
        for event in events:
            if event.HasField("card_played"):
                played = event.card_played
                who = "You play" if played.seat == viewer else f"Seat {number(played.seat)} plays"
                self.pending.append(">> " + self.render.played(played, who))
            elif (line := self.render.event(event)) is not None:
                self.pending.append(line)
        if not self.hot_seat:
            self.flush()

    def flush(self) -> None:
        for line in self.pending:
            self.term.say(line)
        self.pending.clear()

    def hand_over(self, seat: int) -> None:
        """Hot-seat: a clean screen for ``seat``, after the others look away."""
        self.term.clear()
        self.flush()
        others = [s for s in self.humans if s != seat]
        away = ", ".join(seat_name(s) for s in others) + (" look" if len(others) > 1 else " looks")
        self.term.ask(f"Pass the keyboard to {seat_name(seat)} ({away} away), then press Enter: ")
        self.term.clear()

    def show(self, view: game_pb2.MatchView, options: Sequence[game_pb2.CardPlans]) -> None:
        seat = view.seat
        marks = {o.card.SerializeToString(): capture_mark(o) for o in options}
        hand = "  ".join(
            f"{i}) {self.render.card(c)} {marks.get(c.SerializeToString(), '')}".rstrip()
            for i, c in enumerate(view.hand, start=1)
        )
        others = [s for s in view.seats if s.seat != seat]
        mine = view.seats[seat]
        scores = ", ".join(f"{seat_name(s.seat)} {s.score}" for s in others)
        self.term.say(
            "\n".join(
                [
                    f"-- Hand {view.hand_number}, deal {view.deal_number} -- you are "
                    f"{seat_name(seat)}; dealer {seat_name(view.dealer)}; stock {view.stock_size}",
                    f"   Scores: you {mine.score}, {scores}; carry {view.carry}; "
                    f"first to {view.target}",
                    *(
                        f"   Seat {number(s.seat)}: {plural(s.hand_size, 'card')} in hand, "
                        f"{s.captured_count} captured, {s.basras} basras"
                        for s in others
                    ),
                    f"   You: {mine.captured_count} captured, {mine.basras} basras",
                    f"   Floor: {self.render.cards(view.floor)}",
                    f"   Your hand: {hand}",
                ]
            )
        )

    def human_turn(self, seat: int) -> None:
        """Let the person at ``seat`` choose a card and a plan, and play it."""
        handle = self.match.seat(seat)
        while True:
            view = handle.view()
            options = handle.plans()
            self.show(view, options)
            card = self.pick_card(view)
            option = next(o for o in options if o.card == card)
            plan_id = 0
            if len(option.plans) > 1:
                for plan in option.plans:
                    self.term.say(f"   plan {plan.id}: {self.render.plan(plan)}")
                name = self.render.card(card)
                chosen = self.term.choose(f"Which plan for {name}?", len(option.plans), back=True)
                if chosen is None:
                    continue
                plan_id = chosen
            try:
                response = handle.play(card, plan_id, expected_version=view.version)
            except BasraError as error:
                if isinstance(error, UnavailableError) and not error.reason:
                    raise  # no server: the match cannot go on
                self.term.say("!! " + explain(error, self.target))
                continue
            self.report(response.events, None if self.hot_seat else seat)
            return

    def pick_card(self, view: game_pb2.MatchView) -> game_pb2.Card:
        """A card of the hand, by number or by name."""
        count = len(view.hand)
        while True:
            answer = self.term.ask(
                f"Play which card? [{numbers(count)} or a card name, h = help]: "
            )
            if answer.lower() in ("h", "help", "?"):
                self.term.say(HELP)
                continue
            if answer.isdigit() and 1 <= int(answer) <= count:
                return view.hand[int(answer) - 1]
            try:
                named = Card.parse(answer)
            except InvalidCardError:
                self.term.say(f"Please type {a_number(count)} or a card name (h for help).")
                continue
            held = [c for c in view.hand if (c.rank - 1, c.suit - 1) == (named.rank, named.suit)]
            if held:
                return held[0]
            self.term.say(f"You do not hold {self.render.card(named)}.")


def opponents(view: game_pb2.MatchView) -> str:
    """Who the person (the API's seat 0) plays with and against, in words."""
    you = seat_name(0)
    if len(view.seats) == 2:
        return f"You are {you} against the bot."
    partners = [s.seat for s in view.seats if s.side == view.seats[0].side and s.seat != 0]
    if partners:
        return (
            f"You are {you}; the bot plays your partner, {seat_name(partners[0])}, and seats "
            + " and ".join(str(number(s.seat)) for s in view.seats if s.side != view.seats[0].side)
            + " against you."
        )
    others = ", ".join(str(number(s.seat)) for s in view.seats[1:])
    return f"You are {you} against the bots in seats {others}, each for itself."


def capture_mark(option: game_pb2.CardPlans) -> str:
    if not option.plans:
        return "(trails)"
    return "(takes)" if len(option.plans) == 1 else f"(takes: {len(option.plans)} plans)"


def run(
    target: str | None,
    out: TextIO,
    read: Callable[[str], str] = read_line,
    *,
    hot_seat: bool = False,
    seed: int | None = None,
    api_key: str | None = None,
    symbols: bool = True,
    resume: str | None = None,
    retry: RetryPolicy = QUICK,
    rules: str | None = None,
    seats: int = 0,
    bot: str | None = None,
) -> int:
    """Play one match in the terminal; returns the exit status (130 after Ctrl-C).

    ``rules`` and ``seats`` choose the rule system and the seat count (default: ERAM, two
    seats); the person plays the first seat (the API's seat 0) and the greedy bot every other
    seat (partner included).
    With ``bot`` (a level: random, greedy, strong) the server's bots play the other seats
    instead, their hands never sent here.
    """
    term = Terminal(read, out)
    if resume is not None:
        try:
            saved = Saved.load(resume)
        except (OSError, ValueError) as exc:
            term.say(f"Cannot resume match {resume}: {exc}")
            return 1
        target = target or saved.target
    target = target or "localhost:50051"
    with Client(target, api_key=api_key, retry=retry) as client:
        try:
            if resume is not None:
                match = client.match(saved.match_id, saved.tokens)
                hot_seat, humans = saved.hot_seat, saved.humans
                view = match.view()
                term.say(f"Resuming match {match.id}.")
            else:
                server_bots = (
                    dict.fromkeys(range(1, max(seats, 2)), bot) if bot and not hot_seat else None
                )
                match = client.create_match(seed=seed, rules=rules, seats=seats, bots=server_bots)
                view = match.view()
                humans = list(range(len(view.seats))) if hot_seat else [0]
                saved = Saved(target, match.id, match.tokens, humans, hot_seat)
            path = saved.save()
        except BasraError as error:
            term.say("!! " + explain(error, target))
            return 1
        table = Table(term, match, Renderer(symbols), humans, hot_seat, target)
        seats_text = ", ".join(str(number(s)) for s in humans)
        term.say(
            "Basra"
            + ("" if view.rules == "eram" else f" ({view.rules} rules)")
            + ". "
            + (f"Seats {seats_text} share this keyboard." if hot_seat else opponents(view))
        )
        if match.created is not None:
            table.report(match.created.events, humans[0] if not hot_seat else None)
        try:
            play_match(table)
        except (QuitRequest, KeyboardInterrupt) as stop:
            if isinstance(stop, KeyboardInterrupt):
                term.say()  # the prompt line was left open
            table.flush()
            term.say(
                f"Left the match {match.id}. Resume it with: {resume_command(target, match.id)}"
            )
            term.say(f"(its seat tokens are kept in {path}, readable by you only)")
            return 130 if isinstance(stop, KeyboardInterrupt) else 0
        except BasraError as error:
            table.flush()
            term.say("!! " + explain(error, target))
            term.say(f"Resume the match later with: {resume_command(target, match.id)}")
            return 1
        names = [
            f"player {number(s)}" if hot_seat else "you" if s in humans else "the bot"
            for s in range(len(view.seats))
        ]
        for line in Renderer(symbols).scoreboard(match.score(), names):
            term.say(line)
        path.unlink(missing_ok=True)
    return 0


def play_match(table: Table) -> None:
    """Play until the match is over (QuitRequest when the player leaves)."""
    match, term = table.match, table.term
    while True:
        view = match.view()
        if view.status == game_pb2.MATCH_STATUS_MATCH_OVER:
            table.flush()
            return
        if view.status == game_pb2.MATCH_STATUS_HAND_OVER:
            table.flush()
            if match.tokens.get(view.next_dealer) is None:  # a seat of the server's bots
                await_server_bot(table, view)  # the server's bot deals
                continue
            term.ask("Press Enter to deal the next hand: ")
            deal = match.deal(expected_version=view.version)
            table.report(deal.events, None if table.hot_seat else table.humans[0])
            continue
        seat = view.turn
        if seat in table.humans:
            if table.hot_seat:
                table.hand_over(seat)
            table.human_turn(seat)
        elif seat not in match.tokens:
            await_server_bot(table, view)
        else:
            handle = match.seat(seat)
            card, plan_id = greedy_choice(handle.plans())
            response = handle.play(card, plan_id, expected_version=view.version)
            table.report(response.events, table.humans[0])


def await_server_bot(table: Table, view: game_pb2.MatchView) -> None:
    """Wait for the server's bot to move (its play or deal), and report what it did: the
    events of the next version, from the person's WatchMatch stream."""
    events = []
    watch = table.match.watch(table.humans[0], after_version=view.version)
    try:
        for event in watch:
            events.append(event)
            if event.version_complete:
                break
    finally:
        watch.close()
    table.report(events, table.humans[0])
