"""WatchMatch as it runs in production: the shipped settings, many streams, one shared reader."""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import contextlib
import functools
import gc
import inspect
import io
import json
import logging
import random
import tempfile
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import grpc
import pytest
import redis
from grpc_channelz.v1 import channelz, channelz_pb2, channelz_pb2_grpc
from hypothesis import given, settings
from hypothesis import strategies as st

from basra.client.match import MatchClient, to_card
from basra.engine import new_match as engine_new_match
from basra.engine.bots import random_play
from basra.service import logs
from basra.service.config import Settings, from_args
from basra.service.store import EventEntry
from basra.service.watch import _Followed
from basra.v1 import basra_service_pb2 as pb
from basra.v1 import game_pb2
from tests.load.watchers import Crowd, redis_connections
from tests.profiles import examples
from tests.service.conftest import new_match
from tests.service.driver import audit_states, play_match
from tests.support import RedisProcess, ServerThread, StreamReader, sample_value

CONFIG_ENV = Path(__file__).parents[2] / "deploy/kustomize/base/config.env"


def shipped_settings(redis_url: str) -> Settings:
    """The settings of deploy/kustomize/base/config.env, on this Redis, with creation open to
    the tests (seeds, no creation rate limit) and no metrics port."""
    environ = {}
    for line in CONFIG_ENV.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, value = line.partition("=")
            environ[name] = value
    environ["REDIS_URL"] = redis_url  # a Secret in deploy/, not in config.env
    settings = from_args(argparse.Namespace(), environ)
    return replace(
        settings,
        redis_url=redis_url,
        allow_seeds=True,
        metrics_port=None,
        create_rate=100_000.0,
        create_burst=100_000,
        caller_create_rate=100_000.0,
        caller_create_burst=100_000,
    )


@pytest.fixture
def shipped(redis_url: str) -> Iterator[ServerThread]:
    server = ServerThread(shipped_settings(redis_url))
    yield server
    server.stop()


@pytest.fixture
def crowd(shipped: ServerThread) -> Iterator[Crowd]:
    crowd = Crowd(shipped.target)
    yield crowd
    crowd.close()


def test_a_stream_idle_longer_than_the_store_timeout_still_gets_the_next_play(
    shipped: ServerThread,
) -> None:
    """With the shipped settings a stream outlives the store timeout without an event: the
    blocking read's socket timeout must not be shorter than its XREAD BLOCK."""
    client = new_match(shipped, seed=5)
    stream = client.stub.WatchMatch(
        pb.WatchMatchRequest(match_id=client.match_id, after_version=1),
        metadata=client.metadata(0),
    )
    # The scenario is a player thinking for longer than the store deadline: time must pass.
    time.sleep(shipped.settings.store_timeout_s * 1.5)
    play = random_play(engine_new_match(5)[0], random.Random(5))
    client.play(play.seat, play.card, play.plan or 0)
    event = next(iter(stream)).event
    assert event.version == 2
    assert event.HasField("card_played")
    stream.cancel()  # type: ignore[no-untyped-call]  # a grpc call as well as an iterator


def test_a_thousand_streams_get_every_play_over_a_few_redis_connections(
    shipped: ServerThread, crowd: Crowd, redis_url: str
) -> None:
    """Waiting streams share one reader instead of a Redis connection each: 1,000 streams (500
    matches x 2 seats) hold at most the pool's connections and two."""
    direct = redis.Redis.from_url(redis_url)
    crowd.create(500)
    crowd.watch()
    metrics = shipped.server.metrics
    crowd.wait(
        lambda: sample_value(metrics.watch_streams) == 1000 or bool(crowd.failed()),
        what="1000 streams open",
    )
    assert [s.error for s in crowd.failed()][:3] == []
    crowd.wait(lambda: sample_value(metrics.watch_matches) == 500, what="500 matches followed")
    bound = shipped.settings.redis_pool_size + 2
    assert redis_connections(direct) <= bound
    crowd.play_everywhere()
    crowd.wait(lambda: len(crowd.got(2)) + len(crowd.failed()) == 1000, what="every stream")
    assert [s.error for s in crowd.failed()][:3] == []
    assert len(crowd.got(2)) == 1000
    assert redis_connections(direct) <= bound
    crowd.leave()
    crowd.wait(lambda: sample_value(metrics.watch_streams) == 0, what="streams released")
    crowd.wait(lambda: sample_value(metrics.watch_matches) == 0, what="matches unfollowed")
    crowd.wait(lambda: shard_channels(direct) == 0, what="shard channels unsubscribed")
    direct.close()


