"""Presence: a seat is connected while a WatchMatch stream of it is open on any replica. Views
of every replica say so; a stream that ends cleanly disconnects its seat at once; a seat whose
replica stopped renewing goes stale after the TTL (time driven by a held clock, never slept);
streams that ask get a Presence message when they open and whenever the connected seats
change."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import cast

import pytest
import redis

from basra.service import presence
from basra.service.config import SettingError, Settings
from basra.service.store import StoreUnavailableError, keys
from basra.service.store.base import Heartbeat
from basra.service.store.memory import MemoryStore
from basra.v1 import basra_service_pb2 as pb
from basra.v1 import game_pb2
from tests.service.conftest import HeldClock
from tests.service.driver import bearer, stub
from tests.support import ServerThread, StreamReader, wait_until

GREEDY = game_pb2.BOT_LEVEL_GREEDY
PERSON = game_pb2.BOT_LEVEL_UNSPECIFIED


class Table:
    """A four-seat match (seat 2 a bot) with the host's token and two claimed seats' tokens."""

    def __init__(self, server: ServerThread) -> None:
        created = stub(server).CreateMatch(
            pb.CreateMatchRequest(
                rules="egyptian",
                seats=4,
                bots=[PERSON, PERSON, GREEDY, PERSON],
                invitations=True,
                seed=5,
                display_name="Host",
            )
        )
        self.match_id = created.match_id
        self.tokens = {0: created.seat_tokens[0].token}
        for invitation in created.invitations:
            claimed = stub(server).ClaimSeat(
                pb.ClaimSeatRequest(
                    match_id=created.match_id,
                    invitation=invitation.code,
                    display_name=f"Guest {invitation.seat}",
                )
            )
            self.tokens[invitation.seat] = claimed.seat_token.token

    def connected(self, server: ServerThread, seat: int = 0) -> list[bool]:
        """Each seat's ``connected``, in the view GetMatch answers on ``server``."""
        response = stub(server).GetMatch(
            pb.GetMatchRequest(match_id=self.match_id), metadata=bearer(self.tokens[seat])
        )
        assert all(s.HasField("connected") for s in response.view.seats)
        return [s.connected for s in response.view.seats]

    def watch(self, server: ServerThread, seat: int, *, presence: bool = False) -> StreamReader:
        return StreamReader(
            stub(server).WatchMatch(
                pb.WatchMatchRequest(match_id=self.match_id, presence=presence),
                metadata=bearer(self.tokens[seat]),
            )
        )


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> HeldClock:
    """Presence's clock, held still: the marks expire only when the test moves it."""
    held = HeldClock()
    held.at = 1_900_000_000.0
    monkeypatch.setattr(presence, "now", held)
    return held


TTL_S = 7200.0
"""The replicas' presence TTL: two of their renewal intervals."""


@pytest.fixture
def replicas(
    start_server: Callable[..., ServerThread], redis_url: str
) -> tuple[ServerThread, ServerThread]:
    """Two replicas on one Redis that renew presence only when a seat connects or leaves (an
    hour between renewals, more than any test lasts: as good as a replica that stopped
    renewing once the held clock moves past the TTL)."""
    return (
        start_server(redis_url=redis_url, presence_interval_s=3600, presence_ttl_s=TTL_S),
        start_server(redis_url=redis_url, presence_interval_s=3600, presence_ttl_s=TTL_S),
    )


def test_a_stream_on_one_replica_connects_its_seat_in_views_of_another_until_it_ends(
    replicas: tuple[ServerThread, ServerThread],
) -> None:
    one, other = replicas
    table = Table(one)
    # Nobody watches: only the bot, which the service plays, is connected.
    assert table.connected(other) == [False, False, True, False]
    stream = table.watch(one, 3)
    wait_until(
        lambda: table.connected(other) == [False, False, True, True],
        what="seat 3's stream on one replica shows in the other's view",
    )
    assert table.connected(one, 1) == [False, False, True, True]
    # A second stream of the same seat elsewhere; the first ends: still connected.
    second = table.watch(other, 3)
    wait_until(lambda: len(second.events) > 0, what="the second stream is open")
    stream.close()
    wait_until(lambda: stream.thread.is_alive() is False, what="the first stream is closed")
    assert table.connected(other) == [False, False, True, True]
    second.close()
    wait_until(
        lambda: table.connected(one) == [False, False, True, False],
        what="the seat disconnects once its last stream ends",
    )
    assert not stream.presences, "presence was not asked for"
    assert not second.presences


def test_a_seat_whose_replica_stopped_renewing_goes_stale_after_the_ttl(
    replicas: tuple[ServerThread, ServerThread], clock: HeldClock
) -> None:
    one, other = replicas
    table = Table(one)
    stream = table.watch(one, 1)
    wait_until(lambda: table.connected(other)[1], what="seat 1 connects")
    clock.advance(TTL_S - 0.1)
    assert table.connected(other)[1], "still within the TTL"
    clock.advance(0.2)
    # The stream is still open, but its replica has not renewed it (as a killed one would not).
    assert table.connected(other) == [False, False, True, False]
    assert stream.error is None
    assert stream.thread.is_alive()
    stream.close()


