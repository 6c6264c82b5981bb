"""The edges of every check: near-miss tokens, enums one past the end, versions ahead, the oldest
kept event. Each value here sits next to one that is accepted, so a check that is off by one (or
reads a prefix) lets it through.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from functools import partial

import grpc
import pytest
import redis
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from basra.client.match import MatchClient, Rejection, to_card
from basra.v1 import basra_service_pb2 as pb
from basra.v1 import basra_service_pb2_grpc, game_pb2
from tests.service.conftest import new_match, rejected, rpc_error
from tests.service.driver import play_match
from tests.support import ServerThread

Code = grpc.StatusCode
SERVICE = pb.DESCRIPTOR.services_by_name["BasraService"]


@pytest.fixture
def store(server: ServerThread) -> redis.Redis:
    return redis.Redis.from_url(server.settings.redis_url or "")


@pytest.fixture
def client(server: ServerThread) -> MatchClient:
    return new_match(server, seed=31)


def first_move(client: MatchClient) -> tuple[int, game_pb2.Card, int, int]:
    """(seat to move, a card it holds, a plan id for it, the current version)."""
    view = client.view(0)
    option = client.plans(view.turn)[0]
    return view.turn, option.card, 1 if option.plans else 0, view.version


# -- Seat tokens ------------------------------------------------------------------------------


def near_misses(token: str) -> Iterator[tuple[str, str]]:
    """Tokens that share all but a little of ``token``: none of them is the seat."""
    other = {c: "B" if c == "A" else "A" for c in token}
    yield "first 16 characters", token[:16]
    yield "characters 17 to 43 changed", token[:16] + "".join(other[c] for c in token[16:])
    yield "first character changed", other[token[0]] + token[1:]
    yield "last character changed", token[:-1] + other[token[-1]]
    yield "one character more", token + "A"
    yield "last character cut", token[:-1]


def test_a_near_miss_seat_token_is_no_seat(store: redis.Redis, client: MatchClient) -> None:
    seat, card, plan, _ = first_move(client)
    token = client.tokens[seat]
    assert len(token) == 43, "a 256-bit token in base64url"
    for name, variant in near_misses(token):
        assert variant != token, name
        metadata = (("authorization", f"Bearer {variant}"),)
        for call in (
            lambda md=metadata: client.stub.GetMatch(
                pb.GetMatchRequest(match_id=client.match_id), metadata=md
            ),
            lambda md=metadata: client.stub.Play(
                pb.PlayRequest(match_id=client.match_id, card=card, plan_id=plan), metadata=md
            ),
        ):
            r = rejected(store, client, call, Code.PERMISSION_DENIED, "TOKEN_INVALID")
            assert variant not in str(r), name
    # The real token still plays: the move refused above was a legal one.
    client.play(seat, card, plan)


# -- Enums at their boundaries ----------------------------------------------------------------


def enum_fields(message: Descriptor, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every singular enum field reachable in a request message, as a path of field names. (A
    repeated one, CreateMatchRequest.bots, whose 0 means a person, has its boundaries tested by
    tests/service/test_bots.py, naming the entry.)"""
    for field in message.fields:
        if field.is_repeated and field.type == FieldDescriptor.TYPE_ENUM:
            continue
        if field.type == FieldDescriptor.TYPE_ENUM:
            yield (*path, field.name)
        elif field.type == FieldDescriptor.TYPE_MESSAGE:
            yield from enum_fields(_message(field), (*path, field.name))


def _message(field: FieldDescriptor) -> Descriptor:
    assert field.message_type is not None
    return field.message_type


def enum_numbers(message: Descriptor, path: tuple[str, ...]) -> list[int]:
    """The numbers the enum at ``path`` defines, checked to run 0, 1, ... with no gap."""
    for name in path[:-1]:
        message = _message(message.fields_by_name[name])
    enum = message.fields_by_name[path[-1]].enum_type
    assert enum is not None
    numbers = sorted(v.number for v in enum.values)
    assert numbers == list(range(len(numbers))), f"{enum.name} has gaps: test inside them too"
    return numbers


def valid_requests(client: MatchClient) -> dict[str, tuple[Message, int]]:
    """A request each RPC accepts (given the seat that may send it): the base to break."""
    seat, card, plan, _ = first_move(client)
    return {
        "Play": (pb.PlayRequest(match_id=client.match_id, card=card, plan_id=plan), seat),
        "ListPlans": (pb.ListPlansRequest(match_id=client.match_id, card=card), seat),
    }


def send(client: MatchClient, rpc: str, request: Message, seat: int) -> object:
    method = getattr(client.stub, rpc)
    if SERVICE.methods_by_name[rpc].server_streaming:
        return next(iter(method(request, metadata=client.metadata(seat), timeout=10)))
    return method(request, metadata=client.metadata(seat), timeout=10)


def set_path(request: Message, path: tuple[str, ...], value: int) -> None:
    target = request
    for name in path[:-1]:
        target = getattr(target, name)
    setattr(target, path[-1], value)


def test_every_request_enum_is_checked_at_zero_and_one_past_its_last_value(
    store: redis.Redis, client: MatchClient
) -> None:
    bases = valid_requests(client)
    checked = []
    for method in SERVICE.methods:
        paths = list(enum_fields(method.input_type))
        if not paths:
            continue
        assert method.name in bases, f"{method.name} takes an enum: give it a valid request here"
        base, seat = bases[method.name]
        for path in paths:
            numbers = enum_numbers(method.input_type, path)
            for bad in (0, numbers[-1] + 1):
                request = type(base)()
                request.CopyFrom(base)
                set_path(request, path, bad)
                r = rejected(
                    store,
                    client,
                    partial(send, client, method.name, request, seat),
                    Code.INVALID_ARGUMENT,
                    reason_for(path),
                )
                assert list(r.field_violations) == [path[0]], (method.name, path, bad)
                checked.append((method.name, ".".join(path), bad))
    assert ("Play", "card.rank", 14) in checked
    assert ("ListPlans", "card.suit", 5) in checked


