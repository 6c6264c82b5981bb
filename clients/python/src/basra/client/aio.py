"""The asyncio client: the same classes as ``basra.client`` with awaitable calls and an async
iterator for watches.

    async with AsyncClient("localhost:50051") as client:
        match = await client.create_match()
        view = await match.view()
        async for event in match.watch():
            ...
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, TypeVar

import grpc
import grpc.aio

from basra.client import _core, cards
from basra.client.errors import BasraError, UnavailableError
from basra.client.retry import CHANNEL_OPTIONS, RETRIED, RetryPolicy
from basra.v1 import basra_service_pb2 as pb
from basra.v1 import basra_service_pb2_grpc, game_pb2

R = TypeVar("R")
Metadata = tuple[tuple[str, str], ...]


class AsyncClient:
    """A connection to a Basra service, for asyncio programs (arguments as ``Client``)."""

    def __init__(
        self,
        target: str | None = None,
        *,
        channel: grpc.aio.Channel | None = None,
        credentials: grpc.ChannelCredentials | None = None,
        api_key: str | None = None,
        timeout: float = 10.0,
        retry: RetryPolicy | None = None,
    ) -> None:
        if (target is None) == (channel is None):
            raise ValueError("give exactly one of target and channel")
        self._owned = channel is None
        if channel is None:
            assert target is not None
            channel = (
                grpc.aio.secure_channel(target, credentials, options=CHANNEL_OPTIONS)
                if credentials is not None
                else grpc.aio.insecure_channel(target, options=CHANNEL_OPTIONS)
            )
        self.channel = channel
        self.stub = basra_service_pb2_grpc.BasraServiceStub(channel)
        self.api_key = api_key
        self.timeout = timeout
        self.retry = retry or RetryPolicy()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the channel the client opened (one given to it stays open)."""
        if self._owned:
            await self.channel.close(None)

    async def create_match(
        self,
        *,
        seed: int | None = None,
        seat: int = 0,
        request_id: str | None = None,
        rules: str | None = None,
        seats: int = 0,
        options: game_pb2.MatchOptions | None = None,
        bots: Mapping[int, str] | None = None,
        invitations: bool = False,
        display_name: str = "",
    ) -> AsyncMatch:
        """Create a match and deal its first hand (see ``Client.create_match``)."""
        metadata = _core.api_key_metadata(self.api_key)
        response: pb.DealResponse | pb.CreateMatchResponse
        creating = (rules, seats, options, bots, invitations, display_name)
        if creating == (None, 0, None, None, False, ""):
            request = _core.create_request(seed, seat, request_id)
            response = await self.call(self.stub.Deal, request, metadata)
        else:
            created = _core.create_match_request(
                rules or "",
                seats,
                options or game_pb2.MatchOptions(),
                seed,
                seat,
                request_id,
                bots,
                invitations=invitations,
                display_name=display_name,
            )
            response = await self.call(self.stub.CreateMatch, created, metadata)
        tokens = {t.seat: t.token for t in response.seat_tokens}
        return AsyncMatch(self, response.match_id, tokens, response)

    async def claim_seat(
        self,
        match_id: str,
        invitation: str,
        display_name: str,
        *,
        request_id: str | None = None,
    ) -> AsyncSeat:
        """Claim the seat ``invitation`` opens, under ``display_name``: the seat's handle,
        with its token (``AsyncSeat.claimed`` holds the response, with the seat's view).

        One request id (``request_id``, or a fresh UUIDv4) serves every attempt, so a claim
        whose answer was lost is retried safely and answers the same token.

        Raises:
            AuthError: INVITATION_INVALID, the invitation is none of the match's.
            RuleViolationError: INVITATION_CLAIMED, someone claimed it already.
            InvalidRequestError: DISPLAY_NAME_INVALID (``metadata["rule"]`` says why).
        """
        request = _core.claim_request(match_id, invitation, display_name, request_id)
        response: pb.ClaimSeatResponse = await self.call(self.stub.ClaimSeat, request, ())
        claimed = response.seat_token
        match = AsyncMatch(self, match_id, {claimed.seat: claimed.token})
        seat = match.seat(claimed.seat)
        seat.claimed = response
        return seat

    async def reissue_invitation(self, match_id: str, creator_token: str, seat: int) -> str:
        """A new invitation to ``seat``, asked with the creator's seat token: the seat's earlier
        invitation stops working, and so does the token of whoever claimed it. A retried
        attempt reissues again: the code returned is the one of the last attempt.

        Raises:
            AuthError: NOT_MATCH_CREATOR, the token is not the creator's seat's.
            InvalidRequestError: ``seat`` is the creator's own, a bot's, or no seat.
        """
        request = pb.ReissueInvitationRequest(match_id=match_id, seat=seat)
        response: pb.ReissueInvitationResponse = await self.call(
            self.stub.ReissueInvitation, request, _core.bearer(creator_token)
        )
        return response.invitation.code

    def match(self, match_id: str, tokens: Mapping[int, str]) -> AsyncMatch:
        """A match created earlier, with the tokens of the seats this program plays."""
        return AsyncMatch(self, match_id, tokens)

    async def join(self, match_id: str, token: str) -> AsyncSeat:
        """The seat a token was handed out for (see ``Client.join``)."""
        view: pb.GetMatchResponse = await self.call(
            self.stub.GetMatch, pb.GetMatchRequest(match_id=match_id), _core.bearer(token)
        )
        return AsyncMatch(self, match_id, {view.view.seat: token}).seat(view.view.seat)

    async def create_watch_token(self, match_id: str, seat_token: str) -> str:
        """A watch token for spectators (see ``Client.create_watch_token``)."""
        request = pb.CreateWatchTokenRequest(match_id=match_id)
        response: pb.CreateWatchTokenResponse = await self.call(
            self.stub.CreateWatchToken, request, _core.bearer(seat_token)
        )
        return response.watch_token

    async def revoke_watch_tokens(self, match_id: str, seat_token: str) -> str:
        """End every watch token of the match handed out so far; the seat's new one (see
        ``Client.revoke_watch_tokens``)."""
        request = pb.RevokeWatchTokensRequest(match_id=match_id)
        response: pb.RevokeWatchTokensResponse = await self.call(
            self.stub.RevokeWatchTokens, request, _core.bearer(seat_token)
        )
        return response.watch_token

    def spectate(self, match_id: str, watch_token: str) -> AsyncSpectator:
        """A spectator's handle on a match (see ``Client.spectate``)."""
        return AsyncSpectator(AsyncMatch(self, match_id, {}), watch_token)

    async def call(
        self, rpc: Callable[..., Awaitable[R]], request: object, metadata: Metadata
    ) -> R:
        """One logical call, retried as ``Client.call`` does."""
        delays = self.retry.delays()
        while True:
            try:
                return await rpc(request, metadata=metadata, timeout=self.timeout)
            except grpc.RpcError as rpc_error:
                error = BasraError.of(rpc_error)
                delay = next(delays, None) if error.code in RETRIED else None
                if delay is None:
                    raise error from None
                await asyncio.sleep(self.retry.wait(delay, error.retry_after))


