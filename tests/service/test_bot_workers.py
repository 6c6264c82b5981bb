"""The strong bots' thinking processes are supervised: one killed mid-search (kill -9, as the
kernel's out-of-memory killer does) is replaced and its move thought again, a stuck search
makes the greedy move once its deadline passes, and a replica whose thinking processes cannot
be started is not ready, and is again once they can be.

Real processes, found as this process's multiprocessing children (the servers run in-process).
A search is made to hang by stopping its process (SIGSTOP): nothing here is timed."""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import sys
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator

import pytest
import redis

from basra.engine import CARDS, Play, apply, encode
from basra.service import bots
from basra.v1 import game_pb2
from tests.service.driver import audit_states
from tests.service.test_bots import (
    PERSON,
    STRONG,
    first_bot_turn,
    moved_past,
    person_move,
    persons_turn,
    view,
)
from tests.support import ServerThread, sample_value, wait_until


def thinking_processes() -> list[multiprocessing.process.BaseProcess]:
    """The live thinking processes of the servers in this process."""
    return [p for p in multiprocessing.active_children() if p.name == bots.WORKER_NAME]


def the_thinking_process() -> int:
    """The pid of the one thinking process that runs (and says it is ready: it thought)."""
    wait_until(lambda: len(thinking_processes()) == 1, 30, "one thinking process")
    (process,) = thinking_processes()
    assert process.pid is not None
    return process.pid


def fallbacks(server: ServerThread, reason: str) -> float:
    return server.server.metrics.bot_fallbacks.labels(reason).value


def strong_moves(server: ServerThread) -> float:
    return server.server.metrics.bot_moves.labels("strong", "applied").value


class Records(logging.Handler):
    """The log records of ``basra.bots``, whatever the process's logging setup."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def warnings(self) -> list[logging.LogRecord]:
        return [r for r in self.records if r.levelno >= logging.WARNING]


@pytest.fixture
def bot_logs() -> Iterator[Records]:
    handler = Records()
    logger = logging.getLogger("basra.bots")
    logger.addHandler(handler)
    level = logger.level
    logger.setLevel(logging.DEBUG)
    yield handler
    logger.removeHandler(handler)
    logger.setLevel(level)


def warm(server: ServerThread, match_id: str, token: str, seen: game_pb2.MatchView) -> None:
    """The person plays and the strong bot answers: its thinking process is up."""
    person_move(server, match_id, token, seen)
    wait_until(moved_past(server, match_id, token, seen.version + 1), 60, "the bot's first move")


def finish(server: ServerThread, match_id: str, token: str) -> game_pb2.MatchView:
    """Play the person's seat to the end of the match, the strong bot answering each time."""
    seen = view(server, match_id, token)
    while seen.status != game_pb2.MATCH_STATUS_MATCH_OVER:
        if persons_turn(seen, 0):
            person_move(server, match_id, token, seen)
        else:
            wait_until(moved_past(server, match_id, token, seen.version), 60, "the bot's move")
        seen = view(server, match_id, token)
    return seen


def test_a_thinking_process_killed_mid_search_is_replaced_and_the_move_thought_again(
    start_server: Callable[..., ServerThread], redis_url: str, bot_logs: Records
) -> None:
    # A deadline no search reaches here: the move must be thought again, not made greedy.
    server = start_server(redis_url=redis_url, bot_move_deadline_s=600.0)
    created = first_bot_turn(server, [PERSON, STRONG])
    match_id, token = created.match_id, created.seat_tokens[0].token
    warm(server, match_id, token, created.view)
    pid = the_thinking_process()

    # The next search hangs in it (stopped), and the process is killed while it holds it.
    os.kill(pid, signal.SIGSTOP)
    seen = view(server, match_id, token)
    moves = strong_moves(server)
    person_move(server, match_id, token, seen)
    metrics = server.server.metrics
    wait_until(lambda: sample_value(metrics.bot_thinking) == 1, 30, "the search handed over")
    os.kill(pid, signal.SIGKILL)

    wait_until(lambda: strong_moves(server) == moves + 1, 60, "the strong bot's move")
    assert view(server, match_id, token).version == seen.version + 2
    assert metrics.bot_worker_deaths.value == 1
    assert sum(fallbacks(server, r) for r in ("deadline", "worker_died", "unavailable")) == 0
    assert the_thinking_process() != pid
    assert server.server.readiness.serving

    # Strong bots go on playing: the match is played out.
    final = finish(server, match_id, token)
    assert final.HasField("winner")
    assert metrics.bot_worker_deaths.value == 1
    # One warning for the incident, without a traceback.
    (died,) = [r for r in bot_logs.warnings() if "died" in r.getMessage()]
    assert "tried again" in died.getMessage()
    assert died.exc_info is None
    assert getattr(died, "exit_code", None) == -signal.SIGKILL


