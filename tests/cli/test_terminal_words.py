"""What people read in ``basra-engine demo`` and ``basra-engine play``: seats counted from 1,
prompts in plain words, the match first and the server's pace said."""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import grpc
import pytest

from basra.client import Match, demo, play
from basra.client.errors import BasraError, Details
from basra.client.render import Renderer, explain
from basra.service.config import Settings
from basra.v1 import game_pb2
from tests.support import ServerThread

# "seat 0", "Seat 0", "side 0", "seats 0+2", "(seat 0 looks away)", a dealer column of 0: the
# API's numbers, which people never read.
ZERO = re.compile(r"\b[Ss](eat|ide)s? 0\b|\b0\+\d")


@pytest.fixture(scope="module")
def server() -> Iterator[ServerThread]:
    running = ServerThread(Settings(allow_seeds=True, metrics_port=None, bot_pace_s=0))
    yield running
    running.stop()


@pytest.fixture(autouse=True)
def _state_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Left matches are kept under the test's own directory."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))


@pytest.fixture(scope="module")
def seedless() -> Iterator[ServerThread]:
    running = ServerThread(Settings(allow_seeds=False, metrics_port=None, bot_pace_s=0))
    yield running
    running.stop()


def dealers(text: str) -> set[str]:
    """The scoreboard's dealer column."""
    return set(re.findall(r"^ +\d+ +(\d+) +\d+ +\d+ +\d+$", text, re.M))


def test_the_demo_counts_seats_from_1(server: ServerThread) -> None:
    out = io.StringIO()
    assert demo.run(server.target, out, seed=17, symbols=False) == 0
    text = out.getvalue()
    assert not ZERO.search(text), ZERO.search(text)
    assert text.startswith("Match ")
    assert ": seat 1 greedy bot against seat 2 random bot\n" in text
    assert re.search(r"^== Hand 1: dealer seat [12], seat [12] leads; ", text, re.M)
    assert re.search(r"^ +1\. seat [12] \((greedy|random)\) plays ", text, re.M)
    assert re.search(r"^ +hand 1 scored: seat 1: .*; seat 2: ", text, re.M)
    assert "  hand dealer  seat 1  seat 2  carry" in text
    assert dealers(text) == {"1", "2"}
    assert re.search(r"^Seat [12] \((greedy|random) bot\) wins, \d+ to \d+\.$", text, re.M)


def test_the_demo_counts_seats_and_sides_of_partnerships_from_1(server: ServerThread) -> None:
    out = io.StringIO()
    assert demo.run(server.target, out, seed=4, rules="egyptian", seats=4, symbols=False) == 0
    text = out.getvalue()
    assert not ZERO.search(text), ZERO.search(text)
    assert (
        "egyptian rules in partnerships (seats 1+3, 2+4): "
        "seat 1 greedy, seat 2 random, seat 3 greedy, seat 4 random bots"
    ) in text
    assert all(f"seat {s} (" in text for s in (1, 2, 3, 4)), "every seat's bot plays"
    assert re.search(r"scored: side 1 \(seats 1\+3\): .*; side 2 \(seats 2\+4\): ", text)
    assert "  hand dealer  side 1+3  side 2+4  carry" in text
    assert dealers(text) <= {"1", "2", "3", "4"}
    assert re.fullmatch(
        r"Side 1 \(seat 1 greedy bot, seat 3 greedy bot\) wins, \d+ to \d+\."
        r"|Side 2 \(seat 2 random bot, seat 4 random bot\) wins, \d+ to \d+\.",
        text.splitlines()[-1],
    )


def test_a_watched_demo_counts_seats_from_1(server: ServerThread) -> None:
    out = io.StringIO()
    assert demo.run(server.target, out, seed=5, symbols=False, levels=("strong", "greedy")) == 0
    text = out.getvalue()
    assert not ZERO.search(text), ZERO.search(text)
    assert "the server's bots, seat 1 strong, seat 2 greedy\n" in text
    assert re.search(r"^ +\d+\. seat 1 \(strong\) plays \S+", text, re.M)
    assert re.search(r"^ +\d+\. seat 2 \(greedy\) plays \S+", text, re.M)


def test_the_terminal_player_counts_seats_from_1_and_offers_one_card_plainly(
    server: ServerThread,
) -> None:
    out = io.StringIO()
    prompts: list[str] = []

    def answer(prompt: str) -> str:
        prompts.append(prompt)
        if len(prompts) == 1:
            return "9"  # not a card of the hand: the player is told what to type
        return "1"  # the first card, its first plan, and Enter for every next hand

    status = play.run(server.target, out, answer, seed=6, rules="persian", seats=3, symbols=False)
    text = out.getvalue()
    assert status == 0, text
    assert not ZERO.search(text), ZERO.search(text)
    assert "Basra (persian rules). You are seat 1 against the bots in seats 2, 3" in text
    assert re.search(r"-- you are seat 1; dealer seat [123]; stock \d+", text)
    assert re.search(r"Scores: you \d+, seat 2 \d+, seat 3 \d+;", text)
    assert re.search(r"^   Seat 2: \d+ cards? in hand", text, re.M)
    assert re.search(r"^>> Seat 3 plays \S+: ", text, re.M)
    assert re.search(r"^>> You play \S+: ", text, re.M)
    assert "Please type a number from 1 to " in text
    # The last card of every deal: the prompt offers it as "1", not as a range "1-1".
    assert "Play which card? [1 or a card name, h = help]: " in prompts
    assert not any("1-1 " in p or "1-1," in p for p in prompts), prompts
    last = text.splitlines()[-1]
    assert re.fullmatch(r"Seat [123] \((you|the bot)\) wins, \d+ to \d+ - \d+\.", last), last


