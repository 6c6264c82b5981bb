"""A real Redis Cluster of three masters: the service plays matches on it unchanged."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import random
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar, cast

import grpc
import pytest
import redis
from redis.asyncio.cluster import RedisCluster as AsyncRedisCluster
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.cluster import RedisCluster
from redis.crc import key_slot

from basra.client.match import MatchClient, Rejection
from basra.service import auth
from basra.service.config import Settings
from basra.service.store import keys
from basra.service.store.base import (
    Change,
    EventPage,
    MatchRecord,
    StoreFullError,
    StoreUnavailableError,
    WatchAccess,
)
from basra.service.store.redis import RedisStore, _settled
from basra.service.store.redis_cluster import close_cluster
from basra.service.store.redis_feed import RedisFeed
from basra.v1 import basra_service_pb2 as pb
from basra.v1 import basra_service_pb2_grpc, game_pb2
from tests.load.watchers import Crowd, redis_connections
from tests.service.conftest import rpc_error
from tests.service.driver import (
    audit_replay,
    engine_replay,
    play_match,
    stored_record,
    stored_state,
)
from tests.service.test_redis_feed import Reconnects, answers, changes_until, run_feed
from tests.service.test_store_contract import (
    commit,
    new,
    probe_expires_within_a_minute,
    watch_key_lives_as_long_as_the_match,
)
from tests.support import (
    RedisClusterProcess,
    RedisProcess,
    ServerThread,
    StreamReader,
    sample_value,
    wait_until,
)

T = TypeVar("T")


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[RedisClusterProcess]:
    process = RedisClusterProcess(tmp_path)
    process.start()
    yield process
    process.stop()


def test_matches_play_to_the_end_on_a_three_master_cluster(cluster: RedisClusterProcess) -> None:
    server = ServerThread(
        Settings(redis_url=cluster.url, redis_cluster=True, allow_seeds=True, metrics_port=None)
    )
    try:
        clients = []
        for seed in range(8):
            client, _ = MatchClient.create(server.channel, seed=seed)
            played = play_match(client, random.Random(seed))
            clients.append((client, seed, played))
            # WatchMatch (blocking reads on the cluster) replays the whole match.
            assert sum(1 for _ in client.watch(1, 0, timeout=20)) > 48
    finally:
        server.stop()
    direct = RedisCluster.from_url(cluster.url)
    nodes_used = set()
    for client, seed, played in clients:
        as_redis = cast(redis.Redis, direct)
        version, state = stored_state(as_redis, client.match_id)
        assert state == engine_replay(seed, played.plays)
        assert audit_replay(as_redis, client.match_id) == (version, state)
        node = direct.get_node_from_key(keys.match_key(client.match_id))  # type: ignore[no-untyped-call]
        assert node is not None
        nodes_used.add(node.name)
    assert len(nodes_used) >= 2, "matches are spread over the masters"
    direct.close()


def test_streams_fan_out_from_one_reader_per_master(cluster: RedisClusterProcess) -> None:
    """200 streams (100 matches x 2 seats) on a three-master cluster: every stream gets the
    play of its match, and the replica holds per master no more than its command pool plus a
    small constant (its one subscribed connection, and the cluster client's own for the slot
    map)."""
    pool = 4
    server = ServerThread(
        Settings(
            redis_url=cluster.url,
            redis_cluster=True,
            redis_pool_size=pool,
            allow_seeds=True,
            metrics_port=None,
            create_rate=10_000.0,
            create_burst=10_000,
            caller_create_rate=10_000.0,
            caller_create_burst=10_000,
        )
    )
    crowd = Crowd(server.target)
    try:
        crowd.create(100)
        crowd.watch()
        metrics = server.server.metrics
        crowd.wait(lambda: sample_value(metrics.watch_matches) == 100, what="100 matches followed")
        assert not crowd.failed()
        followed = [shard_channels(cluster, node) for node in cluster.nodes]
        assert sum(followed) == 100
        assert all(followed), "the matches followed are spread over every master"
        for node in cluster.nodes:
            assert redis_connections(node.client()) <= pool + 2
        crowd.play_everywhere()
        crowd.wait(lambda: len(crowd.got(2)) + len(crowd.failed()) == 200, what="every stream")
        assert not crowd.failed()
        crowd.leave()
        crowd.wait(lambda: sample_value(metrics.watch_matches) == 0, what="matches unfollowed")
        crowd.wait(lambda: shard_channels(cluster) == 0, what="channels unsubscribed")
    finally:
        crowd.close()
        server.stop()


def shard_channels(cluster: RedisClusterProcess, node: RedisProcess | None = None) -> int:
    """Shard channels subscribed on one node, or on all of them."""
    count = 0
    for each in [node] if node else cluster.nodes:
        client = each.client()
        count += len(client.execute_command("PUBSUB", "SHARDCHANNELS"))  # type: ignore[no-untyped-call]
        client.close()
    return count


def migrate_slot(cluster: RedisClusterProcess, slot: int, target: RedisProcess) -> RedisProcess:
    """Move ``slot`` (and its keys) to the master ``target`` as redis-cli --cluster reshard does:
    SETSLOT IMPORTING/MIGRATING, MIGRATE the keys, SETSLOT NODE on every master. Returns the
    master that served it."""
    source = begin_slot_move(cluster, slot, target)
    end_slot_move(cluster, slot, source, target)
    return source


def node_id(node: RedisProcess) -> str:
    return str(node.client().execute_command("CLUSTER", "MYID").decode())  # type: ignore[no-untyped-call]


def slot_owner(cluster: RedisClusterProcess, slot: int) -> RedisProcess:
    for node in cluster.nodes:
        for start, end, *served in node.client().execute_command("CLUSTER", "SLOTS"):  # type: ignore[no-untyped-call]
            if start <= slot <= end:
                return next(n for n in cluster.nodes if n.port == served[0][1])
    raise AssertionError(f"nobody serves slot {slot}")


def begin_slot_move(cluster: RedisClusterProcess, slot: int, target: RedisProcess) -> RedisProcess:
    """The first half of a move: the target IMPORTING ``slot``, its owner MIGRATING it, and
    every key of the slot MIGRATEd to the target. The owner still serves the slot (and answers
    ASK for the keys it no longer has) until ``end_slot_move``. Returns the owner."""
    source = slot_owner(cluster, slot)
    assert source is not target
    src, dst = source.client(), target.client()
    dst.execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", node_id(source))  # type: ignore[no-untyped-call]
    src.execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", node_id(target))  # type: ignore[no-untyped-call]
    while keys_left := src.execute_command("CLUSTER", "GETKEYSINSLOT", slot, 100):  # type: ignore[no-untyped-call]
        src.execute_command(  # type: ignore[no-untyped-call]
            "MIGRATE", "127.0.0.1", target.port, "", 0, 5000, "KEYS", *keys_left
        )
    return source


def end_slot_move(
    cluster: RedisClusterProcess, slot: int, source: RedisProcess, target: RedisProcess
) -> None:
    """The second half of a move: SETSLOT NODE on the target, the source, then the others."""
    target_id = node_id(target)
    for node in (target, source, *(n for n in cluster.nodes if n not in (source, target))):
        node.client().execute_command("CLUSTER", "SETSLOT", slot, "NODE", target_id)  # type: ignore[no-untyped-call]


def follow(client: MatchClient, seat: int) -> StreamReader:
    """Read the seat's WatchMatch stream of the match."""
    return StreamReader(
        client.stub.WatchMatch(
            pb.WatchMatchRequest(match_id=client.match_id), metadata=client.metadata(seat)
        )
    )


