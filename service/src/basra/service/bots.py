"""Seats the service plays: deciding a bot's move, off the event loop, and when to make it.

A bot seat's move is a change like any other (``changes.Changes.change``): the same
compare-and-set on the version, the same events, and a request_id derived from the match and the
version it answers (``request_id``), so two replicas that both make it apply it once, and a
repeated attempt is answered as the first.

Stateless: the replica that commits a change after which a bot must act (its turn, or its deal
of the next hand) makes the bot's move after the pace (``Settings.bot_pace_s``). A replica that
stops before then leaves it to whichever replica next reads the match for any call or stream:
every load of a match with bot seats is a ``notice``.

The bot decides from its seat's view only (``basra.engine.bots.choose``): the state goes to the
thinking process because that process builds the view, and no card of it leaves the server.
The random and greedy levels choose on the event loop (they cost microseconds); the strong
level searches for tens of milliseconds of CPU, which would stall every other call of the
replica (compiled engine code holds the GIL: a thread would not help), so it runs in a small
process pool, at most ``Settings.bot_max_thinking`` moves submitted at once.

Traced (``basra.service.tracing``), each move is a ``basra.bot.move`` span: the root of a trace
of its own, linked to the span that was current when the replica noticed the move was due (the
call whose change handed the bot its turn, or the bot's previous move), with the thinking as a
``basra.bot.think`` child and the commit's engine and store spans below it. The task that makes
a match's moves runs in a context of its own: none of its work is the noticing call's.
"""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import logging
import multiprocessing
import random
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ProcessPoolExecutor
from typing import Final, NamedTuple

from opentelemetry import context, trace
from opentelemetry.trace import INVALID_SPAN_CONTEXT, Span, SpanContext, Status, StatusCode

from basra.engine import Phase, State, decode, view
from basra.engine.bots import choose
from basra.engine.game import next_dealer
from basra.service.metrics import Metrics
from basra.service.tracing import Tracing

log = logging.getLogger("basra.bots")

LEVELS: Final = {1: "random", 2: "greedy", 3: "strong"}
"""BotLevel numbers (basra.v1.BotLevel) to the engine's level names."""
_OFF_LOOP: Final = frozenset({"strong"})
"""The levels that think in the process pool."""


class Move(NamedTuple):
    """What a bot must do at a version of a match."""

    seat: int
    level: str
    deal: bool
    """Deal the next hand (else play a card)."""


def due(state: State, bots: bytes) -> Move | None:
    """The bot move ``state`` waits for, if any: the bot to play, or the bot that deals the next
    hand once a hand is over (any seat may deal; a bot deals the hands it is next to deal)."""
    if not bots or state.phase is Phase.MATCH_OVER:
        return None
    deal = state.phase is Phase.HAND_OVER
    seat = next_dealer(state) if deal else state.turn
    level = bots[seat] if seat < len(bots) else 0
    return Move(seat, LEVELS[level], deal) if level else None


def request_id(match_id: str, version: int) -> str:
    """The request_id of the bot move answering ``version``: the same on every replica."""
    return f"bot-{match_id}-{version}"


def think(
    state_bytes: bytes, seat: int, level: str, match_id: str, version: int, seconds: float
) -> tuple[int, int]:
    """The bot's (card index, plan id; 0 trails) for the match at ``version``.

    Runs in a worker process for the strong level. The generator is seeded from the match id
    and the version, never from the match's seed, so every replica chooses the same move from
    the same view (the strong level's time cap aside). ``gone`` is every card captured this
    hand, each side's pile: each capture happened in front of every seat.
    """
    state = decode(state_bytes)
    gone = 0
    for pile in state.captured:
        gone |= pile
    digest = hashlib.sha256(f"{match_id}:{version}".encode()).digest()
    rng = random.Random(int.from_bytes(digest[:8], "big"))  # noqa: S311 - a bot's draws, no secret
    card, plan = choose(level, view(state, seat), state.profile, rng, seconds=seconds, gone=gone)
    return int(card), plan


Commit = Callable[[str, int, Move, tuple[int, int] | None], Awaitable[bool]]
"""Makes a bot move at a version (the card and plan of a play, None for a deal); True when it
was applied, False when the match had moved on."""


class Current(NamedTuple):
    """A match as a bot move starts from."""

    version: int
    state: State
    data: bytes
    """The state's bytes (engine.codec)."""
    bots: bytes
    """Per seat, its BotLevel (0: a person)."""


Read = Callable[[str], Awaitable[Current | None]]
"""The match as this replica last knew it (or loaded), or None when it is gone."""


