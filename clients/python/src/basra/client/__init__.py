"""The Python client of the Basra service, for frontend teams and bot authors.

A whole match between two greedy bots (both seats played by one program)::

    from basra.client import Client, cards, greedy_choice
    from basra.v1.game_pb2 import MATCH_STATUS_HAND_OVER, MATCH_STATUS_MATCH_OVER

    with Client("localhost:50051") as client:
        match = client.create_match()  # holds both seats' tokens
        view = match.view()
        while view.status != MATCH_STATUS_MATCH_OVER:
            if view.status == MATCH_STATUS_HAND_OVER:
                match.deal()
            else:
                seat = match.seat(view.turn)  # acts with that seat's token
                card, plan_id = greedy_choice(seat.plans())
                played = seat.play(card, plan_id, expected_version=view.version).played
                # The API counts seats from 0; people read them from 1, as the web table shows.
                print(f"seat {played.seat + 1} plays {cards.text([played.card])}")
            view = match.view()
        print("seat", match.score().winner + 1, "wins")

``Client`` (synchronous) and ``AsyncClient`` (``basra.client.aio``, asyncio) offer the same
calls. Every change carries a fresh UUIDv4 request id, kept for all attempts of that call: a
call that meets UNAVAILABLE or DEADLINE_EXCEEDED is retried with bounded backoff
(``RetryPolicy``) and applied once; a rejection is never retried and raises a typed
``BasraError`` (see ``basra.client.errors``). ``Seat.watch()`` iterates over the events
and resumes a dropped stream after the last complete version, so each event comes exactly once.

Invitations: ``client.create_match(invitations=True, display_name="Host")`` keeps the creator's
seat token and one invitation code per other person seat (``match.invitations``);
``client.claim_seat(match_id, code, "Guest")`` exchanges a code for its seat, once (retried with
its request id, it answers the same token); ``match.reissue_invitation(seat)`` gives a seat a
new code and revokes its claimant's token.

Spectators: ``match.create_watch_token()`` (or ``Client.create_watch_token``) gives a read-only
watch token to hand out; ``client.spectate(match_id, watch_token)`` reads the public view,
score and events with it; ``match.revoke_watch_tokens()`` ends every watch token handed out so
far (open spectator watches then raise ``AuthError``) and returns the seat's new one.
"""

from basra.client import cards
from basra.client.aio import AsyncClient, AsyncMatch, AsyncSeat, AsyncSpectator, AsyncWatch
from basra.client.bots import greedy_choice, random_choice
from basra.client.errors import (
    AuthError,
    BasraError,
    InvalidRequestError,
    MatchNotFoundError,
    OutOfRangeError,
    RateLimitedError,
    RuleViolationError,
    ServerError,
    UnavailableError,
    VersionMismatchError,
)
from basra.client.retry import NO_RETRY, RetryPolicy
from basra.client.sync import Client, Match, Seat, Spectator, Watch

__all__ = [
    "NO_RETRY",
    "AsyncClient",
    "AsyncMatch",
    "AsyncSeat",
    "AsyncSpectator",
    "AsyncWatch",
    "AuthError",
    "BasraError",
    "Client",
    "InvalidRequestError",
    "Match",
    "MatchNotFoundError",
    "OutOfRangeError",
    "RateLimitedError",
    "RetryPolicy",
    "RuleViolationError",
    "Seat",
    "ServerError",
    "Spectator",
    "UnavailableError",
    "VersionMismatchError",
    "Watch",
    "cards",
    "greedy_choice",
    "random_choice",
]