def test_a_stream_follows_its_match_when_the_slot_moves_to_another_master(
    cluster: RedisClusterProcess,
) -> None:
    """Resharding moves a watched match's slot to another master (its keys and its shard
    channel with it: the old master unsubscribes the replica's reader, whose SSUBSCRIBE there
    is then answered MOVED): the streams, and a stream opened after the move, get every event
    exactly once, as a replay from the store gives them; the reader follows the channel to the
    new master, and the server stops cleanly however far its reroute got."""
    server = ServerThread(
        Settings(redis_url=cluster.url, redis_cluster=True, allow_seeds=True, metrics_port=None)
    )
    followers: list[StreamReader] = []
    try:
        client, _ = MatchClient.create(server.channel, seed=11)
        rng = random.Random(11)
        play_match(client, rng, stop=lambda v: v.version >= 3)
        followers = [follow(client, 0), follow(client, 1)]
        wait_until(lambda: all(f.has(3) for f in followers), what="the streams are live")
        slot = key_slot(keys.match_key(client.match_id).encode())
        direct = RedisCluster.from_url(cluster.url)
        before = direct.get_node_from_key(keys.match_key(client.match_id))  # type: ignore[no-untyped-call]
        target = next(n for n in cluster.nodes if n.port != before.port)
        source = migrate_slot(cluster, slot, target)
        play_match(client, rng, stop=lambda v: v.version >= 6)
        wait_until(lambda: all(f.has(6) for f in followers), what="the plays after the move")
        wait_until(lambda: shard_channels(cluster, target) == 1, what="resubscribed on target")
        assert shard_channels(cluster, source) == 0
        followers.append(follow(client, 0))
        play_match(client, rng, stop=lambda v: v.version >= 9)
        wait_until(lambda: all(f.has(9) for f in followers), what="every stream gets it all")
        for index, follower in enumerate(followers):
            assert follower.error is None, follower.error
            replay = []
            for event in client.watch(index % 2, 0, timeout=10):
                replay.append(event)
                if event.version == 9 and event.version_complete:
                    break
            assert follower.events == replay  # every version once, in order, nothing else
        direct.close()
    finally:
        for follower in followers:
            follower.close()
        server.stop()


def test_the_feed_closes_while_a_reroute_is_closing_subscribers(
    cluster: RedisClusterProcess,
) -> None:
    """A reroute closes the subscribers left without channels; the feed closing meanwhile
    (the server stops right after a slot moved) waits for it instead of iterating the
    subscribers the reroute is removing. A subscriber's close swallows the cancellation of
    whoever awaits it, so cancelling the reroute alone does not stop it."""

    async def scenario() -> None:
        client = AsyncRedisCluster.from_url(cluster.url)
        await client.initialize()
        by_node: dict[str, str] = {}
        for n in range(200):
            match_id = f"match-{n:016d}"
            node = client.get_node_from_key(keys.wake_channel(match_id))
            assert node is not None
            by_node.setdefault(node.name, match_id)
        assert len(by_node) == 3
        feed = RedisFeed(client, poll_s=5, timeout_s=5, on_reconnect=lambda: None)
        for match_id in by_node.values():
            await feed.follow(match_id)
        left = list(by_node.values())[1:]
        for match_id in left:
            feed.unfollow(match_id)  # their subscribers stay, with no channel
        first = feed._subscribers[next(iter(by_node))]
        closing, release = asyncio.Event(), asyncio.Event()
        empty = [s for s in feed._subscribers.values() if s is not first]
        real_close = empty[0].close

        async def slow_close() -> None:
            closing.set()
            with contextlib.suppress(asyncio.CancelledError):  # as _Subscriber.close does
                await release.wait()
            await real_close()

        empty[0].close = slow_close  # type: ignore[method-assign]
        feed._reroute()
        await closing.wait()  # the reroute is closing the first empty subscriber
        stopping = asyncio.create_task(feed.close())
        await asyncio.sleep(0)
        release.set()
        await asyncio.wait_for(stopping, 10)
        assert all(s._task is None or s._task.done() for s in feed._subscribers.values())
        await client.aclose()

    asyncio.run(scenario())


def cluster_store(server: ServerThread) -> RedisStore:
    """The server's Redis store (under its metrics wrapper)."""
    store = getattr(server.server.store, "inner", server.server.store)
    assert isinstance(store, RedisStore)
    return store


def open_idle_connections(server: ServerThread, node: RedisProcess, count: int) -> int:
    """Have the server's cluster client open ``count`` connections to ``node`` at once (as calls
    in flight together do), all idle afterwards; returns how many connections ``node`` has whose
    last command was that PING (the node's own count: ``CLIENT LIST``). With two or more,
    redis-py 8.1.0 sent an ASK-redirected command's ASKING and the command on different
    connections."""

    async def open_them() -> None:
        client = cast(AsyncRedisCluster, cluster_store(server)._redis)
        await client.initialize()  # a server that has served no call yet may not have the map
        cluster_node = client.get_node(host="127.0.0.1", port=node.port)
        assert cluster_node is not None
        await asyncio.gather(
            *(client.execute_command("PING", target_nodes=cluster_node) for _ in range(count))
        )

    server.run(open_them())
    return sum(1 for connection in node.client().client_list() if connection["cmd"] == "ping")


def events_up_to(
    client: MatchClient, after: int, version: int, *, seat: int = 0, watch_token: str = ""
) -> list[game_pb2.MatchEvent]:
    """A resumed WatchMatch stream's events after ``after``, up to ``version`` complete."""
    got = []
    for event in client.watch(seat, after, timeout=20, watch_token=watch_token or None):
        got.append(event)
        if event.version >= version and event.version_complete:
            return got
    raise AssertionError(f"the stream ended before version {version}")


