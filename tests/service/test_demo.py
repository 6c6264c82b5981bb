"""``basra-engine demo``: the first thing a newcomer runs, against a running server."""

from __future__ import annotations

import io
import re
from dataclasses import replace
from typing import Any

import pytest

from basra.client import demo
from tests.service.conftest import BASE
from tests.support import ServerThread, free_port


def test_demo_plays_a_whole_match_and_prints_every_play_and_the_scoreboard(
    any_server: ServerThread,
) -> None:
    out = io.StringIO()
    assert demo.run(any_server.target, out, seed=17) == 0
    text = out.getvalue()
    plays = re.findall(
        r"^ +\d+\. seat [12] \((greedy|random)\) plays \S+: (takes|it stays on the floor)",
        text,
        re.M,
    )
    hands = re.findall(r"^== Hand \d+", text, re.M)
    assert len(plays) == 48 * len(hands)
    assert "Scoreboard" in text
    assert re.search(r"^Seat [12] \((greedy|random) bot\) wins, \d+ to \d+\.$", text, re.M)
    assert re.search("[\u2663\u2666\u2665\u2660]", text), "cards are shown with suit symbols"
    assert "Seed 17 (replay this match: basra-engine demo --seed 17)" in text


def test_the_same_seed_replays_the_same_match(server: ServerThread) -> None:
    first, second = io.StringIO(), io.StringIO()
    assert demo.run(server.target, first, seed=5, symbols=False) == 0
    assert demo.run(server.target, second, seed=5, symbols=False) == 0

    def plays(text: str) -> list[str]:
        return [line for line in text.splitlines() if not line.startswith("Match ")]

    assert plays(first.getvalue()) == plays(second.getvalue())
    assert not re.search("[\u2663\u2666\u2665\u2660]", first.getvalue()), "--cards letters"


def test_without_a_seed_the_demo_prints_the_one_it_chose(server: ServerThread) -> None:
    out = io.StringIO()
    assert demo.run(server.target, out) == 0
    (seed,) = re.findall(
        r"^Seed (\d+) \(replay this match: basra-engine demo --seed \1\)$", out.getvalue(), re.M
    )
    replay = io.StringIO()
    assert demo.run(server.target, replay, seed=int(seed)) == 0
    assert replay.getvalue().splitlines()[1:] == out.getvalue().splitlines()[1:]


def test_a_server_without_seeds_says_the_match_cannot_be_replayed() -> None:
    running = ServerThread(replace(BASE, allow_seeds=False))
    try:
        out = io.StringIO()
        assert demo.run(running.target, out) == 0
        assert "cannot be replayed" in out.getvalue()
        assert "Seed " not in out.getvalue()
    finally:
        running.stop()


@pytest.mark.parametrize("pace", [0.25])
def test_pace_pauses_between_plays(server: ServerThread, pace: float) -> None:
    pauses: list[float] = []
    out = io.StringIO()
    assert demo.run(server.target, out, seed=3, pace=pace, sleep=pauses.append) == 0
    plays = len(re.findall(r"^ +\d+\. seat", out.getvalue(), re.M))
    hands = len(re.findall(r"^== Hand \d+", out.getvalue(), re.M))
    assert pauses == [pace] * (plays - hands)  # between two plays of a hand


def test_demo_explains_an_unreachable_server() -> None:
    out = io.StringIO()
    target = f"127.0.0.1:{free_port()}"
    assert demo.run(target, out) == 1
    assert out.getvalue() == f"error: No server answers at {target}: start one with `make run`.\n"


def test_a_missing_api_key_tells_the_user_to_pass_one(start_server: Any) -> None:
    running = start_server(api_key="operators-only")
    out = io.StringIO()
    assert demo.run(running.target, out) == 1
    assert "This server needs an API key to create matches: pass --api-key." in out.getvalue()
    assert demo.run(running.target, io.StringIO(), api_key="operators-only", seed=2) == 0


def test_the_demo_pits_two_levels_of_the_servers_bots_against_each_other(
    server: ServerThread,
) -> None:
    out = io.StringIO()
    assert demo.run(server.target, out, seed=5, symbols=False, levels=("strong", "greedy")) == 0
    text = out.getvalue()
    assert "the server's bots, seat 1 strong, seat 2 greedy" in text
    assert re.search(r"seat 1 \(strong\) plays \S+", text)
    assert re.search(r"seat 2 \(greedy\) plays \S+", text)
    assert "Scoreboard" in text