def test_a_stuck_search_makes_the_greedy_move_counted_and_its_process_is_replaced(
    start_server: Callable[..., ServerThread], redis_url: str, bot_logs: Records
) -> None:
    server = start_server(redis_url=redis_url, bot_move_deadline_s=1.0)
    created = first_bot_turn(server, [PERSON, STRONG])
    match_id, token = created.match_id, created.seat_tokens[0].token
    warm(server, match_id, token, created.view)
    pid = the_thinking_process()
    late = fallbacks(server, bots.DEADLINE)

    os.kill(pid, signal.SIGSTOP)  # the search never ends
    seen = view(server, match_id, token)
    person_move(server, match_id, token, seen)
    wait_until(moved_past(server, match_id, token, seen.version + 1), 60, "the bot's move")

    assert fallbacks(server, bots.DEADLINE) == late + 1
    # The move made is the greedy bot's, from the same view.
    states = audit_states(redis.Redis.from_url(redis_url), match_id)
    version = seen.version + 1
    before = states[version]
    card, plan = bots.think(encode(before), 1, "greedy", match_id, version, 1.0)
    play = Play(1, CARDS[card], plan) if plan else Play(1, CARDS[card], trail=True)
    assert apply(before, play)[0] == states[version + 1]
    assert any("deadline" in r.getMessage() for r in bot_logs.warnings())
    # A new process thinks the next moves.
    wait_until(lambda: the_thinking_process() != pid, 30, "a new thinking process")
    assert server.server.metrics.bot_worker_deaths.value == 0, "a stopped search is no death"
    final = finish(server, match_id, token)
    assert final.HasField("winner")


def healthz(server: ServerThread) -> int:
    try:
        with urllib.request.urlopen(server.http_url + "/healthz", timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return error.code


def test_a_replica_whose_thinking_processes_cannot_start_is_not_ready_until_they_can(
    start_server: Callable[..., ServerThread], redis_url: str
) -> None:
    server = start_server(redis_url=redis_url)
    created = first_bot_turn(server, [PERSON, STRONG])
    match_id, token = created.match_id, created.seat_tokens[0].token
    warm(server, match_id, token, created.view)
    wait_until(lambda: server.server.readiness.serving, 30, "ready")
    pid = the_thinking_process()

    # The next processes are started with an "interpreter" that exits at once.
    multiprocessing.set_executable("/bin/false")
    try:
        os.kill(pid, signal.SIGKILL)
        wait_until(lambda: not server.server.readiness.serving, 30, "not ready")
        assert healthz(server) == 503
        assert sample_value(server.server.metrics.bot_workers_ready) == 0
        # Meanwhile the strong bot makes greedy moves: the match goes on.
        seen = view(server, match_id, token)
        person_move(server, match_id, token, seen)
        wait_until(moved_past(server, match_id, token, seen.version + 1), 60, "the bot's move")
        assert fallbacks(server, bots.UNAVAILABLE) == 1
    finally:
        multiprocessing.set_executable(sys.executable)

    wait_until(lambda: server.server.readiness.serving, 60, "ready again")
    assert healthz(server) == 200
    assert sample_value(server.server.metrics.bot_workers_ready) == 1
    # ...and strong bots think again.
    moves = strong_moves(server)
    seen = view(server, match_id, token)
    while strong_moves(server) == moves:
        assert seen.status != game_pb2.MATCH_STATUS_MATCH_OVER, "no strong move to the end"
        if persons_turn(seen, 0):
            person_move(server, match_id, token, seen)
        else:
            wait_until(moved_past(server, match_id, token, seen.version), 60, "the bot's move")
        seen = view(server, match_id, token)
    assert fallbacks(server, bots.UNAVAILABLE) == 1
