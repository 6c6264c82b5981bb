"""basra.client against a real server: whole matches (sync and asyncio), retries that apply a
play once, typed rejections that are never retried, and watches that survive cut streams."""

from __future__ import annotations

import asyncio
import queue
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import grpc
import pytest

from basra.client import (
    NO_RETRY,
    AsyncClient,
    AuthError,
    BasraError,
    Client,
    InvalidRequestError,
    Match,
    MatchNotFoundError,
    OutOfRangeError,
    RateLimitedError,
    RetryPolicy,
    RuleViolationError,
    UnavailableError,
    VersionMismatchError,
    cards,
    greedy_choice,
)
from basra.client._core import Resumption
from basra.client.retry import CHANNEL_OPTIONS
from basra.v1 import game_pb2
from tests.service.conftest import BASE
from tests.support import ServerThread, free_port

OVER = game_pb2.MATCH_STATUS_MATCH_OVER
HAND_OVER = game_pb2.MATCH_STATUS_HAND_OVER
PATIENT = RetryPolicy(attempts=40, first_delay=0.05, max_delay=0.5)


def play_to_end(match: Match, moves: int | None = None) -> list[game_pb2.MatchEvent]:
    """Greedy bots play ``moves`` calls (all: to the end); returns every event the calls made."""
    events: list[game_pb2.MatchEvent] = []
    view = match.view()
    while view.status != OVER and moves != 0:
        if view.status == HAND_OVER:
            events.extend(match.deal(expected_version=view.version).events)
        else:
            seat = match.seat(view.turn)
            card, plan_id = greedy_choice(seat.plans())
            events.extend(seat.play(card, plan_id, expected_version=view.version).events)
        moves = None if moves is None else moves - 1
        view = match.view()
    return events


def shape(events: list[game_pb2.MatchEvent]) -> list[tuple[int, str | None, bool]]:
    """What every seat sees alike of each event: its version, its kind, version_complete."""
    return [(e.version, e.WhichOneof("event"), e.version_complete) for e in events]


def test_a_whole_match_through_the_sync_client(any_server: ServerThread) -> None:
    with Client(any_server.target) as client:
        match = client.create_match(seed=11)
        assert sorted(match.tokens) == [0, 1]
        assert all(token not in repr(match) for token in match.tokens.values())
        play_to_end(match)
        board = match.score()
        assert board.status == OVER
        assert board.HasField("winner")
        assert board.totals[board.winner] >= board.target
        assert match.seat(1).view().status == OVER
        joined = client.join(match.id, match.tokens[1])  # a player with one token
        assert (joined.seat, joined.view().seat) == (1, 1)


def test_a_whole_match_through_the_asyncio_client(server: ServerThread) -> None:
    async def main() -> int:
        async with AsyncClient(server.target) as client:
            match = await client.create_match(seed=12)
            watch = match.watch(1)
            watched = asyncio.ensure_future(_collect(watch))
            view = await match.view()
            while view.status != OVER:
                if view.status == HAND_OVER:
                    await match.deal()
                else:
                    seat = match.seat(view.turn)
                    card, plan_id = greedy_choice(await seat.plans())
                    await seat.play(card, plan_id, expected_version=view.version)
                view = await match.view()
            events = await asyncio.wait_for(watched, 30)
            joined = await client.join(match.id, match.tokens[1])
            assert joined.seat == 1
            assert events[-1].HasField("match_ended")
            assert [e.version for e in events] == sorted(e.version for e in events)
            assert events[-1].version == view.version
            return (await match.score()).winner

    assert asyncio.run(main()) in (0, 1)


async def _collect(watch: Any) -> list[game_pb2.MatchEvent]:
    return [event async for event in watch]


class FakeError(grpc.RpcError, grpc.Call):
    """What the channel raises when an answer is lost: UNAVAILABLE, no details."""

    def __init__(self, code: grpc.StatusCode = grpc.StatusCode.UNAVAILABLE) -> None:
        self._code = code

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return "connection reset (simulated)"

    def trailing_metadata(self) -> tuple[()]:
        return ()


