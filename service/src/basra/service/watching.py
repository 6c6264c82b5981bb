"""Watching a match: WatchMatch's hand-off to this replica's streams (watch.py), and the watch
tokens a seat hands spectators (CreateWatchToken, RevokeWatchTokens).

A match's watch access (its salt and each seat's watch token hash, ``callers.py`` reads it) is
swapped with compare-and-set: two seats asking at once both get their token, and a revocation
draws a new salt, which makes every watch token derived under the old one worthless.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import AsyncIterator
from typing import Any

from basra.service import auth, watch
from basra.service.caches import Matches
from basra.service.callers import Caller, Callers, access_kept_changing
from basra.service.changes import CAS_ATTEMPTS
from basra.service.errors import Reason, ServiceError, invalid_argument
from basra.service.metrics import Metrics
from basra.service.store import WatchAccess
from basra.service.store.base import SALT_BYTES
from basra.v1 import basra_service_pb2 as pb

log = logging.getLogger("basra.rpc")


async def _no_responses() -> AsyncIterator[Any]:
    return
    yield  # noqa: V201 (an async generator that yields nothing: vulture reads it as unreachable)


class Watching:
    """WatchMatch, CreateWatchToken and RevokeWatchTokens."""

    def __init__(
        self, matches: Matches, callers: Callers, watchers: watch.Watchers, metrics: Metrics
    ) -> None:
        self._matches = matches
        self._callers = callers
        self._watchers = watchers
        self._metrics = metrics

    async def watch_match(
        self, request: pb.WatchMatchRequest, caller: Caller
    ) -> AsyncIterator[pb.WatchMatchResponse]:
        """Check the call and open the stream; the caller iterates what this returns.

        A coroutine returning the iterator rather than an async generator around it: an idle
        stream then holds one generator (``WatchStream.responses``), not three nested ones.
        """
        # A transport may not close a streaming handler whose client left (gRPC finalizes it
        # whenever it is collected): the count of open streams follows the end of the call.
        self._metrics.watch_streams.inc()
        caller.ended.add_done_callback(self._stream_ended)
        if request.after_version < 0:
            raise invalid_argument("after_version", "must be 0 or more")
        record, seat, salt, state = await self._callers.viewer(request.match_id, caller)
        if request.after_version > record.version:
            # Not INVALID_ARGUMENT: the client saw those versions, then the store went back to an
            # older snapshot. OUT_OF_RANGE tells it to reload and resume (proto/README.md).
            raise ServiceError(
                Reason.VERSION_AHEAD,
                f"after_version is beyond the match's current version {record.version}: call "
                "GetMatch and resume from its version",
                {"after_version": request.after_version, "current_version": record.version},
            )
        if state.winner is not None and request.after_version >= record.version:
            return _no_responses()  # the match is over and everything was sent
        # A spectator's stream ends once its watch token stops working (WATCH_TOKEN_REVOKED); a
        # seat's once the version that revokes its token is sent (SEAT_TOKEN_REVOKED).
        access = salt if seat is None else None
        token = b"" if seat is None else record.token_hashes[seat]
        info = watch.StreamInfo(state.seats, record.bots, token, presence=request.presence)
        stream = self._watchers.open(record.match_id, seat, request.after_version, access, info)
        # A stream waiting on an idle match writes nothing, so its transport would never notice
        # the client leave: the end of the call releases the stream's place at once.
        caller.ended.add_done_callback(stream.leave)
        return stream.responses()

    def _stream_ended(self, _: asyncio.Future[None]) -> None:
        self._metrics.watch_streams.dec()

    async def create_watch_token(
        self, request: pb.CreateWatchTokenRequest, caller: Caller
    ) -> pb.CreateWatchTokenResponse:
        token, record, seat = await self._callers.seat_of_match(request.match_id, caller)
        for _ in range(CAS_ATTEMPTS):
            access = await self._callers.watch_access(record.match_id)
            if access is None and record.watch_hashes:
                # A match from before RevokeWatchTokens, never revoked: its record holds the
                # hashes of the tokens derived without a salt.
                return pb.CreateWatchTokenResponse(watch_token=auth.watch_token(token))
            salt = secrets.token_bytes(SALT_BYTES) if access is None else access.salt
            watch_token = auth.watch_token(token, salt)
            hashes = list(access.hashes) if access else [b""] * len(record.token_hashes)
            hashes[seat] = auth.token_hash(watch_token)
            # Written even when unchanged: the write keeps the access alive with the match.
            new = WatchAccess(salt, tuple(hashes))
            if await self._callers.swap_watch_access(record, access, new):
                return pb.CreateWatchTokenResponse(watch_token=watch_token)
            record = await self._matches.load(record.match_id)  # raced with another seat: again
        raise access_kept_changing(record)

    async def revoke_watch_tokens(
        self, request: pb.RevokeWatchTokensRequest, caller: Caller
    ) -> pb.RevokeWatchTokensResponse:
        token, record, seat = await self._callers.seat_of_match(request.match_id, caller)
        for _ in range(CAS_ATTEMPTS):
            access = await self._callers.watch_access(record.match_id)
            # A new salt: every watch token derived under another one is worthless from now on.
            salt = secrets.token_bytes(SALT_BYTES)
            watch_token = auth.watch_token(token, salt)
            hashes = [b""] * len(record.token_hashes)
            hashes[seat] = auth.token_hash(watch_token)
            new = WatchAccess(salt, tuple(hashes))
            if await self._callers.swap_watch_access(record, access, new, revoke=True):
                log.info("watch tokens revoked", extra={"match_id": record.match_id, "seat": seat})
                return pb.RevokeWatchTokensResponse(watch_token=watch_token)
            record = await self._matches.load(record.match_id)
        raise access_kept_changing(record)
