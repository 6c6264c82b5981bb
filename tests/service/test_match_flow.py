"""Whole matches through the RPCs: the engine's result, the audit log, what each seat sees."""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from itertools import pairwise

import pytest

from basra.client.match import MatchClient, to_card
from basra.engine import Card, Phase
from basra.service import records
from basra.service.store.memory import MemoryStore
from basra.v1 import basra_service_pb2 as pb
from basra.v1 import game_pb2
from tests.service.conftest import new_match
from tests.service.driver import (
    audit_replay,
    audit_states,
    engine_replay,
    play_match,
    stored_state,
)
from tests.support import ServerThread


def test_a_full_seeded_match_ends_as_the_engine_says(
    any_server: ServerThread, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="basra.rpc")
    client = new_match(any_server, seed=2024)
    played = play_match(client, random.Random(5))
    expected = engine_replay(2024, played.plays)
    board = client.score(1).scoreboard
    assert expected.phase is Phase.MATCH_OVER
    assert board.status == game_pb2.MATCH_STATUS_MATCH_OVER
    assert board.winner == expected.winner
    assert list(board.totals) == list(expected.scores)
    assert [[s.total for s in h.seats] for h in board.hands] == [
        list(h.totals) for h in expected.history
    ]
    assert [h.carry_after for h in board.hands] == [h.carry_after for h in expected.history]
    for _, response in played.responses:
        assert [e.version_complete for e in response.events][-1]
        assert sum(e.version_complete for e in response.events) == 1
    last = played.responses[-1][1]
    assert isinstance(last, pb.PlayResponse)
    assert last.HasField("result")
    assert last.result.winner == expected.winner
    assert last.HasField("hand_score")
    plays = [r for _, r in played.responses if isinstance(r, pb.PlayResponse)]
    assert {r.view.match_id for r in plays} == {client.match_id}
    scored = [r.hand_score for r in plays if r.HasField("hand_score")]
    assert [h.game for h in scored] == [1] * len(expected.history)  # ERAM: one game
    # The end of a match is one log line naming it and its winner.
    ended = [r for r in caplog.records if r.name == "basra.rpc" and r.msg == "match ended"]
    assert [(r.match_id, r.winner) for r in ended] == [  # type: ignore[attr-defined]
        (client.match_id, expected.winner)
    ]


def test_the_redis_audit_stream_replays_to_the_stored_state(server: ServerThread) -> None:
    client = new_match(server, seed=99)
    play_match(client, random.Random(1))
    import redis

    redis_client = redis.Redis.from_url(server.settings.redis_url or "")
    assert audit_replay(redis_client, client.match_id) == stored_state(
        redis_client, client.match_id
    )


def test_creation_returns_tokens_once_and_the_callers_view(server: ServerThread) -> None:
    client, created = MatchClient.create(server.channel, seed=11, seat=1)
    assert [t.seat for t in created.seat_tokens] == [0, 1]
    assert all(len(t.token) == 43 for t in created.seat_tokens)
    assert created.view.seat == 1
    assert created.view.version == 1
    assert created.view.match_id == client.match_id
    assert {e.version for e in created.events} == {1}  # the deal is version 1
    assert len(created.view.hand) == 4
    assert len(created.view.floor) == 4
    assert created.events[0].hand_started.your_cards == created.view.hand
    # Views, plans and scores never carry tokens again.
    for message in (client.view(0), client.view(1), client.score(0), *client.plans(1)):
        assert not any(t.token in str(message) for t in created.seat_tokens)


def test_every_response_to_a_seat_hides_the_other_hand_and_the_stock(
    server: ServerThread,
) -> None:
    import redis

    store = redis.Redis.from_url(server.settings.redis_url or "")
    client = new_match(server, seed=5)
    rng = random.Random(3)

    def hidden_from(seat: int) -> set[Card]:
        _, state = stored_state(store, client.match_id)
        return set(state.hands[1 - seat]) | set(state.stock)

    checked = 0
    while checked < 120:
        v = client.view(0)
        if v.status == game_pb2.MATCH_STATUS_MATCH_OVER:
            break
        if v.status == game_pb2.MATCH_STATUS_HAND_OVER:
            assert not cards_in(client.deal(0)) & hidden_from(0)
            continue
        seat = v.turn
        for s in (0, 1):
            assert not cards_in(client.view(s)) & hidden_from(s)
            for card_plans in client.plans(s):
                assert not cards_in(card_plans) & hidden_from(s)
            assert not cards_in(client.score(s)) & hidden_from(s)
        options = client.plans(seat)
        pick = rng.choice(options)
        plan_id = rng.randint(1, len(pick.plans)) if pick.plans else 0
        assert not cards_in(client.play(seat, pick.card, plan_id)) & hidden_from(seat)
        checked += 1
    assert checked >= 48