def test_plays_on_the_streams_replica_reach_them_without_a_store_read(
    shipped: ServerThread, crowd: Crowd
) -> None:
    """A change this replica committed is handed to its own streams (watch.py, ``committed``),
    so a play costs the shared reader no read of the match's new events: Redis's report of it
    (published inside the commit script) arrives before the commit's reply, and the reader
    waits for such a commit before reading. Exactness is the other
    tests' concern; here, no events read at all (300 matches playing at once: without the
    reader's wait, some runs read once)."""
    crowd.create(300)
    crowd.watch()
    crowd.wait(lambda: len(crowd.got(1)) + len(crowd.failed()) == 600, what="first events")
    assert [s.error for s in crowd.failed()][:3] == []
    reads = shipped.server.metrics.store_latency.labels("events")
    before = sum(reads.counts)
    crowd.play_everywhere()
    crowd.wait(lambda: len(crowd.got(2)) + len(crowd.failed()) == 600, what="every stream")
    assert [s.error for s in crowd.failed()][:3] == []
    assert sum(reads.counts) == before


def collect(
    client: MatchClient, seat: int, after_version: int, token: str | None = None
) -> StreamReader:
    """Read one WatchMatch stream, the seat's or (with ``token``) a spectator's."""
    return StreamReader(
        client.stub.WatchMatch(
            pb.WatchMatchRequest(match_id=client.match_id, after_version=after_version),
            metadata=(("authorization", f"Bearer {token}"),) if token else client.metadata(seat),
        )
    )


