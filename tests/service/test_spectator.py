"""Spectators: a seat hands out a read-only watch token that sees what any spectator may see."""

from __future__ import annotations

import base64
import functools
import random
import uuid
from collections.abc import Callable

import grpc
import pytest
import redis

from basra.client.match import MatchClient, Rejection, to_card
from basra.engine import Card
from basra.service import auth
from basra.service.store import keys
from basra.service.store.codec import decode_record, encode_record
from basra.v1 import basra_service_pb2 as pb
from basra.v1 import game_pb2
from tests.service.conftest import new_match, rpc_error
from tests.service.driver import audit_states, bearer, play_match
from tests.service.driver import stub as driver_stub
from tests.service.test_match_flow import cards_in
from tests.support import ServerThread, StreamReader, wait_until


def watch_token(client: MatchClient, seat: int) -> str:
    response: pb.CreateWatchTokenResponse = client.stub.CreateWatchToken(
        pb.CreateWatchTokenRequest(match_id=client.match_id),
        metadata=client.metadata(seat),
        timeout=10,
    )
    return response.watch_token


def test_a_seat_gets_the_same_watch_token_on_every_call_and_each_seat_its_own(
    any_server: ServerThread,
) -> None:
    client = new_match(any_server)
    first = watch_token(client, 0)
    assert watch_token(client, 0) == first  # a retry returns the same token
    other = watch_token(client, 1)
    assert other != first
    assert {first, other}.isdisjoint(client.tokens.values())
    assert len(first) == len(client.tokens[0])  # 256 bits, like a seat token


def test_a_watch_token_reads_the_public_view_score_and_events_and_nothing_else(
    any_server: ServerThread,
) -> None:
    client = new_match(any_server, seed=6)
    play_match(client, random.Random(1), stop=lambda v: v.version >= 5)
    spectator = bearer(watch_token(client, 1))
    match = pb.GetMatchRequest(match_id=client.match_id)
    view = client.stub.GetMatch(match, metadata=spectator, timeout=10).view
    assert view.spectator
    assert not view.hand
    seat_view = client.view(0)
    assert not seat_view.spectator
    seat_view.ClearField("hand")
    view.spectator = False
    assert view == seat_view  # the rest of the view is what every seat sees
    score = client.stub.Score(pb.ScoreRequest(match_id=client.match_id), metadata=spectator)
    assert score == client.score(0)
    assert score.version == view.version == 5  # the version the scoreboard was read at


def test_a_watch_token_cannot_play_list_plans_deal_or_mint_tokens(
    any_server: ServerThread,
) -> None:
    client = new_match(any_server, seed=6)
    spectator = bearer(watch_token(client, 0))
    view = client.view(0)
    card = client.view(view.turn).hand[0]
    mid = client.match_id
    calls = {
        "Play": lambda: client.stub.Play(
            pb.PlayRequest(match_id=mid, card=card, trail=True), metadata=spectator
        ),
        "ListPlans": lambda: client.stub.ListPlans(
            pb.ListPlansRequest(match_id=mid), metadata=spectator
        ),
        "Deal": lambda: client.stub.Deal(pb.DealRequest(match_id=mid), metadata=spectator),
        "CreateWatchToken": lambda: client.stub.CreateWatchToken(
            pb.CreateWatchTokenRequest(match_id=mid), metadata=spectator
        ),
    }
    for rpc, call in calls.items():
        r = Rejection.of(rpc_error(call))
        assert (r.code, r.reason, r.domain) == (
            grpc.StatusCode.PERMISSION_DENIED,
            "WATCH_TOKEN_READ_ONLY",
            "basra.v1",
        ), rpc
        assert r.message == (
            "a watch token only reads (GetMatch, Score, WatchMatch): this call needs a seat token"
        ), rpc
    assert client.view(0) == view  # nothing changed


def test_a_watch_token_s_change_is_refused_read_only_on_a_replica_that_never_saw_the_match(
    start_server: Callable[..., ServerThread], redis_url: str
) -> None:
    # The change path tells a refused token apart on the record it read from the store: on a
    # replica that remembers no record of the match, as on one that remembers it.
    first, second = start_server(redis_url=redis_url), start_server(redis_url=redis_url)
    client = new_match(first, seed=6)
    spectator = bearer(watch_token(client, 0))
    view = client.view(0)
    card = client.view(view.turn).hand[0]
    play = pb.PlayRequest(match_id=client.match_id, card=card, trail=True)
    deal = pb.DealRequest(match_id=client.match_id)
    for replica in (second, first):  # second: never read the match
        stub = client.via(replica.channel).stub
        for rpc, call in (
            ("Play", functools.partial(stub.Play, play, metadata=spectator)),
            ("Deal", functools.partial(stub.Deal, deal, metadata=spectator)),
        ):
            r = Rejection.of(rpc_error(call))
            assert (r.code, r.reason) == (
                grpc.StatusCode.PERMISSION_DENIED,
                "WATCH_TOKEN_READ_ONLY",
            ), rpc
    assert client.view(0) == view  # nothing changed


