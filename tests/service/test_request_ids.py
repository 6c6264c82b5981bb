"""Who may create matches and replay a creation: a creating request_id recovers the seat tokens
on a retry, so it must not be guessable or shared (a random UUID, AIP-155, scoped to the
caller's API key); and one caller's creations must not starve the others (per-caller limits)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from functools import partial

import grpc
import pytest
import redis

from basra.client.match import MatchClient, Rejection
from basra.service.ratelimit import CallerBuckets, peer_host
from basra.service.store.base import NewMatch
from basra.service.store.memory import MemoryStore
from basra.v1 import basra_service_pb2 as pb
from basra.v1 import basra_service_pb2_grpc
from tests.service.conftest import HeldClock, rpc_error
from tests.support import ServerThread


@pytest.mark.parametrize(
    "request_id",
    [
        "lobby-room-000042",
        "a" * 16,
        "short",
        str(uuid.uuid1()),  # a timestamp and a MAC address, not random
        str(uuid.uuid3(uuid.NAMESPACE_DNS, "lobby")),  # a hash of a guessable name
        "{" + str(uuid.uuid4()) + "}",
        str(uuid.uuid4()).replace("-", ""),
    ],
    # Named: ids made of fresh UUIDs change at every collection, and mutmut (`make mutation`)
    # then never finds the tests it recorded.
    ids=["a-name", "16-characters", "short", "uuid1", "uuid3", "braced", "no-dashes"],
)
def test_a_creating_request_id_must_be_a_random_uuid(
    server: ServerThread, redis_url: str, request_id: str
) -> None:
    error = rpc_error(
        lambda: server.channel.unary_unary(
            "/basra.v1.BasraService/Deal",
            request_serializer=pb.DealRequest.SerializeToString,
            response_deserializer=pb.DealResponse.FromString,
        )(pb.DealRequest(seed=1, request_id=request_id))
    )
    rejection = Rejection.of(error)
    assert (rejection.code, rejection.reason) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "INVALID_ARGUMENT",
    )
    assert rejection.metadata == {"field": "request_id"}
    assert "random UUID" in rejection.message
    assert redis.Redis.from_url(redis_url).keys("basra:{*") == [], "nothing was created"


def test_a_random_uuid_creates_and_its_retry_returns_the_same_tokens(server: ServerThread) -> None:
    request_id = str(uuid.uuid4()).upper()  # any case
    _, first = MatchClient.create(server.channel, seed=3, request_id=request_id)
    _, again = MatchClient.create(server.channel, seed=3, request_id=request_id)
    assert again == first


def test_one_uuid_is_one_match_whatever_the_case_it_is_sent_in(server: ServerThread) -> None:
    # A UUID's letters are hex digits: upper and lower case write the same UUID (RFC 9562).
    request_id = str(uuid.uuid4())
    lower, first = MatchClient.create(server.channel, seed=3, request_id=request_id)
    upper, again = MatchClient.create(server.channel, seed=3, request_id=request_id.upper())
    mixed, third = MatchClient.create(server.channel, seed=3, request_id=request_id.title())
    assert lower.match_id == upper.match_id == mixed.match_id
    assert again == first == third


@pytest.mark.parametrize(("rules", "seats"), [("persian", 3), ("persian-partnership", 4)])
def test_a_retried_creation_of_any_rule_system_returns_the_original_response(
    server: ServerThread, rules: str, seats: int
) -> None:
    create = server.channel.unary_unary(
        "/basra.v1.BasraService/CreateMatch",
        request_serializer=pb.CreateMatchRequest.SerializeToString,
        response_deserializer=pb.CreateMatchResponse.FromString,
    )
    request = pb.CreateMatchRequest(
        rules=rules, seats=seats, seat=seats - 1, seed=11, request_id=str(uuid.uuid4())
    )
    first = create(request, timeout=10)
    assert (first.view.rules, len(first.seat_tokens)) == (rules, seats)
    # The retry rebuilds the response from the stored match: its rules, seats and seat.
    assert create(request, timeout=10) == first


def test_the_same_request_id_under_another_api_key_is_another_match(
    start_server: Callable[..., ServerThread], redis_url: str
) -> None:
    lobby = start_server(redis_url=redis_url, api_key="lobby-key")
    other = start_server(redis_url=redis_url, api_key="other-key")
    request_id = str(uuid.uuid4())
    mine, created = MatchClient.create(
        lobby.channel, seed=5, request_id=request_id, api_key="lobby-key"
    )
    # Another caller (another key, same store) sends the same id: it neither replays the
    # creation nor learns the tokens; it creates a match of its own.
    theirs, their_response = MatchClient.create(
        other.channel, seed=5, request_id=request_id, api_key="other-key"
    )
    assert theirs.match_id != mine.match_id
    assert set(theirs.tokens.values()).isdisjoint(mine.tokens.values())
    # The owner's retry still answers with its own tokens.
    _, retried = MatchClient.create(
        lobby.channel, seed=5, request_id=request_id, api_key="lobby-key"
    )
    assert retried == created
    assert their_response != created


def test_creations_are_limited_per_caller_as_well_as_per_replica(
    start_server: Callable[..., ServerThread],
) -> None:
    """One caller's flood spends its own bucket, not everyone's: another address still creates.
    The server listens on every address, so 127.0.0.1 and ::1 are two callers."""
    server = start_server(
        listen="[::]:0",
        caller_create_rate=0.001,
        caller_create_burst=3,
        create_rate=0.001,
        create_burst=5,
    )
    flooder = grpc.insecure_channel(f"127.0.0.1:{server.port}")
    other = grpc.insecure_channel(f"[::1]:{server.port}")
    for _ in range(3):
        MatchClient.create(flooder, seed=1)
    refused = Rejection.of(rpc_error(lambda: MatchClient.create(flooder, seed=1)))
    assert (refused.code, refused.reason) == (
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        "RATE_LIMITED",
    )
    assert refused.metadata["scope"] == "caller"
    assert refused.retry_after_s is not None
    assert refused.retry_after_s > 0
    # The other caller is not starved by the flood...
    MatchClient.create(other, seed=1)
    MatchClient.create(other, seed=1)
    # ...until the replica's own limit (5 in all) is reached.
    refused = Rejection.of(rpc_error(lambda: MatchClient.create(other, seed=1)))
    assert refused.metadata["scope"] == "replica"
    flooder.close()
    other.close()


def create_on_a_new_connection(server: ServerThread) -> object:
    """A creation over a connection of its own (a channel with its own subchannel pool, so gRPC
    shares no connection with another channel), closed after the call."""
    options = [("grpc.use_local_subchannel_pool", 1)]
    with grpc.insecure_channel(server.target, options=options) as channel:
        return MatchClient.create(channel, seed=1)


def test_the_per_caller_limit_follows_the_caller_not_its_connection(
    start_server: Callable[..., ServerThread], held_clock: HeldClock
) -> None:
    """A caller opening a new connection (a new client port) per creation is the same caller:
    its third creation is refused by its own bucket."""
    server = start_server(
        caller_create_rate=1.0, caller_create_burst=2, create_rate=1000.0, create_burst=1000
    )
    create_on_a_new_connection(server)
    create_on_a_new_connection(server)
    refused = Rejection.of(rpc_error(partial(create_on_a_new_connection, server)))
    assert (refused.code, refused.reason) == (grpc.StatusCode.RESOURCE_EXHAUSTED, "RATE_LIMITED")
    assert refused.metadata["scope"] == "caller"
    assert refused.retry_after_s == 1.0


def test_a_caller_refused_by_the_replica_budget_gets_its_own_token_back(
    start_server: Callable[..., ServerThread], held_clock: HeldClock
) -> None:
    """Refused because all callers together spent the replica's budget, a caller keeps the token
    it took from its own bucket: once the replica's budget refills (1 s), it creates again, long
    before its own bucket's refill (1,000 s) would let it."""
    server = start_server(
        caller_create_rate=0.001, caller_create_burst=2, create_rate=1.0, create_burst=1
    )
    MatchClient.create(server.channel, seed=1)  # the caller's bucket: 1 left; the replica's: 0
    refused = Rejection.of(rpc_error(lambda: MatchClient.create(server.channel, seed=1)))
    assert (refused.reason, refused.metadata["scope"]) == ("RATE_LIMITED", "replica")
    assert refused.retry_after_s == 1.0
    held_clock.advance(1.0)
    MatchClient.create(server.channel, seed=1)  # the token given back, and the replica's new one
    refused = Rejection.of(rpc_error(lambda: MatchClient.create(server.channel, seed=1)))
    assert refused.metadata["scope"] == "caller"


