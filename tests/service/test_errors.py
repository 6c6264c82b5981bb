"""Every rejection: its status code, its ErrorInfo and BadRequest, and a store left untouched."""

from __future__ import annotations

import io
import json
import logging
import random
from collections.abc import Callable, Iterator
from functools import partial

import grpc
import pytest
import redis

from basra.client.match import MatchClient, Rejection, card_pb, to_card
from basra.service import logs
from basra.service.store import MatchRecord, keys
from basra.service.store.codec import encode_record
from basra.service.store.memory import MemoryStore
from basra.v1 import basra_service_pb2 as pb
from basra.v1 import basra_service_pb2_grpc, game_pb2
from tests.service.conftest import BASE, HeldClock, new_match, rejected, rpc_error
from tests.service.driver import play_match, stored_record
from tests.support import ServerThread

RATE_LIMITED_RETRY = "5b0c7a3e-2f41-4d8e-9c6a-1e3f5a7b9d02"

Code = grpc.StatusCode


@pytest.fixture
def store(server: ServerThread) -> redis.Redis:
    return redis.Redis.from_url(server.settings.redis_url or "")


@pytest.fixture
def client(server: ServerThread) -> MatchClient:
    return new_match(server, seed=31)


def seat_to_move(client: MatchClient) -> tuple[int, game_pb2.MatchView]:
    view = client.view(0)
    return view.turn, view


def advance(client: MatchClient, until: Callable[[list[game_pb2.CardPlans]], bool]) -> int:
    """Play random moves until the seat to move holds a card satisfying ``until``."""
    rng = random.Random(4)
    for _ in range(400):
        seat, view = seat_to_move(client)
        if view.status == game_pb2.MATCH_STATUS_HAND_OVER:
            client.deal(0)
            continue
        options = client.plans(seat)
        if until(options):
            return seat
        pick = rng.choice(options)
        client.play(seat, pick.card, rng.randint(1, len(pick.plans)) if pick.plans else 0)
    raise AssertionError("position not reached")


def test_not_your_turn(store: redis.Redis, client: MatchClient) -> None:
    seat, _view = seat_to_move(client)
    other = 1 - seat
    card = client.view(other).hand[0]
    r = rejected(
        store, client, lambda: client.play(other, card), Code.FAILED_PRECONDITION, "NOT_YOUR_TURN"
    )
    assert r.metadata == {"turn": str(seat)}


def test_card_not_in_hand_never_reveals_the_other_hand(
    store: redis.Redis, client: MatchClient
) -> None:
    seat, _ = seat_to_move(client)
    theirs = client.view(1 - seat).hand[0]
    r = rejected(
        store,
        client,
        lambda: client.play(seat, theirs),
        Code.FAILED_PRECONDITION,
        "CARD_NOT_IN_HAND",
    )
    assert r.metadata == {"card": str(to_card(theirs))}
    others = {str(to_card(c)) for c in client.view(1 - seat).hand} - {str(to_card(theirs))}
    assert not any(c in r.message.replace(",", " ").replace(")", " ").split() for c in others)
    rejected(
        store,
        client,
        lambda: client.plans(seat, to_card(theirs)),
        Code.FAILED_PRECONDITION,
        "CARD_NOT_IN_HAND",
    )


def test_plan_required_unknown_plan_and_capture_required(
    store: redis.Redis, client: MatchClient
) -> None:
    seat = advance(client, lambda options: any(len(o.plans) >= 2 for o in options))
    option = next(o for o in client.plans(seat) if len(o.plans) >= 2)
    count = str(len(option.plans))
    r = rejected(
        store,
        client,
        lambda: client.play(seat, option.card),
        Code.FAILED_PRECONDITION,
        "PLAN_REQUIRED",
    )
    assert r.metadata == {"card": str(to_card(option.card)), "plan_count": count}
    r = rejected(
        store,
        client,
        lambda: client.play(seat, option.card, len(option.plans) + 1),
        Code.FAILED_PRECONDITION,
        "UNKNOWN_PLAN",
    )
    assert r.metadata["plan_id"] == str(len(option.plans) + 1)
    rejected(
        store,
        client,
        lambda: client.play(seat, option.card, trail=True),
        Code.FAILED_PRECONDITION,
        "CAPTURE_REQUIRED",
    )