class HalfMoved:
    """A match of a served three-master cluster whose slot is half moved: the target
    IMPORTING, the source MIGRATING, the match's keys (record, events, watch access) already
    MIGRATEd. The server's client holds idle connections to the target, and no master knows
    the store's scripts (so a commit meets NOSCRIPT on the target and loads them again).
    Unless ``watched``, no seat has asked for a watch token (the watch key is empty); with
    ``earlier``, the match has no watch key at all, as one made by an earlier store."""

    def __init__(
        self,
        cluster: RedisClusterProcess,
        seed: int,
        *,
        watched: bool = True,
        earlier: bool = False,
        store_timeout_s: float = 2.0,
    ) -> None:
        self.cluster = cluster
        self.seed = seed
        self.server = ServerThread(
            Settings(
                redis_url=cluster.url,
                redis_cluster=True,
                allow_seeds=True,
                metrics_port=None,
                store_timeout_s=store_timeout_s,
            )
        )
        self.client, _ = MatchClient.create(self.server.channel, seed=seed)
        self.rng = random.Random(seed)
        self.played = play_match(self.client, self.rng, stop=lambda v: v.version >= 3)
        self.watch_token = self.client.watch_token(0) if watched else ""
        self.version = self.client.view(0).version
        match_id = self.client.match_id
        self.keys = [keys.match_key(match_id), keys.events_key(match_id)]
        if earlier:
            direct = RedisCluster.from_url(cluster.url)
            try:
                assert direct.delete(keys.watch_key(match_id)) == 1
            finally:
                direct.close()
        else:
            self.keys.append(keys.watch_key(match_id))
        self.slot = key_slot(self.keys[0].encode())
        self.source = slot_owner(cluster, self.slot)
        self.target = next(n for n in cluster.nodes if n is not self.source)
        assert open_idle_connections(self.server, self.target, 4) >= 2
        for node in cluster.nodes:
            node.client().script_flush()
        begin_slot_move(cluster, self.slot, self.target)
        for node, held in ((self.target, self.keys), (self.source, [])):
            found = node.client().execute_command("CLUSTER", "GETKEYSINSLOT", self.slot, 10)  # type: ignore[no-untyped-call]
            assert sorted(k.decode() for k in found) == sorted(held)

    def play_once(self) -> None:
        """One play of the match (a commit), through the server."""
        before = len(self.played.plays)
        play_match(
            self.client, self.rng, stop=lambda v: v.version > self.version, record=self.played
        )
        assert len(self.played.plays) == before + 1

    def finish(self) -> tuple[int, object]:
        """End the move; the match as stored (version, state), checked (``check``)."""
        end_slot_move(self.cluster, self.slot, self.source, self.target)
        return self.check()

    def check(self) -> tuple[int, object]:
        """The match as stored (version, state), checked against its stream and the engine's
        replay of every play made."""
        direct = RedisCluster.from_url(self.cluster.url)
        try:
            as_redis = cast(redis.Redis, direct)
            version, state = stored_state(as_redis, self.client.match_id)
            assert audit_replay(as_redis, self.client.match_id) == (version, state)
            assert state == engine_replay(self.seed, self.played.plays)
        finally:
            direct.close()
        return version, state

    def close(self) -> None:
        self.server.stop()


def test_calls_on_a_match_whose_slot_is_half_moved_succeed_once(
    cluster: RedisClusterProcess,
) -> None:
    """During a slot move, between MIGRATE and SETSLOT NODE, the source answers ASK for the
    match's keys: GetMatch (GET), WatchMatch resumed by a seat (XRANGE pipeline) and by a
    spectator (its watch access read from the moved watch key), and a Play (the commit
    script, after NOSCRIPT on the target) all succeed on the target, and the play is committed
    once: the version one more, its event once in the stream. A stream open meanwhile gets the
    play once the slot has moved, as a replay gives it."""
    moved = HalfMoved(cluster, seed=5)
    follower: StreamReader | None = None
    try:
        version = moved.version
        follower = follow(moved.client, 0)
        wait_until(lambda: follower is not None and follower.has(version), what="stream live")
        assert moved.client.view(0).version == version
        assert events_up_to(moved.client, version - 2, version)[0].version == version - 1
        spectator = events_up_to(moved.client, version - 2, version, watch_token=moved.watch_token)
        assert spectator[0].version == version - 1
        moved.play_once()
        assert moved.client.view(1).version == version + 1
        resumed = events_up_to(moved.client, version, version + 1, seat=1)
        assert {e.version for e in resumed} == {version + 1}
        stored, _ = moved.finish()
        assert stored == version + 1
        # The stream open during the move gets the play once the slot has moved, once.
        wait_until(lambda: follower is not None and follower.has(version + 1), what="the play")
        assert follower.error is None, follower.error
        assert follower.events == events_up_to(moved.client, 0, version + 1)
    finally:
        if follower is not None:
            follower.close()
        moved.close()


def test_many_calls_in_flight_on_a_half_moved_slot_all_succeed(
    cluster: RedisClusterProcess,
) -> None:
    """Many calls on the half-moved match at once, each meeting ASK: 48 store reads of each
    kind on the server's loop together (other coroutines take the target's connections between
    any two steps of a redirected call), then 64 GetMatch and WatchMatch resumes through the
    server from 16 threads with one Play among them: every call succeeds, the play once."""
    moved = HalfMoved(cluster, seed=6)
    try:
        version, match_id = moved.version, moved.client.match_id
        store = cluster_store(moved.server)

        async def reads() -> tuple[
            list[MatchRecord | None], list[EventPage], list[dict[str, WatchAccess | None]]
        ]:
            return await asyncio.gather(  # all 144 at once
                asyncio.gather(*(store.load(match_id) for _ in range(48))),
                asyncio.gather(*(store.events(match_id, version - 1) for _ in range(48))),
                asyncio.gather(*(store.watch_access((match_id,)) for _ in range(48))),
            )

        loads, pages, accesses = moved.server.run(reads())
        assert all(r is not None and r.version == version for r in loads)
        assert all([e.version for e in p.entries] == [version] for p in pages)
        assert all(a[match_id] is not None for a in accesses)

        def call(n: int) -> int:
            if n == 0:
                moved.play_once()
                return version + 1
            if n % 3 == 0:
                return moved.client.view(n % 2).version
            token = moved.watch_token if n % 3 == 1 else ""
            return events_up_to(moved.client, version - 1, version, watch_token=token)[-1].version

        with concurrent.futures.ThreadPoolExecutor(16) as pool:
            answers = list(pool.map(call, range(64)))
        assert all(a in (version, version + 1) for a in answers)
        assert moved.client.view(0).version == version + 1
        stored, _ = moved.finish()
        assert stored == version + 1
    finally:
        moved.close()


TRIES = 2 * AsyncRedisCluster.RedisClusterRequestTTL
"""More refusals than redis-py's own retries of one command (16 tries) can meet: a call that
is still waiting after these was retried by the store."""


def refusals(node: RedisProcess, error: str = "TRYAGAIN") -> int:
    """TRYAGAIN answers the node gave (a multi-key command on a slot it imports), or those of
    another ``error``."""
    client = node.client()
    try:
        stats = client.info("errorstats")
    finally:
        client.close()
    return int(stats.get(f"errorstat_{error}", {}).get("count", 0))


def in_background(call: Callable[[], T]) -> concurrent.futures.Future[T]:
    """``call`` on a thread of its own; its future."""
    pool = concurrent.futures.ThreadPoolExecutor(1)
    try:
        return pool.submit(call)
    finally:
        pool.shutdown(wait=False)


