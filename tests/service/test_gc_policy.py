"""Full garbage collections kept off the hot path, whatever the number of open WatchMatch streams.

Freezing the long-lived objects (``basra.service.gc_policy``) is safe only if what is frozen
and later dies is freed by reference counting: frozen cyclic garbage is never collected. These
tests freeze open WatchMatch streams, end them every way a stream ends, and look for their
objects among the garbage the freezing held.
"""

from __future__ import annotations

import asyncio
import gc
import random
from collections.abc import Iterator

import grpc
import pytest
import redis

from basra.client.match import MatchClient
from basra.service.gc_policy import GcPolicy
from basra.service.metrics import Metrics
from basra.service.store import keys
from basra.service.watch import WatchStream
from basra.v1 import basra_service_pb2 as pb
from tests.service.conftest import new_match
from tests.service.driver import play_match
from tests.support import ServerThread, StreamReader, sample_value, wait_until

# The objects a WatchMatch call is made of on the server: gRPC's call state and ours.
SERVER_TYPES = {"RPCState", "_ServicerContext", "_MessageReceiver", "WatchStream", "_Followed"}


@pytest.fixture(autouse=True)
def unfrozen() -> Iterator[None]:
    """Whatever a test froze is the collector's again afterwards (the process is pytest's)."""
    yield
    gc.unfreeze()
    gc.collect()


def watch(server: ServerThread, client: MatchClient, seat: int) -> StreamReader:
    call = client.stub.WatchMatch(
        pb.WatchMatchRequest(match_id=client.match_id), metadata=client.metadata(seat)
    )
    return StreamReader(call)


def ours(obj: object) -> bool:
    """A server-side object of a WatchMatch call (or code of the service suspended in one)."""
    if type(obj).__name__ in SERVER_TYPES:
        return True
    code = getattr(obj, "ag_code", None) or getattr(obj, "cr_code", None)
    code = code or getattr(obj, "f_code", None)
    return code is not None and "service/src/basra/service" in code.co_filename


def watch_tasks(server: ServerThread) -> int:
    """The server's gRPC tasks still running a WatchMatch call."""

    async def count() -> int:
        return sum("WatchMatch" in task.get_name() for task in asyncio.all_tasks())

    return server.run(count())


def frozen_garbage(server: ServerThread) -> list[str]:
    """Unfreeze, and collect: the garbage of our kinds among what had been frozen.

    A suspended async generator in a cycle is not freed at once: the collection hands it to
    asyncio's finalizer (which resurrects the cycle until its ``aclose`` task has run on the
    loop), and the next collection frees it."""

    async def collect() -> list[str]:
        gc.collect()  # garbage that was never frozen: not what this looks for
        gc.unfreeze()
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            gc.collect()
            for _ in range(3):  # the loop runs the finalizer's scheduling, then its tasks
                await asyncio.sleep(0)
            gc.collect()
            return sorted(type(o).__qualname__ for o in gc.garbage if ours(o))
        finally:
            gc.set_debug(0)
            gc.garbage.clear()

    return server.run(collect())


def freeze(server: ServerThread) -> None:
    async def now() -> None:
        gc.collect()
        gc.freeze()

    server.run(now())


def test_streams_that_end_while_frozen_leave_no_cyclic_garbage(server: ServerThread) -> None:
    """A WatchMatch call must not end as a reference cycle (gRPC's request iterator or a done
    callback referring back to the call): frozen, it would never be freed."""
    leaving = [new_match(server, seed) for seed in range(1, 9)]
    finishing = new_match(server, seed=3)
    streams = [watch(server, c, seat) for c in leaving for seat in (0, 1)]
    ends = [watch(server, finishing, seat) for seat in (0, 1)]
    for stream in streams + ends:
        wait_until(lambda s=stream: s.has(1), what="the deal on every stream")  # type: ignore[misc]
    freeze(server)
    for stream in streams:
        stream.close()  # the client leaves
    play_match(finishing, random.Random(3))  # MatchEnded ends these two
    for stream in ends:
        stream.thread.join(timeout=30)
        assert stream.error is None
        assert stream.ended
    gone = server.server.metrics.watch_streams
    wait_until(lambda: sample_value(gone) == 0, what="every stream ended")
    wait_until(lambda: watch_tasks(server) == 0, what="every WatchMatch call finished")
    assert frozen_garbage(server) == []