def test_caller_buckets_are_evicted_by_last_use_not_by_age() -> None:
    """A caller seen again is the most recently seen: a newcomer past the bound evicts the
    caller least recently seen, not the oldest one, so the caller seen again stays limited."""
    now = [0.0]
    buckets = CallerBuckets(rate=1.0, burst=1, max_callers=3, clock=lambda: now[0])
    for name in ("a", "b", "c"):
        assert buckets.bucket(name).take() == 0
    assert buckets.bucket("a").take() == 1.0  # "a", the oldest, seen again: its bucket is empty
    buckets.bucket("d")  # past the bound: "b" (least recently seen) is dropped, not "a"
    assert len(buckets) == 3
    assert buckets.bucket("a").take() == 1.0, "a caller seen again stays tracked, still empty"
    assert buckets.bucket("c").take() == 1.0
    assert buckets.bucket("b").take() == 0, "the caller least recently seen started afresh"


def test_caller_buckets_keep_a_bounded_number_of_callers() -> None:
    now = [0.0]
    buckets = CallerBuckets(rate=1.0, burst=1, max_callers=3, clock=lambda: now[0])
    assert buckets.bucket("a").take() == 0
    for name in ("b", "c", "d"):
        buckets.bucket(name)
    assert len(buckets) == 3  # "a", the least recent, was forgotten
    assert buckets.bucket("d").take() == 0
    assert buckets.bucket("d").take() == 1.0  # empty: a second to wait


