"""``basra-engine play`` driven through a pseudo-terminal, as a person would use it."""

from __future__ import annotations

import os
import pty
import re
import select
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from basra.service.config import Settings
from tests.support import ServerThread

COMMAND = shutil.which("basra-engine", path=str(Path(sys.executable).parent)) or "basra-engine"


class Session:
    """The command running on a pseudo-terminal: read until a pattern, type answers."""

    def __init__(self, *args: str) -> None:
        self.master, slave = pty.openpty()
        self.process = subprocess.Popen(
            [COMMAND, "play", *args],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env={**os.environ, "PYTHONIOENCODING": "utf-8", "LANG": "C.UTF-8"},
            close_fds=True,
        )
        os.close(slave)
        self.seen = ""
        self.position = 0

    def expect(self, *patterns: str, timeout: float = 20) -> str:
        """Read until one of the patterns appears after the last match; returns the pattern
        that matched first in the text."""
        deadline = time.monotonic() + timeout
        while True:
            hits = [
                (m.start(), m.end(), p)
                for p in patterns
                if (m := re.compile(p).search(self.seen, self.position))
            ]
            if hits:
                _, end, pattern = min(hits)
                self.position = end
                return pattern
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"none of {patterns} in:\n{self.seen[self.position :][-2000:]}"
            ready, _, _ = select.select([self.master], [], [], remaining)
            if ready:
                try:
                    chunk = os.read(self.master, 65536)
                except OSError:  # the program ended and the terminal closed
                    chunk = b""
                assert chunk, f"the program ended before {patterns}:\n{self.seen[-2000:]}"
                self.seen += chunk.decode("utf-8", "replace")

    def type(self, text: str) -> None:
        os.write(self.master, (text + "\n").encode())

    def close(self) -> int:
        status = self.process.wait(timeout=20)
        os.close(self.master)
        return status


@pytest.fixture
def server() -> Iterator[ServerThread]:
    running = ServerThread(Settings(allow_seeds=True, metrics_port=None))
    yield running
    running.stop()


CARD = r"Play which card\? \[1-(\d)"
PLAN = r"Which plan for .*\? \[1-\d, b = back"
DEAL = r"Press Enter to deal the next hand"
END = r"Seat [01] \((you|the bot)\) wins, \d+ to \d+\."


def test_a_person_plays_a_whole_match_against_the_bot(server: ServerThread) -> None:
    # Seed 6 with this choice policy meets a card with several plans (rare on real floors);
    # everything is seeded, so the session is the same every run.
    session = Session("--target", server.target, "--seed", "6")
    session.expect(CARD)
    assert re.search("[\u2663\u2666\u2665\u2660]", session.seen), "cards show suit symbols"
    session.type("7")
    session.expect(r"Please type a number from 1 to \d\.")
    went_back = False
    turns = 0
    while True:
        found = session.expect(CARD, PLAN, DEAL, END, timeout=30)
        if found == END:
            break
        if found == PLAN:
            assert re.search(r"plan 1: takes .*\n.*plan 2: takes", session.seen[-800:])
            if not went_back:
                session.type("b")  # change one's mind once: back to the card choice
                went_back = True
                continue
            session.type("1")
        elif found == DEAL:
            session.type("")
        else:
            count = int(re.findall(CARD, session.seen[: session.position])[-1])
            session.type(str(turns % count + 1))  # vary the card, deterministically
            turns += 1
    assert session.close() == 0
    assert turns >= 48  # at least two hands of 24 turns for this seat
    assert went_back
    assert "Scoreboard" in session.seen
    assert re.search(r">> You play \S+: (takes|it stays on the floor)", session.seen)
    assert re.search(r">> Seat 1 plays \S+: ", session.seen)


def test_hot_seat_passes_the_keyboard_and_q_leaves(server: ServerThread) -> None:
    session = Session("--target", server.target, "--seed", "8", "--hot-seat")
    for _ in range(3):
        session.expect(r"Seat [01], your turn \(the other player looks away\)")
        session.type("")
        session.expect(CARD)
        session.type("1")
        if session.expect(PLAN, r"\n>> You play") == PLAN:
            session.type("1")
    session.expect(r"Seat [01], your turn")
    session.type("q")
    session.expect(r"Left the match [A-Za-z0-9_-]{22}\.")
    assert session.close() == 0


def test_a_server_rejection_is_explained() -> None:
    running = ServerThread(Settings(api_key="operators-only", metrics_port=None))
    try:
        session = Session("--target", running.target)
        session.expect(r"This server needs an API key to create matches: pass --api-key\.")
        assert session.close() == 1
    finally:
        running.stop()


def test_an_unreachable_server_is_explained() -> None:
    session = Session("--target", "127.0.0.1:1")
    session.expect(r"No server answers at 127\.0\.0\.1:1: start one with `make run`\.", timeout=30)
    assert session.close() == 1