def test_a_stream_refused_by_the_core_while_frozen_leaves_no_cyclic_garbage(
    server: ServerThread, redis_url: str
) -> None:
    """A stream that ends with an error status (here: its match expired) ends through
    context.abort: that path must free its call too."""
    client = new_match(server, seed=4)
    stream = watch(server, client, 0)
    wait_until(lambda: stream.has(1), what="the deal")
    freeze(server)
    match_id = client.match_id
    redis.Redis.from_url(redis_url).delete(keys.match_key(match_id), keys.events_key(match_id))
    server.run(_expire(server, match_id))
    stream.thread.join(timeout=30)
    assert stream.error is not None
    assert stream.error.code() is grpc.StatusCode.NOT_FOUND
    wait_until(lambda: watch_tasks(server) == 0, what="the WatchMatch call finished")
    assert frozen_garbage(server) == []


async def _expire(server: ServerThread, match_id: str) -> None:
    """Tell the match's streams it is gone, as the shared reader does when a read finds no
    events: each reads the store and ends NOT_FOUND / MATCH_NOT_FOUND."""
    assert server.server.servicer is not None
    followed = server.server.servicer._watchers._matches[match_id]
    followed.gone = True
    followed.wake()


def test_the_policy_freezes_open_streams_out_of_full_collections(
    server: ServerThread,
) -> None:
    """A full collection walks every object of the open streams, so its pause grows with them;
    the policy freezes them once they have piled up in the oldest generation."""
    clients = [new_match(server, seed) for seed in range(1, 6)]
    streams = [watch(server, c, seat) for c in clients for seat in (0, 1)]
    for stream in streams:
        wait_until(lambda s=stream: s.has(1), what="the deal on every stream")  # type: ignore[misc]
    metrics = server.server.metrics
    server.run(_start_policy(server))

    def unfrozen_streams() -> int:
        return sum(isinstance(o, WatchStream) for o in gc.get_objects())

    wait_until(lambda: metrics.gc_freezes.value >= 1, what="a freeze")
    wait_until(lambda: unfrozen_streams() == 0, what="the streams frozen")
    for stream in streams:
        stream.close()


async def _start_policy(server: ServerThread) -> None:
    # Any process holds more than a hundred objects in its oldest generation: it freezes now.
    server.server.start_gc_policy(GcPolicy(server.server.metrics, young_limit=100, interval_s=0.05))


def test_a_thaw_counts_the_garbage_the_freezing_held(server: ServerThread) -> None:
    """The bound on frozen garbage: a thaw collects it and the metric says how much."""

    class Cycle:
        def __init__(self) -> None:
            self.me = self

    async def leak_and_thaw() -> int:
        cycles = [Cycle() for _ in range(50)]
        gc.collect()
        gc.freeze()
        del cycles  # frozen garbage from now on
        return GcPolicy(server.server.metrics).thaw()

    found = server.run(leak_and_thaw())
    assert found >= 50
    assert server.server.metrics.gc_frozen_garbage.value == found
    assert server.server.metrics.gc_thaws.value == 1


def test_every_collection_is_timed_in_the_metrics(server: ServerThread) -> None:
    """Operators see each full collection's pause (basra_gc_pause_seconds, generation 2)."""
    pauses = server.server.metrics.gc_pauses.labels("2")
    before = sum(pauses.counts)
    gc.collect()
    assert sum(pauses.counts) == before + 1
    assert pauses.sum > 0


class _Counting:
    """``gc.get_freeze_count`` that counts its calls: each walks every frozen object."""

    def __init__(self) -> None:
        self.calls = 0
        self._count = gc.get_freeze_count

    def __call__(self) -> int:
        self.calls += 1
        return self._count()


def _pile_up(holder: list[list[int]], objects: int) -> None:
    """``objects`` new long-lived objects, in the collector's oldest generation."""
    holder.extend([i] for i in range(objects))
    gc.collect(1)  # the young generations' survivors move to the oldest


def _fresh_policy() -> tuple[int, Metrics, GcPolicy]:
    """Everything alive frozen, then a policy (freezing past 1,000 objects) on new metrics; the
    frozen objects it starts from."""
    gc.collect()
    gc.freeze()
    metrics = Metrics.create()
    return gc.get_freeze_count(), metrics, GcPolicy(metrics, young_limit=1000)


