"""A thin driver of BasraService for the server's own tests: no retries, raw gRPC errors.

Applications use ``basra.client.Client`` (retries, typed errors, resumable watches); the tests
of the server use this one to see exactly what the server answers. ``Rejection.of`` unpacks the
ErrorInfo (and BadRequest, RetryInfo) of a failed call.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

import grpc

from basra.client import cards
from basra.client.errors import Details
from basra.engine import Card
from basra.v1 import basra_service_pb2 as pb
from basra.v1 import basra_service_pb2_grpc, game_pb2


def to_card(card: game_pb2.Card) -> Card:
    """The engine card of a message Card (which must be valid)."""
    return cards.from_pb(card)


def card_pb(card: Card | str) -> game_pb2.Card:
    """The message Card of an engine card or a token such as "10D"."""
    return cards.to_pb(card)


@dataclass(frozen=True)
class Rejection:
    """A failed call as a client sees it: the status code and the unpacked details."""

    code: grpc.StatusCode
    message: str
    reason: str
    domain: str
    metadata: dict[str, str]
    field_violations: dict[str, str] = field(default_factory=dict)
    retry_after_s: float | None = None

    @classmethod
    def of(cls, error: grpc.RpcError) -> Rejection:
        """Unpack a failed call's google.rpc.Status details."""
        call: grpc.Call = error  # type: ignore[assignment]
        details = Details.of(call.trailing_metadata())
        return cls(
            code=call.code(),
            message=call.details() or "",
            reason=details.reason,
            domain=details.domain,
            metadata=details.metadata,
            field_violations=details.field_violations,
            retry_after_s=details.retry_after,
        )


class MatchClient:
    """One match seen from the seats whose tokens this client holds."""

    def __init__(
        self,
        stub: basra_service_pb2_grpc.BasraServiceStub,
        match_id: str,
        tokens: Mapping[int, str],
    ) -> None:
        self.stub = stub
        self.match_id = match_id
        self.tokens = dict(tokens)

    @classmethod
    def create(
        cls,
        channel: grpc.Channel,
        *,
        seed: int | None = None,
        seat: int = 0,
        request_id: str | None = None,
        api_key: str | None = None,
        timeout: float = 10,
    ) -> tuple[MatchClient, pb.DealResponse]:
        """Create a match (Deal without a match id); the client keeps both seat tokens."""
        stub = basra_service_pb2_grpc.BasraServiceStub(channel)
        request = pb.DealRequest(seat=seat, request_id=request_id or str(uuid.uuid4()))
        if seed is not None:
            request.seed = seed
        metadata = (("x-api-key", api_key),) if api_key else None
        response: pb.DealResponse = stub.Deal(request, metadata=metadata, timeout=timeout)
        tokens = {t.seat: t.token for t in response.seat_tokens}
        return cls(stub, response.match_id, tokens), response

    def via(self, channel: grpc.Channel) -> MatchClient:
        """The same match and seat tokens, through another channel (another replica)."""
        return MatchClient(
            basra_service_pb2_grpc.BasraServiceStub(channel), self.match_id, self.tokens
        )

    def metadata(self, seat: int) -> tuple[tuple[str, str], ...]:
        """The call metadata that authenticates ``seat``."""
        return (("authorization", f"Bearer {self.tokens[seat]}"),)

    def view(self, seat: int) -> game_pb2.MatchView:
        response: pb.GetMatchResponse = self.stub.GetMatch(
            pb.GetMatchRequest(match_id=self.match_id), metadata=self.metadata(seat), timeout=10
        )
        return response.view

    def plans(self, seat: int, card: Card | str | None = None) -> list[game_pb2.CardPlans]:
        request = pb.ListPlansRequest(match_id=self.match_id)
        if card is not None:
            request.card.CopyFrom(card_pb(card))
        response: pb.ListPlansResponse = self.stub.ListPlans(
            request, metadata=self.metadata(seat), timeout=10
        )
        return list(response.cards)

    def play(
        self,
        seat: int,
        card: Card | str | game_pb2.Card,
        plan_id: int = 0,
        *,
        trail: bool = False,
        expected_version: int | None = None,
        request_id: str | None = None,
    ) -> pb.PlayResponse:
        request = pb.PlayRequest(
            match_id=self.match_id,
            card=card if isinstance(card, game_pb2.Card) else card_pb(card),
            plan_id=plan_id,
            trail=trail,
            request_id=request_id if request_id is not None else str(uuid.uuid4()),
        )
        if expected_version is not None:
            request.expected_version = expected_version
        response: pb.PlayResponse = self.stub.Play(
            request, metadata=self.metadata(seat), timeout=10
        )
        return response

    def deal(
        self, seat: int, *, expected_version: int | None = None, request_id: str | None = None
    ) -> pb.DealResponse:
        request = pb.DealRequest(
            match_id=self.match_id,
            request_id=request_id if request_id is not None else str(uuid.uuid4()),
        )
        if expected_version is not None:
            request.expected_version = expected_version
        response: pb.DealResponse = self.stub.Deal(
            request, metadata=self.metadata(seat), timeout=10
        )
        return response

    def score(self, seat: int) -> pb.ScoreResponse:
        response: pb.ScoreResponse = self.stub.Score(
            pb.ScoreRequest(match_id=self.match_id), metadata=self.metadata(seat), timeout=10
        )
        return response

    def watch(
        self,
        seat: int,
        after_version: int = 0,
        timeout: float | None = None,
        *,
        watch_token: str | None = None,
    ) -> Iterator[game_pb2.MatchEvent]:
        """The match's events for ``seat`` after a version, as they happen (with
        ``watch_token``: a spectator's, and ``seat`` is ignored)."""
        metadata = (
            (("authorization", f"Bearer {watch_token}"),) if watch_token else self.metadata(seat)
        )
        stream = self.stub.WatchMatch(
            pb.WatchMatchRequest(match_id=self.match_id, after_version=after_version),
            metadata=metadata,
            timeout=timeout,
        )
        for response in stream:
            yield response.event

    def watch_token(self, seat: int) -> str:
        """``seat``'s watch token for spectators (CreateWatchToken)."""
        response: pb.CreateWatchTokenResponse = self.stub.CreateWatchToken(
            pb.CreateWatchTokenRequest(match_id=self.match_id),
            metadata=self.metadata(seat),
            timeout=10,
        )
        return response.watch_token

    def revoke_watch_tokens(self, seat: int) -> str:
        """End every watch token handed out so far; ``seat``'s new one (RevokeWatchTokens)."""
        response: pb.RevokeWatchTokensResponse = self.stub.RevokeWatchTokens(
            pb.RevokeWatchTokensRequest(match_id=self.match_id),
            metadata=self.metadata(seat),
            timeout=10,
        )
        return response.watch_token