class AsyncMatch:
    """A match and the seat tokens this program holds (see ``Match``)."""

    def __init__(
        self,
        client: AsyncClient,
        match_id: str,
        tokens: Mapping[int, str],
        created: pb.DealResponse | pb.CreateMatchResponse | None = None,
    ) -> None:
        self.client = client
        self.id = match_id
        self.tokens = dict(tokens)
        self.created = created
        self.invitations: dict[int, str] = {}
        """Seat -> invitation code, of a match created with invitations (never printed)."""
        if isinstance(created, pb.CreateMatchResponse):
            self.invitations = {i.seat: i.code for i in created.invitations}

    def __repr__(self) -> str:
        return f"AsyncMatch({self.id!r}, seats={sorted(self.tokens)})"

    def seat(self, seat: int) -> AsyncSeat:
        """A handle that acts for ``seat`` with its token (KeyError: no token held)."""
        return AsyncSeat(self, seat, self.tokens[seat])

    def _any(self, seat: int | None) -> AsyncSeat:
        return self.seat(min(self.tokens) if seat is None else seat)

    async def view(self, seat: int | None = None) -> game_pb2.MatchView:
        return await self._any(seat).view()

    async def deal(
        self, seat: int | None = None, *, expected_version: int | None = None
    ) -> pb.DealResponse:
        return await self._any(seat).deal(expected_version=expected_version)

    async def score(self, seat: int | None = None) -> game_pb2.Scoreboard:
        return await self._any(seat).score()

    def watch(self, seat: int | None = None, after_version: int = 0) -> AsyncWatch:
        return self._any(seat).watch(after_version)

    async def create_watch_token(self, seat: int | None = None) -> str:
        return await self._any(seat).create_watch_token()

    async def revoke_watch_tokens(self, seat: int | None = None) -> str:
        return await self._any(seat).revoke_watch_tokens()

    async def reissue_invitation(self, seat: int) -> str:
        """A new invitation to ``seat`` (see ``Match.reissue_invitation``)."""
        code = await self._any(None).reissue_invitation(seat)
        self.invitations[seat] = code
        return code

    def spectate(self, watch_token: str) -> AsyncSpectator:
        return self.client.spectate(self.id, watch_token)


