"""The synchronous client: ``Client`` opens matches, ``Match`` holds their seat tokens, ``Seat``
acts for one seat, ``Spectator`` reads with a watch token. See ``basra.client`` for an example."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from typing import TypeVar

import grpc

from basra.client import _core, cards
from basra.client.errors import BasraError, UnavailableError
from basra.client.retry import CHANNEL_OPTIONS, RETRIED, RetryPolicy
from basra.v1 import basra_service_pb2 as pb
from basra.v1 import basra_service_pb2_grpc, game_pb2

R = TypeVar("R")
Metadata = tuple[tuple[str, str], ...]


class Client:
    """A connection to a Basra service.

    Args:
        target: ``HOST:PORT`` of the service (a channel is opened and closed by the client).
        channel: an open channel to use instead of ``target`` (the caller closes it).
        credentials: TLS credentials for ``target`` (plain text when None).
        api_key: sent as ``x-api-key`` when creating matches, if the server requires one.
        timeout: seconds each attempt of a unary call may take.
        retry: the retry policy of every call and watch.
    """

    def __init__(
        self,
        target: str | None = None,
        *,
        channel: grpc.Channel | None = None,
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
                grpc.secure_channel(target, credentials, options=CHANNEL_OPTIONS)
                if credentials is not None
                else grpc.insecure_channel(target, options=CHANNEL_OPTIONS)
            )
        self.channel = channel
        self.stub = basra_service_pb2_grpc.BasraServiceStub(channel)
        self.api_key = api_key
        self.timeout = timeout
        self.retry = retry or RetryPolicy()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the channel the client opened (one given to it stays open)."""
        if self._owned:
            self.channel.close()

    def create_match(
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
    ) -> Match:
        """Create a match and deal its first hand; the ``Match`` holds every seat's token.

        ``seed`` replays a deal (the server must allow seeds); ``seat`` chooses whose view
        ``Match.created`` carries. ``rules`` (a ListRules name), ``seats`` (0: the rules'
        smallest) and ``options`` create it with CreateMatch; without them it is an ERAM
        two-seat match, as the deprecated creating Deal makes.

        ``bots`` makes seats bots the service plays, {seat: "random" | "greedy" | "strong"}:
        the ``Match`` then holds the person seats' tokens only (``seat`` must be one of them),
        and the service plays the bots' turns itself. With every seat a bot, the ``Match``
        holds no token: follow it with ``match.spectate(match.created.watch_token)``.

        ``invitations`` invites the other people instead of handing out their tokens: the
        ``Match`` holds ``seat``'s token only and ``match.invitations`` one code per other
        person seat, for each player to claim (``Client.claim_seat``) once; ``display_name``
        names ``seat`` for every seat and spectator to see.
        """
        metadata = _core.api_key_metadata(self.api_key)
        response: pb.DealResponse | pb.CreateMatchResponse
        creating = (rules, seats, options, bots, invitations, display_name)
        if creating == (None, 0, None, None, False, ""):
            request = _core.create_request(seed, seat, request_id)
            response = self.call(self.stub.Deal, request, metadata)
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
            response = self.call(self.stub.CreateMatch, created, metadata)
        tokens = {t.seat: t.token for t in response.seat_tokens}
        return Match(self, response.match_id, tokens, response)

    def claim_seat(
        self,
        match_id: str,
        invitation: str,
        display_name: str,
        *,
        request_id: str | None = None,
    ) -> Seat:
        """Claim the seat ``invitation`` opens, under ``display_name``: the seat's handle,
        with its token (``Seat.claimed`` holds the response, with the seat's view).

        One request id (``request_id``, or a fresh UUIDv4) serves every attempt, so a claim
        whose answer was lost is retried safely and answers the same token.

        Raises:
            AuthError: INVITATION_INVALID, the invitation is none of the match's.
            RuleViolationError: INVITATION_CLAIMED, someone claimed it already.
            InvalidRequestError: DISPLAY_NAME_INVALID (``metadata["rule"]`` says why).
        """
        request = _core.claim_request(match_id, invitation, display_name, request_id)
        response: pb.ClaimSeatResponse = self.call(self.stub.ClaimSeat, request, ())
        claimed = response.seat_token
        match = Match(self, match_id, {claimed.seat: claimed.token})
        seat = match.seat(claimed.seat)
        seat.claimed = response
        return seat

    def reissue_invitation(self, match_id: str, creator_token: str, seat: int) -> str:
        """A new invitation to ``seat``, asked with the creator's seat token: the seat's earlier
        invitation stops working, and so does the token of whoever claimed it. A retried
        attempt reissues again: the code returned is the one of the last attempt.

        Raises:
            AuthError: NOT_MATCH_CREATOR, the token is not the creator's seat's.
            InvalidRequestError: ``seat`` is the creator's own, a bot's, or no seat.
        """
        request = pb.ReissueInvitationRequest(match_id=match_id, seat=seat)
        response: pb.ReissueInvitationResponse = self.call(
            self.stub.ReissueInvitation, request, _core.bearer(creator_token)
        )
        return response.invitation.code

    def match(self, match_id: str, tokens: Mapping[int, str]) -> Match:
        """A match created earlier, with the tokens of the seats this program plays."""
        return Match(self, match_id, tokens)

    def join(self, match_id: str, token: str) -> Seat:
        """The seat a token was handed out for (its view tells the seat: one GetMatch)."""
        view: pb.GetMatchResponse = self.call(
            self.stub.GetMatch, pb.GetMatchRequest(match_id=match_id), _core.bearer(token)
        )
        return Match(self, match_id, {view.view.seat: token}).seat(view.view.seat)

    def create_watch_token(self, match_id: str, seat_token: str) -> str:
        """The read-only watch token of the seat ``seat_token`` belongs to, to hand to
        spectators: the same on every call until a seat revokes the match's watch tokens.

        Raises:
            AuthError: the token is not a seat token of the match (a watch token included).
        """
        request = pb.CreateWatchTokenRequest(match_id=match_id)
        response: pb.CreateWatchTokenResponse = self.call(
            self.stub.CreateWatchToken, request, _core.bearer(seat_token)
        )
        return response.watch_token

    def revoke_watch_tokens(self, match_id: str, seat_token: str) -> str:
        """End every watch token of the match handed out so far (the open spectator streams
        end with ``AuthError`` / WATCH_TOKEN_REVOKED); returns the seat's new watch token.

        A retried attempt revokes again, so the token returned is the one of the last attempt,
        the only one that works.

        Raises:
            AuthError: the token is not a seat token of the match (a watch token included).
        """
        request = pb.RevokeWatchTokensRequest(match_id=match_id)
        response: pb.RevokeWatchTokensResponse = self.call(
            self.stub.RevokeWatchTokens, request, _core.bearer(seat_token)
        )
        return response.watch_token

    def spectate(self, match_id: str, watch_token: str) -> Spectator:
        """A spectator's handle on a match: its public view, score and events."""
        return Spectator(Match(self, match_id, {}), watch_token)

    def call(self, rpc: Callable[..., R], request: object, metadata: Metadata) -> R:
        """One logical call: the same request (and request id) for every attempt, retried on
        UNAVAILABLE and DEADLINE_EXCEEDED with bounded backoff; a rejection raises at once.

        Raises:
            BasraError: the typed rejection, or ``UnavailableError`` when the retries ran out.
        """
        delays = self.retry.delays()
        while True:
            try:
                return rpc(request, metadata=metadata, timeout=self.timeout)
            except grpc.RpcError as rpc_error:
                error = BasraError.of(rpc_error)
                delay = next(delays, None) if error.code in RETRIED else None
                if delay is None:
                    raise error from None
                time.sleep(self.retry.wait(delay, error.retry_after))