def cluster_settings(cluster: RedisClusterProcess, **overrides: Any) -> Settings:
    return Settings(
        redis_url=cluster.url, redis_cluster=True, allow_seeds=True, metrics_port=None, **overrides
    )


def create_match(channel: grpc.Channel, request_id: str) -> pb.CreateMatchResponse:
    stub = basra_service_pb2_grpc.BasraServiceStub(channel)
    response: pb.CreateMatchResponse = stub.CreateMatch(
        pb.CreateMatchRequest(request_id=request_id, seed=3), timeout=60
    )
    return response


def test_a_match_created_in_a_moving_slot_waits_for_the_move_and_is_created_once(
    cluster: RedisClusterProcess,
) -> None:
    """CreateMatch whose new match id falls in a slot being moved (the target IMPORTING, the
    source MIGRATING): the create script names keys that exist nowhere yet, which the target
    refuses with TRYAGAIN. The call retries within its deadline, and once the move ends it
    creates the match, once: one record, one event, and the same request_id answers the
    same match and tokens."""
    server = ServerThread(cluster_settings(cluster, store_timeout_s=30))
    try:
        request_id = str(uuid.uuid4())
        match_id = auth.match_id_for(request_id)
        slot = key_slot(keys.match_key(match_id).encode())
        source = slot_owner(cluster, slot)
        target = next(n for n in cluster.nodes if n is not source)
        assert open_idle_connections(server, target, 4) >= 2
        begin_slot_move(cluster, slot, target)
        refused, bounced = refusals(target), refusals(target, "MOVED")
        call = in_background(lambda: create_match(server.channel, request_id))
        wait_until(lambda: refusals(target) > refused + TRIES or call.done(), what="TRYAGAINs")
        assert not call.done(), call.exception()  # waiting for the move, not failed
        # Each try after a refusal goes back to the target with ASKING: none is sent there
        # without it (which the target answers MOVED, back to the source).
        assert refusals(target, "MOVED") == bounced
        end_slot_move(cluster, slot, source, target)
        created = call.result(30)
        assert created.match_id == match_id
        direct = RedisCluster.from_url(cluster.url)
        try:
            record = stored_record(cast(redis.Redis, direct), match_id)
            assert record.version == 1
            assert direct.xlen(keys.events_key(match_id)) == 1
        finally:
            direct.close()
        again = create_match(server.channel, request_id)
        assert again.match_id == match_id
        assert list(again.seat_tokens) == list(created.seat_tokens)
    finally:
        server.stop()


def test_a_create_in_a_slot_still_moving_at_its_deadline_is_unavailable_and_retryable(
    cluster: RedisClusterProcess,
) -> None:
    """A slot that stays half-moved past the store deadline: CreateMatch answers
    UNAVAILABLE/STORE_UNAVAILABLE (nothing created); retried with the same request_id once the
    slot has moved, it creates the match."""
    server = ServerThread(cluster_settings(cluster, store_timeout_s=0.5))
    try:
        request_id = str(uuid.uuid4())
        match_id = auth.match_id_for(request_id)
        slot = key_slot(keys.match_key(match_id).encode())
        source = slot_owner(cluster, slot)
        target = next(n for n in cluster.nodes if n is not source)
        begin_slot_move(cluster, slot, target)
        refused = refusals(target)
        rejection = Rejection.of(rpc_error(lambda: create_match(server.channel, request_id)))
        assert (rejection.code, rejection.reason) == (
            grpc.StatusCode.UNAVAILABLE,
            "STORE_UNAVAILABLE",
        )
        assert refusals(target) > refused
        for node in (source, target):
            client = node.client()
            held = client.execute_command("CLUSTER", "GETKEYSINSLOT", slot, 10)  # type: ignore[no-untyped-call]
            client.close()
            assert keys.match_key(match_id).encode() not in held
        end_slot_move(cluster, slot, source, target)
        assert create_match(server.channel, request_id).match_id == match_id
    finally:
        server.stop()


@pytest.mark.parametrize(
    ("rpc", "seed", "seat"), [("CreateWatchToken", 7, 0), ("RevokeWatchTokens", 8, 1)]
)
def test_the_first_watch_token_call_of_a_match_with_no_watch_key_waits_for_the_move(
    cluster: RedisClusterProcess, rpc: str, seed: int, seat: int
) -> None:
    """CreateWatchToken or RevokeWatchTokens of a match with no watch key (made by an earlier
    store, never played since), its slot half moved: the swap script names the missing watch
    key, which the importing master refuses with TRYAGAIN. The call waits for the move and
    succeeds once: the token works, and asked again it is the same (after a revocation, the
    seat's new token is the one kept)."""
    moved = HalfMoved(cluster, seed=seed, watched=False, earlier=True, store_timeout_s=30)
    ask = (
        moved.client.watch_token if rpc == "CreateWatchToken" else moved.client.revoke_watch_tokens
    )
    try:
        refused = refusals(moved.target)
        call = in_background(lambda: ask(seat))
        wait_until(
            lambda: refusals(moved.target) > refused + TRIES or call.done(), what="TRYAGAINs"
        )
        assert not call.done(), call.exception()
        moved.finish()
        token = call.result(30)
        assert moved.client.watch_token(seat) == token
        spectator = events_up_to(moved.client, 0, moved.version, watch_token=token)
        assert spectator[-1].version == moved.version
    finally:
        moved.close()


def test_the_watch_key_lives_as_long_as_the_match_on_a_cluster(
    cluster: RedisClusterProcess,
) -> None:
    """The store contract's watch-key lifetime on a three-master cluster (the create and commit
    scripts name the watch key with the match's other keys, on the match's master), and its
    expiring health probe."""
    direct = RedisCluster.from_url(cluster.url)

    async def scenario() -> None:
        store = RedisStore(
            cluster.url, cluster=True, ttl_s=100, events_maxlen=5, timeout_s=2, finished_ttl_s=60
        )
        try:
            await watch_key_lives_as_long_as_the_match(store, direct)
            await probe_expires_within_a_minute(store, direct)
        finally:
            await store.close()

    try:
        asyncio.run(scenario())
    finally:
        direct.close()


def expiry_lag(cluster: RedisClusterProcess, match_id: str) -> int:
    """How much later than its record the match's watch key expires, in ms."""
    direct = RedisCluster.from_url(cluster.url)
    try:
        watch = int(direct.pexpiretime(keys.watch_key(match_id)))
        return watch - int(direct.pexpiretime(keys.match_key(match_id)))
    finally:
        direct.close()


def test_a_play_on_a_half_moved_slot_refreshes_the_watch_key_too(
    cluster: RedisClusterProcess,
) -> None:
    """A play on a half-moved match gives its moved watch key the match's new expiry (the
    script that names it follows ASK to the importing master)."""
    moved = HalfMoved(cluster, seed=9)
    try:
        moved.play_once()
        moved.finish()
        assert 0 <= expiry_lag(cluster, moved.client.match_id) < 1_000
    finally:
        moved.close()