class LoseFirstAnswer(grpc.UnaryUnaryClientInterceptor):  # type: ignore[type-arg]
    """Sends every call to the server; the answer of the first call of ``method`` is lost (the
    server applied it, the client sees UNAVAILABLE). Records each attempt's request."""

    def __init__(self, method: str, code: grpc.StatusCode = grpc.StatusCode.UNAVAILABLE) -> None:
        self.method = method
        self.code = code
        self.attempts: list[Any] = []

    def intercept_unary_unary(
        self, continuation: Callable[..., Any], details: grpc.ClientCallDetails, request: Any
    ) -> Any:
        outcome = continuation(details, request)
        if details.method.endswith("/" + self.method):
            self.attempts.append(request)
            outcome.result()  # the server answered (or rejected): the change is made
            if len(self.attempts) == 1:
                raise FakeError(self.code)
        return outcome


@pytest.mark.parametrize("code", [grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED])
def test_a_play_whose_answer_was_lost_is_retried_with_its_request_id_and_applied_once(
    server: ServerThread, code: grpc.StatusCode
) -> None:
    lose = LoseFirstAnswer("Play", code)
    with Client(channel=grpc.intercept_channel(server.channel, lose)) as client:
        match = client.create_match(seed=3)
        before = match.view()
        seat = match.seat(before.turn)
        card, plan_id = greedy_choice(seat.plans())
        response = seat.play(card, plan_id, expected_version=before.version)
    assert len(lose.attempts) == 2
    first, second = lose.attempts
    assert first == second
    assert len(first.request_id) == 36
    assert response.played.card == card
    after = match.seat(before.turn).view()
    # Applied once: one card fewer, and the version is the one the (original) answer carries.
    assert len(after.hand) == len(before.hand) - 1
    assert after.version == response.view.version
    assert card not in after.hand


def test_every_logical_call_gets_its_own_uuid4_request_id(server: ServerThread) -> None:
    lose = LoseFirstAnswer("Play")
    with Client(channel=grpc.intercept_channel(server.channel, lose)) as client:
        match = client.create_match(seed=3)
        play_to_end(match, moves=3)
    ids = [r.request_id for r in lose.attempts]
    assert len(ids) == 4
    assert ids[0] == ids[1]
    assert len(set(ids)) == 3
    assert all(i[14] == "4" for i in ids)  # version 4 UUIDs


def test_a_rejection_is_raised_typed_and_never_retried(server: ServerThread) -> None:
    class Count(grpc.UnaryUnaryClientInterceptor):  # type: ignore[type-arg]
        calls: list[str] = []  # noqa: RUF012

        def intercept_unary_unary(
            self, continuation: Callable[..., Any], details: Any, request: Any
        ) -> Any:
            self.calls.append(details.method)
            return continuation(details, request)

    counter = Count()
    channel = grpc.intercept_channel(server.channel, counter)
    with Client(channel=channel) as client:
        match = client.create_match(seed=3)
        view = match.view()
        idle = match.seat(1 - view.turn)
        counter.calls.clear()
        with pytest.raises(RuleViolationError) as caught:
            idle.play(idle.view().hand[0])
        assert caught.value.code == grpc.StatusCode.FAILED_PRECONDITION
        assert caught.value.reason == "NOT_YOUR_TURN"
        assert caught.value.metadata["turn"] == str(view.turn)
        assert counter.calls.count("/basra.v1.BasraService/Play") == 1

        mover = match.seat(view.turn)
        with pytest.raises(VersionMismatchError) as stale:
            mover.play(mover.view().hand[0], expected_version=view.version + 1)
        assert stale.value.reason == "VERSION_MISMATCH"
        assert stale.value.metadata["current_version"] == str(view.version)

        with pytest.raises(InvalidRequestError) as bad:
            mover.play(game_pb2.Card(rank=99, suit=1))  # type: ignore[arg-type]
        assert bad.value.reason == "INVALID_CARD"
        assert "card" in bad.value.field_violations

        with pytest.raises(AuthError) as forged:
            client.match(match.id, {0: "forged-token"}).view()
        assert forged.value.reason == "TOKEN_INVALID"

        with pytest.raises(MatchNotFoundError) as missing:
            client.match("m" * 22, {0: match.tokens[0]}).view()
        assert missing.value.code == grpc.StatusCode.NOT_FOUND
    assert counter.calls.count("/basra.v1.BasraService/Play") == 3