def test_unknown_plan_for_a_card_that_trails(store: redis.Redis, client: MatchClient) -> None:
    seat = advance(client, lambda options: any(o.trails for o in options))
    option = next(o for o in client.plans(seat) if o.trails)
    r = rejected(
        store,
        client,
        lambda: client.play(seat, option.card, 1),
        Code.FAILED_PRECONDITION,
        "UNKNOWN_PLAN",
    )
    assert r.metadata["plan_count"] == "0"


def test_hand_over_hand_in_progress_and_match_over(store: redis.Redis, client: MatchClient) -> None:
    rejected(store, client, lambda: client.deal(0), Code.FAILED_PRECONDITION, "HAND_IN_PROGRESS")
    play_match(client, random.Random(1), stop=lambda v: v.status == game_pb2.MATCH_STATUS_HAND_OVER)
    card = card_pb("AC")
    r = rejected(store, client, lambda: client.play(0, card), Code.FAILED_PRECONDITION, "HAND_OVER")
    assert r.metadata == {"hand": "1"}
    play_match(client, random.Random(1))
    for call in (lambda: client.play(1, card), lambda: client.deal(1)):
        rejected(store, client, call, Code.FAILED_PRECONDITION, "MATCH_OVER")


def test_version_mismatch_is_aborted_with_both_versions(
    store: redis.Redis, client: MatchClient
) -> None:
    seat, view = seat_to_move(client)
    option = client.plans(seat)[0]
    plan = 1 if option.plans else 0
    client.play(seat, option.card, plan, expected_version=view.version)
    nxt = client.plans(1 - seat)[0]
    r = rejected(
        store,
        client,
        lambda: client.play(
            1 - seat, nxt.card, 1 if nxt.plans else 0, expected_version=view.version
        ),
        Code.ABORTED,
        "VERSION_MISMATCH",
    )
    assert r.metadata == {
        "expected_version": str(view.version),
        "current_version": str(view.version + 1),
    }
    assert r.message == (
        f"expected version {view.version} but the match is at {view.version + 1}: "
        "reload and decide again"
    )


def test_request_id_reused_for_another_request(store: redis.Redis, client: MatchClient) -> None:
    seat, _ = seat_to_move(client)
    first, second = client.plans(seat)[:2]
    client.play(seat, first.card, 1 if first.plans else 0, request_id="req-1")
    client.play(
        1 - seat, client.plans(1 - seat)[0].card, 1 if client.plans(1 - seat)[0].plans else 0
    )
    r = rejected(
        store,
        client,
        lambda: client.play(seat, second.card, 1 if second.plans else 0, request_id="req-1"),
        Code.INVALID_ARGUMENT,
        "REQUEST_ID_REUSED",
    )
    assert r.field_violations == {"request_id": "was already used for a different request"}


@pytest.mark.parametrize(
    ("card", "says"),
    [
        (None, "is required"),
        (game_pb2.Card(rank=game_pb2.RANK_TEN), "must have a rank and a suit"),
        # rank 99: no such value
        (game_pb2.Card.FromString(bytes([8, 99, 16, 1])), "must have a rank and a suit"),
    ],
)
def test_invalid_cards_are_invalid_argument(
    store: redis.Redis, client: MatchClient, card: game_pb2.Card | None, says: str
) -> None:
    stub = client.stub
    request = pb.PlayRequest(match_id=client.match_id)
    if card is not None:
        request.card.CopyFrom(card)
    r = rejected(
        store,
        client,
        lambda: stub.Play(request, metadata=client.metadata(0)),
        Code.INVALID_ARGUMENT,
        "INVALID_CARD",
    )
    assert r.field_violations == {"card": says}  # word for word, as a client shows it


def malformed_requests(client: MatchClient) -> Iterator[tuple[str, Callable[[], object], str]]:
    stub, md, mid = client.stub, client.metadata(0), client.match_id
    card = card_pb("2C")
    yield (
        "plan_id",
        lambda: stub.Play(pb.PlayRequest(match_id=mid, card=card, plan_id=-1), metadata=md),
        "plan_id",
    )
    yield (
        "trail",
        lambda: stub.Play(
            pb.PlayRequest(match_id=mid, card=card, plan_id=1, trail=True), metadata=md
        ),
        "trail",
    )
    yield (
        "request_id",
        lambda: stub.Play(
            pb.PlayRequest(match_id=mid, card=card, request_id="x" * 129), metadata=md
        ),
        "request_id",
    )
    yield (
        "request_id space",
        lambda: stub.Play(pb.PlayRequest(match_id=mid, card=card, request_id="a b"), metadata=md),
        "request_id",
    )
    yield (
        "expected_version",
        lambda: stub.Play(pb.PlayRequest(match_id=mid, card=card, expected_version=0), metadata=md),
        "expected_version",
    )
    yield (
        "seed on next hand",
        lambda: stub.Deal(pb.DealRequest(match_id=mid, seed=3), metadata=md),
        "seed",
    )
    yield (
        "seat on next hand",
        lambda: stub.Deal(pb.DealRequest(match_id=mid, seat=1), metadata=md),
        "seat",
    )
    yield (
        "watch version",
        lambda: list(
            stub.WatchMatch(pb.WatchMatchRequest(match_id=mid, after_version=-1), metadata=md)
        ),
        "after_version",
    )


