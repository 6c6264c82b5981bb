"""A creating request_id recovers the seat tokens on a retry, so it must not be guessable or
shared: a random UUID (AIP-155), scoped to the caller's API key."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import grpc
import pytest
import redis

from basra.client.match import MatchClient, Rejection
from basra.v1 import basra_service_pb2 as pb
from tests.service.conftest import rpc_error
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
    assert redis.Redis.from_url(redis_url).dbsize() == 0, "nothing was created"


def test_a_random_uuid_creates_and_its_retry_returns_the_same_tokens(server: ServerThread) -> None:
    request_id = str(uuid.uuid4()).upper()  # any case
    _, first = MatchClient.create(server.channel, seed=3, request_id=request_id)
    _, again = MatchClient.create(server.channel, seed=3, request_id=request_id)
    assert again == first


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