def test_an_unreachable_server_is_unavailable_after_the_bounded_retries() -> None:
    target = f"127.0.0.1:{free_port()}"  # nothing listens there
    client = Client(target, retry=RetryPolicy(attempts=3, first_delay=0.01))
    with client, pytest.raises(UnavailableError) as caught:
        client.create_match()
    assert caught.value.unreachable
    assert caught.value.reason == ""
    assert isinstance(caught.value, BasraError)


def test_the_rules_oracle_and_the_client_read_cards_alike() -> None:
    assert cards.text(["TD", "10♦", "qs"]) == "10D 10D QS"
    assert cards.text([cards.to_pb("10D")], symbols=True) == "10\u2666"
    assert cards.from_pb(cards.to_pb("AC")) == 0


# -- Watches ---------------------------------------------------------------------------------


def event(version: int, complete: bool, kind: str = "cards_dealt") -> game_pb2.MatchEvent:
    out = game_pb2.MatchEvent(version=version, version_complete=complete)
    getattr(out, kind).SetInParent()
    return out


def test_a_resumed_stream_repeats_nothing_of_a_partly_delivered_version() -> None:
    resumption = Resumption(after_version=4)
    first = [event(5, True, "card_played"), event(6, False, "card_played"), event(6, False)]
    assert [resumption.accept(e) for e in first] == [True, True, True]
    assert resumption.after_version == 5  # version 6 arrived in part
    resumption.reconnecting()  # the server resends version 6 from its first event
    again = [event(6, False, "card_played"), event(6, False), event(6, True, "hand_started")]
    assert [resumption.accept(e) for e in again] == [False, False, True]
    assert resumption.after_version == 6
    assert not resumption.ended
    assert resumption.accept(event(7, True, "match_ended"))
    assert resumption.ended


class CutStream:
    """A WatchMatch call that breaks (UNAVAILABLE) right after an event that does not complete
    its version: the hardest place to resume from."""

    def __init__(self, call: Any) -> None:
        self.call = call

    def __iter__(self) -> Iterator[Any]:
        for response in self.call:
            yield response
            if not response.event.version_complete:
                self.call.cancel()
                raise FakeError()

    def cancel(self) -> bool:
        return bool(self.call.cancel())


class CutWatches(grpc.UnaryStreamClientInterceptor):  # type: ignore[type-arg]
    def __init__(self, cuts: int) -> None:
        self.cuts = cuts
        self.streams = 0

    def intercept_unary_stream(
        self, continuation: Callable[..., Any], details: Any, request: Any
    ) -> Any:
        self.streams += 1
        call = continuation(details, request)
        if self.cuts:
            self.cuts -= 1
            return CutStream(call)
        return call


def test_a_watch_cut_inside_a_version_resumes_without_a_repeat_or_a_gap(
    server: ServerThread,
) -> None:
    with Client(server.target) as player:
        match = player.create_match(seed=5)
        made = [*match.created.events, *play_to_end(match)] if match.created else []
    cutter = CutWatches(cuts=5)
    channel = grpc.intercept_channel(server.channel, cutter)
    with Client(channel=channel, retry=PATIENT) as watcher:
        seen = list(watcher.match(match.id, match.tokens).watch(0))
    assert cutter.streams == 6
    assert shape(seen) == shape(made)


def test_a_watch_survives_a_server_restart_and_yields_every_event_once(
    redis_url: str,
) -> None:
    settings = replace(BASE, redis_url=redis_url)
    first = ServerThread(settings)
    servers = [first]
    try:
        with Client(first.target, retry=PATIENT) as player:
            match = player.create_match(seed=8)
            made = list(match.created.events) if match.created else []
            seen: queue.Queue[game_pb2.MatchEvent | BaseException | None] = queue.Queue()
            watch = match.watch(1)

            def consume() -> None:
                try:
                    for item in watch:
                        seen.put(item)
                    seen.put(None)
                except BaseException as exc:  # handed to the test thread
                    seen.put(exc)

            thread = threading.Thread(target=consume, daemon=True)
            thread.start()
            made += play_to_end(match, moves=30)
            received = _take(seen, len(made))
            first.stop()  # the stream is cut; the watcher keeps trying
            servers.append(ServerThread(settings, listen=first.target))  # same port, same Redis
            made += play_to_end(match)
            received += _take(seen, len(made) - len(received))
            assert seen.get(timeout=30) is None  # the watch ended with the match
            thread.join(timeout=30)
    finally:
        for running in servers:
            running.stop()
    assert shape(received) == shape(made)
    assert received[-1].HasField("match_ended")