def test_malformed_input_is_invalid_argument_naming_the_field(
    store: redis.Redis, client: MatchClient
) -> None:
    for name, call, field in malformed_requests(client):
        r = rejected(store, client, call, Code.INVALID_ARGUMENT, "INVALID_ARGUMENT")
        assert list(r.field_violations) == [field], name


MALFORMED_SAYS = {
    "plan_id": "must be 0 (none named) or a plan id from 1",
    "trail": "cannot be combined with plan_id",
    "request_id": "must be 1 to 128 printable ASCII characters",
    "request_id space": "must be 1 to 128 printable ASCII characters",
    "expected_version": "versions start at 1",
    "seed on next hand": "applies only to creating a match",
    "seat on next hand": "applies only to creating a match",
    "watch version": "must be 0 or more",
}


def test_malformed_input_says_what_is_wrong_with_the_field(
    store: redis.Redis, client: MatchClient
) -> None:
    # The violation's description is what a client shows its user: each says what the field
    # must be, word for word.
    said = {}
    for name, call, field in malformed_requests(client):
        r = rejected(store, client, call, Code.INVALID_ARGUMENT, "INVALID_ARGUMENT")
        said[name] = r.field_violations[field]
    assert said == MALFORMED_SAYS


def test_creation_input_is_checked(server: ServerThread) -> None:
    stub = basra_service_pb2_grpc.BasraServiceStub(server.channel)
    not_random = {
        "request_id": "must be a random UUID (version 4, e.g. "
        "3f2c1e9a-8d4b-4c6e-9a1f-0b2d4e6f8a0c): a retry with it answers a seat token, so it "
        "must be as hard to guess"
    }
    # Each violation word for word: what a client shows its user.
    for request, violation in [
        (pb.DealRequest(seat=2), {"seat": "must be 0..1"}),
        (
            pb.DealRequest(expected_version=1),
            {"expected_version": "applies only to dealing a next hand"},
        ),
        (pb.DealRequest(request_id="short"), not_random),
    ]:
        r = Rejection.of(rpc_error(partial(stub.Deal, request)))
        assert (r.code, r.field_violations) == (Code.INVALID_ARGUMENT, violation)
    for creating, violation in [
        (pb.CreateMatchRequest(rules="persian", seats=3, seat=3), {"seat": "must be 0..2"}),
        (pb.CreateMatchRequest(request_id="req-0001"), not_random),
    ]:
        r = Rejection.of(rpc_error(partial(stub.CreateMatch, creating)))
        assert (r.code, r.field_violations) == (Code.INVALID_ARGUMENT, violation)


@pytest.mark.parametrize("match_id", ["", "short", "x" * 65, "bad id with spaces!!"])
def test_malformed_match_ids(client: MatchClient, match_id: str) -> None:
    stub = client.stub
    for call in (
        lambda: stub.GetMatch(pb.GetMatchRequest(match_id=match_id), metadata=client.metadata(0)),
        lambda: stub.Score(pb.ScoreRequest(match_id=match_id), metadata=client.metadata(0)),
    ):
        r = Rejection.of(rpc_error(call))
        assert (r.code, r.reason, list(r.field_violations)) == (
            Code.INVALID_ARGUMENT,
            "INVALID_ARGUMENT",
            ["match_id"],
        )


def test_unknown_match_is_not_found(client: MatchClient) -> None:
    r = Rejection.of(
        rpc_error(
            lambda: client.stub.GetMatch(
                pb.GetMatchRequest(match_id="A" * 22), metadata=client.metadata(0)
            )
        )
    )
    assert (r.code, r.reason, r.metadata) == (
        Code.NOT_FOUND,
        "MATCH_NOT_FOUND",
        {"match_id": "A" * 22},
    )
    assert r.message == f"no match {'A' * 22!r}: it never existed or has expired"