def test_a_hot_seat_match_counts_its_players_seats_from_1(server: ServerThread) -> None:
    out = io.StringIO()
    prompts: list[str] = []

    def answer(prompt: str) -> str:
        prompts.append(prompt)
        if len(prompts) > 6:
            return "q"
        return "" if prompt.startswith("Pass the keyboard") else "1"

    assert play.run(server.target, out, answer, seed=8, hot_seat=True, symbols=False) == 0
    text = out.getvalue()
    assert not ZERO.search(text + "".join(prompts)), ZERO.search(text + "".join(prompts))
    assert "Seats 1, 2 share this keyboard." in text
    handovers = [p for p in prompts if p.startswith("Pass the keyboard")]
    assert handovers, prompts
    assert all(
        re.fullmatch(
            r"Pass the keyboard to seat ([12]) \(seat (?!\1)[12] looks away\), "
            r"then press Enter: ",
            p,
        )
        for p in handovers
    ), handovers


def test_one_card_left_is_offered_as_1() -> None:
    prompts: list[str] = []
    answers = iter(["2", "1"])  # a number out of range, then the card

    def read(prompt: str) -> str:
        prompts.append(prompt)
        return next(answers)

    out = io.StringIO()
    table = play.Table(
        play.Terminal(read, out), cast(Match, None), Renderer(symbols=False), [0], False, "t"
    )
    view = game_pb2.MatchView(
        hand=[game_pb2.Card(rank=game_pb2.RANK_TEN, suit=game_pb2.SUIT_DIAMONDS)]
    )
    assert table.pick_card(view) == view.hand[0]
    assert prompts == ["Play which card? [1 or a card name, h = help]: "] * 2
    assert out.getvalue() == "Please type 1 or a card name (h for help).\n"


@pytest.mark.parametrize(
    ("reason", "metadata", "says"),
    [
        ("NOT_YOUR_TURN", {"turn": "0"}, "It is not your turn: seat 1 plays now."),
        ("MATCH_OVER", {"winner": "1"}, "The match is over: seat 2's side won."),
        ("INVITATION_CLAIMED", {"seat": "1"}, "Seat 2 was claimed already"),
        ("SEAT_TOKEN_REVOKED", {"seat": "3"}, "gave seat 4 to someone else"),
    ],
)
def test_errors_name_seats_as_people_count_them(
    reason: str, metadata: dict[str, str], says: str
) -> None:
    error = BasraError(
        grpc.StatusCode.FAILED_PRECONDITION, "raw", Details(reason=reason, metadata=metadata)
    )
    assert says in explain(error, "t")


def test_the_demo_starts_with_the_match_then_says_it_cannot_be_replayed(
    seedless: ServerThread,
) -> None:
    out = io.StringIO()
    assert demo.run(seedless.target, out, symbols=False) == 0
    first, second = out.getvalue().splitlines()[:2]
    assert re.fullmatch(r"Match \S+: seat 1 greedy bot against seat 2 random bot", first)
    assert second == (
        "This match cannot be replayed: the server draws its own deals (a server started with "
        "--allow-seeds replays a match from its seed)."
    )
    assert "Seed " not in out.getvalue()


def test_a_watched_demo_starts_with_the_match_then_says_it_cannot_be_replayed(
    seedless: ServerThread,
) -> None:
    out = io.StringIO()
    assert demo.run(seedless.target, out, symbols=False, levels=("greedy",)) == 0
    first, second = out.getvalue().splitlines()[:2]
    assert first.startswith("Match ")
    assert second.startswith("This match cannot be replayed: ")


def test_a_watched_demo_says_the_server_paces_its_bots_and_takes_no_pause_of_its_own(
    server: ServerThread,
) -> None:
    pauses: list[float] = []
    out = io.StringIO()
    status = demo.run(
        server.target, out, seed=3, pace=5, sleep=pauses.append, levels=("random", "greedy")
    )
    assert status == 0
    lines = out.getvalue().splitlines()
    assert lines[2] == (
        "The server waits before each of its bots' moves, so that people see every play (its "
        "pace: `basra-engine serve --bot-pace-seconds`, 0 to play at once). --pace paces only "
        "the demo's own bots."
    )
    assert pauses == [], "the server's bots keep the server's pace"