def _take(
    source: queue.Queue[game_pb2.MatchEvent | BaseException | None], count: int
) -> list[game_pb2.MatchEvent]:
    """The next ``count`` events from the watching thread (its failure re-raised)."""
    out: list[game_pb2.MatchEvent] = []
    deadline = time.monotonic() + 60
    while len(out) < count:
        item = source.get(timeout=max(0.1, deadline - time.monotonic()))
        if isinstance(item, BaseException):
            raise item
        assert item is not None, f"the watch ended after {len(out)} of {count} events"
        out.append(item)
    return out


def test_a_watch_from_a_version_the_server_cannot_stream_is_a_typed_error(
    server: ServerThread,
) -> None:
    with Client(server.target, retry=NO_RETRY) as client:
        match = client.create_match(seed=3)
        with pytest.raises(BasraError) as caught:
            next(match.watch(0, after_version=10_000))
    error = caught.value
    # Beyond the current version: INVALID_ARGUMENT today, OUT_OF_RANGE in later servers.
    family = {
        grpc.StatusCode.INVALID_ARGUMENT: InvalidRequestError,
        grpc.StatusCode.OUT_OF_RANGE: OutOfRangeError,
    }[error.code]
    assert type(error) is family
    assert error.reason
    assert "10000" in error.message or "after_version" in error.message


def test_a_finished_match_watched_from_its_last_version_ends_at_once(server: ServerThread) -> None:
    with Client(server.target) as client:
        match = client.create_match(seed=4)
        play_to_end(match)
        last = match.view().version
        assert list(match.watch(0, after_version=last)) == []


class AsyncLoseFirstAnswer(grpc.aio.UnaryUnaryClientInterceptor):  # type: ignore[type-arg]
    """LoseFirstAnswer for asyncio channels."""

    def __init__(self, method: str) -> None:
        self.method = method
        self.attempts: list[Any] = []

    async def intercept_unary_unary(
        self, continuation: Callable[..., Any], client_call_details: Any, request: Any
    ) -> Any:
        call = await continuation(client_call_details, request)
        method = client_call_details.method
        if (method.decode() if isinstance(method, bytes) else method).endswith("/" + self.method):
            self.attempts.append(request)
            await call  # the server answered: the change is made
            if len(self.attempts) == 1:
                raise grpc.aio.AioRpcError(
                    grpc.StatusCode.UNAVAILABLE,
                    grpc.aio.Metadata(),
                    grpc.aio.Metadata(),
                    "connection reset (simulated)",
                    "simulated",
                )
        return call


def test_the_asyncio_client_retries_with_the_request_id_and_raises_typed_rejections(
    server: ServerThread,
) -> None:
    lose = AsyncLoseFirstAnswer("Play")

    async def main() -> None:
        channel = grpc.aio.insecure_channel(server.target, interceptors=[lose])  # type: ignore[list-item]
        async with channel, AsyncClient(channel=channel) as client:
            match = await client.create_match(seed=3)
            before = await match.view()
            seat = match.seat(before.turn)
            card, plan_id = greedy_choice(await seat.plans())
            response = await seat.play(card, plan_id, expected_version=before.version)
            after = await seat.view()
            assert after.version == response.view.version
            assert len(after.hand) == len(before.hand) - 1
            idle = match.seat(before.turn)  # it played: now it is the other seat's turn
            with pytest.raises(RuleViolationError) as caught:
                await idle.play(after.hand[0])
            assert caught.value.reason == "NOT_YOUR_TURN"
            assert caught.value.metadata["turn"] == str(after.turn)

    asyncio.run(main())
    assert len(lose.attempts) == 3  # the lost play, its retry, the rejected play (not retried)
    assert lose.attempts[0] == lose.attempts[1]
    assert lose.attempts[1].request_id != lose.attempts[2].request_id


class EndedStream:
    """A WatchMatch call the server ends cleanly before sending anything (a drain, a connection
    aged out)."""

    def __init__(self, call: Any) -> None:
        call.cancel()

    def __iter__(self) -> Iterator[Any]:
        return iter(())

    def cancel(self) -> bool:
        return True