def reason_for(path: tuple[str, ...]) -> str:
    return "INVALID_CARD" if path[0] == "card" else "INVALID_ARGUMENT"


@pytest.mark.parametrize(
    ("rank", "suit"),
    [(0, 1), (14, 1), (14, 4), (1, 0), (13, 5), (1, 5), (0, 0), (2**31 - 1, 1), (1, -1)],
)
def test_cards_one_past_either_end_are_invalid_card(
    store: redis.Redis, client: MatchClient, rank: int, suit: int
) -> None:
    seat, _, _, _ = first_move(client)
    card = game_pb2.Card()
    card.rank, card.suit = rank, suit  # type: ignore[assignment]  # open enums take any int32
    for call in (
        lambda: client.stub.Play(
            pb.PlayRequest(match_id=client.match_id, card=card), metadata=client.metadata(seat)
        ),
        lambda: client.stub.ListPlans(
            pb.ListPlansRequest(match_id=client.match_id, card=card),
            metadata=client.metadata(seat),
        ),
    ):
        r = rejected(store, client, call, Code.INVALID_ARGUMENT, "INVALID_CARD")
        assert list(r.field_violations) == ["card"]


@pytest.mark.parametrize("text", ["AC", "KC", "AS", "KS"])
def test_the_first_and_last_rank_and_suit_are_the_cards_they_name(
    client: MatchClient, text: str
) -> None:
    """Rank 1/13 and suit 1/4 are accepted, and read as exactly that card."""
    seat, _, _, _ = first_move(client)
    if text in {str(to_card(c)) for c in client.view(seat).hand}:
        (plans,) = client.plans(seat, text)
        assert str(to_card(plans.card)) == text
    else:
        r = Rejection.of(rpc_error(lambda: client.plans(seat, text)))
        assert (r.code, r.reason, r.metadata) == (
            Code.FAILED_PRECONDITION,
            "CARD_NOT_IN_HAND",
            {"card": text},
        )


# -- Versions ahead ---------------------------------------------------------------------------


@pytest.mark.parametrize("ahead", [1, 2, 100, None])
def test_an_expected_version_ahead_of_the_match_is_version_mismatch(
    store: redis.Redis, client: MatchClient, ahead: int | None
) -> None:
    seat, card, plan, version = first_move(client)
    expected = 2**63 - 1 if ahead is None else version + ahead
    r = rejected(
        store,
        client,
        lambda: client.play(seat, card, plan, expected_version=expected),
        Code.ABORTED,
        "VERSION_MISMATCH",
    )
    assert r.metadata == {"expected_version": str(expected), "current_version": str(version)}
    r = rejected(
        store,
        client,
        lambda: client.deal(seat, expected_version=expected),
        Code.ABORTED,
        "VERSION_MISMATCH",
    )
    assert r.metadata["current_version"] == str(version)
    # The same play at the current version is accepted: only the version was wrong.
    assert client.play(seat, card, plan, expected_version=version).view.version == version + 1


# -- The oldest kept event --------------------------------------------------------------------


def watch_first(
    stub: basra_service_pb2_grpc.BasraServiceStub, client: MatchClient, after: int
) -> game_pb2.MatchEvent:
    """The first event a watch resuming after ``after`` receives (then the watch is cancelled)."""
    call = stub.WatchMatch(
        pb.WatchMatchRequest(match_id=client.match_id, after_version=after),
        metadata=client.metadata(0),
        timeout=20,
    )
    try:
        response: pb.WatchMatchResponse = next(iter(call))
        return response.event
    finally:
        call.cancel()  # type: ignore[no-untyped-call]


@pytest.mark.parametrize("store_kind", ["redis", "embedded"])
def test_resuming_at_the_oldest_kept_event_works_and_one_before_is_history_trimmed(
    start_server: Callable[..., ServerThread], request: pytest.FixtureRequest, store_kind: str
) -> None:
    redis_url = request.getfixturevalue("redis_url") if store_kind == "redis" else None
    server = start_server(redis_url=redis_url, events_maxlen=10)
    client = new_match(server, seed=3)
    play_match(client, random.Random(0), stop=lambda v: v.plays_left <= 4 and v.hand_number == 2)
    stub = client.stub
    r = Rejection.of(rpc_error(lambda: watch_first(stub, client, 1)))
    assert (r.code, r.reason) == (Code.OUT_OF_RANGE, "HISTORY_TRIMMED")
    oldest = int(r.metadata["oldest_version"])
    assert oldest > 3
    # Everything after oldest - 1 is still kept: the watch starts at the oldest event.
    assert watch_first(stub, client, oldest - 1).version == oldest
    assert watch_first(stub, client, oldest).version == oldest + 1
    # One further back needs the event before the oldest: gone.
    r = Rejection.of(rpc_error(lambda: watch_first(stub, client, oldest - 2)))
    assert (r.code, r.reason) == (Code.OUT_OF_RANGE, "HISTORY_TRIMMED")
    assert r.metadata == {"after_version": str(oldest - 2), "oldest_version": str(oldest)}