def test_missing_malformed_wrong_and_foreign_tokens(
    server: ServerThread, store: redis.Redis, client: MatchClient
) -> None:
    other = new_match(server, seed=1)
    request = pb.GetMatchRequest(match_id=client.match_id)
    cases = [
        ((), Code.UNAUTHENTICATED, "TOKEN_MISSING"),
        ((("authorization", "Basic abc"),), Code.UNAUTHENTICATED, "TOKEN_MISSING"),
        ((("authorization", "Bearer "),), Code.UNAUTHENTICATED, "TOKEN_MISSING"),
        ((("authorization", "Bearer nope"),), Code.PERMISSION_DENIED, "TOKEN_INVALID"),
        (other.metadata(0), Code.PERMISSION_DENIED, "TOKEN_INVALID"),
    ]
    for metadata, code, reason in cases:
        for call in (
            lambda md=metadata: client.stub.GetMatch(request, metadata=md),
            lambda md=metadata: client.stub.Play(
                pb.PlayRequest(match_id=client.match_id, card=card_pb("2C")), metadata=md
            ),
            lambda md=metadata: client.stub.Deal(
                pb.DealRequest(match_id=client.match_id), metadata=md
            ),
        ):
            rejected(store, client, call, code, reason)


def test_api_key_guards_creation(start_server: Callable[..., ServerThread], redis_url: str) -> None:
    server = start_server(redis_url=redis_url, api_key="s3cret-key")
    for key, code, reason in [
        (None, Code.UNAUTHENTICATED, "API_KEY_MISSING"),
        ("wrong", Code.PERMISSION_DENIED, "API_KEY_INVALID"),
    ]:
        r = Rejection.of(rpc_error(partial(MatchClient.create, server.channel, api_key=key)))
        assert (r.code, r.reason) == (code, reason)
    client, _ = MatchClient.create(server.channel, api_key="s3cret-key")
    assert client.view(0).version == 1


def test_seeds_are_refused_unless_allowed(
    start_server: Callable[..., ServerThread], redis_url: str
) -> None:
    server = start_server(redis_url=redis_url, allow_seeds=False)
    r = Rejection.of(rpc_error(lambda: MatchClient.create(server.channel, seed=1)))
    assert (r.code, r.reason) == (Code.PERMISSION_DENIED, "SEEDS_DISABLED")
    assert r.message == "this server draws its own seeds: omit seed"
    client, _ = MatchClient.create(server.channel)
    assert client.view(1).version == 1


def test_creation_rate_is_limited_with_a_retry_delay(
    start_server: Callable[..., ServerThread], redis_url: str, held_clock: HeldClock
) -> None:
    # The limits' clock stands still: the three creations are at the same instant, however long
    # they take, so the third finds the bucket empty and its next token exactly 2 s away.
    server = start_server(redis_url=redis_url, create_rate=0.5, create_burst=2)
    _, first = MatchClient.create(server.channel, request_id=RATE_LIMITED_RETRY)
    MatchClient.create(server.channel)
    r = Rejection.of(rpc_error(lambda: MatchClient.create(server.channel)))
    assert (r.code, r.reason) == (Code.RESOURCE_EXHAUSTED, "RATE_LIMITED")
    assert r.retry_after_s == 2.0
    assert r.message == "too many matches created (per replica): retry later"
    # The delay in whole milliseconds, the same in the metadata as in RetryInfo.
    assert r.metadata == {"retry_after_s": str(r.retry_after_s), "scope": "replica"}
    assert r.retry_after_s == round(r.retry_after_s, 3)
    # A retry of a creation already made is answered whatever the rate.
    _, again = MatchClient.create(server.channel, request_id=RATE_LIMITED_RETRY)
    assert again == first


def test_the_retry_delay_is_the_time_until_the_bucket_holds_a_creation_again(
    start_server: Callable[..., ServerThread],
) -> None:
    # One creation per 1,000 s: right after the first, the next is 1,000 s away, less the time
    # between the two calls (a margin of 100 s here, so no timing is asserted).
    server = start_server(create_rate=0.001, create_burst=1)
    MatchClient.create(server.channel)
    r = Rejection.of(rpc_error(lambda: MatchClient.create(server.channel)))
    assert r.retry_after_s is not None
    assert 900 < r.retry_after_s <= 1000
    assert r.retry_after_s == round(r.retry_after_s, 3)