class EndWatches(grpc.UnaryStreamClientInterceptor):  # type: ignore[type-arg]
    def __init__(self, ends: int) -> None:
        self.ends = ends

    def intercept_unary_stream(
        self, continuation: Callable[..., Any], details: Any, request: Any
    ) -> Any:
        call = continuation(details, request)
        if self.ends:
            self.ends -= 1
            return EndedStream(call)
        return call


def test_streams_the_server_ends_cleanly_do_not_use_up_the_retry_budget(
    server: ServerThread,
) -> None:
    with Client(server.target) as player:
        match = player.create_match(seed=6)
        made = [*match.created.events, *play_to_end(match)] if match.created else []
    ender = EndWatches(ends=8)
    channel = grpc.intercept_channel(server.channel, ender)
    with Client(channel=channel, retry=RetryPolicy(attempts=3, first_delay=0.01)) as watcher:
        seen = list(watcher.match(match.id, match.tokens).watch(0))
    assert ender.ends == 0
    assert shape(seen) == shape(made)


def test_a_rate_limit_is_typed_with_its_retry_delay_and_not_retried(
    start_server: Callable[..., ServerThread],
) -> None:
    server = start_server(create_rate=0.5, create_burst=1)

    class Count(grpc.UnaryUnaryClientInterceptor):  # type: ignore[type-arg]
        deals = 0

        def intercept_unary_unary(
            self, continuation: Callable[..., Any], details: Any, request: Any
        ) -> Any:
            Count.deals += details.method.endswith("/Deal")
            return continuation(details, request)

    with Client(channel=grpc.intercept_channel(server.channel, Count())) as client:
        client.create_match()
        with pytest.raises(RateLimitedError) as caught:
            client.create_match()
    error = caught.value
    assert (error.code, error.reason) == (grpc.StatusCode.RESOURCE_EXHAUSTED, "RATE_LIMITED")
    assert error.retry_after is not None
    assert 0 < error.retry_after <= 2
    assert error.metadata["retry_after_s"]
    assert Count.deals == 2  # the rejected creation was sent once


class SeeFailures(grpc.UnaryUnaryClientInterceptor):  # type: ignore[type-arg]
    """Records each Play attempt's request id, and signals the first failed one."""

    def __init__(self) -> None:
        self.request_ids: list[str] = []
        self.failed = threading.Event()

    def intercept_unary_unary(
        self, continuation: Callable[..., Any], details: Any, request: Any
    ) -> Any:
        outcome = continuation(details, request)
        if details.method.endswith("/Play"):
            self.request_ids.append(request.request_id)
            if outcome.exception() is not None:
                self.failed.set()
        return outcome


def test_a_play_sent_while_the_server_restarts_is_applied_once_it_is_back(
    redis_url: str,
) -> None:
    settings = replace(BASE, redis_url=redis_url)
    first = ServerThread(settings)
    servers = [first]
    see = SeeFailures()
    channel = grpc.intercept_channel(
        grpc.insecure_channel(first.target, options=CHANNEL_OPTIONS), see
    )
    try:
        with Client(channel=channel, retry=PATIENT) as client:
            match = client.create_match(seed=2)
            before = match.view()
            seat = match.seat(before.turn)
            card, plan_id = greedy_choice(seat.plans())
            first.stop()

            def restart() -> None:  # once a play attempt has failed on the stopped server
                if see.failed.wait(timeout=60):
                    servers.append(ServerThread(settings, listen=first.target))

            restarter = threading.Thread(target=restart, daemon=True)
            restarter.start()
            response = seat.play(card, plan_id, expected_version=before.version)
            restarter.join(timeout=60)
            after = seat.view()
    finally:
        channel.close()
        for running in servers:
            running.stop()
    assert len(servers) == 2
    assert len(see.request_ids) >= 2
    assert len(set(see.request_ids)) == 1  # every attempt carried the same request id
    assert after.version == response.view.version == before.version + 1
    assert len(after.hand) == len(before.hand) - 1


# -- Spectators: watch tokens, spectating, revocation --------------------------------------------


