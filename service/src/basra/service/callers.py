"""Who is this caller: the bearer token of a call as a seat of the match or a spectator.

Every call that names a match resolves its token here, one of four ways:

- a seat, for a call that needs one (CreateWatchToken, RevokeWatchTokens, ReissueInvitation:
  ``Callers.seat_of_match``; ListPlans: ``Callers.read``);
- a viewer, a seat or a spectator's watch token (GetMatch, Score, WatchMatch:
  ``Callers.viewer``);
- the seat of a change (Play, the next hand's Deal), resolved inside the change's
  compare-and-set loop on the record it decides on (``changes.py``) against the seat tokens
  only, so the hot path reads nothing more; a token refused there is told apart as a watch
  token by ``Callers.refused``, which costs that refusal one more read;
- nobody at all: creation, ClaimSeat and GetInvitation take no bearer token (creation.py,
  seats.py).

A spectator's token is one of the match's watch tokens: of its watch access's salt, or one of
the salt-less ones a match from before RevokeWatchTokens keeps in its record. The watch access
(read and swapped here) is what makes a token a spectator's.
"""

from __future__ import annotations

import asyncio
from typing import NamedTuple

from basra.engine import State
from basra.service import auth
from basra.service.caches import Matches
from basra.service.errors import Reason, ServiceError
from basra.service.store import MatchRecord, StoreFullError, StoreUnavailableError, WatchAccess


class Caller(NamedTuple):
    """Who makes a call, as every transport sees it.

    ``metadata`` holds the call's metadata (gRPC) or headers (HTTP) as (lower-case key, value)
    pairs; ``peer`` the client's address, for logs; ``ended`` completes when the call is over
    (the client left, cancelled or the call finished): streaming calls stop waiting on it.
    """

    metadata: auth.Metadata
    peer: str
    ended: asyncio.Future[None]


class Callers:
    """Resolves a call's token against a match's seat tokens and watch access."""

    def __init__(self, matches: Matches) -> None:
        self._matches = matches
        self._store = matches.store

    async def seat_of_match(self, match_id: str, caller: Caller) -> tuple[str, MatchRecord, int]:
        """The caller's seat token, the match and the seat, for a call that needs a seat.

        Raises:
            ServiceError: the match_id, TOKEN_MISSING, MATCH_NOT_FOUND, TOKEN_INVALID, or
                WATCH_TOKEN_READ_ONLY for one of the match's watch tokens.
        """
        auth.check_match_id(match_id)
        token = auth.bearer_token(caller.metadata)
        record = await self._matches.load(match_id)
        seat = auth.seat_or_none(token, record.token_hashes)
        if seat is None:
            await self.spectator_salt(record, token)
            raise auth.read_only()
        return token, record, seat

    async def read(self, match_id: str, caller: Caller) -> tuple[MatchRecord, int, State]:
        """The match, the caller's seat and the state, for a read-only call of a seat."""
        record, seat, state = await self.read_viewer(match_id, caller)
        if seat is None:
            raise auth.read_only()
        return record, seat, state

    async def read_viewer(
        self, match_id: str, caller: Caller
    ) -> tuple[MatchRecord, int | None, State]:
        """The match, the caller's seat (None for a spectator's watch token) and the state."""
        record, seat, _, state = await self.viewer(match_id, caller)
        return record, seat, state

    async def viewer(
        self, match_id: str, caller: Caller
    ) -> tuple[MatchRecord, int | None, bytes, State]:
        """The match, the caller's seat (None for a spectator's watch token), the watch salt
        of a spectator's token (b"" for a seat) and the state."""
        auth.check_match_id(match_id)
        token = auth.bearer_token(caller.metadata)
        record = await self._matches.load(match_id)
        seat = auth.seat_or_none(token, record.token_hashes)
        # Only a token that is no seat's costs a read of the watch access.
        salt = b"" if seat is not None else await self.spectator_salt(record, token)
        return record, seat, salt, self._matches.states.decode(record.state)

    async def refused(self, record: MatchRecord, token: str, error: ServiceError) -> ServiceError:
        """What a change answers a token that is none of ``record``'s seat tokens: ``error``
        (TOKEN_INVALID), or WATCH_TOKEN_READ_ONLY when the token is one of the match's watch
        tokens. ``record`` is the store's, fresh (the change path decided on it)."""
        try:
            await self.spectator_salt(record, token)
        except (ServiceError, StoreUnavailableError, StoreFullError):
            return error
        return auth.read_only()

    async def spectator_salt(self, record: MatchRecord, token: str) -> bytes:
        """The watch salt ``token`` is a watch token of the match under (b"": a token of a
        match from before RevokeWatchTokens, whose record holds its hash).

        Raises:
            ServiceError: PERMISSION_DENIED / TOKEN_INVALID when it is none of them (revoked
                tokens included: nothing of them is kept).
        """
        access = await self.watch_access(record.match_id)
        if access is None:
            hashes, salt = record.watch_hashes, b""
        else:
            hashes, salt = access.hashes, access.salt
        if not auth.is_one_of(token, hashes):
            raise auth.token_invalid()
        return salt

    async def watch_access(self, match_id: str) -> WatchAccess | None:
        """The match's watch access (None: never made, or expired with the match)."""
        return (await self._store.watch_access((match_id,)))[match_id]

    async def swap_watch_access(
        self,
        record: MatchRecord,
        access: WatchAccess | None,
        new: WatchAccess,
        *,
        revoke: bool = False,
    ) -> bool:
        """Replace the match's watch access ``access`` (as last read) with ``new``; False when
        another call changed it first."""
        return await self._store.swap_watch_access(record.match_id, access, new, revoke=revoke)


def access_kept_changing(record: MatchRecord) -> ServiceError:
    return ServiceError(
        Reason.VERSION_MISMATCH,
        "the match's watch tokens kept changing under this call: call it again",
        {"current_version": record.version},
    )