class AsyncSeat:
    """One seat of a match: every call carries that seat's token (see ``Seat``)."""

    def __init__(self, match: AsyncMatch, seat: int, token: str) -> None:
        self.match = match
        self.seat = seat
        self._token = token
        self._metadata = _core.bearer(token)
        self.claimed: pb.ClaimSeatResponse | None = None
        """The ClaimSeat response, for a seat this program claimed."""

    def __repr__(self) -> str:
        return f"AsyncSeat({self.match.id!r}, {self.seat})"

    async def _call(self, rpc: Callable[..., Awaitable[R]], request: object) -> R:
        return await self.match.client.call(rpc, request, self._metadata)

    @property
    def _stub(self) -> Any:
        return self.match.client.stub

    async def view(self) -> game_pb2.MatchView:
        response: pb.GetMatchResponse = await self._call(
            self._stub.GetMatch, pb.GetMatchRequest(match_id=self.match.id)
        )
        return response.view

    async def plans(self, card: cards.CardLike | None = None) -> list[game_pb2.CardPlans]:
        response: pb.ListPlansResponse = await self._call(
            self._stub.ListPlans, _core.plans_request(self.match.id, card)
        )
        return list(response.cards)

    async def play(
        self,
        card: cards.CardLike,
        plan_id: int = 0,
        *,
        trail: bool = False,
        expected_version: int | None = None,
        request_id: str | None = None,
    ) -> pb.PlayResponse:
        request = _core.play_request(
            self.match.id, card, plan_id, trail, expected_version, request_id
        )
        response: pb.PlayResponse = await self._call(self._stub.Play, request)
        return response

    async def deal(
        self, *, expected_version: int | None = None, request_id: str | None = None
    ) -> pb.DealResponse:
        request = _core.deal_request(self.match.id, expected_version, request_id)
        response: pb.DealResponse = await self._call(self._stub.Deal, request)
        return response

    async def score(self) -> game_pb2.Scoreboard:
        response: pb.ScoreResponse = await self._call(
            self._stub.Score, pb.ScoreRequest(match_id=self.match.id)
        )
        return response.scoreboard

    def watch(self, after_version: int = 0) -> AsyncWatch:
        """The match's events after ``after_version`` (see ``Seat.watch``)."""
        return AsyncWatch(self, after_version)

    async def create_watch_token(self) -> str:
        return await self.match.client.create_watch_token(self.match.id, self._token)

    async def revoke_watch_tokens(self) -> str:
        return await self.match.client.revoke_watch_tokens(self.match.id, self._token)

    async def reissue_invitation(self, seat: int) -> str:
        """A new invitation to ``seat``, asked with this seat's token (see
        ``Client.reissue_invitation``)."""
        return await self.match.client.reissue_invitation(self.match.id, self._token, seat)


