"""Seats the service plays: a person against a bot through gRPC, the bot's move made exactly
once by racing replicas and by the next replica when the one that owed it stopped, the bot's
hand kept from everyone, and bad bot levels refused."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import grpc
import pytest
import redis

from basra.client.match import Rejection, to_card
from basra.service.store import MatchRecord
from basra.service.store.codec import decode_record, encode_record
from basra.v1 import basra_service_pb2 as pb
from basra.v1 import game_pb2
from tests.service.conftest import rpc_error
from tests.service.driver import audit_states, bearer, stored_state, stub
from tests.support import ServerThread, StreamReader, wait_until

PERSON = game_pb2.BOT_LEVEL_UNSPECIFIED
STRONG = game_pb2.BOT_LEVEL_STRONG
GREEDY = game_pb2.BOT_LEVEL_GREEDY
RANDOM = game_pb2.BOT_LEVEL_RANDOM


def create(
    server: ServerThread,
    bots: Sequence[game_pb2.BotLevel.ValueType],
    *,
    seat: int = 0,
    seed: int = 7,
    seats: int = 0,
) -> pb.CreateMatchResponse:
    response: pb.CreateMatchResponse = stub(server).CreateMatch(
        pb.CreateMatchRequest(bots=bots, seat=seat, seed=seed, seats=seats)
    )
    return response


def view(server: ServerThread, match_id: str, token: str) -> game_pb2.MatchView:
    response = stub(server).GetMatch(pb.GetMatchRequest(match_id=match_id), metadata=bearer(token))
    return response.view


def person_move(server: ServerThread, match_id: str, token: str, seen: game_pb2.MatchView) -> None:
    """The person's play (the first plan of the first card that has one, else a trail), or its
    deal of the next hand."""
    if seen.status == game_pb2.MATCH_STATUS_HAND_OVER:
        stub(server).Deal(
            pb.DealRequest(match_id=match_id, expected_version=seen.version), metadata=bearer(token)
        )
        return
    plans = stub(server).ListPlans(pb.ListPlansRequest(match_id=match_id), metadata=bearer(token))
    chosen = next((c for c in plans.cards if c.plans), plans.cards[0])
    stub(server).Play(
        pb.PlayRequest(
            match_id=match_id,
            card=chosen.card,
            plan_id=chosen.plans[0].id if chosen.plans else 0,
            expected_version=seen.version,
        ),
        metadata=bearer(token),
    )


def moved_past(server: ServerThread, match_id: str, token: str, version: int) -> Callable[[], bool]:
    """Whether the match has moved past ``version``, as a condition to wait on."""
    return lambda: view(server, match_id, token).version > version


def persons_turn(seen: game_pb2.MatchView, person: int) -> bool:
    """The match waits on the person: its turn, or its deal of the next hand."""
    if seen.status == game_pb2.MATCH_STATUS_HAND_OVER:
        return seen.next_dealer == person
    return seen.status == game_pb2.MATCH_STATUS_PLAYING and seen.to_play == person


def dealt_cards(event: game_pb2.MatchEvent) -> list[game_pb2.Card]:
    kind = event.WhichOneof("event")
    if kind == "hand_started":
        return list(event.hand_started.your_cards)
    if kind == "cards_dealt":
        return list(event.cards_dealt.your_cards)
    return []


def test_a_person_plays_a_strong_bot_to_the_end_and_never_sees_its_hand(
    start_server: Callable[..., ServerThread], redis_url: str
) -> None:
    server = start_server(redis_url=redis_url)
    created = create(server, [PERSON, STRONG], seed=11)
    match_id = created.match_id
    assert [t.seat for t in created.seat_tokens] == [0], "no token for the bot seat"
    token = created.seat_tokens[0].token
    assert [s.bot for s in created.view.seats] == [PERSON, STRONG]
    watch_token = (
        stub(server)
        .CreateWatchToken(pb.CreateWatchTokenRequest(match_id=match_id), metadata=bearer(token))
        .watch_token
    )
    person_stream = StreamReader(
        stub(server).WatchMatch(pb.WatchMatchRequest(match_id=match_id), metadata=bearer(token))
    )
    spectator_stream = StreamReader(
        stub(server).WatchMatch(
            pb.WatchMatchRequest(match_id=match_id), metadata=bearer(watch_token)
        )
    )
    views = [created.view]
    seen = created.view
    while seen.status != game_pb2.MATCH_STATUS_MATCH_OVER:
        if persons_turn(seen, 0):
            person_move(server, match_id, token, seen)
        else:
            before = seen.version
            wait_until(moved_past(server, match_id, token, before), 30, "the bot's move")
        seen = view(server, match_id, token)
        views.append(seen)
        views.append(view(server, match_id, watch_token))
    wait_until(lambda: person_stream.ended and spectator_stream.ended, 30, "both streams end")
    assert seen.HasField("winner")

    states = audit_states(redis.Redis.from_url(redis_url), match_id)
    version, _ = stored_state(redis.Redis.from_url(redis_url), match_id)
    assert max(states) == version == seen.version
    # At each version, the person sees its own hand and nothing of the bot's.
    for shown in views:
        hidden = set(states[shown.version].hands[1])
        assert not {to_card(c) for c in shown.hand} & hidden, "a view showed the bot's cards"
        if not shown.spectator:
            assert [to_card(c) for c in shown.hand] == list(states[shown.version].hands[0])
        assert [s.bot for s in shown.seats] == [PERSON, STRONG]
    dealt = [e for e in person_stream.events if dealt_cards(e)]
    assert dealt
    for event in dealt:
        received = {to_card(c) for c in dealt_cards(event)}
        assert received <= set(states[event.version].hands[0])
        assert not received & set(states[event.version].hands[1])
    assert all(not dealt_cards(e) for e in spectator_stream.events)
    # Every version reached both streams: the bot's plays among them, as any play.
    bot_plays = [
        e.version
        for e in person_stream.events
        if e.WhichOneof("event") == "card_played" and e.card_played.seat == 1
    ]
    assert bot_plays
    assert bot_plays == [
        e.version
        for e in spectator_stream.events
        if e.WhichOneof("event") == "card_played" and e.card_played.seat == 1
    ]


def bot_moves(server: ServerThread, result: str) -> float:
    children = server.server.metrics.bot_moves
    return sum(children.labels(level, result).value for level in ("random", "greedy", "strong"))


def first_bot_turn(
    server: ServerThread, bots: Sequence[game_pb2.BotLevel.ValueType]
) -> pb.CreateMatchResponse:
    """A new match whose first turn is the person's (seat 0), found by seed."""
    for seed in range(50):
        created = create(server, bots, seed=seed)
        if created.view.to_play == 0:
            return created
    raise AssertionError("no seed of 50 gives the person the first turn")