class Match:
    """A match and the seat tokens this program holds (never printed: see ``__repr__``).

    Attributes:
        id: the match id.
        created: the response that created it (None for ``Client.match``).
    """

    def __init__(
        self,
        client: Client,
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
        return f"Match({self.id!r}, seats={sorted(self.tokens)})"

    def seat(self, seat: int) -> Seat:
        """A handle that acts for ``seat`` with its token.

        Raises:
            KeyError: this program holds no token for ``seat``.
        """
        return Seat(self, seat, self.tokens[seat])

    def _any(self, seat: int | None) -> Seat:
        return self.seat(min(self.tokens) if seat is None else seat)

    def view(self, seat: int | None = None) -> game_pb2.MatchView:
        """The current view of ``seat`` (default: the lowest seat held)."""
        return self._any(seat).view()

    def deal(
        self, seat: int | None = None, *, expected_version: int | None = None
    ) -> pb.DealResponse:
        """Deal the next hand (the current one must be over)."""
        return self._any(seat).deal(expected_version=expected_version)

    def score(self, seat: int | None = None) -> game_pb2.Scoreboard:
        """The scoreboard."""
        return self._any(seat).score()

    def watch(self, seat: int | None = None, after_version: int = 0) -> Watch:
        """The match's events as ``seat`` receives them (see ``Seat.watch``)."""
        return self._any(seat).watch(after_version)

    def create_watch_token(self, seat: int | None = None) -> str:
        """A watch token for spectators (see ``Client.create_watch_token``)."""
        return self._any(seat).create_watch_token()

    def revoke_watch_tokens(self, seat: int | None = None) -> str:
        """End every watch token handed out so far (see ``Client.revoke_watch_tokens``)."""
        return self._any(seat).revoke_watch_tokens()

    def reissue_invitation(self, seat: int) -> str:
        """A new invitation to ``seat``, asked with the lowest seat held (the creator's, in a
        match created with invitations), kept in ``invitations`` (see
        ``Client.reissue_invitation``)."""
        code = self._any(None).reissue_invitation(seat)
        self.invitations[seat] = code
        return code

    def spectate(self, watch_token: str) -> Spectator:
        """A spectator's handle on this match (see ``Client.spectate``)."""
        return self.client.spectate(self.id, watch_token)


class Seat:
    """One seat of a match: every call carries that seat's token."""

    def __init__(self, match: Match, seat: int, token: str) -> None:
        self.match = match
        self.seat = seat
        self._token = token
        self._metadata = _core.bearer(token)
        self.claimed: pb.ClaimSeatResponse | None = None
        """The ClaimSeat response, for a seat this program claimed."""

    def __repr__(self) -> str:
        return f"Seat({self.match.id!r}, {self.seat})"

    def _call(self, rpc: Callable[..., R], request: object) -> R:
        return self.match.client.call(rpc, request, self._metadata)

    @property
    def _stub(self) -> basra_service_pb2_grpc.BasraServiceStub:
        return self.match.client.stub

    def view(self) -> game_pb2.MatchView:
        """This seat's current view (GetMatch)."""
        response: pb.GetMatchResponse = self._call(
            self._stub.GetMatch, pb.GetMatchRequest(match_id=self.match.id)
        )
        return response.view

    def plans(self, card: cards.CardLike | None = None) -> list[game_pb2.CardPlans]:
        """The capture plans of ``card`` (a card of this seat's hand), or of every card."""
        response: pb.ListPlansResponse = self._call(
            self._stub.ListPlans, _core.plans_request(self.match.id, card)
        )
        return list(response.cards)

    def play(
        self,
        card: cards.CardLike,
        plan_id: int = 0,
        *,
        trail: bool = False,
        expected_version: int | None = None,
        request_id: str | None = None,
    ) -> pb.PlayResponse:
        """Play ``card`` taking plan ``plan_id`` (0: its only plan, or a trail).

        One request id (``request_id``, or a fresh UUIDv4) serves every attempt, so a retried
        play is applied once.
        """
        request = _core.play_request(
            self.match.id, card, plan_id, trail, expected_version, request_id
        )
        response: pb.PlayResponse = self._call(self._stub.Play, request)
        return response

    def deal(
        self, *, expected_version: int | None = None, request_id: str | None = None
    ) -> pb.DealResponse:
        """Deal the next hand (the current one must be over)."""
        request = _core.deal_request(self.match.id, expected_version, request_id)
        response: pb.DealResponse = self._call(self._stub.Deal, request)
        return response

    def score(self) -> game_pb2.Scoreboard:
        """The scoreboard."""
        response: pb.ScoreResponse = self._call(
            self._stub.Score, pb.ScoreRequest(match_id=self.match.id)
        )
        return response.scoreboard

    def watch(self, after_version: int = 0) -> Watch:
        """The match's events after ``after_version``, as they happen, until the match ends.

        A dropped stream is resumed after the last complete version: every event arrives once.
        """
        return Watch(self, after_version)

    def create_watch_token(self) -> str:
        """This seat's watch token for spectators (see ``Client.create_watch_token``)."""
        return self.match.client.create_watch_token(self.match.id, self._token)

    def revoke_watch_tokens(self) -> str:
        """End every watch token handed out so far; this seat's new one (see
        ``Client.revoke_watch_tokens``)."""
        return self.match.client.revoke_watch_tokens(self.match.id, self._token)

    def reissue_invitation(self, seat: int) -> str:
        """A new invitation to ``seat``, asked with this seat's token, the creator's (see
        ``Client.reissue_invitation``)."""
        return self.match.client.reissue_invitation(self.match.id, self._token, seat)


class Spectator:
    """A match seen with a watch token: the public view, the score and the public events
    (no seat's cards). Every call carries the watch token (never printed)."""

    def __init__(self, match: Match, watch_token: str) -> None:
        self.match = match
        self._metadata = _core.bearer(watch_token)

    def __repr__(self) -> str:
        return f"Spectator({self.match.id!r})"

    def view(self) -> game_pb2.MatchView:
        """The public view (``spectator`` set, no hand)."""
        response: pb.GetMatchResponse = self.match.client.call(
            self.match.client.stub.GetMatch,
            pb.GetMatchRequest(match_id=self.match.id),
            self._metadata,
        )
        return response.view

    def score(self) -> game_pb2.Scoreboard:
        """The scoreboard."""
        response: pb.ScoreResponse = self.match.client.call(
            self.match.client.stub.Score, pb.ScoreRequest(match_id=self.match.id), self._metadata
        )
        return response.scoreboard

    def watch(self, after_version: int = 0) -> Watch:
        """The match's public events after ``after_version``, resumed like ``Seat.watch``'s.
        Once a seat revokes the watch token, iterating raises ``AuthError`` (reason
        WATCH_TOKEN_REVOKED, or TOKEN_INVALID on a reconnection)."""
        return Watch(self, after_version)


class Watch(Iterator[game_pb2.MatchEvent]):
    """An iterator of a seat's (or a spectator's) match events that survives dropped streams.

    It ends after the match's last event. ``after_version`` is the last version whose events
    all arrived (resume a later watch from it); ``close()`` stops it from another thread.

    Raises (while iterating):
        BasraError: a rejection (e.g. ``OutOfRangeError``), or ``UnavailableError`` when
            the policy's reconnections in a row all failed.
    """

    def __init__(self, seat: Seat | Spectator, after_version: int) -> None:
        self._seat = seat
        self._resumption = _core.Resumption(after_version)
        self._stream: grpc.Call | None = None
        self._closed = False
        self._events = self._run()

    @property
    def after_version(self) -> int:
        return self._resumption.after_version

    def __next__(self) -> game_pb2.MatchEvent:
        return next(self._events)

    def close(self) -> None:
        """Stop the watch: the iteration ends."""
        self._closed = True
        if self._stream is not None:
            self._stream.cancel()  # type: ignore[no-untyped-call]  # untyped in grpc-stubs

    def _run(self) -> Iterator[game_pb2.MatchEvent]:
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
                for response in stream:
                    if resumption.accept(response.event):
                        delays = client.retry.delays()  # progress: a fresh budget
                        yield response.event
                        if resumption.ended:
                            stream.cancel()  # type: ignore[no-untyped-call]
                            return
            except grpc.RpcError as rpc_error:
                if self._closed:
                    return
                error = BasraError.of(rpc_error)
                if error.code not in (*RETRIED, grpc.StatusCode.CANCELLED):
                    raise error from None
            else:
                # The server ended the stream without the match's end: it drained, aged the
                # connection out, or the match was over with nothing left to send.
                view = self._seat.view()
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
            time.sleep(client.retry.wait(delay, error.retry_after if error else None))
