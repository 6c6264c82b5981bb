"""Replicas racing on one match, and retries: every move applied exactly once."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import cast

import grpc
import pytest
import redis

from basra.client.match import MatchClient, Rejection
from basra.engine import ERAM, CorruptStateError, encode
from basra.engine import decode as engine_decode
from basra.engine import new_match as new_state
from basra.engine.state import State
from basra.service import caches as caches_module
from basra.service import records
from basra.service.caches import RecordCache, StateCache
from basra.service.changes import CAS_ATTEMPTS
from basra.service.store import MatchRecord, keys
from basra.service.store.base import Commit
from basra.service.store.codec import encode_record
from basra.service.store.memory import MemoryStore
from basra.v1 import game_pb2
from tests.service.conftest import new_match, rpc_error
from tests.service.driver import audit_replay, play_match, stored_record, stored_state
from tests.support import ServerThread

CREATE_ID = "7d2f0c1e-9a3b-4c5d-8e6f-0a1b2c3d4e5f"


def twin_servers(
    start_server: Callable[..., ServerThread], redis_url: str
) -> tuple[ServerThread, ServerThread]:
    return start_server(redis_url=redis_url), start_server(redis_url=redis_url)


def racing_matches(
    start_server: Callable[..., ServerThread], redis_url: str, count: int = 12
) -> Iterator[tuple[MatchClient, MatchClient, int]]:
    """New matches, each reachable through two servers on one Redis: (client through the
    first, client through the second, the seat to play)."""
    a, b = twin_servers(start_server, redis_url)
    for seed in range(count):
        client = new_match(a, seed=seed)
        yield client, client.via(b.channel), client.view(0).turn


def test_two_servers_racing_the_same_seat_apply_exactly_one_play(
    start_server: Callable[..., ServerThread], redis_url: str
) -> None:
    store = redis.Redis.from_url(redis_url)
    for client, other, seat in racing_matches(start_server, redis_url):
        options = client.plans(seat)[:2]
        calls = [
            (c, o.card, 1 if o.plans else 0)
            for c, o in zip((client, other), options * 2, strict=False)
        ]
        with ThreadPoolExecutor(2) as pool:
            futures = [pool.submit(c.play, seat, card, plan) for c, card, plan in calls]
            outcomes: list[object] = []
            for future in futures:
                try:
                    outcomes.append(future.result())
                except grpc.RpcError as error:
                    outcomes.append(Rejection.of(error))
        won = [o for o in outcomes if not isinstance(o, Rejection)]
        lost = [o for o in outcomes if isinstance(o, Rejection)]
        assert len(won) == 1, outcomes
        assert [r.reason for r in lost] in (["NOT_YOUR_TURN"], ["CARD_NOT_IN_HAND"])
        version, state = stored_state(store, client.match_id)
        assert version == 2
        assert state.plays == 1
        assert audit_replay(store, client.match_id) == (version, state)


def test_concurrent_retries_of_one_request_id_on_two_servers_play_once(
    start_server: Callable[..., ServerThread], redis_url: str
) -> None:
    store = redis.Redis.from_url(redis_url)
    for index, (client, other, seat) in enumerate(racing_matches(start_server, redis_url)):
        option = client.plans(seat)[0]
        plan = 1 if option.plans else 0
        with ThreadPoolExecutor(4) as pool:
            futures = [
                pool.submit(c.play, seat, option.card, plan, request_id=f"retry-{index}")
                for c in (client, other, client, other)
            ]
            responses = [f.result() for f in futures]
        assert all(r == responses[0] for r in responses)
        version, state = stored_state(store, client.match_id)
        assert (version, state.plays) == (2, 1)


def test_a_retry_returns_the_original_response_even_after_the_match_moved_on(
    server: ServerThread,
) -> None:
    client = new_match(server, seed=4)
    seat = client.view(0).turn
    option = client.plans(seat)[0]
    first = client.play(seat, option.card, 1 if option.plans else 0, request_id="once")
    reply = client.plans(1 - seat)[0]
    client.play(1 - seat, reply.card, 1 if reply.plans else 0)
    again = client.play(seat, option.card, 1 if option.plans else 0, request_id="once")
    assert again == first
    assert client.view(0).version == 3


def test_a_retried_creation_returns_the_same_match_and_tokens(server: ServerThread) -> None:
    client, first = MatchClient.create(server.channel, seed=9, request_id=CREATE_ID)
    play_match(client, random.Random(0), stop=lambda v: v.plays_left < 40)
    _, again = MatchClient.create(server.channel, seed=9, request_id=CREATE_ID)
    assert again == first
    r = Rejection.of(
        rpc_error(lambda: MatchClient.create(server.channel, seed=10, request_id=CREATE_ID))
    )
    assert (r.code, r.reason) == (grpc.StatusCode.INVALID_ARGUMENT, "REQUEST_ID_REUSED")


def test_a_retried_next_hand_deal_deals_once(server: ServerThread) -> None:
    client = new_match(server, seed=6)
    play_match(client, random.Random(3), stop=lambda v: v.status == game_pb2.MATCH_STATUS_HAND_OVER)
    first = client.deal(1, request_id="deal-2")
    again = client.deal(1, request_id="deal-2")
    assert again == first
    assert client.view(0).hand_number == 2


def test_concurrent_matches_on_two_servers_all_finish(
    start_server: Callable[..., ServerThread], redis_url: str
) -> None:
    a, b = twin_servers(start_server, redis_url)
    store = redis.Redis.from_url(redis_url)

    def play(seed: int) -> str:
        client = new_match(a if seed % 2 else b, seed=seed)
        # Each call goes to either server at random.
        spread = SpreadClient(
            client, [client.via(a.channel), client.via(b.channel)], random.Random(seed)
        )
        play_match(spread, random.Random(seed))  # type: ignore[arg-type]
        return client.match_id

    with ThreadPoolExecutor(6) as pool:
        match_ids = list(pool.map(play, range(12)))
    for match_id in match_ids:
        version, state = stored_state(store, match_id)
        assert state.winner is not None
        assert audit_replay(store, match_id) == (version, state)


class SpreadClient:
    """Sends each call through one of several clients of the same match, at random."""

    def __init__(self, base: MatchClient, clients: list[MatchClient], rng: random.Random) -> None:
        self.base, self.clients, self.rng = base, clients, rng
        self.match_id = base.match_id

    def __getattr__(self, name: str) -> object:
        return getattr(self.rng.choice(self.clients), name)


def test_two_replicas_interleaved_at_random_on_one_match_lose_and_double_nothing(
    start_server: Callable[..., ServerThread], redis_url: str
) -> None:
    # Each replica remembers the match's record and plays from it with one round trip; the other
    # replica keeps moving the match on, so the memories go stale at random. Every play and deal
    # is sent through a random replica, half of them sent again at once through the other (the
    # same request_id, as a client retrying), and both seats keep trying at once (one of them
    # out of turn). Whatever the interleaving: every applied change is in the stream once,
    # versions have no gap, each retry got the original answer, and the stream replays to the
    # stored state.
    a, b = twin_servers(start_server, redis_url)
    store = redis.Redis.from_url(redis_url)
    client = new_match(a, seed=21)
    replicas = [client, client.via(b.channel)]
    applied: dict[int, str] = {}  # version -> request_id that made it

    def change(seat: int, rng: random.Random, turn: int) -> None:
        first = rng.randrange(2)
        targets = [replicas[first]] + ([replicas[1 - first]] if rng.random() < 0.5 else [])
        request_id = f"s{seat}-t{turn}"
        view = rng.choice(replicas).view(seat)
        if view.status == game_pb2.MATCH_STATUS_HAND_OVER:

            def send(c: MatchClient) -> object:
                return c.deal(seat, request_id=request_id)
        else:
            options = rng.choice(replicas).plans(view.turn)
            if not options:
                return  # the hand ended between the two reads
            option = rng.choice(options)
            plan = rng.randint(1, len(option.plans)) if option.plans else 0

            def send(c: MatchClient) -> object:
                return c.play(seat, option.card, plan, request_id=request_id)

        with ThreadPoolExecutor(2) as pool:
            futures = [pool.submit(send, c) for c in targets]
            outcomes: list[object] = []
            for future in futures:
                try:
                    outcomes.append(future.result())
                except grpc.RpcError as error:
                    outcomes.append(Rejection.of(error))
        answers = [o for o in outcomes if not isinstance(o, Rejection)]
        rejected = [o for o in outcomes if isinstance(o, Rejection)]
        # A retry gets the original answer, never a second move; a rejection changes nothing
        # (two rejections may differ: the match moved on between them).
        assert not (answers and rejected), outcomes
        assert all(o == answers[0] for o in answers), outcomes
        if answers:
            version = answers[0].view.version  # type: ignore[attr-defined]
            assert version not in applied, f"version {version} made twice"
            applied[version] = request_id
        else:
            assert rejected[0].reason in {
                "NOT_YOUR_TURN",
                "CARD_NOT_IN_HAND",
                "HAND_IN_PROGRESS",
                "HAND_OVER",
                "MATCH_OVER",
                "UNKNOWN_PLAN",
            }, rejected

    def seat_loop(seat: int) -> None:
        rng = random.Random(100 + seat)
        for turn in range(3000):  # a bound, not a target: the match ends long before
            if client.view(seat).status == game_pb2.MATCH_STATUS_MATCH_OVER:
                return
            change(seat, rng, turn)

    with ThreadPoolExecutor(2) as pool:
        list(pool.map(seat_loop, (0, 1)))
    version, state = stored_state(store, client.match_id)
    assert state.winner is not None, "the match was played to its end"
    assert sorted(applied) == list(range(2, version + 1)), "every version made once, no gap"
    assert audit_replay(store, client.match_id) == (version, state)
    assert len(set(applied.values())) == len(applied), "no request applied twice"

    # And the interleaving did what it is for: plays from remembered records, some of them
    # stale (a commit answered with the current record, then decided again).
    def sample(name: str, **labels: str) -> float:
        values = (s.server.metrics.registry.get_sample_value(name, labels) for s in (a, b))
        return sum(v or 0.0 for v in values)

    assert sample("basra_record_cache_total", result="hit") > len(applied) / 2
    assert sample("basra_version_conflicts_total") > 0


def test_a_replica_whose_memory_is_stale_decides_again_on_the_store_before_rejecting(
    start_server: Callable[..., ServerThread], redis_url: str
) -> None:
    a, b = twin_servers(start_server, redis_url)
    client = new_match(a, seed=8)
    other = client.via(b.channel)
    seat = client.view(0).turn
    play = client.plans(seat)[0]
    client.play(seat, play.card, 1 if play.plans else 0)  # a remembers version 2
    reply = other.plans(1 - seat)[0]
    other.play(1 - seat, reply.card, 1 if reply.plans else 0)  # b moves it to version 3
    # On a's memory (version 2) it is not this seat's turn, nor is version 3 there: both are
    # right on the store, so both go through.
    again = other.plans(seat)[0]  # read through b: a keeps its stale memory
    response = client.play(seat, again.card, 1 if again.plans else 0, expected_version=3)
    assert response.view.version == 4
    assert client.view(0).version == 4


def test_a_replica_remembers_the_last_record_of_each_recent_match_and_forgets_on_request() -> None:
    def record(match_id: str, version: int) -> MatchRecord:
        return MatchRecord(match_id, version, b"", (), b"", ())

    remembered = RecordCache(size=2)
    remembered.put(record("a", 1))
    remembered.put(record("b", 1))
    remembered.put(record("a", 3))  # the last seen wins, and "a" is now the most recent
    assert remembered.get("a") == record("a", 3)
    remembered.put(record("c", 1))  # over the size: the least recent ("b") goes
    assert (remembered.get("b"), remembered.get("c")) == (None, record("c", 1))
    assert remembered.get("a") == record("a", 3)  # the size's worth kept
    remembered.forget("a")  # an expired match
    assert remembered.get("a") is None
    remembered.forget("never-seen")  # nothing to forget is no error
    assert remembered.get("c") == record("c", 1)


def test_each_replica_cache_holds_4096_matches_by_default() -> None:
    # The operator guide's memory figures and its routing advice count on it.
    states, remembered = StateCache(), RecordCache()
    kept = [cast(State, object()) for _ in range(4097)]  # the caches never look inside
    for index, state in enumerate(kept):
        states.put(index.to_bytes(2, "big"), state)
        remembered.put(MatchRecord(str(index), 1, b"", (), b"", ()))
    assert states.decode((1).to_bytes(2, "big")) is kept[1]  # kept: not decoded
    with pytest.raises(CorruptStateError):  # the oldest went: its bytes are decoded, and are none
        states.decode((0).to_bytes(2, "big"))
    assert remembered.get("0") is None
    assert remembered.get("1") == MatchRecord("1", 1, b"", (), b"", ())


def test_decoded_states_are_kept_by_their_bytes_the_most_recently_put_first() -> None:
    states = StateCache(size=2)
    first, second, third = (new_state(seed, ERAM)[0] for seed in (1, 2, 3))
    decoded = states.decode(encode(first))
    assert decoded == first
    assert states.decode(encode(first)) is decoded  # kept, not decoded again
    states.put(encode(second), second)
    states.put(encode(third), third)  # over the size: the least recently put (first) goes
    assert states.decode(encode(third)) is third
    assert states.decode(encode(second)) is second  # the size's worth kept
    again = states.decode(encode(first))
    assert again == first
    assert again is not decoded  # decoded afresh


def test_a_retry_answered_from_a_request_record_written_before_versions_gets_its_response(
    start_server: Callable[..., ServerThread], redis_url: str
) -> None:
    """Records written before versions hold the response itself: a retry through a replica
    that never saw the match (so it reads the store's record) is answered from those bytes,
    as the response type of its RPC."""
    a, b = twin_servers(start_server, redis_url)
    store = redis.Redis.from_url(redis_url)
    client = new_match(a, seed=6)

    def written_before_versions(seat: int, response: bytes) -> None:
        record = stored_record(store, client.match_id)
        previous = records.SeatRequest.decode(record.requests[seat])
        assert previous is not None
        assert previous.response is None
        requests = list(record.requests)
        requests[seat] = previous.request_hash + previous.fingerprint + response
        old = record._replace(requests=tuple(requests))
        store.set(keys.match_key(client.match_id), encode_record(old), keepttl=True)

    seat = client.view(0).turn
    option = client.plans(seat)[0]
    played = client.play(seat, option.card, 1 if option.plans else 0, request_id="play-1")
    written_before_versions(seat, played.SerializeToString())
    again = client.via(b.channel).play(
        seat, option.card, 1 if option.plans else 0, request_id="play-1"
    )
    assert again == played
    play_match(client, random.Random(3), stop=lambda v: v.status == game_pb2.MATCH_STATUS_HAND_OVER)
    dealt = client.deal(1, request_id="deal-2")
    written_before_versions(1, dealt.SerializeToString())
    c = start_server(redis_url=redis_url)  # a replica that has not seen the deal either
    assert client.via(c.channel).deal(1, request_id="deal-2") == dealt


def test_a_change_without_a_request_id_keeps_no_request_record_for_its_seat(
    server: ServerThread, redis_url: str
) -> None:
    """Only a request_id makes a retry recognisable: a change without one stores nothing for its
    seat (the record stays as small as the budget says) and clears what an earlier one kept."""
    store = redis.Redis.from_url(redis_url)
    client = new_match(server, seed=6)

    first = play_first_option(client, "play-1")
    assert stored_record(store, client.match_id).requests[first] != b""
    second = play_first_option(client, "")
    assert stored_record(store, client.match_id).requests[second] == b""
    assert play_first_option(client, "") == first
    assert stored_record(store, client.match_id).requests == (b"", b"")


def test_a_replica_decodes_no_state_it_committed_itself(
    server: ServerThread, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The state a change commits is kept by its bytes (StateCache): the next change of the
    match, from the record the replica remembers, starts from it without decoding it again."""
    client = new_match(server, seed=6)
    decoded: list[bytes] = []

    def counted(data: bytes) -> State:
        decoded.append(data)
        return engine_decode(data)

    monkeypatch.setattr(caches_module, "decode", counted)
    for _ in range(4):
        play_first_option(client)
    assert len(decoded) <= 1, "at most the state the match was dealt with, once"


class RacedCommits(MemoryStore):
    """The embedded store, where another replica's change of the match lands between each read
    and the commit that follows, the first ``races`` times: a change that leaves the state as
    it was (so the play stays legal) and moves the version on, which each of those commits
    finds and loses to. With ``expire_at_commit``, the match expires there instead."""

    def __init__(self) -> None:
        self.now = 0.0
        super().__init__(ttl_s=60, events_maxlen=1000, clock=lambda: self.now)
        self.races = 0
        self.expire_at_commit = False

    async def commit_or_current(
        self, match_id: str, commit: Commit
    ) -> tuple[bool, MatchRecord | None]:
        if self.expire_at_commit:
            self.expire_at_commit = False
            self.now += 61
        elif self.races > 0:
            self.races -= 1
            current = await self.load(match_id)
            assert current is not None
            moved = current._replace(version=current.version + 1)
            other = Commit(current.version, moved, commit.entry._replace(version=moved.version))
            assert (await super().commit_or_current(match_id, other))[0]
        return await super().commit_or_current(match_id, commit)


def first_option(client: MatchClient) -> tuple[int, game_pb2.Card, int]:
    """The seat to move, its first card and that card's first plan (0: it trails)."""
    seat = client.view(0).turn
    option = client.plans(seat)[0]
    return seat, option.card, 1 if option.plans else 0


def play_first_option(client: MatchClient, request_id: str | None = None) -> int:
    """The seat to move plays its first option; its seat."""
    seat, card, plan = first_option(client)
    client.play(seat, card, plan, request_id=request_id)
    return seat


def refused(client: MatchClient, option: tuple[int, game_pb2.Card, int]) -> Rejection:
    return Rejection.of(rpc_error(lambda: client.play(*option)))


@pytest.fixture
def raced(
    start_server: Callable[..., ServerThread],
) -> tuple[RacedCommits, ServerThread, MatchClient]:
    """A server on a RacedCommits store, and a match on it."""
    store = RacedCommits()
    server = start_server(on_store=store)
    return store, server, new_match(server, seed=6)


def test_a_play_that_loses_every_race_gives_up_retryable_naming_the_version(
    raced: tuple[RacedCommits, ServerThread, MatchClient],
) -> None:
    store, _, client = raced
    store.races = 3  # lost three times, then committed: one play, at version 5
    play_first_option(client)
    assert store.races == 0
    assert client.view(0).version == 5
    store.races = 100
    r = refused(client, first_option(client))
    assert (r.code, r.reason) == (grpc.StatusCode.ABORTED, "VERSION_MISMATCH")
    assert r.message == "the match kept changing under this call: reload and decide again"
    assert store.races == 100 - CAS_ATTEMPTS
    assert r.metadata == {"current_version": str(5 + CAS_ATTEMPTS)}


def test_a_match_that_expires_before_its_commit_is_not_found_and_forgotten(
    raced: tuple[RacedCommits, ServerThread, MatchClient],
) -> None:
    store, server, client = raced
    store.expire_at_commit = True
    option = first_option(client)
    r = refused(client, option)
    assert (r.code, r.reason) == (grpc.StatusCode.NOT_FOUND, "MATCH_NOT_FOUND")
    assert client.match_id in r.message
    # The replica no longer remembers the match: the next change of it loads it (a miss of the
    # record cache), and finds it gone.
    misses = server.server.metrics.record_cache.labels("miss")
    before = misses.value
    assert refused(client, option).reason == "MATCH_NOT_FOUND"
    assert misses.value == before + 1


def test_a_read_that_finds_the_match_gone_makes_the_replica_forget_it(
    raced: tuple[RacedCommits, ServerThread, MatchClient],
) -> None:
    store, server, client = raced
    play_first_option(client)  # remembered since
    hits = server.server.metrics.record_cache.labels("hit")
    before = hits.value
    play_first_option(client)
    assert hits.value == before + 1, "the second play starts from the remembered record"
    option = first_option(client)
    store.now += 61  # the match expires
    r = Rejection.of(rpc_error(lambda: client.view(0)))
    assert (r.code, r.reason) == (grpc.StatusCode.NOT_FOUND, "MATCH_NOT_FOUND")
    misses = server.server.metrics.record_cache.labels("miss")
    before = misses.value
    assert refused(client, option).reason == "MATCH_NOT_FOUND"
    assert misses.value == before + 1, "the next change loads it: nothing remembered"