def test_history_trimmed_when_resuming_before_the_kept_events(
    start_server: Callable[..., ServerThread], redis_url: str
) -> None:
    server = start_server(redis_url=redis_url, events_maxlen=10)
    client = new_match(server, seed=3)
    play_match(client, random.Random(0), stop=lambda v: v.plays_left <= 4 and v.hand_number == 2)
    r = Rejection.of(rpc_error(lambda: list(client.watch(0, after_version=1, timeout=5))))
    assert (r.code, r.reason) == (Code.OUT_OF_RANGE, "HISTORY_TRIMMED")
    assert int(r.metadata["oldest_version"]) > 2


class FailingLoad(MemoryStore):
    """The embedded store, whose load fails in a way nothing expects."""

    async def load(self, match_id: str) -> MatchRecord | None:
        raise RuntimeError("the store broke in a new way")


def test_an_unexpected_failure_is_internal_with_no_detail_and_logged_with_its_traceback() -> None:
    server = ServerThread(BASE, store=FailingLoad(ttl_s=60, events_maxlen=100))
    buffer = io.StringIO()
    logs.setup("INFO", buffer)
    try:
        request = pb.GetMatchRequest(match_id="M" * 22)
        stub = basra_service_pb2_grpc.BasraServiceStub(server.channel)
        metadata = (("authorization", "Bearer " + "t" * 43),)
        r = Rejection.of(rpc_error(lambda: stub.GetMatch(request, metadata=metadata, timeout=10)))
    finally:
        logging.getLogger("basra").handlers.clear()
        server.stop()
    assert (r.code, r.reason) == (Code.INTERNAL, "INTERNAL")
    assert "broke" not in r.message
    records = [json.loads(line) for line in buffer.getvalue().splitlines()]
    (failure,) = [r for r in records if r["level"] == "ERROR"]
    assert failure["msg"] == "unexpected failure"
    assert "RuntimeError: the store broke in a new way" in failure["exc"]


def test_a_retry_on_a_match_whose_event_history_is_gone_is_match_not_found(
    store: redis.Redis, client: MatchClient
) -> None:
    seat = client.view(0).turn
    option = client.plans(seat)[0]
    plan = 1 if option.plans else 0
    client.play(seat, option.card, plan, request_id="retried-1")
    store.delete(keys.events_key(client.match_id))  # the record stays, its history does not
    r = Rejection.of(
        rpc_error(lambda: client.play(seat, option.card, plan, request_id="retried-1"))
    )
    assert (r.code, r.reason) == (Code.NOT_FOUND, "MATCH_NOT_FOUND")
    assert r.metadata == {"match_id": client.match_id}


def test_what_applies_only_to_creating_or_to_a_watch_is_refused_saying_so_and_logged(
    server: ServerThread, client: MatchClient
) -> None:
    seat = client.view(0).turn
    buffer = io.StringIO()
    logs.setup("INFO", buffer)
    try:
        said = {}
        for field, extra in (("seed", {"seed": 3}), ("seat", {"seat": 1})):
            request = pb.DealRequest(match_id=client.match_id, **extra)  # type: ignore[arg-type]
            deal = partial(client.stub.Deal, request, metadata=client.metadata(seat))
            said[field] = Rejection.of(rpc_error(deal)).message
        watch = pb.WatchMatchRequest(match_id=client.match_id, after_version=-1)
        streamed = partial(client.stub.WatchMatch, watch, metadata=client.metadata(seat))
        said["after_version"] = Rejection.of(rpc_error(lambda: list(streamed()))).message
    finally:
        logging.getLogger("basra").handlers.clear()
    assert said == {
        "seed": "seed: applies only to creating a match",
        "seat": "seat: applies only to creating a match",
        "after_version": "after_version: must be 0 or more",
    }
    # The refused stream is logged and counted like a unary call, with its method and match.
    records = [json.loads(line) for line in buffer.getvalue().splitlines()]
    (logged,) = [r for r in records if r.get("method") == "WatchMatch"]
    assert (logged["msg"], logged["code"]) == ("call rejected", "INVALID_ARGUMENT")
    assert logged["match_id"] == client.match_id
    count = server.server.metrics.registry.get_sample_value(
        "basra_rpc_calls_total", {"method": "WatchMatch", "code": "INVALID_ARGUMENT"}
    )
    assert count == 1
    took = server.server.metrics.registry.get_sample_value(
        "basra_rpc_latency_seconds_sum", {"method": "WatchMatch"}
    )
    assert took is not None
    assert 0 <= took < 60  # its latency, not a clock reading