def test_calls_on_a_half_moved_match_with_no_watch_token_yet_are_not_refused(
    cluster: RedisClusterProcess,
) -> None:
    """A match no seat asked a watch token for still has its watch key (empty, made with the
    match): the importing master holds every key the commit and the swap scripts name and runs
    them at once, a play and then the first CreateWatchToken."""
    moved = HalfMoved(cluster, seed=10, watched=False)
    try:
        refused = refusals(moved.target)
        moved.play_once()
        token = moved.client.watch_token(0)
        assert refusals(moved.target) == refused
        moved.finish()
        assert moved.client.watch_token(0) == token
    finally:
        moved.close()


def test_a_play_on_a_half_moved_match_with_no_watch_key_waits_for_the_move_and_makes_it(
    cluster: RedisClusterProcess,
) -> None:
    """A match made by an earlier store has no watch key: while its slot is half moved the
    importing master refuses the commit naming it (TRYAGAIN), the play waits for the move, is
    applied once, and its commit makes the watch key, empty."""
    moved = HalfMoved(cluster, seed=12, watched=False, earlier=True, store_timeout_s=30)
    try:
        refused = refusals(moved.target)
        call = in_background(moved.play_once)
        wait_until(
            lambda: refusals(moved.target) > refused + TRIES or call.done(), what="TRYAGAINs"
        )
        assert not call.done(), call.exception()
        end_slot_move(cluster, moved.slot, moved.source, moved.target)
        call.result(30)
        moved.check()
        direct = RedisCluster.from_url(cluster.url)
        try:
            assert direct.get(keys.watch_key(moved.client.match_id)) == b""
        finally:
            direct.close()
        assert 0 <= expiry_lag(cluster, moved.client.match_id) < 1_000
    finally:
        moved.close()


def hang_refreshes(store: RedisStore, hanging: set[int]) -> list[asyncio.Task[Any] | None]:
    """Make the store's Cluster client's slot-map refreshes whose numbers (from 1) are in
    ``hanging`` never answer, as a node that accepts connections and says nothing; the tasks
    that asked for each refresh, in order."""
    manager = cast(AsyncRedisCluster, store._redis).nodes_manager
    refreshes: list[asyncio.Task[Any] | None] = []

    class Refreshes(type(manager)):  # type: ignore[misc]
        __slots__ = ()  # NodesManager's: so an instance can take this class

        async def initialize(self, *args: Any, **kwargs: Any) -> None:
            refreshes.append(asyncio.current_task())
            if len(refreshes) in hanging:
                await asyncio.Event().wait()
            await super().initialize(*args, **kwargs)

    manager.__class__ = Refreshes
    return refreshes


def test_a_follow_whose_first_slot_map_does_not_come_in_time_is_unavailable(
    cluster: RedisClusterProcess,
) -> None:
    """The feed's first follow on a Cluster client that has no slot map yet asks for one; when
    it does not come within the store deadline, follow answers StoreUnavailableError (what the
    watch streams handle: they fail and the next stream tries again), not a bare TimeoutError
    the streams would wait on forever; the next follow gets the map and subscribes."""

    async def scenario() -> None:
        store = RedisStore(cluster.url, cluster=True, ttl_s=100, events_maxlen=5, timeout_s=0.5)
        refreshes = hang_refreshes(store, {1})
        feed = store.feed(lambda: None)
        try:
            # The error names what kept the map from coming: the store deadline.
            with pytest.raises(StoreUnavailableError, match=r"^no Redis Cluster slot map: Timeout"):
                await asyncio.wait_for(feed.follow("M" * 22), 10)
            await asyncio.wait_for(feed.follow("M" * 22), 10)
            assert len(refreshes) == 2
        finally:
            await asyncio.wait_for(store.close(), 10)

    asyncio.run(scenario())


def test_a_follow_of_a_match_whose_slot_no_master_serves_is_unavailable(
    cluster: RedisClusterProcess,
) -> None:
    """A Cluster whose slot map leaves the match's slot to no master (its slots deleted, as
    after losing a master with no replica): follow answers StoreUnavailableError naming the
    channel's cluster, what the watch streams handle, not redis-py's RedisClusterException."""
    channel = keys.wake_channel("M" * 22)
    slot = key_slot(channel.encode())
    for node in cluster.nodes:
        with node.client() as client:
            client.execute_command("CLUSTER", "DELSLOTS", slot)

    async def scenario() -> None:
        store = RedisStore(cluster.url, cluster=True, ttl_s=100, events_maxlen=5, timeout_s=2)
        feed = store.feed(lambda: None)
        try:
            with pytest.raises(StoreUnavailableError, match="no Redis Cluster"):
                await asyncio.wait_for(feed.follow("M" * 22), 10)
        finally:
            await asyncio.wait_for(store.close(), 10)
        # A client that takes a slot map with slots left out (redis-py's
        # require_full_coverage off) has a map, without the channel's slot in it: the same
        # answer, naming the channel, rather than redis-py's SlotNotCoveredError.
        store = RedisStore(cluster.url, cluster=True, ttl_s=100, events_maxlen=5, timeout_s=2)
        cast(AsyncRedisCluster, store._redis).nodes_manager.require_full_coverage = False
        feed = store.feed(lambda: None)
        try:
            with pytest.raises(StoreUnavailableError) as refused:
                await asyncio.wait_for(feed.follow("M" * 22), 10)
            assert str(refused.value) == f"no Redis Cluster node serves {channel.encode()!r}"
        finally:
            await asyncio.wait_for(store.close(), 10)

    asyncio.run(scenario())