def test_a_renewal_keeps_an_open_streams_seat_connected_past_the_ttl(
    start_server: Callable[..., ServerThread], redis_url: str, clock: HeldClock
) -> None:
    renewing = start_server(redis_url=redis_url, presence_interval_s=0.05, presence_ttl_s=15)
    other = start_server(redis_url=redis_url, presence_interval_s=10, presence_ttl_s=15)
    table = Table(renewing)
    stream = table.watch(renewing, 1)
    wait_until(lambda: table.connected(other)[1], what="seat 1 connects")
    store = redis.Redis.from_url(redis_url)
    key = keys.presence_key(table.match_id)
    for _ in range(3):
        clock.advance(10)
        expiry = (clock.at + 15) * 1000

        def renewed(expiry: float = expiry) -> bool:
            marks = cast(list[tuple[bytes, float]], store.zrange(key, 0, -1, withscores=True))
            return any(score >= expiry for _, score in marks)

        wait_until(renewed, what="the replica renews its seat's mark at the interval")
        assert table.connected(other)[1]
    stream.close()
    store.close()


def test_presence_in_the_embedded_store_follows_the_streams_and_the_clock(
    start_server: Callable[..., ServerThread], clock: HeldClock
) -> None:
    server = start_server(presence_interval_s=3600, presence_ttl_s=TTL_S)
    table = Table(server)
    stream = table.watch(server, 3)
    wait_until(lambda: table.connected(server)[3], what="seat 3 connects")
    clock.advance(TTL_S + 0.1)
    assert not table.connected(server)[3], "a mark never renewed expires"
    stream.close()
    again = table.watch(server, 1)
    wait_until(lambda: table.connected(server) == [False, True, True, False], what="seat 1")
    again.close()
    wait_until(lambda: table.connected(server) == [False, False, True, False], what="it leaves")


def test_a_stream_that_asks_gets_presence_when_it_opens_and_whenever_it_changes(
    any_server: ServerThread,
) -> None:
    table = Table(any_server)
    host = table.watch(any_server, 0, presence=True)
    wait_until(lambda: host.presences, what="the first presence message")
    assert host.presences[0] == [True, False, True, False]
    guest = table.watch(any_server, 1)
    wait_until(lambda: host.presences[-1] == [True, True, True, False], what="seat 1 joins")
    guest.close()
    wait_until(lambda: host.presences[-1] == [True, False, True, False], what="seat 1 leaves")
    assert host.error is None
    # Each message differs from the one before it: a change, never a repeat.
    assert all(a != b for a, b in zip(host.presences, host.presences[1:], strict=False))
    # Presence messages come between versions: the events of the stream are whole.
    assert host.events
    assert all(e.WhichOneof("event") for e in host.events)
    host.close()


def test_a_presence_stream_hears_of_a_seat_connecting_on_another_replica_within_the_interval(
    start_server: Callable[..., ServerThread], redis_url: str
) -> None:
    one = start_server(redis_url=redis_url, presence_interval_s=0.1, presence_ttl_s=15)
    other = start_server(redis_url=redis_url, presence_interval_s=0.1, presence_ttl_s=15)
    table = Table(one)
    spectator_token = (
        stub(one)
        .CreateWatchToken(
            pb.CreateWatchTokenRequest(match_id=table.match_id), metadata=bearer(table.tokens[0])
        )
        .watch_token
    )
    spectator = StreamReader(
        stub(one).WatchMatch(
            pb.WatchMatchRequest(match_id=table.match_id, presence=True),
            metadata=bearer(spectator_token),
        )
    )
    wait_until(lambda: spectator.presences, what="the spectator's first presence message")
    assert spectator.presences[0] == [False, False, True, False]
    guest = table.watch(other, 3)
    wait_until(
        lambda: spectator.presences[-1] == [False, False, True, True],
        what="the other replica's stream reaches this replica's presence at its renewal",
    )
    guest.close()
    wait_until(lambda: spectator.presences[-1] == [False, False, True, False], what="it leaves")
    spectator.close()


def test_the_presence_ttl_must_exceed_the_renewal_interval() -> None:
    with pytest.raises(SettingError) as refused:
        Settings(store="embedded", presence_interval_s=5, presence_ttl_s=5)
    assert refused.value.setting == "presence_ttl_s"
    assert (
        Settings(store="embedded").presence_ttl_s > Settings(store="embedded").presence_interval_s
    )


