"""``basra-engine play`` driven through a pseudo-terminal, as a person would use it."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from basra.service.config import Settings
from tests.support import ServerThread, at_a_terminal

# The terminal client through a pseudo-terminal: `make test-all` (docs/testing.md).
pytestmark = pytest.mark.full

COMMAND = shutil.which("basra-engine", path=str(Path(sys.executable).parent)) or "basra-engine"


class Session:
    """The command running on a pseudo-terminal: read until a pattern, type answers."""

    running: ClassVar[list[Session]] = []

    def __init__(self, *args: str, state: Path | None = None) -> None:
        """``state``: where the command keeps left matches (XDG_STATE_HOME)."""
        self.master, slave = pty.openpty()
        self.process = subprocess.Popen(
            at_a_terminal([COMMAND, "play", *args]),
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env={
                **os.environ,
                "PYTHONIOENCODING": "utf-8",
                "LANG": "C.UTF-8",
                **({"XDG_STATE_HOME": str(state)} if state else {}),
            },
            close_fds=True,
        )
        os.close(slave)
        Session.running.append(self)
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
        Session.running.remove(self)
        return status


@pytest.fixture(autouse=True)
def _no_session_outlives_its_test() -> Iterator[None]:
    """A failed test leaves no program running (its warning would fail a later test)."""
    yield
    while Session.running:
        session = Session.running.pop()
        session.process.kill()
        session.process.wait(timeout=20)
        os.close(session.master)


@pytest.fixture
def server() -> Iterator[ServerThread]:
    running = ServerThread(Settings(allow_seeds=True, metrics_port=None))
    yield running
    running.stop()


# "[1-4 or a card name" offers four cards, "[1 or a card name" the last one.
CARD = r"Play which card\? \[(?:1-)?(\d) or"
PLAN = r"Which plan for .*\? \[1-\d, b = back"
DEAL = r"Press Enter to deal the next hand"
END = r"Seat [12] \((you|the bot)\) wins, \d+ to \d+\."


def test_a_person_plays_a_whole_match_against_the_bot(server: ServerThread) -> None:
    # Seed 6 with this choice policy meets a card with several plans (rare on real floors);
    # everything is seeded, so the session is the same every run.
    session = Session("--target", server.target, "--seed", "6")
    session.expect(CARD)
    assert re.search("[\u2663\u2666\u2665\u2660]", session.seen), "cards show suit symbols"
    session.type("7")
    session.expect(r"Please type a number from 1 to \d or a card name \(h for help\)\.")
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
    assert re.search(r">> Seat 2 plays \S+: ", session.seen)


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


CLEAR = "\x1b[2J\x1b[H"
HANDOVER = r"Pass the keyboard to seat (\d) \(seat (\d) looks away\), then press Enter: "
HAND = re.compile(r"you are seat (\d).*?Your hand: ([^\n]*)", re.S)


def last_screen(session: Session) -> str:
    """What the terminal shows now: everything after the last clear."""
    return session.seen[: session.position].rsplit(CLEAR, 1)[-1]


def test_hot_seat_clears_the_screen_at_every_handover(server: ServerThread, tmp_path: Path) -> None:
    session = Session("--target", server.target, "--seed", "8", "--hot-seat", state=tmp_path)
    seats_played = []
    session.expect(HANDOVER)
    for _ in range(4):
        handover = last_screen(session)
        # The handover screen is a clean one: no hand of anyone, only the public plays.
        assert "Your hand" not in handover
        (seat, _away) = re.findall(HANDOVER, handover)[-1]
        session.type("")
        session.expect(CARD)
        (shown,) = HAND.findall(last_screen(session))  # one hand shown: the new player's
        assert shown[0] == seat
        seats_played.append(seat)
        session.type("1")
        if session.expect(PLAN, HANDOVER) == PLAN:
            session.type("1")
            session.expect(HANDOVER)
    assert seats_played[:2] in (["1", "2"], ["2", "1"])
    assert len(set(seats_played)) == 2
    # The plays are told on the next handover screen, once each, as seat N's plays (seats
    # counted from 1).
    assert len(re.findall(r">> Seat [12] plays \S+: ", session.seen)) >= 3
    assert ">> You play" not in session.seen
    session.type("q")
    session.expect(r"Left the match ([A-Za-z0-9_-]{22})\. Resume it with: ")
    assert session.close() == 0


def test_a_left_match_is_resumed_from_a_file_only_its_owner_reads(
    server: ServerThread, tmp_path: Path
) -> None:
    session = Session("--target", server.target, "--seed", "9", state=tmp_path)
    session.expect(CARD)
    session.type("h")
    session.expect(r"Type the number of a card \(1, 2, \.\.\.\) or its name")
    hand = HAND.findall(last_screen(session))[-1][1]
    assert re.search(r"1\) \S+ \((takes|trails|takes: \d+ plans)\)", hand), hand
    session.type("q")
    session.expect(r"Left the match ([A-Za-z0-9_-]{22})\. Resume it with: basra-engine play ")
    match_id = re.findall(r"Left the match ([A-Za-z0-9_-]{22})\.", session.seen)[-1]
    session.expect(rf"--resume={re.escape(match_id)}")
    session.expect(r"its seat tokens are kept in (\S+), readable by you only")
    assert session.close() == 0
    saved = tmp_path / "basra-engine" / f"{match_id}.json"
    assert saved.stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "basra-engine").stat().st_mode & 0o077 == 0
    assert set(json.loads(saved.read_text())["tokens"]) == {"0", "1"}

    again = Session(f"--resume={match_id}", state=tmp_path)
    again.expect(rf"Resuming match {match_id}\.")
    again.expect(CARD)
    (seat, cards) = HAND.findall(last_screen(again))[-1]
    assert seat == "1"
    # A card may be typed by its name: the first card of the hand, as shown.
    name = re.findall(r"1\) (\S+) ", cards + " ")[0]
    again.type(
        name.replace("\u2663", "C")
        .replace("\u2666", "D")
        .replace("\u2665", "H")
        .replace("\u2660", "S")
    )
    found = again.expect(PLAN, rf">> You play {re.escape(name)}: ")
    if found == PLAN:
        again.type("1")
        again.expect(rf">> You play {re.escape(name)}: ")
    again.expect(CARD)
    again.process.send_signal(signal.SIGINT)  # Ctrl-C
    again.expect(r"Left the match .*Resume it with")
    assert again.close() == 130
    assert "Traceback" not in again.seen


def test_a_server_that_dies_mid_match_is_reported_as_unreachable(tmp_path: Path) -> None:
    running = ServerThread(Settings(allow_seeds=True, metrics_port=None))
    session = Session("--target", running.target, "--seed", "4", state=tmp_path)
    session.expect(CARD)
    running.stop()
    session.type("1")
    session.expect(
        rf"No server answers at {re.escape(running.target)}: start one with `make run`\."
    )
    session.expect(r"Resume the match later with: basra-engine play --target \S+ --resume=")
    assert session.close() == 1
    assert "refused" not in session.seen


def test_ctrl_c_is_honoured_whichever_thread_the_signal_lands_on(
    server: ServerThread, tmp_path: Path
) -> None:
    session = Session("--target", server.target, "--seed", "3", state=tmp_path)
    session.expect(CARD)
    pid = session.process.pid
    threads = [int(t) for t in os.listdir(f"/proc/{pid}/task") if int(t) != pid]
    assert threads, "gRPC runs threads beside the main one"
    # kill() with a thread's id hands the process-wide signal to that thread first: the main
    # thread, blocked reading the terminal, is not woken by it.
    os.kill(threads[0], signal.SIGINT)
    session.expect(r"Left the match .*Resume it with")
    assert session.close() == 130


def test_a_person_plays_a_whole_match_against_the_servers_strong_bot() -> None:
    server = ServerThread(Settings(allow_seeds=True, metrics_port=None, bot_pace_s=0))
    try:
        session = Session("--target", server.target, "--seed", "6", "--bot", "strong")
        turns = 0
        while True:
            found = session.expect(CARD, PLAN, DEAL, END, timeout=60)
            if found == END:
                break
            if found == PLAN:
                session.type("1")
            elif found == DEAL:
                session.type("")
            else:
                count = int(re.findall(CARD, session.seen[: session.position])[-1])
                session.type(str(turns % count + 1))
                turns += 1
        assert session.close() == 0
        assert turns >= 24
        assert re.search(r">> Seat 2 plays \S+: ", session.seen), "the server's bot's plays"
        assert server.server.metrics.bot_moves.labels("strong", "applied").value >= turns
    finally:
        server.stop()