def test_the_feed_follows_a_moved_slot_even_when_its_first_slot_map_refresh_hangs(
    cluster: RedisClusterProcess, caplog: pytest.LogCaptureFixture
) -> None:
    """A followed match's slot moves to another master, and the feed's first refresh of the
    slot map after the move never answers: the refresh gives up at the store deadline and is
    tried again in the same reroute, which subscribes the channel on the new master, reports
    it read again (what was published meanwhile is lost) and closes the old master's reader,
    left without channels. Nothing is logged as an error (the old master's MOVED is a lost
    connection); unfollowed, the channel is unsubscribed from the new master; and the feed
    closes cleanly while a reroute is stuck in a refresh."""
    caplog.set_level(logging.WARNING)
    match_id = "M" * 22
    channel = keys.wake_channel(match_id)
    slot = key_slot(channel.encode())
    source = slot_owner(cluster, slot)
    target = next(n for n in cluster.nodes if n is not source)

    async def scenario() -> None:
        store = RedisStore(cluster.url, cluster=True, ttl_s=100, events_maxlen=5, timeout_s=1)
        feed = store.feed(lambda: None)
        try:
            await asyncio.wait_for(feed.follow(match_id), 10)
            assert list(feed._subscribers) == [f"127.0.0.1:{source.port}"]
            hanging = {1}  # the refreshes (by number) that never answer
            refreshes = hang_refreshes(store, hanging)
            await asyncio.to_thread(migrate_slot, cluster, slot, target)
            seen = []
            while (match_id, 0) not in seen:
                seen += [
                    (c.match_id, c.version) for c in await asyncio.wait_for(feed.changes(), 20)
                ]
            assert seen == [(match_id, 0)]
            await asyncio.to_thread(
                wait_until, lambda: shard_channels(cluster, target) == 1, 10, "on the target"
            )
            assert shard_channels(cluster, source) == 0
            with target.client() as client:
                client.execute_command("SPUBLISH", channel, "7")
            changes = await asyncio.wait_for(feed.changes(), 10)
            assert [(c.match_id, c.version) for c in changes] == [(match_id, 7)]
            await asyncio.to_thread(
                wait_until,
                lambda: list(feed._subscribers) == [f"127.0.0.1:{target.port}"],
                10,
                "the old master's reader closed",
            )
            first = refreshes[0]
            assert first is not None
            await asyncio.wait({first}, timeout=10)  # the reroute, still closing that reader
            assert first.done()
            assert first.exception() is None
            assert len(refreshes) == 2  # the hung refresh and its retry, in one reroute
            feed.unfollow(match_id)
            await asyncio.to_thread(
                wait_until, lambda: shard_channels(cluster) == 0, 10, "unsubscribed"
            )
            hanging.add(3)
            feed._reroute()
            await asyncio.to_thread(wait_until, lambda: len(refreshes) == 3, 10, "stuck")
        finally:
            await asyncio.wait_for(store.close(), 10)

    asyncio.run(scenario())
    assert [r for r in caplog.records if r.levelno >= logging.ERROR] == []
    # The old master's reader, answered MOVED, logged its loss under the master's name.
    lost = [r for r in caplog.records if r.getMessage() == "watch reader lost its Redis connection"]
    assert {r.__dict__["node"] for r in lost} == {f"127.0.0.1:{source.port}"}


def test_a_cluster_out_of_memory_is_store_full_in_redis_words(
    cluster: RedisClusterProcess,
) -> None:
    """A Cluster master that refuses writes for maxmemory (noeviction): the store's call is
    StoreFullError, saying what Redis said (the operator's cue), not a bare error."""
    for node in cluster.nodes:
        with node.client() as client:
            client.config_set("maxmemory-policy", "noeviction")
            client.config_set("maxmemory", 1)

    async def scenario() -> None:
        store = RedisStore(cluster.url, cluster=True, ttl_s=100, events_maxlen=5, timeout_s=5)
        try:
            with pytest.raises(StoreFullError) as full:
                await asyncio.wait_for(store.ping(), 10)
            assert str(full.value).startswith("command not allowed when used memory > 'maxmemory'")
        finally:
            await asyncio.wait_for(store.close(), 10)

    asyncio.run(scenario())


def test_a_cluster_call_past_its_deadline_is_unavailable_naming_the_timeout(
    cluster: RedisClusterProcess,
) -> None:
    """Masters that hold every write (CLIENT PAUSE, unpaused only after the check): the call
    ends at the store deadline as StoreUnavailableError naming the timeout (no slot moved)."""

    async def scenario() -> None:
        store = RedisStore(cluster.url, cluster=True, ttl_s=100, events_maxlen=5, timeout_s=0.5)
        try:
            await asyncio.wait_for(store.ping(), 10)  # the slot map, before the pause
            for node in cluster.nodes:
                with node.client() as client:
                    client.execute_command("CLIENT", "PAUSE", 600_000, "WRITE")
            try:
                with pytest.raises(StoreUnavailableError) as unavailable:
                    await asyncio.wait_for(store.ping(), 10)
            finally:
                for node in cluster.nodes:
                    with node.client() as client:
                        client.execute_command("CLIENT", "UNPAUSE")
            assert str(unavailable.value).startswith("TimeoutError: "), unavailable.value
            await asyncio.wait_for(store.ping(), 10)  # and the next call goes through
        finally:
            await asyncio.wait_for(store.close(), 10)

    asyncio.run(scenario())


def test_a_cluster_read_cut_off_at_its_deadline_leaves_no_late_reply_for_the_next_call(
    cluster: RedisClusterProcess,
) -> None:
    """A read cut off at the call's deadline (every master paused, its command run and answered
    only after) takes its connection down with it: the calls after it get their own replies,
    never the late one. redis-py disconnects a connection whose read was interrupted unless
    told not to, and the Cluster connections' own read_response must not tell it so."""

    async def scenario() -> None:
        store = RedisStore(cluster.url, cluster=True, ttl_s=100, events_maxlen=5, timeout_s=0.5)
        try:
            assert await store.create(new())
            assert await store.commit("M" * 22, commit(1))  # a connection to the match's master
            # Paused for a while, as CLIENT UNPAUSE is held too while every command is.
            for node in cluster.nodes:
                with node.client() as client:
                    client.execute_command("CLIENT", "PAUSE", 2_000, "ALL")
            with pytest.raises(StoreUnavailableError):
                await store.load("M" * 22)  # its reply: the record at version 2
            wait_until(lambda: all(answers(node) for node in cluster.nodes), what="the pause's end")
            assert await store.commit("M" * 22, commit(2))
            for _ in range(3):  # round every connection the master's node holds
                record = await store.load("M" * 22)
                assert record is not None
                assert record.version == 3
        finally:
            await asyncio.wait_for(store.close(), 10)

    asyncio.run(scenario())


@pytest.mark.parametrize("pause", ["ALL", "WRITE"])
def test_a_redirected_call_cut_off_at_its_deadline_leaves_no_late_reply_for_the_next_call(
    cluster: RedisClusterProcess, pause: str
) -> None:
    """As above, for calls ASK-redirected to the master importing the match's slot, whose
    ASKING and command go in one write: the target paused for every command (a load's deadline
    falls while ASKING's reply is awaited) or for writes only (a stale commit's deadline falls
    while the command's own reply is): the calls after it get their own replies, and the match
    is as its plays left it."""
    moved = HalfMoved(cluster, seed=9)  # the store's deadline 2 s, as set up under any load
    try:
        store = cluster_store(moved.server)
        match_id, version = moved.client.match_id, moved.version
        with moved.target.client() as client:
            client.execute_command("CLIENT", "PAUSE", 4_000, pause)
        # A commit from version 1 changes nothing: the match is past it (its reply: not applied).
        cut_off = store.load(match_id) if pause == "ALL" else store.commit(match_id, commit(1))
        with pytest.raises(StoreUnavailableError):
            moved.server.run(cut_off)
        wait_until(lambda: answers(moved.target), what="the target answers")
        for _ in range(6):  # round every connection the server holds to the target
            record = moved.server.run(store.load(match_id))
            assert record is not None
            assert record.version == version
            page = moved.server.run(store.events(match_id, version - 1))
            assert [entry.version for entry in page.entries] == [version]
        stored, _ = moved.finish()
        assert stored == version
        # The slot moved: each call now takes one of the target's connections in turn (a
        # redirected one took two, the lone ASKING's never read, so a connection could be
        # passed over every time).
        for _ in range(8):
            record = moved.server.run(store.load(match_id))
            assert record is not None
            assert record.version == version
    finally:
        moved.close()