def test_two_replicas_that_both_owe_the_bot_move_make_it_once(
    start_server: Callable[..., ServerThread], redis_url: str
) -> None:
    store = redis.Redis.from_url(redis_url)
    # A commits the person's play and owes the bot's move after its pace; B, asked about the
    # match meanwhile, owes it too and makes it at once: A's attempt must then lose.
    a = start_server(redis_url=redis_url, bot_pace_s=2.0)
    b = start_server(redis_url=redis_url)
    created = first_bot_turn(a, [PERSON, GREEDY])
    match_id, token = created.match_id, created.seat_tokens[0].token
    person_move(a, match_id, token, created.view)
    assert stored_state(store, match_id)[0] == 2
    view(b, match_id, token)  # B notices the bot's turn
    wait_until(lambda: bot_moves(b, "applied") == 1, 10, "B makes the bot's move")
    wait_until(lambda: bot_moves(a, "lost") == 1, 10, "A's attempt loses")
    assert bot_moves(a, "applied") == 0
    version, state = stored_state(store, match_id)
    assert version == 3, "one bot move"
    assert state.turn == 0, "then the person's turn"
    assert max(audit_states(store, match_id)) == 3

    # Both at once, over several matches: every bot turn gets exactly one move.
    a2 = start_server(redis_url=redis_url)
    for _ in range(6):
        created = first_bot_turn(a2, [PERSON, GREEDY])
        match_id, token = created.match_id, created.seat_tokens[0].token
        person_move(a2, match_id, token, created.view)
        view(b, match_id, token)
        wait_until(moved_past(b, match_id, token, 2), 10, "the bot's move")
        version, state = stored_state(store, match_id)
        assert (version, state.turn) == (3, 0)
        states = audit_states(store, match_id)
        assert [states[v].plays for v in (1, 2, 3)] == [0, 1, 2]


