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
replica (compiled engine code holds the GIL: a thread would not help), so it runs in a few
supervised processes (``Thinkers``): a process that dies is replaced and the move it was
thinking is tried again; a search that runs past its deadline is stopped (its process
replaced) and the bot makes the greedy move instead. The moves waiting for a process form a
bounded queue (``ThinkingQueue``) in which the moves of matches with a person come first.

A match of bots only costs the replica CPU for as long as it lasts, with nobody waiting on it:
the replica that creates one counts it against its creator's share and its own
(``BotOnlyMatches``) until it ends.

Traced (``basra.service.tracing``), each move is a ``basra.bot.move`` span: the root of a trace
of its own, linked to the span that was current when the replica noticed the move was due (the
call whose change handed the bot its turn, or the bot's previous move), with the thinking as a
``basra.bot.think`` child and the commit's engine and store spans below it. The task that makes
a match's moves runs in a context of its own: none of its work is the noticing call's.
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
import hashlib
import logging
import multiprocessing
import multiprocessing.context
import os
import random
import signal
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Final, Generic, NamedTuple, TypeVar

from opentelemetry import context, trace
from opentelemetry.trace import INVALID_SPAN_CONTEXT, Span, SpanContext, Status, StatusCode

from basra.engine import Phase, State, decode, view
from basra.engine.bots import choose
from basra.engine.game import next_dealer
from basra.service.errors import Reason, ServiceError
from basra.service.metrics import Metrics
from basra.service.tracing import Tracing

log = logging.getLogger("basra.bots")

LEVELS: Final = {1: "random", 2: "greedy", 3: "strong"}
"""BotLevel numbers (basra.v1.BotLevel) to the engine's level names."""
_OFF_LOOP: Final = frozenset({"strong"})
"""The levels that think in the thinking processes."""
WORKER_NAME: Final = "basra-bot-thinker"
"""The name of each thinking process (``multiprocessing.Process.name``)."""

# Why a strong move was made greedy instead (``basra_bot_fallbacks_total``'s reason).
DEADLINE: Final = "deadline"
"""Its search ran past ``Settings.bot_move_deadline_s``: stuck, its process replaced."""
QUEUE_FULL: Final = "queue_full"
"""The thinking queue was full (``Settings.bot_queue``)."""
WORKER_DIED: Final = "worker_died"
"""Its process died twice while thinking it: the move itself may be what kills them."""
UNAVAILABLE: Final = "unavailable"
"""No thinking process runs and none can be started."""

_START_DEADLINE_S: Final = 30.0
"""How long a new thinking process may take to import the engine and say it is ready; past it
the start failed. A start takes well under a second on an idle core."""
_RESTART_DELAYS_S: Final = (0.5, 1.0, 2.0, 4.0, 8.0)
"""The waits before each new attempt to start a thinking process after a failed start (the
last repeats): retried for as long as it fails, without spinning on a broken installation."""
_RETRY_DELAYS_S: Final = (5.0, 10.0, 20.0, 30.0, 30.0, 30.0, 30.0)
"""The waits before a match of bots only this replica counts is played again after a failed
move (a store outage): nobody's call would notice it. Past the last, its place is let go."""
_NICE: Final = 10
"""How much lower the thinking processes' scheduling priority is than the server's: when both
want a core, the event loop (every call of every person) gets it first."""
BOT_ONLY_RETRY_S: Final = 30.0
"""The retry delay a creation refused for the bound on matches of bots only suggests: such a
match plays for minutes, so a place rarely frees sooner."""


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


def bots_only(bots: bytes) -> bool:
    """Whether a match's seats are all bots (no person plays it)."""
    return bool(bots) and all(bots)


def request_id(match_id: str, version: int) -> str:
    """The request_id of the bot move answering ``version``: the same on every replica."""
    return f"bot-{match_id}-{version}"


def think(
    state_bytes: bytes, seat: int, level: str, match_id: str, version: int, seconds: float
) -> tuple[int, int]:
    """The bot's (card index, plan id; 0 trails) for the match at ``version``.

    Runs in a thinking process for the strong level. The generator is seeded from the match id
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


Args = tuple[bytes, int, str, str, int, float]
"""``think``'s arguments."""
_READY: Final = "ready"


def serve_thinking(connection: Connection) -> None:
    """A thinking process's life: say it is ready, then answer each ``think`` arguments tuple
    with ``(True, choice)`` (or ``(False, the error's type name)``) until the server closes the
    connection or goes away."""
    # Ctrl-C reaches the whole process group: stopping is the server's to decide.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.nice(_NICE)
    connection.send(_READY)
    while True:
        try:
            args = connection.recv()
        except (EOFError, OSError):
            return
        try:
            answer: tuple[bool, object] = (True, think(*args))
        except Exception as exc:  # the server decides what a failed search means
            answer = (False, type(exc).__name__)
        connection.send(answer)


T = TypeVar("T")


class ThinkingQueue(Generic[T]):
    """The strong moves waiting for a thinking process, at most ``bound`` of them: the moves of
    matches with a person come out first, each kind in the order it came in. Nothing here waits
    or times anything: ``Thinkers`` drives it."""

    def __init__(self, bound: int) -> None:
        if bound < 1:
            raise ValueError(f"bound must be at least 1, not {bound!r}")
        self.bound = bound
        self._person: collections.deque[T] = collections.deque()
        self._bots: collections.deque[T] = collections.deque()

    def __len__(self) -> int:
        return len(self._person) + len(self._bots)

    def put(self, item: T, *, person: bool) -> T | None:
        """Queue ``item`` (``person``: a move of a match with a person seat). Returns what is
        left out when the queue is full: a person's move displaces the longest-waiting move of
        a match of bots only, if one waits; otherwise ``item`` itself is not queued. None when
        there was room."""
        displaced = None
        if len(self) >= self.bound:
            if not person or not self._bots:
                return item
            displaced = self._bots.popleft()
        (self._person if person else self._bots).append(item)
        return displaced

    def put_back(self, item: T, *, person: bool) -> None:
        """Queue ``item`` first of its kind, even past the bound: a move already admitted whose
        process died while thinking it."""
        (self._person if person else self._bots).appendleft(item)

    def take(self) -> T | None:
        """The next move to think (None: none waits)."""
        if self._person:
            return self._person.popleft()
        if self._bots:
            return self._bots.popleft()
        return None


Outcome = tuple[int, int] | str
"""A strong search's choice, or why the bot makes the greedy move instead (``DEADLINE``...)."""


@dataclass(eq=False)
class _Job:
    """A strong move handed to the thinking processes."""

    args: Args
    person: bool
    future: asyncio.Future[Outcome]
    tries: int = 0


@dataclass(eq=False)
class _Worker:
    """One thinking process and the server's end of its connection."""

    process: BaseProcess
    connection: Connection
    ready: bool = False
    """It said it is ready (the engine imported)."""
    job: _Job | None = None
    timer: asyncio.TimerHandle | None = None
    """Its start deadline, then its current search's."""
    stopping: bool = False
    """The server is ending it (a search past its deadline, or closing)."""


@dataclass
class Thinkers:
    """The supervised processes that think for the strong bots of a replica, started on the
    first strong move: ``processes`` of them, ``queue`` moves waiting at most, each search
    stopped after ``deadline_s``.

    A process that dies (killed, out of memory) is replaced at once and the move it was
    thinking is tried again (once: a move that kills two processes is made greedy). ``ready``
    is False while a process cannot be started (each start is tried again, the waits growing);
    the strong moves that find no process then are made greedy.
    """

    metrics: Metrics
    processes: int
    queue: int
    deadline_s: float
    _waiting: ThinkingQueue[_Job] = field(init=False)
    _workers: list[_Worker] = field(default_factory=list, init=False)
    _failed_starts: int = field(default=0, init=False)
    _restart: asyncio.TimerHandle | None = field(default=None, init=False)
    _reaping: set[asyncio.Future[None]] = field(default_factory=set, init=False)
    _closed: bool = field(default=False, init=False)
    # Spawned, not forked: the server's process holds gRPC's threads.
    _context: multiprocessing.context.SpawnContext = field(
        default_factory=lambda: multiprocessing.get_context("spawn"), init=False
    )

    def __post_init__(self) -> None:
        self._waiting = ThinkingQueue(self.queue)
        self.metrics.bot_workers_ready.set(1)

    @property
    def ready(self) -> bool:
        """False while a thinking process cannot be started (the replica is not ready)."""
        return self._failed_starts == 0

    async def choose(self, args: Args, *, person: bool) -> Outcome:
        """The strong search's choice for ``think(*args)``, or why the greedy move is made
        instead. ``person``: the move is a match's with a person seat (served first).

        Raises:
            RuntimeError: the search raised (its type is in the message).
        """
        if self._closed:
            return UNAVAILABLE
        self._start_missing()
        if not self._serving():
            return UNAVAILABLE
        job = _Job(args, person, asyncio.get_running_loop().create_future())
        left_out = self._waiting.put(job, person=person)
        if left_out is job:
            return QUEUE_FULL
        if left_out is not None:
            _settle(left_out, QUEUE_FULL)
        self._dispatch()
        return await job.future

    def _serving(self) -> bool:
        """Whether a strong move handed over now will be thought: a process runs, or one is
        starting and none has failed to."""
        return self.ready or any(w.ready and not w.stopping for w in self._workers)

    def _start_missing(self) -> None:
        if self._restart is not None or self._closed:
            return
        while len(self._workers) < self.processes:
            if not self._start():
                return

    def _start(self) -> bool:
        """Start one thinking process; False when it cannot be started."""
        ours, theirs = self._context.Pipe()
        process = self._context.Process(
            target=serve_thinking, args=(theirs,), name=WORKER_NAME, daemon=True
        )
        try:
            process.start()
        except OSError as exc:
            ours.close()
            self._start_failed(f"{type(exc).__name__}: {exc}")
            return False
        finally:
            theirs.close()  # the process has its own copy: its death closes the connection
        worker = _Worker(process, ours)
        loop = asyncio.get_running_loop()
        loop.add_reader(ours.fileno(), self._readable, worker)
        worker.timer = loop.call_later(_START_DEADLINE_S, self._start_overdue, worker)
        self._workers.append(worker)
        return True

    def _readable(self, worker: _Worker) -> None:
        try:
            while worker.connection.poll():
                self._received(worker, worker.connection.recv())
        except (EOFError, OSError):
            self._lost(worker)

    def _received(self, worker: _Worker, message: object) -> None:
        if worker.timer is not None:
            worker.timer.cancel()
            worker.timer = None
        if message == _READY:
            worker.ready = True
            if self._failed_starts:
                log.info("bot thinking processes start again: strong bots think again")
                self._failed_starts = 0
                self.metrics.bot_workers_ready.set(1)
            self._dispatch()
            return
        job, worker.job = worker.job, None
        if job is not None:
            self.metrics.bot_thinking.dec()
        assert isinstance(message, tuple)
        ok, answer = message
        if job is not None and not job.future.done():
            if ok:
                card, plan = answer
                job.future.set_result((card, plan))
            else:
                job.future.set_exception(RuntimeError(f"the strong search raised {answer}"))
        self._dispatch()

    def _dispatch(self) -> None:
        """Hand waiting moves to idle processes."""
        loop = asyncio.get_running_loop()
        for worker in self._workers:
            if not worker.ready or worker.stopping or worker.job is not None:
                continue
            while (job := self._waiting.take()) is not None and job.future.done():
                pass  # its bot stopped waiting (the server is stopping, or it was left out)
            if job is None:
                break
            try:
                worker.connection.send(job.args)
            except OSError:
                # Dead already: its connection's end is read next and replaces it.
                self._waiting.put_back(job, person=job.person)
                continue
            job.tries += 1
            worker.job = job
            self.metrics.bot_thinking.inc()
            worker.timer = loop.call_later(self.deadline_s, self._overdue, worker)
        self.metrics.bot_queue.set(len(self._waiting))

    def _overdue(self, worker: _Worker) -> None:
        """A search ran past its deadline: the bot moves greedy, the process is replaced."""
        worker.timer = None
        job, worker.job = worker.job, None
        if job is not None:
            self.metrics.bot_thinking.dec()
            _settle(job, DEADLINE)
        log.warning(
            "a strong bot's search ran past its deadline: the bot makes the greedy move and "
            "its thinking process is replaced",
            extra={"deadline_s": self.deadline_s, "pid": worker.process.pid},
        )
        worker.stopping = True
        worker.process.kill()

    def _start_overdue(self, worker: _Worker) -> None:
        worker.timer = None
        worker.process.kill()  # not ready in time: a failed start, once its connection ends

    def _lost(self, worker: _Worker) -> None:
        """A thinking process ended (its connection did): replace it, try its move again."""
        loop = asyncio.get_running_loop()
        loop.remove_reader(worker.connection.fileno())
        worker.connection.close()
        if worker.timer is not None:
            worker.timer.cancel()
        self._workers.remove(worker)
        reaped = loop.run_in_executor(None, worker.process.join, _START_DEADLINE_S)
        self._reaping.add(reaped)
        reaped.add_done_callback(self._reaping.discard)
        if self._closed:
            return
        job = worker.job
        retried = False
        if job is not None:
            self.metrics.bot_thinking.dec()
            retried = job.tries < 2 and not job.future.done()
            if retried:
                self._waiting.put_back(job, person=job.person)
            else:
                _settle(job, WORKER_DIED)
        if not worker.ready:
            reaped.add_done_callback(
                lambda _: self._start_failed(
                    f"it ended before it was ready (exit code {worker.process.exitcode})"
                )
            )
            return
        if not worker.stopping:
            self.metrics.bot_worker_deaths.inc()
            # One line for the incident, its exit code once known: -9 is a kill (out of memory).
            reaped.add_done_callback(lambda _: _died(worker, retried))
        self._start_missing()
        self._dispatch()

    def _start_failed(self, why: str) -> None:
        """A thinking process could not be started: not ready until one starts; the moves no
        process will think are made greedy; another start is tried after a wait."""
        if self._closed:
            return
        if self._restart is not None:
            return  # the same failure, told again once the process is reaped
        if self._failed_starts == 0:
            log.warning(
                "a bot thinking process cannot be started: strong bots make greedy moves and "
                "the replica is not ready until one starts",
                extra={"cause": why},
            )
            self.metrics.bot_workers_ready.set(0)
        delay = _RESTART_DELAYS_S[min(self._failed_starts, len(_RESTART_DELAYS_S) - 1)]
        self._failed_starts += 1
        self._restart = asyncio.get_running_loop().call_later(delay, self._restarting)
        if not self._serving():
            while (job := self._waiting.take()) is not None:
                _settle(job, UNAVAILABLE)
            self.metrics.bot_queue.set(0)

    def _restarting(self) -> None:
        self._restart = None
        self._start_missing()

    async def close(self) -> None:
        """End the thinking processes (the server is stopping)."""
        self._closed = True
        if self._restart is not None:
            self._restart.cancel()
        loop = asyncio.get_running_loop()
        for worker in list(self._workers):
            worker.stopping = True
            if worker.timer is not None:
                worker.timer.cancel()
            loop.remove_reader(worker.connection.fileno())
            worker.connection.close()  # the process reads the end of it and exits
            worker.process.kill()
            if worker.job is not None:
                _settle(worker.job, UNAVAILABLE)
        joins = [asyncio.to_thread(w.process.join, _START_DEADLINE_S) for w in self._workers]
        self._workers.clear()
        await asyncio.gather(*joins, *self._reaping, return_exceptions=True)
        while (job := self._waiting.take()) is not None:
            _settle(job, UNAVAILABLE)


def _settle(job: _Job, reason: str) -> None:
    if not job.future.done():
        job.future.set_result(reason)


def _died(worker: _Worker, retried: bool) -> None:
    log.warning(
        "a bot thinking process died: replaced"
        + (", and the move it was thinking is tried again" if retried else ""),
        extra={"pid": worker.process.pid, "exit_code": worker.process.exitcode},
    )


class BotOnlyMatches:
    """The live matches of bots only this replica created, counted per caller and in all, so
    that a caller at its share (``per_caller``) or the replica at its own (``per_replica``) is
    refused another until one ends. A caller is what ``creation`` names it (its API key's
    scope, else its address)."""

    def __init__(self, metrics: Metrics, *, per_replica: int, per_caller: int) -> None:
        self._metrics = metrics
        self.per_replica = per_replica
        self.per_caller = per_caller
        self._callers: collections.Counter[str] = collections.Counter()
        self._owners: dict[str, str] = {}

    def __contains__(self, match_id: object) -> bool:
        return match_id in self._owners

    def __len__(self) -> int:
        return self._callers.total()

    def take(self, caller: str) -> Place:
        """Hold a place for a match of bots only ``caller`` is creating: the ``Place`` is kept
        once the match is stored, given back otherwise.

        Raises:
            ServiceError: RESOURCE_EXHAUSTED / RATE_LIMITED with metadata ``bound``
                ``bot_only_matches``, ``limit`` and ``scope``: ``caller`` (this caller has
                ``per_caller`` live) or ``replica`` (all callers have ``per_replica``).
        """
        if self._callers[caller] >= self.per_caller:
            raise _bots_only_refused("caller", self.per_caller)
        if len(self) >= self.per_replica:
            raise _bots_only_refused("replica", self.per_replica)
        self._callers[caller] += 1
        self._metrics.bot_only_matches.set(len(self))
        return Place(self, caller)

    def end(self, match_id: str) -> None:
        """The match is over or gone: its place is free (nothing when it holds none)."""
        caller = self._owners.pop(match_id, None)
        if caller is not None:
            self._free(caller)

    def _keep(self, caller: str, match_id: str) -> None:
        self._owners[match_id] = caller

    def _free(self, caller: str) -> None:
        self._callers[caller] -= 1
        if self._callers[caller] <= 0:
            del self._callers[caller]
        self._metrics.bot_only_matches.set(len(self))


class Place:
    """A place ``BotOnlyMatches.take`` holds for a creation: kept by the match it makes, or
    given back; whichever comes first counts, the other does nothing."""

    def __init__(self, matches: BotOnlyMatches, caller: str) -> None:
        self._matches = matches
        self._caller = caller
        self._settled = False

    def keep(self, match_id: str) -> None:
        """The match is stored: it holds the place until it ends (``BotOnlyMatches.end``)."""
        if not self._settled:
            self._settled = True
            self._matches._keep(self._caller, match_id)

    def give_back(self) -> None:
        """No match was made for this place."""
        if not self._settled:
            self._settled = True
            self._matches._free(self._caller)


def _bots_only_refused(scope: str, limit: int) -> ServiceError:
    who = "this caller has" if scope == "caller" else "this server has"
    return ServiceError(
        Reason.RATE_LIMITED,
        f"too many matches of bots only: {who} {limit} live (per {scope}); create another "
        "when one ends, or seat a person",
        {
            "retry_after_s": BOT_ONLY_RETRY_S,
            "scope": scope,
            "bound": "bot_only_matches",
            "limit": limit,
        },
        retry_after_s=BOT_ONLY_RETRY_S,
    )


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
    """Makes the bot moves this replica owes: at most one task per match.

    ``workers``, ``queue`` and ``deadline_s`` shape its ``Thinkers``; ``bot_only_matches`` and
    ``bot_only_per_caller`` its ``BotOnlyMatches`` (``bot_only``), which ``creation`` consults.
    """

    def __init__(
        self,
        metrics: Metrics,
        *,
        pace_s: float,
        workers: int,
        strong_seconds: float,
        deadline_s: float,
        queue: int,
        bot_only_matches: int,
        bot_only_per_caller: int,
        tracing: Tracing | None = None,
    ) -> None:
        self._metrics = metrics
        self._tracing = tracing
        self._pace_s = pace_s
        self._strong_seconds = strong_seconds
        self.thinkers = Thinkers(metrics, workers, queue, deadline_s)
        self.bot_only = BotOnlyMatches(
            metrics, per_replica=bot_only_matches, per_caller=bot_only_per_caller
        )
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._commit: Commit | None = None
        self._read: Read | None = None
        self._failing = False
        """A move failed and none has been made since: the incident's warning is written."""

    @property
    def ready(self) -> bool:
        """False while the strong bots' thinking processes cannot be started."""
        return self.thinkers.ready

    def bind(self, read: Read, commit: Commit) -> None:
        """Give the player the servicer's paths: read the match, commit a move."""
        self._read, self._commit = read, commit

    def notice(self, match_id: str, state: State, bots: bytes) -> None:
        """Make sure the bot move ``state`` waits for, if any, gets made: start a task for the
        match unless this replica has one running (which reads the match again before it acts)."""
        if not bots or match_id in self._tasks:
            return
        if due(state, bots) is None:
            if state.phase is Phase.MATCH_OVER:
                self.bot_only.end(match_id)  # another replica made its last move
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
        first one its turn; each move's span is the cause of the next. A failed move ends the
        task (the next call on the match, on any replica, notices the move still due), but for
        a match of bots only this replica counts, which it tries again after a wait."""
        try:
            for delay in (0.0, *_RETRY_DELAYS_S):
                if delay:
                    await asyncio.sleep(delay)
                cause, done = await self._moves(match_id, cause)
                if done or match_id not in self.bot_only:
                    return
            log.warning(
                "a match of bots only stopped making moves: its place is let go",
                extra={"match_id": match_id},
            )
            self.bot_only.end(match_id)
        finally:
            self._tasks.pop(match_id, None)

    async def _moves(self, match_id: str, cause: SpanContext) -> tuple[SpanContext, bool]:
        """Make the match's bot moves until none is due (True) or one fails (False, logged);
        with the span of the last one."""
        assert self._read is not None
        started = time.monotonic()
        while True:
            try:
                current = await self._read(match_id)
            except Exception:
                self._failed(match_id)
                return cause, False
            move = None if current is None else due(current.state, current.bots)
            if current is None or move is None:
                self.bot_only.end(match_id)
                return cause, True
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
                self._failed(match_id)  # in the move's span: the line names it
                return cause, False
            finally:
                if span is not None and token is not None:
                    context.detach(token)
                    span.end()
            if self._failing:
                self._failing = False
                log.info("bot moves are made again")
            started = time.monotonic()

    def _failed(self, match_id: str) -> None:
        """Log a failed move: a warning (with its traceback) for the first of an incident, the
        rest while moves keep failing at DEBUG."""
        if self._failing:
            log.debug("bot move failed", exc_info=True, extra={"match_id": match_id})
            return
        self._failing = True
        log.warning("bot move failed", exc_info=True, extra={"match_id": match_id})

    async def _move(
        self, match_id: str, current: Current, move: Move, started: float, span: Span | None
    ) -> None:
        """Make ``move`` at the ``current`` match, the pace counted from ``started``."""
        assert self._commit is not None
        version = current.version
        play = None
        if not move.deal:
            play = await self._think(current, move, match_id, span)
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
        self, current: Current, move: Move, match_id: str, span: Span | None
    ) -> tuple[int, int]:
        start = time.perf_counter()
        args: Args = (
            current.data,
            move.seat,
            move.level,
            match_id,
            current.version,
            self._strong_seconds,
        )
        pool = move.level in _OFF_LOOP
        thinking = None
        if span is not None and self._tracing is not None:
            thinking = self._tracing.bot_think(span, move.level, pool)
        try:
            if not pool:
                choice = think(*args)
            else:
                outcome = await self.thinkers.choose(args, person=not bots_only(current.bots))
                if isinstance(outcome, str):
                    self._metrics.bot_fallbacks.labels(outcome).inc()
                    if thinking is not None:
                        thinking.set_attribute("basra.bot.fallback", outcome)
                    outcome = think(
                        current.data,
                        move.seat,
                        "greedy",
                        match_id,
                        current.version,
                        self._strong_seconds,
                    )
                choice = outcome
        finally:
            if thinking is not None:
                thinking.end()
        self._metrics.bot_think.labels(move.level).observe(time.perf_counter() - start)
        return choice

    async def close(self) -> None:
        """Stop making moves (the server is stopping): a move not made is left to the next
        replica that reads the match."""
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self.thinkers.close()