@pytest.mark.parametrize(
    ("peer", "host"),
    [
        ("ipv4:127.0.0.1:50000", "127.0.0.1"),
        ("ipv6:[::1]:50000", "::1"),
        ("ipv6:[2001:db8::7]:443", "2001:db8::7"),
        ("10.1.2.3:8080", "10.1.2.3"),
        ("10.1.2.3", "10.1.2.3"),
        ("2001:db8::7", "2001:db8::7"),
        ("::1:54321", "::1"),  # ASGI's host:port, IPv6 without brackets
        ("2001:db8::7:8080", "2001:db8::7:8080"),  # itself an address: taken whole
        ("unix:/tmp/socket", "unix:/tmp/socket"),
    ],
)
def test_the_caller_of_a_peer_is_its_host_without_the_port(peer: str, host: str) -> None:
    assert peer_host(peer) == host


def create_with_key(channel: grpc.Channel) -> object:
    return MatchClient.create(channel, seed=1, api_key="lobby-key")


def test_with_an_api_key_the_callers_of_that_key_share_its_bucket(
    start_server: Callable[..., ServerThread],
) -> None:
    """With a key, the caller is the key, wherever its calls come from: a second address of the
    same key finds the key's bucket empty (scope caller), not a bucket of its own."""
    server = start_server(
        listen="[::]:0",
        api_key="lobby-key",
        caller_create_rate=0.001,
        caller_create_burst=2,
        create_rate=1000,
        create_burst=1000,
    )
    here = grpc.insecure_channel(f"127.0.0.1:{server.port}")
    there = grpc.insecure_channel(f"[::1]:{server.port}")
    create_with_key(here)
    create_with_key(there)
    for channel in (here, there):
        refused = Rejection.of(rpc_error(partial(create_with_key, channel)))
        assert (refused.reason, refused.metadata["scope"]) == ("RATE_LIMITED", "caller")
    here.close()
    there.close()