def test_a_channel_its_master_unsubscribes_but_still_serves_is_read_again(
    cluster: RedisClusterProcess,
) -> None:
    """A master that drops the match's slot and takes it back in one transaction (CLUSTER
    DELSLOTS, ADDSLOTS) unsubscribes the feed's reader from the slot's shard channel, as a
    move would; the refreshed slot map still names that master, so the reader subscribes there
    again, and reports the match to be read again (a change published in between is lost)."""
    channel = keys.wake_channel("M" * 22)
    slot = key_slot(channel.encode())

    async def scenario() -> None:
        store = RedisStore(cluster.url, cluster=True, ttl_s=100, events_maxlen=5, timeout_s=2)
        feed = store.feed(lambda: None)
        direct = AsyncRedisCluster.from_url(cluster.url)
        try:
            await asyncio.wait_for(feed.follow("M" * 22), 10)
            await asyncio.wait_for(direct.initialize(), 10)
            owner = direct.get_node_from_key(channel)
            assert owner is not None
            node = next(n for n in cluster.nodes if n.port == owner.port)
            with node.client() as client:
                pipe = client.pipeline(transaction=True)
                pipe.execute_command("CLUSTER", "DELSLOTS", slot)
                pipe.execute_command("CLUSTER", "ADDSLOTS", slot)
                pipe.execute()
            changes = await asyncio.wait_for(feed.changes(), 10)
            assert Change("M" * 22, 0) in changes
            await asyncio.wait_for(feed.follow("M" * 22), 10)  # subscribed there again
        finally:
            await direct.aclose()
            await asyncio.wait_for(store.close(), 10)

    asyncio.run(scenario())


def test_a_cluster_feed_connection_that_falls_silent_is_dropped_and_opened_again(
    cluster: RedisClusterProcess, caplog: pytest.LogCaptureFixture
) -> None:
    """test_redis_feed's silent connection on a Cluster, whose reader connections are of the
    folded ASKING class too (its read_response must pass the reader's own timeout on): masters
    that answer nothing for a while (CLIENT PAUSE) are taken for dead after poll_s plus the
    deadline of silence, the connection opened again, and the match reported to be read
    again once they answer."""

    async def scenario(feed: RedisFeed, reconnects: Reconnects) -> None:
        await asyncio.wait_for(feed.follow("M" * 22), 10)
        for node in cluster.nodes:
            with node.client() as client:
                client.execute_command("CLIENT", "PAUSE", 2_000, "ALL")
        await asyncio.to_thread(wait_until, lambda: reconnects.count, 10, "a reconnection")
        await asyncio.to_thread(
            wait_until, lambda: all(answers(n) for n in cluster.nodes), 30, "answers"
        )
        assert await changes_until(feed, "M" * 22, 0) == [("M" * 22, 0)]

    caplog.set_level(logging.WARNING, logger="basra.store")
    run_feed(cluster, scenario, timeout_s=0.2, poll_s=0.1)
    lost = [r for r in caplog.records if r.getMessage() == "watch reader lost its Redis connection"]
    assert lost[0].__dict__["cause"] == "TimeoutError: no answer from Redis for 0.3 s"


def test_a_store_call_still_refused_at_its_deadline_names_the_last_refusal(
    cluster: RedisClusterProcess,
) -> None:
    """A create whose slot stays half-moved past the store deadline: StoreUnavailableError
    says the slot was still moving, with the last refusal (TRYAGAIN, or redis-py's "TTL
    exhausted." after its own tries) as its text and its cause."""
    match_id = "M" * 22
    slot = key_slot(keys.match_key(match_id).encode())
    source = slot_owner(cluster, slot)
    target = next(n for n in cluster.nodes if n is not source)
    begin_slot_move(cluster, slot, target)

    async def scenario() -> StoreUnavailableError:
        store = RedisStore(cluster.url, cluster=True, ttl_s=100, events_maxlen=5, timeout_s=2)
        try:
            with pytest.raises(StoreUnavailableError) as unavailable:
                await asyncio.wait_for(store.create(new(match_id)), 10)
            return unavailable.value
        finally:
            await asyncio.wait_for(store.close(), 10)

    error = asyncio.run(scenario())
    end_slot_move(cluster, slot, source, target)
    cause = error.__cause__
    assert isinstance(cause, redis.exceptions.TryAgainError | redis.exceptions.ClusterError)
    assert str(error) == f"a slot of the match was still moving at the deadline: {cause}"


def test_a_tryagain_handed_back_by_redis_py_is_retried_and_named_at_the_deadline() -> None:
    """redis-py retries TRYAGAIN itself on every path the store uses (its cluster client, and
    a pipeline's refused commands sent again one by one), ending with "TTL exhausted.", which
    the test above meets; a TRYAGAIN it handed back as it is would be retried the same way by
    the store (``redis._settled``, the operation standing for such a path) and named at the
    deadline."""
    refusal = redis.exceptions.TryAgainError("Multiple keys request during rehashing of slot")
    tries = [0]

    async def refused_twice() -> str:
        tries[0] += 1
        if tries[0] <= 2:
            raise refusal
        return "ran"

    async def refused() -> str:
        raise refusal

    async def scenario() -> None:
        moving: list[BaseException] = []
        assert await _settled(refused_twice, moving) == "ran"
        assert moving == [refusal, refusal]
        assert tries == [3]
        moving.clear()
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.2):
                await _settled(refused, moving)
        assert moving  # tried until the deadline
        assert all(exc is refusal for exc in moving)

    asyncio.run(scenario())


def test_a_deadline_whose_cancellation_was_swallowed_still_ends_the_tries() -> None:
    """A cancellation that lands as an awaited operation completes can be lost on Python
    3.11 (asyncio.wait_for then returns the result, as redis-py's writes under a socket
    timeout did): ``_settled`` raises it again before its next try. Without that a create in a
    slot moving past its deadline was tried until the suite's own timeout (seen in CI)."""
    refusal = redis.exceptions.TryAgainError("Multiple keys request during rehashing of slot")
    tries = [0]

    async def swallows_the_first_cancellation() -> str:
        tries[0] += 1
        if tries[0] == 1:
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.sleep(10)
        else:
            await asyncio.sleep(10)
        raise refusal

    async def call(moving: list[BaseException]) -> None:
        async with asyncio.timeout(5):  # the test's own bound, were the deadline lost
            async with asyncio.timeout(0.1):  # the call's deadline
                await _settled(swallows_the_first_cancellation, moving)

    async def scenario() -> None:
        moving: list[BaseException] = []
        with pytest.raises(TimeoutError):
            await call(moving)
        assert tries == [1]
        assert moving == [refusal]

    asyncio.run(scenario())