def test_a_spectator_watches_through_the_sync_client_until_a_seat_revokes_its_token(
    any_server: ServerThread,
) -> None:
    with Client(channel=any_server.channel, retry=PATIENT) as client:
        match = client.create_match(seed=21)
        token = match.create_watch_token()
        assert match.create_watch_token() == token  # the same until revoked
        assert client.create_watch_token(match.id, match.tokens[1]) not in (token, "")
        spectator = client.spectate(match.id, token)
        view = spectator.view()
        assert view.spectator
        assert not view.hand
        assert spectator.score() == match.score()
        events: queue.Queue[game_pb2.MatchEvent | BaseException] = queue.Queue()

        def follow() -> None:
            try:
                for event in spectator.watch():
                    events.put(event)
            except BaseException as error:  # handed to the test thread
                events.put(error)

        threading.Thread(target=follow, daemon=True).start()
        play_to_end(match, moves=3)
        seen = [events.get(timeout=20) for _ in range(4)]  # the deal and three plays
        assert [e.version for e in seen if isinstance(e, game_pb2.MatchEvent)] == [1, 2, 3, 4]
        assert not seen[0].hand_started.your_cards  # type: ignore[union-attr]
        new = match.revoke_watch_tokens(seat=1)
        ended = events.get(timeout=20)
        assert isinstance(ended, AuthError)
        assert (ended.code, ended.reason) == (
            grpc.StatusCode.PERMISSION_DENIED,
            "WATCH_TOKEN_REVOKED",
        )
        with pytest.raises(AuthError) as refused:
            spectator.view()
        assert refused.value.reason == "TOKEN_INVALID"
        assert match.seat(1).create_watch_token() == new
        assert client.spectate(match.id, new).view().version == match.view().version
        with pytest.raises(AuthError) as read_only:
            client.revoke_watch_tokens(match.id, new)
        assert read_only.value.reason == "WATCH_TOKEN_READ_ONLY"


def test_a_revocation_whose_answer_was_lost_returns_the_token_of_the_retry(
    server: ServerThread,
) -> None:
    """The client retries a RevokeWatchTokens whose answer was lost; the retry revokes again
    and its token, the one returned, is the one CreateWatchToken now gives."""
    lose = LoseFirstAnswer("RevokeWatchTokens")
    with Client(channel=grpc.intercept_channel(server.channel, lose)) as client:
        match = client.create_match(seed=4)
        before = match.create_watch_token()
        new = match.revoke_watch_tokens()
        assert len(lose.attempts) == 2
        assert match.create_watch_token() == new
        with pytest.raises(AuthError):
            client.spectate(match.id, before).view()
        assert client.spectate(match.id, new).view().spectator


def test_a_spectator_watches_through_the_asyncio_client_until_revoked(
    server: ServerThread,
) -> None:
    async def main() -> None:
        async with AsyncClient(server.target) as client:
            match = await client.create_match(seed=22)
            token = await match.create_watch_token()
            assert await client.create_watch_token(match.id, match.tokens[0]) == token
            spectator = client.spectate(match.id, token)
            assert (await spectator.view()).spectator
            assert await spectator.score() == await match.score()
            watch = spectator.watch()
            first = await asyncio.wait_for(watch.__anext__(), 20)
            assert first.version == 1
            assert not first.hand_started.your_cards
            new = await match.revoke_watch_tokens(seat=0)
            with pytest.raises(AuthError) as ended:
                await asyncio.wait_for(watch.__anext__(), 20)
            assert ended.value.reason == "WATCH_TOKEN_REVOKED"
            assert (await match.spectate(new).view()).spectator
            assert await client.revoke_watch_tokens(match.id, match.tokens[1]) != new

    asyncio.run(main())