@pytest.mark.parametrize("scope", ["caller", "replica"])
def test_creation_is_refused_until_the_next_one_is_due_however_soon(
    start_server: Callable[..., ServerThread], held_clock: HeldClock, scope: str
) -> None:
    """An empty bucket refuses, even when its next token is a fraction of a second away (the
    replica's clocks held still here, so that none arrives meanwhile)."""
    rates: dict[str, object] = {
        "create_rate": 1000.0,
        "create_burst": 1000,
        "caller_create_rate": 1000.0,
    }
    rates.update(
        {"caller_create_rate": 4, "caller_create_burst": 1}
        if scope == "caller"
        else {"create_rate": 4, "create_burst": 1}
    )
    server = start_server(**rates)
    MatchClient.create(server.channel, seed=1)
    refused = Rejection.of(rpc_error(lambda: MatchClient.create(server.channel, seed=1)))
    assert (refused.reason, refused.metadata["scope"]) == ("RATE_LIMITED", scope)
    assert refused.retry_after_s is not None
    assert 0 < refused.retry_after_s <= 0.25
    held_clock.advance(0.25)  # the next token is in
    MatchClient.create(server.channel, seed=1)


def test_creations_without_a_request_id_are_new_matches_each_and_keep_no_creation(
    start_server: Callable[..., ServerThread],
) -> None:
    """Without a request_id nothing names the creation again: each is a match of its own, on
    a seed of its own, and its record keeps nothing to answer a retry with."""
    store = MemoryStore(ttl_s=60, events_maxlen=1000)
    server = start_server(on_store=store, api_key="lobby-key")
    stub = basra_service_pb2_grpc.BasraServiceStub(server.channel)
    key = (("x-api-key", "lobby-key"),)
    created = [stub.Deal(pb.DealRequest(), metadata=key, timeout=10) for _ in range(2)]
    first, second = (response.match_id for response in created)
    assert first != second
    assert created[0].view.hand != created[1].view.hand, "each on a seed of its own"
    for match_id in (first, second):
        record = server.run(store.load(match_id))
        assert record is not None
        assert record.creation == b""
        assert record.requests == (b"", b"")  # no seat has made a request yet
    # The largest seed is a seed too.
    largest = stub.Deal(pb.DealRequest(seed=(1 << 64) - 1), metadata=key, timeout=10)
    assert largest.view.version == 1


class RacedCreations(MemoryStore):
    """The embedded store, where the other replica's write of the same creation lands between
    this replica's look for it and its own write, the first ``races`` times."""

    races = 0

    async def create(self, new: NewMatch) -> bool:
        if self.races > 0:
            self.races -= 1
            assert await super().create(new)  # the same request, the other replica
        return await super().create(new)


def test_a_creation_that_loses_the_race_to_its_own_retry_answers_as_the_retry(
    start_server: Callable[..., ServerThread],
) -> None:
    """Two replicas given the same creation at once both find no match under its id; the one
    whose write comes second answers from the match the first made, as a retry would."""
    store = RacedCreations(ttl_s=60, events_maxlen=1000)
    server = start_server(on_store=store, api_key="lobby-key")
    request_id = str(uuid.uuid4())
    store.races = 1
    client, first = MatchClient.create(
        server.channel, seed=5, request_id=request_id, api_key="lobby-key"
    )
    assert store.races == 0
    assert client.view(0).version == 1  # its tokens are the match's
    assert client.view(1).version == 1
    _, again = MatchClient.create(
        server.channel, seed=5, request_id=request_id, api_key="lobby-key"
    )
    assert again == first