class AsyncSpectator:
    """A match seen with a watch token (see ``Spectator``)."""

    def __init__(self, match: AsyncMatch, watch_token: str) -> None:
        self.match = match
        self._metadata = _core.bearer(watch_token)

    def __repr__(self) -> str:
        return f"AsyncSpectator({self.match.id!r})"

    async def view(self) -> game_pb2.MatchView:
        response: pb.GetMatchResponse = await self.match.client.call(
            self.match.client.stub.GetMatch,
            pb.GetMatchRequest(match_id=self.match.id),
            self._metadata,
        )
        return response.view

    async def score(self) -> game_pb2.Scoreboard:
        response: pb.ScoreResponse = await self.match.client.call(
            self.match.client.stub.Score, pb.ScoreRequest(match_id=self.match.id), self._metadata
        )
        return response.scoreboard

    def watch(self, after_version: int = 0) -> AsyncWatch:
        """The match's public events after ``after_version`` (see ``Spectator.watch``)."""
        return AsyncWatch(self, after_version)


class AsyncWatch(AsyncIterator[game_pb2.MatchEvent]):
    """An async iterator of a seat's (or a spectator's) match events that survives dropped
    streams (see ``Watch``)."""

    def __init__(self, seat: AsyncSeat | AsyncSpectator, after_version: int) -> None:
        self._seat = seat
        self._resumption = _core.Resumption(after_version)
        self._stream: Any = None
        self._closed = False
        self._events = self._run()

    @property
    def after_version(self) -> int:
        return self._resumption.after_version

    def __aiter__(self) -> AsyncWatch:
        return self

    async def __anext__(self) -> game_pb2.MatchEvent:
        return await self._events.__anext__()

    def close(self) -> None:
        """Stop the watch: the iteration ends."""
        self._closed = True
        if self._stream is not None:
            self._stream.cancel()

    async def _run(self) -> AsyncIterator[game_pb2.MatchEvent]:
        client = self._seat.match.client
        resumption = self._resumption
        delays = client.retry.delays()
        while not self._closed:
            request = pb.WatchMatchRequest(
                match_id=self._seat.match.id, after_version=resumption.after_version
            )
            resumption.reconnecting()
            stream = client.stub.WatchMatch(request, metadata=self._seat._metadata)
            self._stream = stream
            error: BasraError | None = None
            try:
                async for response in stream:
                    if resumption.accept(response.event):
                        delays = client.retry.delays()
                        yield response.event
                        if resumption.ended:
                            stream.cancel()
                            return
            except grpc.RpcError as rpc_error:
                if self._closed:
                    return
                error = BasraError.of(rpc_error)
                if error.code not in (*RETRIED, grpc.StatusCode.CANCELLED):
                    raise error from None
            except asyncio.CancelledError:
                if self._closed:
                    return
                raise
            else:
                view = await self._seat.view()
                if view.status == game_pb2.MATCH_STATUS_MATCH_OVER and (
                    resumption.after_version >= view.version
                ):
                    return
                delays = client.retry.delays()  # the server answered: count failures in a row
            delay = next(delays, None)
            if delay is None:
                raise error or UnavailableError(
                    grpc.StatusCode.UNAVAILABLE, "the watch stream kept ending"
                )
            await asyncio.sleep(client.retry.wait(delay, error.retry_after if error else None))