def test_a_renewal_of_more_matches_than_one_batch_renews_them_all(
    start_server: Callable[..., ServerThread],
    redis_url: str,
    clock: HeldClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(presence, "BATCH", 2)
    renewing = start_server(redis_url=redis_url, presence_interval_s=0.05, presence_ttl_s=15)
    tables = [Table(renewing) for _ in range(5)]
    streams = [table.watch(renewing, 1) for table in tables]
    wait_until(lambda: all(t.connected(renewing)[1] for t in tables), what="every seat connects")
    clock.advance(10)
    store = redis.Redis.from_url(redis_url)
    expiry = (clock.at + 15) * 1000

    def renewed() -> bool:
        for table in tables:
            key = keys.presence_key(table.match_id)
            marks = cast(list[tuple[bytes, float]], store.zrange(key, 0, -1, withscores=True))
            if not any(score >= expiry for _, score in marks):
                return False
        return True

    wait_until(renewed, what="a renewal in batches of two reaches every match")
    clock.advance(10)
    assert all(t.connected(renewing)[1] for t in tables)
    for stream in streams:
        stream.close()
    store.close()


# One replica's Presence against a store directly: what it sends when streams come and go, and
# what it keeps when a store call fails.

MATCH = "P" * 22


class Beats(MemoryStore):
    """The embedded store, recording each heartbeat's beats; it fails the next ``failures``
    heartbeats (StoreUnavailableError), and tells each heartbeat's end to ``answered``."""

    def __init__(self) -> None:
        super().__init__(ttl_s=3600, events_maxlen=8)
        self.sent: list[dict[str, Heartbeat]] = []
        self.failures = 0
        self.answered = asyncio.Event()

    async def heartbeat(
        self, replica: str, beats: Mapping[str, Heartbeat], now: float, ttl_s: float
    ) -> dict[str, frozenset[int]]:
        try:
            if self.failures:
                self.failures -= 1
                raise StoreUnavailableError("Redis did not answer")
            self.sent.append(dict(beats))
            return await super().heartbeat(replica, beats, now, ttl_s)
        finally:
            self.answered.set()

    async def next_beat(self) -> None:
        """Wait for the next heartbeat to end (answered or failed)."""
        self.answered.clear()
        async with asyncio.timeout(30):
            await self.answered.wait()


class Heard:
    """What a Presence tells of the matches followed for presence messages."""

    def __init__(self) -> None:
        self.seats: dict[str, frozenset[int]] = {}
        self.told = asyncio.Event()

    def __call__(self, match_id: str, seats: frozenset[int]) -> None:
        self.seats[match_id] = seats
        self.told.set()

    async def next(self) -> None:
        async with asyncio.timeout(30):
            await self.told.wait()
        self.told.clear()


def one_replica(scenario: Callable[[Beats, presence.Presence, Heard], Awaitable[None]]) -> None:
    """Run ``scenario`` with a Presence that renews only when something changes (an hour's
    interval) on a recording embedded store."""

    async def main() -> None:
        store, heard = Beats(), Heard()
        replica = presence.Presence(store, interval_s=3600, ttl_s=TTL_S, changed=heard)
        try:
            await scenario(store, replica, heard)
        finally:
            await replica.close()
            await store.close()

    asyncio.run(main())


def test_a_seat_whose_stream_comes_back_before_the_next_beat_stays_connected() -> None:
    """Seat 0's stream ends and another of it opens before the replica's next beat: the beat
    names seat 0 live and not gone, and the seat stays connected."""

    async def scenario(store: Beats, replica: presence.Presence, heard: Heard) -> None:
        replica.arrive(MATCH, 0)
        await store.next_beat()
        assert await store.connected([MATCH], presence.now()) == {MATCH: frozenset({0})}
        replica.depart(MATCH, 0)
        replica.arrive(MATCH, 0)
        await store.next_beat()
        assert store.sent[-1][MATCH] == Heartbeat((0,), ())
        assert await store.connected([MATCH], presence.now()) == {MATCH: frozenset({0})}

    one_replica(scenario)


def test_a_reader_that_follows_a_match_again_reads_its_seats_afresh() -> None:
    """The last presence reader of a match leaves; another replica's seat connects meanwhile;
    a new reader of the match is not told the seats from before, but reads them again at once."""

    async def scenario(store: Beats, replica: presence.Presence, heard: Heard) -> None:
        replica.follow(MATCH)
        await heard.next()
        assert heard.seats[MATCH] == frozenset()
        assert replica.known(MATCH) == frozenset()
        replica.unfollow(MATCH)
        await store.heartbeat("elsewhere", {MATCH: Heartbeat((1,), ())}, presence.now(), TTL_S)
        replica.follow(MATCH)
        assert replica.known(MATCH) is None  # not what was read before the last reader left
        await heard.next()
        assert heard.seats[MATCH] == frozenset({1})
        assert replica.known(MATCH) == frozenset({1})

    one_replica(scenario)


def test_a_failed_beat_keeps_the_seats_it_was_to_mark_gone() -> None:
    """Seat 0's last stream ends and the beat that would unmark it fails: the replica's next
    beat (here, when a reader follows the match) unmarks it, long before the mark's TTL."""

    async def scenario(store: Beats, replica: presence.Presence, heard: Heard) -> None:
        replica.arrive(MATCH, 0)
        await store.next_beat()
        store.failures = 1
        replica.depart(MATCH, 0)
        await store.next_beat()
        assert store.failures == 0  # that beat failed
        assert await store.connected([MATCH], presence.now()) == {MATCH: frozenset({0})}
        replica.follow(MATCH)
        await heard.next()
        assert store.sent[-1][MATCH] == Heartbeat((), (0,))
        assert heard.seats[MATCH] == frozenset()

    one_replica(scenario)