def test_a_wrong_token_is_still_token_invalid(any_server: ServerThread) -> None:
    client = new_match(any_server)
    derived_from_nothing = auth.watch_token("not a seat token")
    r = Rejection.of(
        rpc_error(
            lambda: client.stub.GetMatch(
                pb.GetMatchRequest(match_id=client.match_id),
                metadata=bearer(derived_from_nothing),
            )
        )
    )
    assert (r.code, r.reason) == (grpc.StatusCode.PERMISSION_DENIED, "TOKEN_INVALID")


def test_a_spectators_stream_carries_no_seats_cards(server: ServerThread) -> None:
    client = new_match(server, seed=8)
    spectator = bearer(watch_token(client, 0))
    play_match(client, random.Random(2), stop=lambda v: v.hand_number == 2 and v.plays_left < 40)
    last = client.view(0).version
    states = audit_states(redis.Redis.from_url(server.settings.redis_url or ""), client.match_id)
    stream = client.stub.WatchMatch(
        pb.WatchMatchRequest(match_id=client.match_id), metadata=spectator, timeout=10
    )
    deals = 0
    for response in stream:
        event = response.event
        state = states[event.version]
        hidden: set[Card] = set(state.hands[0]) | set(state.hands[1]) | set(state.stock)
        kind = event.WhichOneof("event")
        if kind in ("hand_started", "cards_dealt"):
            assert not getattr(event, kind).your_cards
            deals += 1
        # Cards played from a hand are public from then on; nothing still hidden shows.
        assert not cards_in(event) & hidden
        if event.version == last and event.version_complete:
            break
    stream.cancel()  # type: ignore[no-untyped-call]  # a grpc call as well as an iterator
    assert deals == 8


def test_the_watch_token_is_stored_only_as_a_hash(server: ServerThread) -> None:
    client = new_match(server)
    token = watch_token(client, 0)
    direct = redis.Redis.from_url(server.settings.redis_url or "")
    record = direct.get(keys.match_key(client.match_id))
    access = direct.get(keys.watch_key(client.match_id))
    assert isinstance(record, bytes)
    assert isinstance(access, bytes)
    for stored in (record, access):
        assert token.encode() not in stored
        assert base64.urlsafe_b64decode(token + "=") not in stored
    assert auth.token_hash(token) in access


def salt_less_watch_tokens(server: ServerThread, client: MatchClient) -> list[str]:
    """Make the match's record one the previous server version wrote: it holds the hashes of
    watch tokens derived without a salt. Returns those tokens, by seat."""
    direct = redis.Redis.from_url(server.settings.redis_url or "")
    key = keys.match_key(client.match_id)
    stored = direct.get(key)
    assert isinstance(stored, bytes)
    tokens = [auth.watch_token(client.tokens[seat]) for seat in sorted(client.tokens)]
    hashes = tuple(auth.token_hash(t) for t in tokens)
    direct.set(
        key, encode_record(decode_record(client.match_id, stored)._replace(watch_hashes=hashes))
    )
    direct.close()
    return tokens


def test_a_match_from_before_revocation_keeps_its_watch_tokens_until_revoked(
    server: ServerThread,
) -> None:
    """A record written by the previous server version holds the hashes of salt-less watch
    tokens: they keep working, and are handed out again, until a seat revokes them."""
    client = new_match(server, seed=4)
    old_tokens = salt_less_watch_tokens(server, client)
    assert [watch_token(client, seat) for seat in (0, 1)] == old_tokens
    match = pb.GetMatchRequest(match_id=client.match_id)
    assert client.stub.GetMatch(match, metadata=bearer(old_tokens[1])).view.spectator
    # A stream of a salt-less token goes on while the match has no watch access.
    watch = pb.WatchMatchRequest(match_id=client.match_id)
    stream = StreamReader(client.stub.WatchMatch(watch, metadata=bearer(old_tokens[1])))
    try:
        wait_until(lambda: stream.has(1), what="the salt-less token's stream is live")
        play_match(client, random.Random(1), stop=lambda v: v.version >= 2)
        wait_until(lambda: stream.has(2), what="the stream gets the next play")
    finally:
        stream.close()
    # A play rewrites the record: the salt-less tokens' hashes are carried into it.
    assert client.stub.GetMatch(match, metadata=bearer(old_tokens[0])).view.version == 2
    assert [watch_token(client, seat) for seat in (0, 1)] == old_tokens
    revoked = client.stub.RevokeWatchTokens(
        pb.RevokeWatchTokensRequest(match_id=client.match_id), metadata=client.metadata(0)
    )
    for old in old_tokens:
        r = Rejection.of(
            rpc_error(functools.partial(client.stub.GetMatch, match, metadata=bearer(old)))
        )
        assert (r.code, r.reason) == (grpc.StatusCode.PERMISSION_DENIED, "TOKEN_INVALID")
    assert client.stub.GetMatch(match, metadata=bearer(revoked.watch_token)).view.spectator
    assert watch_token(client, 0) == revoked.watch_token
    play_match(client, random.Random(1), stop=lambda v: v.version >= 4)
    assert client.view(1).version == 4


