"""RevokeWatchTokens: a seat makes every watch token handed out so far worthless, and the open
streams of those tokens end with a typed error; seats and newer watch tokens go on."""

from __future__ import annotations

import io
import json
import logging
import random
from collections.abc import Callable

import grpc
import pytest
import redis
from google.rpc import error_details_pb2

from basra.client.match import MatchClient, Rejection
from basra.service import logs
from basra.service.changes import CAS_ATTEMPTS
from basra.service.store import keys
from basra.service.store.base import WatchAccess
from basra.service.store.memory import MemoryStore
from basra.v1 import basra_service_pb2 as pb
from basra.v1 import game_pb2
from tests.service.conftest import BASE, new_match, rpc_error
from tests.service.driver import bearer, play_match
from tests.service.test_http import TRANSPORTS, Client, RejectedError
from tests.support import ServerThread, StreamReader, wait_until


def create(client: MatchClient, seat: int) -> str:
    response = client.stub.CreateWatchToken(
        pb.CreateWatchTokenRequest(match_id=client.match_id), metadata=client.metadata(seat)
    )
    return str(response.watch_token)


def revoke(client: MatchClient, metadata: tuple[tuple[str, str], ...]) -> str:
    response = client.stub.RevokeWatchTokens(
        pb.RevokeWatchTokensRequest(match_id=client.match_id), metadata=metadata, timeout=10
    )
    return str(response.watch_token)


def refusal(client: MatchClient, token: str) -> tuple[grpc.StatusCode, str] | None:
    """How GetMatch with ``token`` is refused (None: it is not)."""
    try:
        client.stub.GetMatch(pb.GetMatchRequest(match_id=client.match_id), metadata=bearer(token))
    except grpc.RpcError as error:
        r = Rejection.of(error)
        return r.code, r.reason
    return None


INVALID = (grpc.StatusCode.PERMISSION_DENIED, "TOKEN_INVALID")


def test_revoking_ends_every_earlier_watch_token_and_hands_the_caller_a_new_one(
    any_server: ServerThread,
) -> None:
    client = new_match(any_server)
    earlier = [create(client, 0), create(client, 1)]
    assert all(refusal(client, t) is None for t in earlier)
    buffer = io.StringIO()
    logs.setup("INFO", buffer)
    try:
        fresh = revoke(client, client.metadata(1))
    finally:
        logging.getLogger("basra").handlers.clear()
    assert fresh not in earlier
    # The revocation is logged: which match, which seat (an operator's answer to "who did it").
    records = [json.loads(line) for line in buffer.getvalue().splitlines()]
    (logged,) = [r for r in records if r["msg"] == "watch tokens revoked"]
    assert (logged["match_id"], logged["seat"], logged["level"]) == (client.match_id, 1, "INFO")
    assert [refusal(client, t) for t in earlier] == [INVALID, INVALID]
    score = pb.ScoreRequest(match_id=client.match_id)
    r = Rejection.of(rpc_error(lambda: client.stub.Score(score, metadata=bearer(earlier[0]))))
    assert (r.code, r.reason) == INVALID
    assert refusal(client, fresh) is None
    # CreateWatchToken hands out the new generation: the caller's token, the other seat's own.
    assert create(client, 1) == fresh
    other = create(client, 0)
    assert other not in (fresh, *earlier)
    assert refusal(client, other) is None
    # Seat tokens are untouched.
    assert client.view(0).version == client.view(1).version == 1


def test_a_retry_revokes_again_and_answers_a_newer_token(any_server: ServerThread) -> None:
    client = new_match(any_server)
    first = revoke(client, client.metadata(0))
    handed_out_between = create(client, 1)
    second = revoke(client, client.metadata(0))
    assert second != first
    assert [refusal(client, t) for t in (first, handed_out_between)] == [INVALID, INVALID]
    assert refusal(client, second) is None


def test_revoking_needs_a_seat_token_of_an_existing_match_and_changes_nothing_otherwise(
    any_server: ServerThread,
) -> None:
    client = new_match(any_server)
    spectator = create(client, 0)
    other = MatchClient.create(any_server.channel)[0]
    cases: dict[str, tuple[Callable[[], object], grpc.StatusCode, str]] = {
        "no token": (lambda: revoke(client, ()), grpc.StatusCode.UNAUTHENTICATED, "TOKEN_MISSING"),
        "a watch token": (
            lambda: revoke(client, bearer(spectator)),
            grpc.StatusCode.PERMISSION_DENIED,
            "WATCH_TOKEN_READ_ONLY",
        ),
        "another match's seat token": (
            lambda: revoke(client, other.metadata(0)),
            grpc.StatusCode.PERMISSION_DENIED,
            "TOKEN_INVALID",
        ),
        "an unknown match": (
            lambda: client.stub.RevokeWatchTokens(
                pb.RevokeWatchTokensRequest(match_id="x" * 22), metadata=client.metadata(0)
            ),
            grpc.StatusCode.NOT_FOUND,
            "MATCH_NOT_FOUND",
        ),
        "a malformed match id": (
            lambda: client.stub.RevokeWatchTokens(
                pb.RevokeWatchTokensRequest(match_id="short"), metadata=client.metadata(0)
            ),
            grpc.StatusCode.INVALID_ARGUMENT,
            "INVALID_ARGUMENT",
        ),
    }
    for name, (call, code, reason) in cases.items():
        r = Rejection.of(rpc_error(call))
        assert (r.code, r.reason) == (code, reason), name
    assert refusal(client, spectator) is None  # nothing was revoked


