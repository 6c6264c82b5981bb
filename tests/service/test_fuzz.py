"""Hostile input: random requests to every RPC get a typed answer, fast, and change nothing."""

from __future__ import annotations

from collections.abc import Iterator

import grpc
import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from basra.client.match import MatchClient, Rejection
from basra.service.config import Settings
from basra.service.errors import DOMAIN
from basra.v1 import basra_service_pb2 as pb
from basra.v1 import game_pb2
from tests.profiles import examples
from tests.service.driver import snapshot
from tests.support import RedisProcess, ServerThread

MAX_MESSAGE = 16 * 1024
# Every code a rejection may carry; each but RESOURCE_EXHAUSTED from an oversized message (gRPC's
# own limit, before the service sees the call) comes with exactly one ErrorInfo.
TYPED = {
    grpc.StatusCode.INVALID_ARGUMENT,
    grpc.StatusCode.FAILED_PRECONDITION,
    grpc.StatusCode.ABORTED,
    grpc.StatusCode.NOT_FOUND,
    grpc.StatusCode.UNAUTHENTICATED,
    grpc.StatusCode.PERMISSION_DENIED,
    grpc.StatusCode.OUT_OF_RANGE,
    grpc.StatusCode.RESOURCE_EXHAUSTED,
}


class World:
    """A server with two matches, one client for each, and direct access to their stored bytes."""

    def __init__(self, redis_url: str) -> None:
        self.server = ServerThread(
            Settings(
                redis_url=redis_url,
                allow_seeds=True,
                metrics_port=None,
                max_message_bytes=MAX_MESSAGE,
                create_rate=1e6,
                create_burst=1_000_000,
                caller_create_rate=1e6,
                caller_create_burst=1_000_000,
            )
        )
        self.store = redis.Redis.from_url(redis_url)
        self.a, _ = MatchClient.create(self.server.channel, seed=1)
        self.b, _ = MatchClient.create(self.server.channel, seed=2)
        self.stub = self.a.stub
        # The last accepted request_id of each (match, caller): sent again, it is a replay.
        self.last_request: dict[tuple[str, object], str] = {}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    process = RedisProcess(tmp_path_factory.mktemp("fuzz-redis"))
    process.start()
    world = World(process.url)
    yield world
    world.server.stop()
    process.stop()


text = st.one_of(
    st.text(max_size=40),
    st.text(
        alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-",
        min_size=16,
        max_size=64,
    ),
    st.builds(lambda n: "x" * n, st.integers(60_000, 100_000)),  # huge
)
int32 = st.integers(-(2**31), 2**31 - 1)
int64 = st.integers(-(2**63), 2**63 - 1)
# Every value of each enum and the first invalid one past each end (and a few far beyond).
RANKS = [v.number for v in game_pb2.Rank.DESCRIPTOR.values]
SUITS = [v.number for v in game_pb2.Suit.DESCRIPTOR.values]


def enum_values(numbers: list[int]) -> st.SearchStrategy[int]:
    """Each end of an enum and one past it, any value in between, or any int32."""
    low, high = min(numbers), max(numbers)
    edges = [low - 1, low, low + 1, high - 1, high, high + 1]
    return st.sampled_from(edges) | st.integers(low - 1, high + 1) | int32


cards = st.builds(game_pb2.Card, rank=enum_values(RANKS), suit=enum_values(SUITS))


@st.composite
def requests(draw: st.DrawFn, world: World) -> tuple[str, object, tuple[tuple[str, str], ...]]:
    match_id = draw(st.one_of(text, st.sampled_from([world.a.match_id, world.b.match_id])))
    metadata = draw(
        st.sampled_from(
            [
                (),
                (("authorization", "Bearer nonsense"),),
                (("authorization", "Basic x"),),
                world.a.metadata(0),
                world.a.metadata(1),
                world.b.metadata(0),
            ]
        )
    )
    rpc = draw(st.sampled_from(["Deal", "ListPlans", "Play", "Score", "GetMatch", "WatchMatch"]))
    if rpc == "Deal":
        request: object = pb.DealRequest(
            match_id=draw(st.one_of(st.just(""), st.just(match_id))),
            seat=draw(int32),
            request_id=draw(text),
        )
        if draw(st.booleans()):
            request.expected_version = draw(int64)  # type: ignore[attr-defined]
        if draw(st.booleans()):
            request.seed = draw(st.integers(0, 2**64 - 1))  # type: ignore[attr-defined]
    elif rpc == "ListPlans":
        request = pb.ListPlansRequest(match_id=match_id)
        if draw(st.booleans()):
            request.card.CopyFrom(draw(cards))
    elif rpc == "Play":
        request = pb.PlayRequest(
            match_id=match_id, plan_id=draw(int32), trail=draw(st.booleans()), request_id=draw(text)
        )
        if draw(st.booleans()):
            request.card.CopyFrom(draw(cards))
        if draw(st.booleans()):
            request.expected_version = draw(int64)
    elif rpc == "WatchMatch":
        request = pb.WatchMatchRequest(match_id=match_id, after_version=draw(int64))
    else:
        request = getattr(pb, f"{rpc}Request")(match_id=match_id)
    return rpc, request, metadata


def call(world: World, rpc: str, request: object, metadata: tuple[tuple[str, str], ...]) -> None:
    method = getattr(world.stub, rpc)
    if rpc == "WatchMatch":
        # A valid watch waits for events: read what is there within a short deadline.
        try:
            for _ in method(request, metadata=metadata, timeout=1.5):
                pass
        except grpc.RpcError as error:
            if error.code() != grpc.StatusCode.DEADLINE_EXCEEDED:
                raise
    else:
        method(request, metadata=metadata, timeout=5)