def test_a_replica_stopped_before_the_bot_moved_leaves_the_move_to_the_next_stream(
    start_server: Callable[..., ServerThread], redis_url: str
) -> None:
    store = redis.Redis.from_url(redis_url)
    a = start_server(redis_url=redis_url, bot_pace_s=600.0)
    created = first_bot_turn(a, [PERSON, STRONG])
    match_id, token = created.match_id, created.seat_tokens[0].token
    person_move(a, match_id, token, created.view)
    a.stop()  # before its pace ran out: the bot's move was never made
    assert stored_state(store, match_id)[0] == 2
    b = start_server(redis_url=redis_url)
    stream = StreamReader(
        stub(b).WatchMatch(
            pb.WatchMatchRequest(match_id=match_id, after_version=2), metadata=bearer(token)
        )
    )
    wait_until(lambda: stream.has(3), 30, "the stream shows the bot's move")
    stream.close()
    played = [e for e in stream.events if e.WhichOneof("event") == "card_played"]
    assert [(e.version, e.card_played.seat) for e in played] == [(3, 1)]
    version, state = stored_state(store, match_id)
    assert (version, state.turn) == (3, 0)


def test_a_get_match_on_another_replica_also_completes_an_owed_bot_move(
    start_server: Callable[..., ServerThread], redis_url: str
) -> None:
    store = redis.Redis.from_url(redis_url)
    a = start_server(redis_url=redis_url, bot_pace_s=600.0)
    created = first_bot_turn(a, [PERSON, RANDOM])
    match_id, token = created.match_id, created.seat_tokens[0].token
    person_move(a, match_id, token, created.view)
    a.stop()
    b = start_server(redis_url=redis_url)
    assert view(b, match_id, token).version == 2
    wait_until(lambda: view(b, match_id, token).version == 3, 10, "the bot's move")
    assert stored_state(store, match_id)[1].turn == 0


def match_keys(store: redis.Redis) -> list[bytes]:
    """Every key but the health checks' probe."""
    return sorted(k for k in store.scan_iter() if k != b"basra:probe")


@pytest.mark.parametrize(
    ("bots", "seat", "field"),
    [
        ([PERSON, 9], 0, "bots[1]"),
        # One past the last level the contract defines.
        ([PERSON, max(game_pb2.BotLevel.values()) + 1], 0, "bots[1]"),
        ([PERSON, GREEDY, GREEDY], 0, "bots"),
        ([STRONG, PERSON], 0, "seat"),
    ],
)
def test_a_creation_with_bad_bots_is_refused_naming_the_field_and_creates_nothing(
    start_server: Callable[..., ServerThread],
    redis_url: str,
    bots: list[game_pb2.BotLevel.ValueType],
    seat: int,
    field: str,
) -> None:
    server = start_server(redis_url=redis_url)
    store = redis.Redis.from_url(redis_url)
    before = match_keys(store)
    rejection = Rejection.of(rpc_error(lambda: create(server, bots, seat=seat)))
    assert rejection.code is grpc.StatusCode.INVALID_ARGUMENT
    assert rejection.reason == "INVALID_ARGUMENT"
    assert rejection.metadata["field"] == field
    assert field in rejection.field_violations
    assert match_keys(store) == before, "a refused creation stored something"