def test_a_cluster_store_writes_without_a_socket_timeout() -> None:
    """redis-py writes under asyncio.wait_for when a connection has a socket timeout (5 s by
    default on a Cluster), which can lose a cancellation (above): the Cluster store's
    connections have none, the call's deadline (``RedisStore._call``) bounds every command."""

    async def scenario() -> None:
        store = RedisStore(
            "redis://127.0.0.1:1", cluster=True, ttl_s=100, events_maxlen=5, timeout_s=2
        )
        client = store._redis
        assert isinstance(client, AsyncRedisCluster)
        try:
            assert client.connection_kwargs["socket_timeout"] is None
            assert client.startup_nodes
            for node in client.startup_nodes:
                assert node.connection_kwargs["socket_timeout"] is None
        finally:
            await store.close()

    asyncio.run(scenario())


def test_a_cluster_call_on_connections_the_nodes_dropped_is_sent_again_at_once(
    cluster: RedisClusterProcess,
) -> None:
    """Every master drops the store's connections (as a restart does): the next calls meet
    dead pooled connections and are sent again on new ones within their deadline (half a
    second here) rather than failing, as on one Redis (test_resilience)."""

    async def scenario() -> None:
        store = RedisStore(cluster.url, cluster=True, ttl_s=100, events_maxlen=5, timeout_s=0.5)
        try:
            assert await store.create(new())
            assert await store.commit("M" * 22, commit(1))  # connections to the match's master
            for node in cluster.nodes:
                with node.client() as client:
                    client.execute_command("CLIENT", "KILL", "TYPE", "normal")
            record = await store.load("M" * 22)
            assert record is not None
            assert record.version == 2
            assert await store.commit("M" * 22, commit(2))
        finally:
            await asyncio.wait_for(store.close(), 10)

    asyncio.run(scenario())


class Opened:
    """The connections opened to a cluster's masters since this was made, and a match whose
    master is not the node the clients ask for the slot map (cluster.url's)."""

    def __init__(self, cluster: RedisClusterProcess) -> None:
        self.nodes = cluster.nodes
        self.startup = cluster.nodes[0]
        with RedisCluster.from_url(cluster.url) as direct:
            for match_id in (letter * 22 for letter in "ABCDEFGHJK"):
                port = direct.get_node_from_key(keys.match_key(match_id)).port
                if port != self.startup.port:
                    break
            else:
                raise AssertionError("every match tried is on the startup node")
        self.match_id = match_id
        self.master = next(n for n in cluster.nodes if n.port == port)
        self.before = {node.port: self._ids(node) for node in self.nodes}

    @staticmethod
    def _ids(node: RedisProcess) -> set[int]:
        with node.client() as client:
            own = client.client_id()
            return {int(entry["id"]) for entry in client.client_list()} - {own}

    def by_node(self) -> dict[int, int]:
        """How many connections opened since are open now, per node port (none: absent)."""
        opened = {node.port: len(self._ids(node) - self.before[node.port]) for node in self.nodes}
        return {port: count for port, count in opened.items() if count}

    def drop_the_masters_connections(self) -> None:
        with self.master.client() as client:
            client.execute_command("CLIENT", "KILL", "TYPE", "normal")


def test_a_cluster_store_closes_every_connection_even_after_a_call_lost_its_own(
    cluster: RedisClusterProcess,
) -> None:
    """A one-shot call that meets a connection its master dropped fails (it may have run), and
    leaves redis-py's client waiting to reload its slot map, when the client's aclose closes
    nothing: the store's close still closes every connection the store opened, on every node,
    as a server that drains must."""
    opened = Opened(cluster)
    match_id = opened.match_id

    async def scenario() -> None:
        store = RedisStore(cluster.url, cluster=True, ttl_s=100, events_maxlen=5, timeout_s=2)
        access = WatchAccess(b"s" * 16, (b"h" * 32, b""))
        try:
            assert await store.create(new(match_id))
            # The swap goes on the one-shot client (it is not resent): its connections to the
            # node that gave it the slot map and to the match's master.
            assert await store.swap_watch_access(match_id, None, access, revoke=False)
            opened.drop_the_masters_connections()
            with pytest.raises(StoreUnavailableError, match=r"^ConnectionError"):
                await store.swap_watch_access(match_id, access, access, revoke=False)
            assert opened.startup.port in opened.by_node()
        finally:
            await asyncio.wait_for(store.close(), 10)
        # Checked while the store is still referenced: collected, its sockets would close
        # (with a ResourceWarning each) whether its close closed them or not.
        wait_until(lambda: not opened.by_node(), what="no connection of the store left open")

    asyncio.run(scenario())


def test_redis_py_cluster_aclose_still_leaves_open_what_a_call_lost_its_connection_opened(
    cluster: RedisClusterProcess,
) -> None:
    """The upstream limitation ``redis_cluster.close_cluster`` works around: after a call that
    lost its connection (no retries), redis-py's asyncio cluster client waits to reload its
    slot map and its aclose closes none of its connections. When this test fails, aclose
    closes them itself: close_cluster can be its aclose alone."""
    opened = Opened(cluster)
    key = keys.match_key(opened.match_id)

    async def scenario() -> None:
        client = AsyncRedisCluster.from_url(cluster.url, retry=Retry(NoBackoff(), 0))
        try:
            await client.get(key)
            opened.drop_the_masters_connections()
            with pytest.raises(redis.exceptions.ConnectionError):
                await client.get(key)
            await client.aclose()
            left = opened.by_node()
        finally:
            await close_cluster(client)
        assert opened.startup.port in left, left
        wait_until(lambda: not opened.by_node(), what="close_cluster closes what aclose left")

    asyncio.run(scenario())


def test_redis_py_still_splits_asking_from_its_command_so_fold_asking_is_still_needed(
    cluster: RedisClusterProcess,
) -> None:
    """The upstream limitation ``redis_cluster.fold_asking`` works around: redis-py's own
    asyncio cluster client, with two idle connections to the master importing a slot, sends
    an ASK-redirected command's ASKING and the command on different connections, so the
    target answers MOVED and the read never lands. When this test fails, redis-py pairs them
    itself: drop ``fold_asking`` and this test."""
    key = "basra:{upstream}:match"
    slot = key_slot(key.encode())
    with RedisCluster.from_url(cluster.url) as setup:
        setup.set(key, b"v")
    source = slot_owner(cluster, slot)
    target = next(n for n in cluster.nodes if n is not source)
    begin_slot_move(cluster, slot, target)

    async def scenario() -> BaseException | bytes:
        client = AsyncRedisCluster.from_url(cluster.url)
        try:
            await client.initialize()
            node = client.get_node(host="127.0.0.1", port=target.port)
            assert node is not None
            await asyncio.gather(
                *(client.execute_command("PING", target_nodes=node) for _ in range(4))
            )
            try:
                return cast(bytes, await asyncio.wait_for(client.get(key), 30))
            except redis.exceptions.RedisError as exc:
                return exc
        finally:
            # Its redirection loop reloads the slot map mid-call (every fifth MOVED), after
            # which aclose alone leaves open the connections the loop opened.
            await close_cluster(client)

    try:
        outcome = asyncio.run(scenario())
    finally:
        end_slot_move(cluster, slot, source, target)
    assert isinstance(outcome, redis.exceptions.ClusterError), outcome