class BotPlayer:
    """Makes the bot moves this replica owes: at most one task per match."""

    def __init__(
        self,
        metrics: Metrics,
        *,
        pace_s: float,
        workers: int,
        max_thinking: int,
        strong_seconds: float,
        tracing: Tracing | None = None,
    ) -> None:
        self._metrics = metrics
        self._tracing = tracing
        self._pace_s = pace_s
        self._workers = workers
        self._strong_seconds = strong_seconds
        self._slots = asyncio.Semaphore(max_thinking)
        self._pool: ProcessPoolExecutor | None = None
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._commit: Commit | None = None
        self._read: Read | None = None

    def bind(self, read: Read, commit: Commit) -> None:
        """Give the player the servicer's paths: read the match, commit a move."""
        self._read, self._commit = read, commit

    def notice(self, match_id: str, state: State, bots: bytes) -> None:
        """Make sure the bot move ``state`` waits for, if any, gets made: start a task for the
        match unless this replica has one running (which reads the match again before it acts)."""
        if not bots or match_id in self._tasks or due(state, bots) is None:
            return
        cause = INVALID_SPAN_CONTEXT
        if self._tracing is not None:
            cause = trace.get_current_span().get_span_context()
        # A context of its own: the task's spans and log lines are none of the noticing call's.
        task = asyncio.get_running_loop().create_task(
            self._run(match_id, cause), context=contextvars.Context()
        )
        self._tasks[match_id] = task

    async def _run(self, match_id: str, cause: SpanContext) -> None:
        """Make the match's bot moves while one is due. ``cause``: the span of what handed the
        first one its turn; each move's span is the cause of the next."""
        assert self._read is not None
        started = time.monotonic()
        try:
            while True:
                current = await self._read(match_id)
                if current is None:
                    return
                move = due(current.state, current.bots)
                if move is None:
                    return
                span = token = None
                if self._tracing is not None:
                    span = self._tracing.bot_move(
                        match_id, current.version, move.level, move.seat, move.deal, cause
                    )
                    cause = span.get_span_context()
                    token = context.attach(trace.set_span_in_context(span))
                try:
                    await self._move(match_id, current, move, started, span)
                except Exception as exc:
                    if span is not None:
                        # Its type only: an error's text may quote a hand's cards.
                        span.set_attribute("error.type", type(exc).__name__)
                        span.set_status(Status(StatusCode.ERROR, type(exc).__name__))
                    # The next call on the match (any replica) notices the move still due.
                    log.warning("bot move failed", exc_info=True, extra={"match_id": match_id})
                    return
                finally:
                    if span is not None and token is not None:
                        context.detach(token)
                        span.end()
                started = time.monotonic()
        except Exception:
            # A failed read: the next call on the match (any replica) notices the move still due.
            log.warning("bot move failed", exc_info=True, extra={"match_id": match_id})
        finally:
            self._tasks.pop(match_id, None)

    async def _move(
        self, match_id: str, current: Current, move: Move, started: float, span: Span | None
    ) -> None:
        """Make ``move`` at the ``current`` match, the pace counted from ``started``."""
        assert self._commit is not None
        version = current.version
        play = None
        if not move.deal:
            play = await self._think(current.data, move, match_id, version, span)
        # The pace runs from the change that handed the bot its turn; thinking counts.
        wait = self._pace_s - (time.monotonic() - started)
        if wait > 0:
            await asyncio.sleep(wait)
        applied = await self._commit(match_id, version, move, play)
        outcome = "applied" if applied else "lost"
        self._metrics.bot_moves.labels(move.level, outcome).inc()
        if span is not None:
            span.set_attribute("basra.bot.outcome", outcome)

    async def _think(
        self, data: bytes, move: Move, match_id: str, version: int, span: Span | None
    ) -> tuple[int, int]:
        start = time.perf_counter()
        args = (data, move.seat, move.level, match_id, version, self._strong_seconds)
        pool = move.level in _OFF_LOOP
        thinking = None
        if span is not None and self._tracing is not None:
            thinking = self._tracing.bot_think(span, move.level, pool)
        try:
            if not pool:
                choice = think(*args)
            else:
                async with self._slots:
                    executor = self._executor()
                    choice = await asyncio.get_running_loop().run_in_executor(
                        executor, think, *args
                    )
        finally:
            if thinking is not None:
                thinking.end()
        self._metrics.bot_think.labels(move.level).observe(time.perf_counter() - start)
        return choice

    def _executor(self) -> ProcessPoolExecutor:
        if self._pool is None:
            # Spawned, not forked: the server's process holds gRPC's threads.
            self._pool = ProcessPoolExecutor(
                self._workers, mp_context=multiprocessing.get_context("spawn")
            )
        return self._pool

    async def close(self) -> None:
        """Stop making moves (the server is stopping): a move not made is left to the next
        replica that reads the match."""
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