def test_a_watch_token_of_the_current_generation_cannot_play_or_deal(
    any_server: ServerThread,
) -> None:
    """The change path compares seat tokens only: a watch token there is still named for what
    it is, not merely an unknown token."""
    client = new_match(any_server, seed=6)
    spectator = revoke(client, client.metadata(0))
    view = client.view(0)
    card = client.view(view.turn).hand[0]
    for call in (
        lambda: client.stub.Play(
            pb.PlayRequest(match_id=client.match_id, card=card, trail=True),
            metadata=bearer(spectator),
        ),
        lambda: client.stub.Deal(
            pb.DealRequest(match_id=client.match_id), metadata=bearer(spectator)
        ),
    ):
        r = Rejection.of(rpc_error(call))
        assert (r.code, r.reason) == (grpc.StatusCode.PERMISSION_DENIED, "WATCH_TOKEN_READ_ONLY")
    assert client.view(0) == view


def open_stream(client: MatchClient, metadata: tuple[tuple[str, str], ...]) -> StreamReader:
    """Read a WatchMatch stream of the match with these credentials."""
    return StreamReader(
        client.stub.WatchMatch(pb.WatchMatchRequest(match_id=client.match_id), metadata=metadata)
    )


def test_open_streams_of_revoked_tokens_end_with_watch_token_revoked_and_no_other(
    any_server: ServerThread,
) -> None:
    client = new_match(any_server, seed=3)
    old = [create(client, 0), create(client, 1)]
    streams = [open_stream(client, bearer(t)) for t in old]
    seat = open_stream(client, client.metadata(0))
    try:
        wait_until(lambda: all(s.has(1) for s in (*streams, seat)), what="the first deal")
        fresh = revoke(client, client.metadata(1))
        newer = open_stream(client, bearer(fresh))
        wait_until(lambda: all(s.error is not None for s in streams), what="revoked streams end")
        for stream in streams:
            r = Rejection.of(stream.error)  # type: ignore[arg-type]
            assert (r.code, r.reason, r.metadata) == (
                grpc.StatusCode.PERMISSION_DENIED,
                "WATCH_TOKEN_REVOKED",
                {"match_id": client.match_id},
            )
        play_match(client, random.Random(3), stop=lambda v: v.version >= 3)
        wait_until(lambda: seat.has(3) and newer.has(3), what="the others get the plays")
        assert seat.error is None
        assert newer.error is None
        assert all(not s.received(2) for s in streams)  # nothing reached them after the end
        newer.close()
    finally:
        for stream in (*streams, seat):
            stream.close()


def test_a_lost_watch_access_fails_closed(server: ServerThread) -> None:
    """When the store lost the match's watch access while the match lives on (a match played
    past the idle TTL after its last watch token call), its watch tokens stop working; the next
    CreateWatchToken hands out new ones."""
    client = new_match(server)
    token = create(client, 0)
    direct = redis.Redis.from_url(server.settings.redis_url or "")
    direct.delete(keys.watch_key(client.match_id))
    assert refusal(client, token) == INVALID
    again = create(client, 0)
    assert again != token
    assert refusal(client, again) is None