def wait_for(predicate: Callable[[], bool], what: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"not reached in {timeout} s: {what}"
        time.sleep(0.02)


def replay(client: MatchClient, seat: int, after: int, last: int) -> list[game_pb2.MatchEvent]:
    """The events a new stream reads from the store, after ``after`` up to ``last``."""
    events = []
    for event in client.watch(seat, after, timeout=10):
        events.append(event)
        if event.version == last and event.version_complete:
            break
    return events


def test_live_streams_equal_a_replay_and_give_each_seat_only_its_own_deals(
    server: ServerThread, redis_url: str
) -> None:
    client = new_match(server, seed=8)
    streams = {seat: collect(client, seat, 1) for seat in (0, 1)}
    watch_token = client.stub.CreateWatchToken(
        pb.CreateWatchTokenRequest(match_id=client.match_id), metadata=client.metadata(0)
    ).watch_token
    spectator = collect(client, 0, 1, token=watch_token)
    try:
        play_match(
            client, random.Random(2), stop=lambda v: v.hand_number == 2 and v.plays_left < 40
        )
        last = client.view(0).version
        for seat, stream in streams.items():
            wait_for(functools.partial(stream.has, last), f"seat {seat} reaches version {last}")
        states = audit_states(redis.Redis.from_url(redis_url), client.match_id)
        for seat, stream in streams.items():
            live = [e for e in stream.events if e.version <= last]
            assert live == replay(client, seat, 1, last)
            assert [e.version for e in live if e.version_complete] == list(range(2, last + 1))
            deals = 0
            for event in live:
                kind = event.WhichOneof("event")
                if kind in ("hand_started", "cards_dealt"):
                    hand = list(states[event.version].hands[seat])
                    assert [to_card(c) for c in getattr(event, kind).your_cards] == hand
                    deals += 1
            assert deals == 7  # hand 1: five more deals; hand 2 (9 plays in): its first two
        wait_for(functools.partial(spectator.has, last), "the spectator reaches the end")
        public = [e for e in spectator.events if e.version <= last]
        for seat_event, spectator_event in zip(streams[0].events, public, strict=False):
            kind = seat_event.WhichOneof("event")
            if kind in ("hand_started", "cards_dealt"):
                getattr(seat_event, kind).ClearField("your_cards")
            assert spectator_event == seat_event  # the seat's events without its cards
        assert len(public) == len([e for e in streams[0].events if e.version <= last])
    finally:
        spectator.close()
        for stream in streams.values():
            stream.close()


def test_a_stream_resumes_exactly_after_its_version_and_ends_after_the_match_ends(
    any_server: ServerThread,
) -> None:
    client = new_match(any_server, seed=3)
    play_match(client, random.Random(3), stop=lambda v: v.version >= 20)
    stream = collect(client, 1, 17)
    play_match(client, random.Random(4))
    wait_for(lambda: stream.ended or stream.error is not None, "the stream ends by itself")
    assert stream.error is None
    last = client.view(0).version
    versions = [e.version for e in stream.events if e.version_complete]
    assert versions == list(range(18, last + 1))
    assert stream.events[-1].HasField("match_ended")
    assert stream.events == replay(client, 1, 17, last)


def test_streams_lose_and_repeat_nothing_across_a_redis_restart(
    start_server: Callable[..., ServerThread], aof_redis: RedisProcess
) -> None:
    server = start_server(redis_url=aof_redis.url, store_timeout_s=0.5)
    client = new_match(server, seed=9)
    streams = [collect(client, seat, 1) for seat in (0, 1)]
    try:
        play_match(client, random.Random(5), stop=lambda v: v.version >= 6)
        for stream in streams:
            wait_for(functools.partial(stream.has, 6), "version 6 streamed")
        buffer = io.StringIO()
        logs.setup("INFO", buffer)
        try:
            aof_redis.stop()
            aof_redis.start()  # same port; AOF replays the match
            # Plays right away: some commits may come before the reader has subscribed again,
            # and their wake-ups are lost; reading again after the reconnection finds them.
            wait_for(lambda: _can_read(client), "Redis answers again")
            wait_for(lambda: "watch reader lost" in buffer.getvalue(), "the loss logged")
        finally:
            logging.getLogger("basra").handlers.clear()
        # The loss is a warning naming the node (none: not a Cluster) and why, no traceback.
        records = [json.loads(line) for line in buffer.getvalue().splitlines()]
        lost = [r for r in records if r["msg"] == "watch reader lost its Redis connection"]
        assert lost
        for record in lost:
            assert (record["level"], record["node"]) == ("WARNING", "")
            assert record["cause"].partition(": ")[0].endswith("Error")
            assert "exc" not in record
        play_match(client, random.Random(6), stop=lambda v: v.version >= 14)
        for stream in streams:
            wait_for(functools.partial(stream.has, 14), "version 14 streamed")
        for seat, stream in enumerate(streams):
            live = [e for e in stream.events if e.version <= 14]
            assert live == replay(client, seat, 1, 14)
        assert sample_value(server.server.metrics.watch_reconnects) >= 1
    finally:
        for stream in streams:
            stream.close()


def test_the_reader_keeps_reconnecting_however_long_redis_is_down(
    start_server: Callable[..., ServerThread], aof_redis: RedisProcess
) -> None:
    server = start_server(redis_url=aof_redis.url, store_timeout_s=0.5)
    client = new_match(server, seed=9)
    stream = collect(client, 0, 1)
    try:
        play_match(client, random.Random(3), stop=lambda v: v.version >= 2)
        wait_for(functools.partial(stream.has, 2), "the stream is live")
        aof_redis.stop()
        # More failed attempts than the back-off has steps: the last step is kept.
        reconnects = server.server.metrics.watch_reconnects
        wait_for(lambda: sample_value(reconnects) >= 8, "eight failed reconnections")
        aof_redis.start()
        wait_for(lambda: _can_read(client), "Redis answers again")
        play_match(client, random.Random(4), stop=lambda v: v.version >= 4)
        wait_for(functools.partial(stream.has, 4), "version 4 streamed after the outage")
    finally:
        stream.close()


def _can_read(client: MatchClient) -> bool:
    try:
        client.view(0)
    except grpc.RpcError:
        return False
    return True


def shard_channels(client: redis.Redis) -> int:
    channels = client.execute_command("PUBSUB", "SHARDCHANNELS")  # type: ignore[no-untyped-call]
    return len(channels)


def test_a_stream_that_leaves_while_waiting_does_not_end_the_other_streams_of_its_match(
    any_server: ServerThread,
) -> None:
    """The streams of a match wait on one shared future (memory per idle stream); cancelling a
    task cancels the future it awaits, so the stream that leaves cancels the shared one too. The
    others must take that for a wake-up, not for their own end."""
    client = new_match(any_server, seed=11)
    streams = [collect(client, seat, 1) for seat in (0, 1)]
    try:
        wait_for(lambda: _waiting(any_server, client.match_id) == 2, "both streams waiting")
        streams[0].close()
        metrics = any_server.server.metrics
        wait_for(lambda: sample_value(metrics.watch_streams) == 1, "the stream released")
        play = random_play(engine_new_match(11)[0], random.Random(11))
        client.play(play.seat, play.card, play.plan or 0)
        wait_for(functools.partial(streams[1].has, 2), "the other stream gets the play")
        assert [e.version for e in streams[1].events if e.version_complete] == [2]
    finally:
        streams[1].close()


def test_an_idle_stream_keeps_no_request_message(any_server: ServerThread) -> None:
    """Memory per idle stream: a parsed request message holds a protobuf arena of its own; an
    open stream keeps only what it took from it. Counted among
    the process's objects while the streams wait, leaving out the client's own requests."""
    client = new_match(any_server, seed=12)
    requests = [pb.WatchMatchRequest(match_id=client.match_id) for _ in (0, 1)]
    streams = [
        StreamReader(client.stub.WatchMatch(request, metadata=client.metadata(seat)))
        for seat, request in enumerate(requests)
    ]
    try:
        for stream in streams:
            wait_for(functools.partial(stream.has, 1), "the deal on both streams")
        wait_for(lambda: _waiting(any_server, client.match_id) == 2, "both streams waiting")

        async def held() -> int:
            return sum(
                isinstance(o, pb.WatchMatchRequest) and not any(o is r for r in requests)
                for o in gc.get_objects()
            )

        assert any_server.run(held()) == 0
    finally:
        for stream in streams:
            stream.close()


def test_an_idle_stream_holds_no_generator_of_the_grpc_handler(any_server: ServerThread) -> None:
    """Memory per idle stream: gRPC iterates a generator handler with an async
    generator loop of its own for the stream's whole life, which keeps the generator, its
    weak reference among the loop's async generators and the last message sent; the handler
    is a coroutine that writes. What an idle stream still holds of the service's generators:
    ``Dispatcher.handle_stream`` and ``WatchStream.responses``, no more."""
    client = new_match(any_server, seed=13)
    streams = [collect(client, seat, 0) for seat in (0, 1)]
    try:
        for stream in streams:
            wait_for(functools.partial(stream.has, 1), "the deal on both streams")
        wait_for(lambda: _waiting(any_server, client.match_id) == 2, "both streams waiting")

        async def generators() -> list[str]:
            return sorted(
                o.ag_code.co_qualname
                for o in gc.get_objects()
                if inspect.isasyncgen(o) and "service/src/basra/service" in o.ag_code.co_filename
            )

        expected = ["Dispatcher.handle_stream", "WatchStream.responses"] * 2
        assert any_server.run(generators()) == sorted(expected)
    finally:
        for stream in streams:
            stream.close()


def _waiting(server: ServerThread, match_id: str) -> int:
    """How many tasks await the match's shared wake-up future."""

    async def count() -> int:
        followed = server.server.servicer._watchers._matches.get(match_id)  # type: ignore[union-attr]
        return 0 if followed is None else followed.waiting

    return server.run(count())


@contextlib.contextmanager
def calls_started() -> Iterator[Callable[[], int]]:
    """How many calls gRPC core has started on the other servers of this process, read from
    its channelz service on a server of its own (on a Unix socket, which names it apart): core
    counts a call as soon as its headers arrive, before the application has accepted it."""
    server = grpc.server(concurrent.futures.ThreadPoolExecutor(max_workers=1))
    channelz.add_channelz_servicer(server)
    with tempfile.TemporaryDirectory() as folder:
        address = f"unix:{folder}/channelz"
        server.add_insecure_port(address)
        server.start()
        try:
            with grpc.insecure_channel(address) as channel:
                stub = channelz_pb2_grpc.ChannelzStub(channel)

                def started() -> int:
                    answer = stub.GetServers(channelz_pb2.GetServersRequest(start_server_id=0))
                    return sum(
                        one.data.calls_started
                        for one in answer.server
                        if not any(s.name.endswith(address) for s in one.listen_socket)
                    )

                yield started
        finally:
            server.stop(None)


def test_a_burst_of_streams_waits_to_be_accepted_rather_than_being_cancelled(
    redis_url: str,
) -> None:
    """Seen at 10,000 streams opened at once: gRPC core queues the calls the application has
    not accepted yet, and past 1,000 of them (its default max_pending_requests, 3,000 at the
    most) it cancels new ones, so clients got CANCELLED in bursts. The server takes as many
    pending calls as it takes calls (max_concurrent_rpcs). Here the server's event loop is held
    until core has received every call of a burst of 3,200; the store's deadline is longer than
    any hold, so that a store call in flight as the loop is held (the shared reader's) is not
    timed out by the hold itself, which a loaded machine makes last seconds."""
    server = ServerThread(replace(shipped_settings(redis_url), store_timeout_s=300))
    crowd = Crowd(server.target)
    try:
        burst_of_streams(server, crowd)
    finally:
        crowd.close()
        server.stop()


def burst_of_streams(shipped: ServerThread, crowd: Crowd) -> None:
    burst = 3200
    crowd.create(burst // 2)
    release, held = threading.Event(), threading.Event()

    def hold() -> None:
        held.set()
        release.wait(120)

    with calls_started() as started:
        before = started()
        shipped.loop.call_soon_threadsafe(hold)
        assert held.wait(10)
        watching = threading.Thread(target=crowd.watch, kwargs={"batch": burst})
        watching.start()
        try:
            wait_for(lambda: started() - before >= burst, "every call reached gRPC core")
        finally:
            release.set()
    watching.join(timeout=240)
    assert not watching.is_alive()
    assert crowd.reopened == 0, f"{crowd.reopened} of {burst} streams were cut: {crowd.cut_with}"
    assert not crowd.failed()
    crowd.leave()


def test_the_crowd_closes_its_loop_only_after_the_tasks_still_running_on_it() -> None:
    # A closed channel's calls end their status tasks on the loop's next rounds: a loop stopped
    # before them destroyed them pending, 139 "Task was destroyed but it is pending!" in
    # `make bench` after 10,000 streams. A task of the same kind, a moment from its end:
    crowd = Crowd("127.0.0.1:1")  # no call is made
    finished = threading.Event()

    async def status() -> None:
        await asyncio.sleep(0.2)
        finished.set()

    task = crowd.run(_started(status))
    crowd.close()
    assert finished.is_set()
    assert task.done()
    assert not task.cancelled()


async def _started(work: Callable[[], Coroutine[Any, Any, None]]) -> asyncio.Task[None]:
    return asyncio.create_task(work())


# The shared cache of a followed match: streams a little behind are answered from it, so it
# must never answer a stream with a version missing.


def entries(first: int, last: int) -> tuple[EventEntry, ...]:
    """Versions ``first``..``last`` of a match, as the store or a commit hands them over."""
    return tuple(EventEntry(v, b"", b"", ()) for v in range(first, last + 1))


def cache_answers(runs: list[tuple[int, int]], after: int) -> tuple[list[int] | None, int]:
    """A followed match's cache after remembering each run of versions in turn (a page the
    reader read, or one entry a commit handed over): the versions it answers a stream at
    ``after`` with (None: the stream reads the store), and the latest version known."""

    async def run() -> tuple[list[int] | None, int]:
        followed = _Followed("m")
        for first, last in runs:
            followed.remember(entries(first, last))
        cached = followed.cached_after(after)
        return (None if cached is None else [e.version for e in cached]), followed.latest

    return asyncio.run(run())


def test_the_cache_does_not_answer_a_stream_whose_next_version_it_lacks() -> None:
    """The cache holds 5..8: a stream at 3 needs 4, so it reads the store; a stream at 4 is
    answered 5..8."""
    assert cache_answers([(5, 8)], 3) == (None, 8)
    assert cache_answers([(5, 8)], 4) == ([5, 6, 7, 8], 8)


def test_a_gap_left_by_another_replicas_commit_is_not_kept() -> None:
    """The reader read 1..4; this replica's commit hands over 6 before the reader saw 5 (the
    other replica's): the cache starts again at 6, and a stream at 4 reads the store."""
    assert cache_answers([(1, 4), (6, 6)], 4) == (None, 6)
    assert cache_answers([(1, 4), (6, 6)], 5) == ([6], 6)
    assert cache_answers([(1, 4), (6, 6), (5, 6)], 4) == (None, 6)


@settings(max_examples=examples(200), deadline=None)
@given(
    runs=st.lists(
        st.tuples(st.integers(1, 30), st.integers(0, 6)).map(lambda r: (r[0], r[0] + r[1])),
        min_size=1,
        max_size=8,
    ),
    after=st.integers(0, 36),
)
def test_the_cache_never_skips_a_version(runs: list[tuple[int, int]], after: int) -> None:
    """Property over any order of runs (pages and commits arriving late, early, repeated, with
    gaps between them): what the cache answers a stream at ``after`` is every version after it
    up to the latest known, in order, none missing; or nothing, and the stream reads the store."""
    answered, latest = cache_answers(runs, after)
    if answered is not None:
        assert answered == list(range(after + 1, latest + 1))