def test_a_match_whose_record_has_no_watch_tokens_gets_them(server: ServerThread) -> None:
    """Matches from before CreateWatchToken (and every match since RevokeWatchTokens) keep no
    watch token in their record: the first CreateWatchToken makes the match's watch access."""
    client = new_match(server, seed=4)
    direct = redis.Redis.from_url(server.settings.redis_url or "")
    stored = direct.get(keys.match_key(client.match_id))
    assert isinstance(stored, bytes)
    assert decode_record(client.match_id, stored).watch_hashes == ()
    assert direct.get(keys.watch_key(client.match_id)) == b""  # made with the match, empty
    token = watch_token(client, 0)
    view = client.stub.GetMatch(
        pb.GetMatchRequest(match_id=client.match_id), metadata=bearer(token)
    ).view
    assert view.spectator


@pytest.mark.parametrize("seat", [0, 1])
def test_a_seat_view_is_never_marked_spectator(any_server: ServerThread, seat: int) -> None:
    client = new_match(any_server)
    view = client.view(seat)
    assert not view.spectator
    assert [to_card(c) for c in view.hand]


def test_a_spectator_never_sees_the_bottom_card_only_the_dealer_sees(
    any_server: ServerThread,
) -> None:
    stub = MatchClient.create(any_server.channel)[0].stub
    created = stub.CreateMatch(
        pb.CreateMatchRequest(rules="egyptian", seed=1, request_id=str(uuid.uuid4())), timeout=10
    )
    client = MatchClient(stub, created.match_id, {t.seat: t.token for t in created.seat_tokens})
    views = [client.view(seat) for seat in (0, 1)]
    # Seed 1: seat 0 deals, so its view (the one a spectator's is built from) has the card.
    assert [v.HasField("bottom_card") for v in views] == [True, False]
    spectator = bearer(watch_token(client, 0))
    view = stub.GetMatch(pb.GetMatchRequest(match_id=client.match_id), metadata=spectator).view
    assert view.spectator
    assert not view.HasField("bottom_card")
    assert not view.hand


def test_a_revoked_salt_less_watch_token_is_token_invalid_on_play_and_deal_too(
    server: ServerThread,
) -> None:
    # GetMatch answers a revoked watch token TOKEN_INVALID ("nothing of them is kept"); Play
    # and Deal answered WATCH_TOKEN_READ_ONLY, comparing it with the watch hashes a match from
    # before RevokeWatchTokens keeps in its record even once revoked.
    client = new_match(server, seed=4)
    old = salt_less_watch_tokens(server, client)[1]
    mid = client.match_id
    card = client.plans(client.view(0).turn)[0].card
    calls: dict[str, Callable[[], object]] = {
        "GetMatch": functools.partial(
            client.stub.GetMatch, pb.GetMatchRequest(match_id=mid), metadata=bearer(old)
        ),
        "Play": functools.partial(
            client.stub.Play,
            pb.PlayRequest(match_id=mid, card=card, trail=True),
            metadata=bearer(old),
        ),
        "Deal": functools.partial(
            client.stub.Deal, pb.DealRequest(match_id=mid), metadata=bearer(old)
        ),
    }
    # Before the revocation the salt-less token is a watch token: it reads, and a change
    # with it is named for what it is.
    assert client.stub.GetMatch(pb.GetMatchRequest(match_id=mid), metadata=bearer(old)).view
    for rpc in ("Play", "Deal"):
        r = Rejection.of(rpc_error(calls[rpc]))
        assert (r.code, r.reason) == (
            grpc.StatusCode.PERMISSION_DENIED,
            "WATCH_TOKEN_READ_ONLY",
        ), rpc
    client.stub.RevokeWatchTokens(
        pb.RevokeWatchTokensRequest(match_id=client.match_id), metadata=client.metadata(1)
    )
    for rpc, call in calls.items():
        r = Rejection.of(rpc_error(call))
        assert (r.code, r.reason) == (grpc.StatusCode.PERMISSION_DENIED, "TOKEN_INVALID"), rpc


def test_a_retried_creation_of_bots_only_answers_the_same_watch_token_which_keeps_working(
    any_server: ServerThread,
) -> None:
    """The creator of a match of bots only holds no seat: the watch token is all the creation
    hands out, so a retry (the same request_id) must answer the very same one, and the token
    the first answer held keeps reading the match."""
    stub = driver_stub(any_server)
    request = pb.CreateMatchRequest(
        bots=[game_pb2.BOT_LEVEL_GREEDY, game_pb2.BOT_LEVEL_RANDOM],
        request_id=str(uuid.uuid4()),
    )
    first: pb.CreateMatchResponse = stub.CreateMatch(request, timeout=10)
    again: pb.CreateMatchResponse = stub.CreateMatch(request, timeout=10)
    assert first.watch_token
    assert again.match_id == first.match_id
    assert again.watch_token == first.watch_token
    for token in (first.watch_token, again.watch_token):
        seen = stub.GetMatch(
            pb.GetMatchRequest(match_id=first.match_id), metadata=bearer(token), timeout=10
        ).view
        assert seen.spectator
        assert seen.match_id == first.match_id
