"""The BasraService RPCs, transport-neutral: one method per RPC of the contract, each handing
its call to the module whose job it is.

The transports (gRPC in ``grpc_transport``, Connect and gRPC-Web over HTTP in ``http``) turn
their metadata into a ``Caller``, call ``Servicer.handle`` or ``Servicer.handle_stream`` with
the RPC's name, and turn a ``ServiceError`` into their wire form. Where each job lives:

- ``dispatch``: running a call whatever its RPC: error mapping, metrics, the log line, spans;
- ``callers``: who is this caller (a seat or a spectator of the match, by its bearer token);
- ``changes``: how a change is committed (idempotency, expected_version, compare-and-set);
- ``caches``: the matches as this replica knows them (the record and state caches);
- ``moves``: Play, the next hand's Deal and the bots' moves;
- ``creation``: CreateMatch and the first Deal, with the creation rate limits;
- ``seats``: ClaimSeat, GetInvitation and ReissueInvitation;
- ``reads``: GetMatch, Score, ListPlans, ListRules;
- ``watching``: WatchMatch's hand-off to watch.py, CreateWatchToken, RevokeWatchTokens.

The settings are read here only, once: the pieces get plain values.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Final

from basra.service import bots, watch
from basra.service.caches import Matches
from basra.service.callers import Caller, Callers
from basra.service.changes import Changes, engine_spans
from basra.service.config import Settings
from basra.service.creation import Creation
from basra.service.dispatch import Dispatcher, MalformedRequest
from basra.service.metrics import Metrics
from basra.service.moves import Moves
from basra.service.ratelimit import CallerBuckets, TokenBucket
from basra.service.reads import RULES, Reads
from basra.service.seats import Seats
from basra.service.store import Store
from basra.service.tracing import Tracing
from basra.service.watching import Watching
from basra.v1 import basra_service_pb2 as pb

__all__ = ["SERVICE", "Caller", "MalformedRequest", "Servicer"]

SERVICE: Final = pb.DESCRIPTOR.services_by_name["BasraService"]
"""The contract's service: the one place RPC names, request and response types come from."""


class Servicer(Dispatcher):
    """BasraService over a Store. Holds no match state between calls but its caches."""

    def __init__(
        self, settings: Settings, store: Store, metrics: Metrics, tracing: Tracing | None = None
    ) -> None:
        super().__init__(metrics, tracing)
        # Both transports serve every RPC of the descriptor: one without a method here would
        # fail only when called.
        missing = [m.name for m in SERVICE.methods if not callable(getattr(self, m.name, None))]
        if missing:
            raise TypeError(f"RPCs of the contract without an implementation: {missing}")
        self._bots = bots.BotPlayer(
            metrics,
            pace_s=settings.bot_pace_s,
            workers=settings.bot_workers,
            strong_seconds=settings.bot_strong_seconds,
            deadline_s=settings.bot_move_deadline_s,
            queue=settings.bot_queue,
            bot_only_matches=settings.bot_only_matches,
            bot_only_per_caller=settings.bot_only_matches_per_caller,
            tracing=tracing,
        )
        self._watchers = watch.Watchers(
            store,
            metrics,
            presence_interval_s=settings.presence_interval_s,
            presence_ttl_s=settings.presence_ttl_s,
        )
        engine = engine_spans(tracing)
        matches = Matches(store, self._bots.notice)
        callers = Callers(matches)
        changes = Changes(matches, callers, self._watchers, metrics)
        self._moves = Moves(matches, changes, metrics, engine)
        self._creation = Creation(
            matches,
            callers,
            metrics,
            engine,
            api_key=settings.api_key,
            allow_seeds=settings.allow_seeds,
            creations=TokenBucket(settings.create_rate, settings.create_burst),
            caller_creations=CallerBuckets(
                settings.caller_create_rate,
                settings.caller_create_burst,
                settings.rate_limit_callers,
            ),
            bot_only=self._bots.bot_only,
        )
        self._seats = Seats(matches, callers, changes, metrics)
        self._reads = Reads(matches, callers, engine)
        self._watching = Watching(matches, callers, self._watchers, metrics)
        self._bots.bind(self._moves.bot_read, self._moves.bot_move)

    @property
    def bots_ready(self) -> bool:
        """False while the strong bots' thinking processes cannot be started."""
        return self._bots.ready

    async def close(self) -> None:
        """Stop making bot moves and end the open WatchMatch streams' shared reader (the server
        is stopping)."""
        await self._bots.close()
        await self._watchers.close()

    # -- Moves ----------------------------------------------------------------------------------

    async def Play(self, request: pb.PlayRequest, caller: Caller) -> pb.PlayResponse:
        return await self._moves.play(request, caller)

    async def Deal(self, request: pb.DealRequest, caller: Caller) -> pb.DealResponse:
        if request.match_id:
            return await self._moves.next_hand(request, caller)
        return await self._creation.first_deal(request, caller)

    # -- Creation -------------------------------------------------------------------------------

    async def CreateMatch(
        self, request: pb.CreateMatchRequest, caller: Caller
    ) -> pb.CreateMatchResponse:
        return await self._creation.create_match(request, caller)

    # -- Seats ----------------------------------------------------------------------------------

    async def ClaimSeat(self, request: pb.ClaimSeatRequest, caller: Caller) -> pb.ClaimSeatResponse:
        return await self._seats.claim(request)

    async def GetInvitation(
        self, request: pb.GetInvitationRequest, caller: Caller
    ) -> pb.GetInvitationResponse:
        return await self._seats.invitation(request)

    async def ReissueInvitation(
        self, request: pb.ReissueInvitationRequest, caller: Caller
    ) -> pb.ReissueInvitationResponse:
        return await self._seats.reissue(request, caller)

    # -- Reads ----------------------------------------------------------------------------------

    async def GetMatch(self, request: pb.GetMatchRequest, caller: Caller) -> pb.GetMatchResponse:
        return await self._reads.get_match(request, caller)

    async def Score(self, request: pb.ScoreRequest, caller: Caller) -> pb.ScoreResponse:
        return await self._reads.score(request, caller)

    async def ListPlans(self, request: pb.ListPlansRequest, caller: Caller) -> pb.ListPlansResponse:
        return await self._reads.list_plans(request, caller)

    async def ListRules(self, request: pb.ListRulesRequest, caller: Caller) -> pb.ListRulesResponse:
        return RULES

    # -- Watching -------------------------------------------------------------------------------

    async def WatchMatch(
        self, request: pb.WatchMatchRequest, caller: Caller
    ) -> AsyncIterator[pb.WatchMatchResponse]:
        return await self._watching.watch_match(request, caller)

    async def CreateWatchToken(
        self, request: pb.CreateWatchTokenRequest, caller: Caller
    ) -> pb.CreateWatchTokenResponse:
        return await self._watching.create_watch_token(request, caller)

    async def RevokeWatchTokens(
        self, request: pb.RevokeWatchTokensRequest, caller: Caller
    ) -> pb.RevokeWatchTokensResponse:
        return await self._watching.revoke_watch_tokens(request, caller)
