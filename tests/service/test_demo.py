"""``basra-engine demo``: the first thing a newcomer runs, against a running server."""

from __future__ import annotations

import io
import re

from basra.client import demo
from tests.support import ServerThread


def test_demo_plays_a_whole_match_and_prints_every_play_and_the_scoreboard(
    any_server: ServerThread,
) -> None:
    out = io.StringIO()
    assert demo.run(any_server.target, out, seed=17) == 0
    text = out.getvalue()
    plays = re.findall(
        r"^ +\d+\. seat [01] \((greedy|random)\) plays \S+: (takes|trails)", text, re.M
    )
    hands = re.findall(r"^== Hand \d+", text, re.M)
    assert len(plays) == 48 * len(hands)
    assert "Scoreboard" in text
    assert re.search(r"^Seat [01] \((greedy|random) bot\) wins, \d+ to \d+\.$", text, re.M)
    assert re.search("[\u2663\u2666\u2665\u2660]", text), "cards are shown with suit symbols"


def test_demo_explains_an_unreachable_server() -> None:
    out = io.StringIO()
    assert demo.run("127.0.0.1:1", out, connect_timeout_s=1) == 1
    assert "no server answers at 127.0.0.1:1" in out.getvalue()