def test_the_policy_does_not_count_the_frozen_objects_at_every_freeze(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Counting them walks them all: once a second, inside the plays, that would pause the loop
    as long. Ten freezes of what piles up count them not once while
    what was frozen has not doubled."""
    gc.collect()
    gc.freeze()
    metrics = Metrics.create()
    policy = GcPolicy(metrics, young_limit=1000)
    counting = _Counting()
    monkeypatch.setattr(gc, "get_freeze_count", counting)
    holder: list[list[int]] = []
    for _ in range(10):
        _pile_up(holder, 1500)
        policy.check()
    assert metrics.gc_freezes.value == 10
    assert counting.calls == 0
    assert metrics.gc_thaws.value == 0


def test_the_policy_thaws_once_the_frozen_objects_have_doubled() -> None:
    base, metrics, policy = _fresh_policy()
    holder: list[list[int]] = []
    for _ in range(4):
        _pile_up(holder, base // 3)
        policy.check()
    # 4/3 of the base added: past the doubling at the fourth check, not before.
    assert metrics.gc_freezes.value == 4
    assert metrics.gc_thaws.value == 1
    assert gc.get_freeze_count() >= 2 * base


def test_a_thaw_that_is_due_waits_for_a_quiet_second() -> None:
    """A thaw walks every object (about half a second at 10,000 open streams): due while calls
    are being served, it waits for a check with no call finished since the one before, and
    comes at once only past twice the doubling."""
    base, metrics, policy = _fresh_policy()
    holder: list[list[int]] = []

    def busy_check() -> None:
        metrics.observe_call("Play", "m", 0.001, None)
        policy.check()

    _pile_up(holder, base + base // 2)  # past the doubling
    busy_check()
    assert metrics.gc_thaws.value == 0, "thawed while calls were being served"
    busy_check()
    assert metrics.gc_thaws.value == 0
    policy.check()  # a quiet second
    assert metrics.gc_thaws.value == 1

    # Busy for good: the thaw comes past twice the doubling, not before.
    thawed = gc.get_freeze_count()
    _pile_up(holder, thawed + thawed // 2)
    busy_check()
    _pile_up(holder, thawed)
    busy_check()
    assert metrics.gc_thaws.value == 1
    _pile_up(holder, thawed + thawed // 2)
    busy_check()
    assert metrics.gc_thaws.value == 2
    holder.clear()


def test_objects_frozen_and_dead_since_do_not_bring_a_thaw(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What was frozen and then freed no longer counts: once what was added passes the
    doubling, the policy counts the frozen objects, finds fewer, and counts again only after
    as many more have been added."""
    base, metrics, policy = _fresh_policy()
    counting = _Counting()
    monkeypatch.setattr(gc, "get_freeze_count", counting)
    for _ in range(6):  # twice the base added in all, each third freed after its freeze
        holder: list[list[int]] = []
        _pile_up(holder, base // 3)
        policy.check()
        del holder  # frozen, and freed now: reference counting frees frozen objects
    assert metrics.gc_freezes.value == 6
    assert metrics.gc_thaws.value == 0
    # Counted only when what was added could have doubled them (every freeze counted before).
    assert 1 <= counting.calls <= 3


def test_a_scrape_of_the_frozen_objects_does_not_walk_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """``basra_gc_frozen_objects`` is the policy's bookkeeping: a scrape that counted the frozen
    objects would walk them all with the interpreter lock held."""
    gc.collect()
    gc.freeze()
    metrics = Metrics.create()
    policy = GcPolicy(metrics, young_limit=1000)
    before = gc.get_freeze_count()
    counting = _Counting()
    monkeypatch.setattr(gc, "get_freeze_count", counting)
    holder: list[list[int]] = []
    _pile_up(holder, 1500)
    policy.check()
    scraped = metrics.registry.get_sample_value("basra_gc_frozen_objects")
    assert counting.calls == 0
    monkeypatch.undo()
    # Exact or above: every object frozen since the count is in it, freed ones included.
    assert scraped == policy.frozen_objects() >= gc.get_freeze_count() >= before + 1500