def test_the_watch_access_lives_as_long_as_the_match(
    start_server: Callable[..., ServerThread], redis_url: str
) -> None:
    server = start_server(redis_url=redis_url, match_ttl_s=600, finished_ttl_s=60)
    client = new_match(server, seed=2)
    direct = redis.Redis.from_url(redis_url)
    record, watch = keys.match_key(client.match_id), keys.watch_key(client.match_id)
    create(client, 0)
    assert 590_000 < direct.pttl(record) <= 600_000
    assert direct.pexpiretime(watch) == direct.pexpiretime(record)  # the match's own expiry
    play_match(client, random.Random(2))  # to the end: the match now expires in a minute
    assert client.view(0).status == game_pb2.MATCH_STATUS_MATCH_OVER
    assert 0 < direct.pttl(watch) <= 60_000  # the final play set it: not a week
    revoke(client, client.metadata(1))
    assert 0 < direct.pttl(record) <= 60_000
    assert direct.pexpiretime(watch) == direct.pexpiretime(record)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_revocation_over_every_transport(
    start_server: Callable[..., ServerThread], redis_url: str, transport: str
) -> None:
    server = start_server(redis_url=redis_url)
    client = Client(server, transport)
    try:
        created = client.call("CreateMatch", pb.CreateMatchRequest())
        match_id = created.match_id
        seat_token = created.seat_tokens[0].token
        watch = client.call(
            "CreateWatchToken", pb.CreateWatchTokenRequest(match_id=match_id), seat_token
        )
        revoked = client.call(
            "RevokeWatchTokens", pb.RevokeWatchTokensRequest(match_id=match_id), seat_token
        )
        assert revoked.watch_token != watch.watch_token
        request = pb.GetMatchRequest(match_id=match_id)
        assert client.call("GetMatch", request, revoked.watch_token).view.spectator
        with pytest.raises(RejectedError) as rejected:
            client.call("GetMatch", request, watch.watch_token)
        info = rejected.value.failure.detail(error_details_pb2.ErrorInfo)
        assert (rejected.value.failure.code, info.reason) == ("PERMISSION_DENIED", "TOKEN_INVALID")
    finally:
        client.close()


def test_a_spectators_stream_of_a_match_that_expires_ends_match_not_found() -> None:
    """The expiry of a match takes its watch access with it: its spectators' streams end as a
    seat's do, MATCH_NOT_FOUND, not as revoked."""
    now = [0.0]
    store = MemoryStore(ttl_s=60, events_maxlen=1000, clock=lambda: now[0])
    server = ServerThread(BASE, store=store)
    try:
        client = new_match(server)
        spectator = open_stream(client, bearer(create(client, 0)))
        seat = open_stream(client, client.metadata(1))
        wait_until(lambda: spectator.has(1) and seat.has(1), what="both streams are live")
        now[0] += 61
        r = Rejection.of(rpc_error(lambda: client.view(0)))  # the store notices the expiry
        assert r.reason == "MATCH_NOT_FOUND"
        wait_until(lambda: None not in (spectator.error, seat.error), what="both streams end")
        for stream in (spectator, seat):
            r = Rejection.of(stream.error)  # type: ignore[arg-type]
            assert (r.code, r.reason) == (grpc.StatusCode.NOT_FOUND, "MATCH_NOT_FOUND")
    finally:
        server.stop()


class RacedWatchAccess(MemoryStore):
    """The embedded store, where another replica's write of the watch access (an equal copy of
    the one being swapped in) lands between each read of the access and the swap that follows,
    the first ``races`` times: each of those swaps finds the access changed and fails."""

    def __init__(self, races: int) -> None:
        super().__init__(ttl_s=60, events_maxlen=1000)
        self.races = races

    async def swap_watch_access(
        self,
        match_id: str,
        expected: WatchAccess | None,
        new: WatchAccess,
        *,
        revoke: bool,
    ) -> bool:
        if self.races > 0:
            self.races -= 1
            current = (await self.watch_access((match_id,)))[match_id]
            other = WatchAccess(new.salt, new.hashes)
            assert await super().swap_watch_access(match_id, current, other, revoke=False)
        return await super().swap_watch_access(match_id, expected, new, revoke=revoke)


@pytest.mark.parametrize("call", ["CreateWatchToken", "RevokeWatchTokens"])
def test_a_seat_whose_watch_access_write_loses_a_race_reads_again_and_retries(call: str) -> None:
    store = RacedWatchAccess(races=0)
    server = ServerThread(BASE, store=store)
    try:
        client = new_match(server)
        before = create(client, 0)
        store.races = 3
        method = getattr(client.stub, call)
        request = getattr(pb, f"{call}Request")(match_id=client.match_id)
        token = method(request, metadata=client.metadata(1), timeout=10).watch_token
        assert store.races == 0, "each lost swap was tried again"
        assert refusal(client, token) is None
        assert refusal(client, before) == (INVALID if call == "RevokeWatchTokens" else None)
        # A race lost at every attempt: the call gives up, retryable, naming the version.
        store.races = 100
        r = Rejection.of(rpc_error(lambda: method(request, metadata=client.metadata(1))))
        assert (r.code, r.reason) == (grpc.StatusCode.ABORTED, "VERSION_MISMATCH")
        assert r.message == "the match's watch tokens kept changing under this call: call it again"
        assert r.metadata == {"current_version": "1"}
        assert store.races == 100 - CAS_ATTEMPTS
    finally:
        server.stop()
