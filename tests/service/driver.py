"""Play matches through the RPCs like a frontend, and replay them with the engine."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import cast

import redis

from basra.client.match import MatchClient, to_card
from basra.engine import Phase, Play, State, apply, deal_next_hand, decode, new_match
from basra.service import records
from basra.service.store import MatchRecord, keys
from basra.service.store.codec import decode_record
from basra.v1 import basra_service_pb2 as pb
from basra.v1 import basra_service_pb2_grpc, game_pb2
from tests.support import ServerThread


def stub(server: ServerThread) -> basra_service_pb2_grpc.BasraServiceStub:
    """A BasraService stub on ``server``'s gRPC channel."""
    return basra_service_pb2_grpc.BasraServiceStub(server.channel)


def bearer(token: str) -> tuple[tuple[str, str]]:
    """The gRPC metadata that authenticates a call with a seat or watch token."""
    return (("authorization", f"Bearer {token}"),)


@dataclass
class Played:
    """Every choice made and every response received, in order."""

    plays: list[tuple[int, str, int]] = field(default_factory=list)  # (seat, card, plan id)
    responses: list[tuple[int, pb.PlayResponse | pb.DealResponse]] = field(default_factory=list)


def play_match(
    client: MatchClient,
    rng: random.Random,
    *,
    stop: Callable[[game_pb2.MatchView], bool] | None = None,
    record: Played | None = None,
) -> Played:
    """Play random legal moves (via ListPlans) until the match ends or ``stop(view)`` is true."""
    record = record or Played()
    while True:
        view = client.view(0)
        if view.status == game_pb2.MATCH_STATUS_MATCH_OVER or (stop and stop(view)):
            return record
        if view.status == game_pb2.MATCH_STATUS_HAND_OVER:
            record.responses.append((0, client.deal(0)))
            continue
        seat = view.turn
        options = client.plans(seat)
        pick = rng.choice(options)
        plan_id = rng.randint(1, len(pick.plans)) if pick.plans else 0
        record.plays.append((seat, str(to_card(pick.card)), plan_id))
        record.responses.append((seat, client.play(seat, pick.card, plan_id)))


def engine_replay(seed: int, plays: list[tuple[int, str, int]]) -> State:
    """The same match played directly on the engine (a deal whenever a hand is over)."""
    from basra.engine import Card

    state, _ = new_match(seed)
    for seat, card, plan_id in plays:
        if state.phase is Phase.HAND_OVER:
            state, _ = deal_next_hand(state)
        state, _ = apply(state, Play(seat, Card.parse(card), plan_id or None))
    return state


def stored_record(client: redis.Redis, match_id: str) -> MatchRecord:
    """The match record as stored in Redis."""
    data = cast(bytes, client.get(keys.match_key(match_id)))
    return decode_record(match_id, data)


def _stream(client: redis.Redis, key: str) -> list[tuple[bytes, dict[bytes, bytes]]]:
    return cast(list[tuple[bytes, dict[bytes, bytes]]], client.xrange(key))


def stored_state(client: redis.Redis, match_id: str) -> tuple[int, State]:
    """(version, state) as stored in Redis."""
    record = stored_record(client, match_id)
    return record.version, decode(record.state)


def audit_replay(client: redis.Redis, match_id: str) -> tuple[int, State]:
    """Rebuild the match from its Redis event stream alone: (last version, state)."""
    states = audit_states(client, match_id)
    version = max(states)
    return version, states[version]


def audit_states(client: redis.Redis, match_id: str) -> dict[int, State]:
    """The state at every version, rebuilt from the Redis event stream alone."""
    states: dict[int, State] = {}
    state: State | None = None
    version = 0
    for stream_id, fields in _stream(client, keys.events_key(match_id)):
        entry_version = int(stream_id.split(b"-")[0])
        assert entry_version == version + 1, "the audit stream has no gaps"
        command = fields[keys.COMMAND.encode()]
        kind, args = records.decode_command(command)
        if kind == records.NEW_MATCH:
            state, _ = new_match(args[0], records.new_match_profile(command))
        else:
            assert state is not None
            if kind == records.DEAL:
                state, _ = deal_next_hand(state)
            elif kind == records.SEAT:
                pass  # a seat's holder changed: no card moved
            else:
                seat, card, plan = args
                from basra.engine import CARDS

                state, _ = apply(state, Play(seat, CARDS[card], plan or None, trail=not plan))
        version = entry_version
        states[version] = state
    assert states, "the match has an audit stream"
    return states


def snapshot(client: redis.Redis, match_id: str) -> tuple[object, ...]:
    """Everything stored for a match: to prove a rejected call changed nothing."""
    return (
        client.get(keys.match_key(match_id)),
        _stream(client, keys.events_key(match_id)),
    )
