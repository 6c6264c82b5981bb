"""Replicas racing on one match, and retries: every move applied exactly once."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import grpc
import redis

from basra.client.match import MatchClient, Rejection
from basra.v1 import game_pb2
from tests.service.conftest import new_match, rpc_error
from tests.service.driver import audit_replay, play_match, stored_state
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