def cards_in(message: object) -> set[Card]:
    """Every card a message mentions, however deep."""
    found: set[Card] = set()

    def walk(m: object) -> None:
        if isinstance(m, game_pb2.Card):
            found.add(to_card(m))
            return
        for descriptor, value in m.ListFields():  # type: ignore[attr-defined]
            items = value if descriptor.is_repeated else [value]
            for item in items:
                if descriptor.message_type is not None:
                    walk(item)

    walk(message)
    return found


@pytest.mark.parametrize("seat", [0, 1])
def test_watch_events_carry_only_public_cards_and_the_watchers_own_deals(
    server: ServerThread, seat: int
) -> None:
    import redis

    store = redis.Redis.from_url(server.settings.redis_url or "")
    client = new_match(server, seed=8)
    play_match(client, random.Random(2), stop=lambda v: v.hand_number == 2 and v.plays_left < 40)
    states = audit_states(store, client.match_id)
    last = max(states)
    deals = 0
    versions: list[tuple[int, bool]] = []
    for event in client.watch(seat, 0, timeout=10):
        versions.append((event.version, event.version_complete))
        state = states[event.version]
        assert not cards_in(event) & (set(state.hands[1 - seat]) | set(state.stock))
        kind = event.WhichOneof("event")
        if kind in ("hand_started", "cards_dealt"):
            assert [to_card(c) for c in getattr(event, kind).your_cards] == list(state.hands[seat])
            deals += 1
        if event.version == last:
            break
    assert deals == 8  # hand 1: six deals; hand 2 (9 plays in): its first two
    # Exactly the last event of each version says the version is complete: resume points.
    for (version, complete), (next_version, _) in pairwise(versions):
        assert complete == (next_version != version)
    assert versions[-1][1]


def test_a_next_hands_deal_names_its_match_and_list_plans_the_version_it_read(
    server: ServerThread,
) -> None:
    client = new_match(server, seed=6)
    created = client.view(0).version
    seat = client.view(0).turn
    assert (
        client.stub.ListPlans(
            pb.ListPlansRequest(match_id=client.match_id), metadata=client.metadata(seat)
        ).version
        == created
    )
    play_match(client, random.Random(3), stop=lambda v: v.status == game_pb2.MATCH_STATUS_HAND_OVER)
    over = client.view(0).version
    dealt = client.deal(1)
    assert (dealt.match_id, dealt.view.match_id) == (client.match_id, client.match_id)
    assert dealt.view.version == over + 1
    listed = client.stub.ListPlans(
        pb.ListPlansRequest(match_id=client.match_id), metadata=client.metadata(dealt.view.turn)
    )
    assert listed.version == over + 1


def test_a_match_keeps_its_seats_cards_only_in_the_entries_of_its_deals(
    start_server: Callable[..., ServerThread],
) -> None:
    """Each event entry keeps, per seat, the cards a deal gave it (WatchMatch sends a seat its
    own); an entry without a deal keeps none: a hand's stream stays small."""
    store = MemoryStore(ttl_s=60, events_maxlen=1000)
    server = start_server(on_store=store)
    client = new_match(server, seed=8)
    play_match(client, random.Random(2), stop=lambda v: v.version >= 12)
    page = server.run(store.events(client.match_id, 0))
    entries = {e.version: e for e in page.entries}
    assert len(entries) == 12
    dealt = {v for v, e in entries.items() if e.private}
    assert 1 in dealt  # the first deal
    for version, entry in entries.items():
        events = records.decode_events(entry.events)
        deals = any(e.WhichOneof("event") in ("hand_started", "cards_dealt") for e in events)
        assert (version in dealt) == deals, version
        if deals:
            assert len(entry.private) == 2