def test_a_match_of_bots_only_plays_itself_out_for_its_watch_token(
    start_server: Callable[..., ServerThread], redis_url: str
) -> None:
    server = start_server(redis_url=redis_url)
    created = create(server, [GREEDY, RANDOM], seed=3)
    assert not created.seat_tokens
    assert created.view.spectator
    assert not created.view.hand
    assert created.watch_token
    assert all(not dealt_cards(e) for e in created.events)
    stream = StreamReader(
        stub(server).WatchMatch(
            pb.WatchMatchRequest(match_id=created.match_id), metadata=bearer(created.watch_token)
        )
    )
    wait_until(lambda: stream.ended or stream.error is not None, 60, "the match ends")
    assert stream.error is None, stream.error
    assert stream.events[-1].WhichOneof("event") == "match_ended"
    assert all(not dealt_cards(e) for e in stream.events)
    final = view(server, created.match_id, created.watch_token)
    assert [s.bot for s in final.seats] == [GREEDY, RANDOM]
    assert final.status == game_pb2.MATCH_STATUS_MATCH_OVER


@pytest.mark.parametrize("watch", [(), (b"w" * 32, b"x" * 32)])
@pytest.mark.parametrize("levels", [b"", b"\x00\x03", b"\x02\x01"])
def test_a_record_keeps_its_bot_levels_through_the_codec(
    watch: tuple[bytes, ...], levels: bytes
) -> None:
    record = MatchRecord(
        match_id="m",
        version=5,
        state=b"state",
        token_hashes=(b"a" * 32, bytes(32)),
        creation=b"",
        requests=(b"", b"r"),
        watch_hashes=watch,
        bots=levels,
    )
    assert decode_record("m", encode_record(record)) == record


def test_every_hand_a_bot_deals_counts_in_the_hands_dealt(
    start_server: Callable[..., ServerThread], redis_url: str
) -> None:
    """``basra_hands_dealt_total`` counts every hand the match starts: the first, dealt by its
    creation, and each next one, dealt by a bot here (a match of bots only deals them all)."""
    from tests.service.test_store_full import metric

    server = start_server(redis_url=redis_url, metrics_port=0)
    created = create(server, [GREEDY, RANDOM], seed=3)
    stream = StreamReader(
        stub(server).WatchMatch(
            pb.WatchMatchRequest(match_id=created.match_id), metadata=bearer(created.watch_token)
        )
    )
    wait_until(lambda: stream.ended or stream.error is not None, 60, "the match ends")
    assert stream.error is None, stream.error
    hands = [e for e in stream.events if e.WhichOneof("event") == "hand_started"]
    assert len(hands) > 1, "the bots dealt a next hand"
    assert metric(server, "basra_hands_dealt_total") == len(hands)


def test_a_bot_remembers_every_sides_captures_of_the_hand_not_only_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The strong search is told every card captured this hand, each side's pile: each capture
    happened in front of every seat. Played until both sides hold cards, the memory handed to
    the search is the union of the piles, which holds cards of the other side's pile too."""
    from basra.engine import Phase, apply, encode, legal_plays, match_profile
    from basra.engine import new_match as engine_match
    from basra.service import bots

    state, _ = engine_match(5, match_profile("eram", 2))
    while not all(state.captured) and state.phase is Phase.PLAYING:
        state, _ = apply(state, legal_plays(state)[0])
    assert all(state.captured), "both sides captured this hand"
    told: list[int] = []

    def choose(*args: object, gone: int, **kwargs: object) -> tuple[int, int]:
        told.append(gone)
        return 0, 0

    monkeypatch.setattr(bots, "choose", choose)
    bots.think(encode(state), state.turn, "strong", "M" * 22, 9, 0.01)
    other = state.captured[1 - state.turn % 2]
    assert told == [state.captured[0] | state.captured[1]]
    assert told[0] & other == other