def test_invited_players_claim_their_seats_through_the_sync_client(
    any_server: ServerThread,
) -> None:
    """The creator holds its own token and the invitations; a claim whose answer was lost is
    retried with its request id and answers the same token, claimed once; a second claim and
    a bad name are typed rejections; a reissue revokes the claimant's token."""
    lose = LoseFirstAnswer("ClaimSeat")
    with Client(channel=grpc.intercept_channel(any_server.channel, lose)) as client:
        match = client.create_match(
            rules="egyptian",
            seats=4,
            bots={2: "greedy"},
            invitations=True,
            display_name="Host",
            seed=6,
        )
        assert sorted(match.tokens) == [0]
        assert sorted(match.invitations) == [1, 3]
        assert match.invitations[1] not in repr(match)
        guest = client.claim_seat(match.id, match.invitations[1], "Guest")
        assert len(lose.attempts) == 2
        first, second = lose.attempts
        assert first == second
        assert len(first.request_id) == 36
        assert guest.seat == 1
        assert guest.claimed is not None
        assert guest.claimed.view.version == 2, "claimed once"
        seen = guest.view()
        assert [s.display_name for s in seen.seats] == ["Host", "Guest", "", ""]
        assert seen.seats[2].bot == game_pb2.BOT_LEVEL_GREEDY
        with pytest.raises(RuleViolationError) as taken:
            client.claim_seat(match.id, match.invitations[1], "Again")
        assert taken.value.reason == "INVITATION_CLAIMED"
        assert taken.value.metadata["seat"] == "1"
        with pytest.raises(InvalidRequestError) as bad:
            client.claim_seat(match.id, match.invitations[3], "a\u202eb")
        assert bad.value.reason == "DISPLAY_NAME_INVALID"
        assert bad.value.metadata["rule"] == "character"
        new = match.reissue_invitation(1)
        assert match.invitations[1] == new
        with pytest.raises(AuthError) as revoked:
            guest.view()
        assert revoked.value.reason == "TOKEN_INVALID"
        again = client.claim_seat(match.id, new, "Guest again")
        assert again.view().seats[1].display_name == "Guest again"
        with pytest.raises(AuthError) as not_creator:
            again.reissue_invitation(3)
        assert not_creator.value.reason == "NOT_MATCH_CREATOR"


def test_invited_players_claim_their_seats_through_the_asyncio_client(
    server: ServerThread,
) -> None:
    async def main() -> None:
        async with AsyncClient(server.target) as client:
            match = await client.create_match(
                rules="eram", invitations=True, display_name="Host", seed=8
            )
            assert sorted(match.tokens) == [0]
            code = match.invitations[1]
            claim_id = str(uuid.uuid4())
            guest = await client.claim_seat(match.id, code, "Guest", request_id=claim_id)
            retried = await client.claim_seat(match.id, code, "Guest", request_id=claim_id)
            assert retried.seat == guest.seat == 1
            assert retried.claimed == guest.claimed
            assert [s.display_name for s in (await match.view()).seats] == ["Host", "Guest"]
            new = await match.reissue_invitation(1)
            with pytest.raises(AuthError):
                await guest.view()
            assert (await client.claim_seat(match.id, new, "Other")).seat == 1
            assert await client.reissue_invitation(match.id, match.tokens[0], 1) != new

    asyncio.run(main())


@pytest.mark.parametrize(
    ("code", "reason", "metadata", "says"),
    [
        (grpc.StatusCode.FAILED_PRECONDITION, "INVITATION_CLAIMED", {"seat": "1"}, "Seat 2"),
        (grpc.StatusCode.PERMISSION_DENIED, "INVITATION_INVALID", {"match_id": "m"}, "creator"),
        (grpc.StatusCode.PERMISSION_DENIED, "SEAT_TOKEN_REVOKED", {"seat": "3"}, "seat 4"),
        (grpc.StatusCode.PERMISSION_DENIED, "NOT_MATCH_CREATOR", {"seat": "1"}, "created"),
        (grpc.StatusCode.INVALID_ARGUMENT, "DISPLAY_NAME_INVALID", {"rule": "length"}, "32"),
        (
            grpc.StatusCode.INVALID_ARGUMENT,
            "DISPLAY_NAME_INVALID",
            {"rule": "character", "code_point": "U+202E"},
            "U+202E",
        ),
        (grpc.StatusCode.INVALID_ARGUMENT, "DISPLAY_NAME_INVALID", {"rule": "blank"}, "nothing"),
        (grpc.StatusCode.INVALID_ARGUMENT, "DISPLAY_NAME_INVALID", {"rule": "marks"}, "accents"),
        (
            grpc.StatusCode.INVALID_ARGUMENT,
            "DISPLAY_NAME_INVALID",
            {"rule": "confusable", "seat": "0"},
            "seat 1 at this table",
        ),
    ],
)
def test_the_command_line_explains_each_claim_reason_in_words(
    code: grpc.StatusCode, reason: str, metadata: dict[str, str], says: str
) -> None:
    from basra.client.errors import Details
    from basra.client.render import explain

    text = explain(BasraError(code, "raw message", Details(reason=reason, metadata=metadata)), "t")
    assert says in text
    assert "raw message" not in text, "the reason has words of its own"