def check_rejection(error: grpc.RpcError) -> None:
    rejection = Rejection.of(error)
    assert rejection.code in TYPED, rejection
    if rejection.code is grpc.StatusCode.RESOURCE_EXHAUSTED and not rejection.reason:
        return  # oversized message, refused by gRPC itself
    assert rejection.domain == DOMAIN
    assert rejection.reason, rejection


@settings(
    max_examples=examples(400),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_random_requests_get_typed_answers_and_change_nothing_when_rejected(
    world: World, data: st.DataObject
) -> None:
    rpc, request, metadata = data.draw(requests(world))
    before = stored(world)
    try:
        call(world, rpc, request, metadata)
    except grpc.RpcError as error:
        check_rejection(error)
        assert stored(world) == before, "a rejected call changed a match"
    else:
        replay = is_replay(world, rpc, request, metadata)
        check_accepted(world, rpc, request, before, replay=replay)
    assert world.a.view(0).match_id == world.a.match_id  # still serving


def stored(world: World) -> dict[str, tuple[object, ...]]:
    return {m.match_id: snapshot(world.store, m.match_id) for m in (world.a, world.b)}


def is_replay(world: World, rpc: str, request: object, metadata: object) -> bool:
    """Whether an accepted write repeated its caller's last request_id (answered, not applied)."""
    if rpc not in ("Deal", "Play"):
        return False
    request_id = getattr(request, "request_id", "")
    key = (getattr(request, "match_id", ""), metadata)
    replay = bool(request_id) and world.last_request.get(key) == request_id
    world.last_request[key] = request_id
    return replay


def check_accepted(
    world: World,
    rpc: str,
    request: object,
    before: dict[str, tuple[object, ...]],
    *,
    replay: bool = False,
) -> None:
    """An accepted read (or a replayed write) changes nothing; an accepted write changes exactly
    its own match, by one version and one audit entry (a creating Deal changes neither match)."""
    after = stored(world)
    target = getattr(request, "match_id", "")
    for match_id, (record, events) in before.items():
        new_record, new_events = after[match_id]
        if rpc in ("Deal", "Play") and match_id == target and not replay:
            assert version_of(new_record) == version_of(record) + 1, f"{rpc} is one version"
            assert new_events[:-1] == events, f"{rpc} appends exactly one audit entry"  # type: ignore[index]
        else:
            assert (new_record, new_events) == (record, events), f"{rpc} changed another match"


def version_of(record: object) -> int:
    assert isinstance(record, bytes), "the match is stored"
    return int.from_bytes(record[:8], "big")


@settings(
    max_examples=examples(150),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    rpc=st.sampled_from(["Deal", "ListPlans", "Play", "Score", "GetMatch", "WatchMatch"]),
    payload=st.binary(max_size=300) | st.builds(lambda n: b"\x0a" * n, st.integers(1, 40_000)),
)
def test_raw_bytes_to_every_rpc_are_invalid_argument_or_too_large(
    world: World, rpc: str, payload: bytes
) -> None:
    before = stored(world)
    channel = world.server.channel
    path = f"/basra.v1.BasraService/{rpc}"
    try:
        if rpc == "WatchMatch":
            stream = channel.unary_stream(path, None, None)
            for _ in stream(payload, metadata=world.a.metadata(0), timeout=1.5):
                pass
        else:
            channel.unary_unary(path, None, None)(payload, metadata=world.a.metadata(0), timeout=5)
    except grpc.RpcError as error:
        if error.code() != grpc.StatusCode.DEADLINE_EXCEEDED or rpc != "WatchMatch":
            check_rejection(error)
            assert stored(world) == before, "a rejected call changed a match"
            return
    # Accepted: the bytes were a well-formed request (else INVALID_ARGUMENT), so they parse.
    request = getattr(pb, f"{rpc}Request").FromString(payload)
    metadata = world.a.metadata(0)
    check_accepted(world, rpc, request, before, replay=is_replay(world, rpc, request, metadata))
    assert world.a.view(0).match_id == world.a.match_id


@settings(
    max_examples=examples(150),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(card=cards, rpc=st.sampled_from(["ListPlans", "Play"]), seat=st.sampled_from([0, 1]))
def test_cards_at_the_enum_edges_are_read_as_that_card_or_refused_as_invalid_card(
    world: World, card: game_pb2.Card, rpc: str, seat: int
) -> None:
    """A well-addressed call with any card: outside the enums it is INVALID_CARD and changes
    nothing; inside, it is answered for exactly that card (or refused by the game's rules)."""
    valid = 1 <= card.rank <= max(RANKS) and 1 <= card.suit <= max(SUITS)
    match = world.b
    if rpc == "ListPlans":
        request: object = pb.ListPlansRequest(match_id=match.match_id, card=card)
    else:
        request = pb.PlayRequest(match_id=match.match_id, card=card, plan_id=1)
    before = stored(world)
    try:
        response = getattr(world.stub, rpc)(request, metadata=match.metadata(seat), timeout=5)
    except grpc.RpcError as error:
        rejection = Rejection.of(error)
        assert stored(world) == before, "a rejected call changed a match"
        if valid:
            assert rejection.code is grpc.StatusCode.FAILED_PRECONDITION, rejection
        else:
            assert (rejection.code, rejection.reason) == (
                grpc.StatusCode.INVALID_ARGUMENT,
                "INVALID_CARD",
            ), rejection
            assert list(rejection.field_violations) == ["card"]
        return
    assert valid, f"{rpc} accepted rank {card.rank} suit {card.suit}"
    answered = response.cards[0].card if rpc == "ListPlans" else response.played.card
    assert (answered.rank, answered.suit) == (card.rank, card.suit)
    check_accepted(world, rpc, request, before)