def test_a_stream_that_ends_is_logged_and_counted_with_its_method_and_match(
    server: ServerThread, client: MatchClient
) -> None:
    play_match(client, random.Random(2))  # to its end
    last = client.view(0).version
    buffer = io.StringIO()
    logs.setup("DEBUG", buffer)
    try:
        assert list(client.watch(0, after_version=last, timeout=10)) == []  # all was sent
    finally:
        logging.getLogger("basra").handlers.clear()
    records = [json.loads(line) for line in buffer.getvalue().splitlines()]
    (logged,) = [r for r in records if r.get("method") == "WatchMatch"]
    assert (logged["msg"], logged["code"], logged["match_id"]) == ("call", "OK", client.match_id)
    assert 0 <= logged["ms"] < 60_000
    count = server.server.metrics.registry.get_sample_value(
        "basra_rpc_calls_total", {"method": "WatchMatch", "code": "OK"}
    )
    assert count == 1


def test_a_stream_request_that_does_not_parse_is_invalid_argument(server: ServerThread) -> None:
    watch = server.channel.unary_stream(
        "/basra.v1.BasraService/WatchMatch",
        request_serializer=lambda raw: raw,
        response_deserializer=pb.WatchMatchResponse.FromString,
    )
    r = Rejection.of(rpc_error(lambda: list(watch(b"\xff\xff\xff", timeout=10))))
    assert (r.code, r.reason) == (Code.INVALID_ARGUMENT, "INVALID_ARGUMENT")
    assert r.message == "request: is not a valid basra.v1.WatchMatchRequest message"


def test_corrupt_stored_state_is_data_loss(store: redis.Redis, client: MatchClient) -> None:
    record = stored_record(store, client.match_id)._replace(state=b"\x01garbage")
    store.set(keys.match_key(client.match_id), encode_record(record))
    r = Rejection.of(rpc_error(lambda: client.view(0)))
    assert (r.code, r.reason) == (Code.DATA_LOSS, "STATE_CORRUPT")


def test_every_call_is_logged_with_its_match_and_a_creation_with_the_match_it_made(
    server: ServerThread, client: MatchClient
) -> None:
    buffer = io.StringIO()
    logs.setup("DEBUG", buffer)
    try:
        client.view(0)
        created, _ = MatchClient.create(server.channel)
        stub = basra_service_pb2_grpc.BasraServiceStub(server.channel)
        rpc_error(partial(stub.CreateMatch, pb.CreateMatchRequest(seats=9)))
    finally:
        logging.getLogger("basra").handlers.clear()
    records = [json.loads(line) for line in buffer.getvalue().splitlines()]
    (read,) = [r for r in records if r.get("method") == "GetMatch"]
    assert (read["msg"], read["match_id"]) == ("call", client.match_id)
    (made,) = [r for r in records if r["msg"] == "match created"]
    assert made["match_id"] == created.match_id
    # A request that names no match is logged with none.
    (refused,) = [r for r in records if r.get("method") == "CreateMatch"]
    assert (refused["msg"], refused["match_id"]) == ("call rejected", "")
    for method in ("GetMatch", "CreateMatch"):
        took = server.server.metrics.registry.get_sample_value(
            "basra_rpc_latency_seconds_sum", {"method": method}
        )
        assert took is not None
        assert 0 <= took < 60, method  # its latency, not a clock reading


def test_a_watch_token_s_malformed_change_is_refused_for_what_is_malformed(
    client: MatchClient,
) -> None:
    # The request is checked before the token: a client fixing its request first learns what
    # is wrong with it, then that the token is read-only.
    watch = client.stub.CreateWatchToken(
        pb.CreateWatchTokenRequest(match_id=client.match_id), metadata=client.metadata(0)
    ).watch_token
    as_watcher = (("authorization", f"Bearer {watch}"),)
    request = pb.PlayRequest(match_id=client.match_id, card=card_pb("2C"), expected_version=0)
    r = Rejection.of(rpc_error(partial(client.stub.Play, request, metadata=as_watcher)))
    assert (r.code, list(r.field_violations)) == (Code.INVALID_ARGUMENT, ["expected_version"])
    request.ClearField("expected_version")
    r = Rejection.of(rpc_error(partial(client.stub.Play, request, metadata=as_watcher)))
    assert (r.code, r.reason) == (Code.PERMISSION_DENIED, "WATCH_TOKEN_READ_ONLY")
