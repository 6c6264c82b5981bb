"""Who holds a seat: ClaimSeat (an invitation's code for the seat's token), GetInvitation (what
an invitation opens, before a claim) and ReissueInvitation (the creator opens a seat again
under a new invitation, revoking its token).

Each decides the seat table's change on a record, and ``changes.Changes.seat_change`` commits it
exactly once (deciding again on the current record when another change won the race); a
ClaimSeat retried with its request_id gets the same token back.
"""

from __future__ import annotations

import hmac
import logging

from basra.service import auth, convert, names, records
from basra.service.caches import Matches
from basra.service.callers import Caller, Callers
from basra.service.changes import Change, Changes, fingerprint, request_id_reused
from basra.service.errors import Reason, ServiceError, internal, invalid_argument
from basra.service.metrics import Metrics
from basra.service.store import EventEntry, MatchRecord
from basra.v1 import basra_service_pb2 as pb

log = logging.getLogger("basra.rpc")


class Seats:
    """ClaimSeat, GetInvitation and ReissueInvitation."""

    def __init__(
        self, matches: Matches, callers: Callers, changes: Changes, metrics: Metrics
    ) -> None:
        self._matches = matches
        self._callers = callers
        self._changes = changes
        self._metrics = metrics

    async def claim(self, request: pb.ClaimSeatRequest) -> pb.ClaimSeatResponse:
        match_id = auth.check_match_id(request.match_id)
        if not request.invitation:
            raise invalid_argument("invitation", "is required: the code of the invitation")
        request_id = auth.check_request_id(request.request_id, creating=True)
        name = names.display_name(request.display_name, "display_name")
        asked = auth.request_hash(request_id) if request_id else b""
        fingerprinted = fingerprint(request) if request_id else b""
        invitation = request.invitation

        def claim(record: MatchRecord) -> tuple[Change | None, tuple[int, str]]:
            table = records.Table.decode(record.table) if record.table else None
            hashes = [h.invitation for h in table.holders] if table else []
            seat = auth.seat_or_none(invitation, hashes)
            if table is None or seat is None:
                raise _invitation_invalid(match_id)
            holder = table.holders[seat]
            if holder.claim == records.CLAIMED:
                done = holder.claim_request
                if asked and done and hmac.compare_digest(done[:16], asked):
                    if not hmac.compare_digest(done[16:], fingerprinted):
                        raise request_id_reused()
                    self._metrics.idempotent_replays.inc()
                    return None, (seat, _unsealed(invitation, holder.sealed))
                raise ServiceError(
                    Reason.INVITATION_CLAIMED,
                    f"this invitation to seat {seat} was claimed already",
                    {"seat": seat},
                )
            if holder.claim != records.CLAIM_OPEN:
                raise _invitation_invalid(match_id)
            # A name that looks like another seat's would let its holder pass for that player.
            others = [(other, h.name) for other, h in enumerate(table.holders) if other != seat]
            names.check_unlike(name, others, "display_name")
            # The sealed token stays only for the retries of a claim that sent a request_id.
            claimed = records.SeatHolder(
                records.CLAIMED,
                name,
                holder.invitation,
                holder.sealed if asked else b"",
                asked + fingerprinted,
            )
            changed = record._replace(table=table.with_holder(seat, claimed).encode())
            entry = _seat_entry(record.version + 1, seat, holder, claimed)
            return (changed, entry), (seat, _unsealed(invitation, holder.sealed))

        record, (seat, token) = await self._changes.seat_change(match_id, claim)
        state = self._matches.states.decode(record.state)
        view = convert.view_to_pb(
            state,
            seat,
            match_id,
            record.version,
            record.bots,
            records.seating(record.table, record.bots, state.seats),
            await self._matches.connected(match_id),
        )
        log.info("seat claimed", extra={"match_id": match_id, "seat": seat})
        return pb.ClaimSeatResponse(seat_token=pb.SeatToken(seat=seat, token=token), view=view)

    async def invitation(self, request: pb.GetInvitationRequest) -> pb.GetInvitationResponse:
        """The seat an invitation opens and whether it is still open: what ClaimSeat would
        answer of it, without a claim."""
        match_id = auth.check_match_id(request.match_id)
        if not request.invitation:
            raise invalid_argument("invitation", "is required: the code of the invitation")
        record = await self._matches.load(match_id)
        table = records.Table.decode(record.table) if record.table else None
        hashes = [h.invitation for h in table.holders] if table else []
        seat = auth.seat_or_none(request.invitation, hashes)
        if table is None or seat is None:
            raise _invitation_invalid(match_id)
        claim = table.holders[seat].claim
        if claim == records.CLAIMED:
            return pb.GetInvitationResponse(seat=seat, state=pb.INVITATION_STATE_CLAIMED)
        if claim != records.CLAIM_OPEN:
            raise _invitation_invalid(match_id)
        return pb.GetInvitationResponse(seat=seat, state=pb.INVITATION_STATE_OPEN)

    async def reissue(
        self, request: pb.ReissueInvitationRequest, caller: Caller
    ) -> pb.ReissueInvitationResponse:
        token, record, _ = await self._callers.seat_of_match(request.match_id, caller)
        target = request.seat

        def reissue(record: MatchRecord) -> tuple[Change | None, tuple[int, str]]:
            caller_seat = auth.seat_of(token, record.token_hashes)
            table = records.Table.decode(record.table) if record.table else None
            if table is None or table.creator != caller_seat:
                raise ServiceError(
                    Reason.NOT_MATCH_CREATOR,
                    "only the seat that created the match reissues its invitations",
                    {"seat": caller_seat},
                )
            seats = len(record.token_hashes)
            if target not in range(seats):
                raise invalid_argument("seat", f"must be 0..{seats - 1}")
            if target == table.creator:
                raise invalid_argument("seat", "is the creator's own seat")
            if record.bots and record.bots[target]:
                raise invalid_argument("seat", f"seat {target} is a bot seat: it has no holder")
            code, _ = auth.new_token()
            new_token, new_raw = auth.new_token()
            holder = records.SeatHolder(
                records.CLAIM_OPEN,
                invitation=auth.token_hash(code),
                sealed=auth.seal_for_invitation(code, new_raw),
            )
            hashes = list(record.token_hashes)
            revoked, hashes[target] = hashes[target], auth.token_hash(new_token)
            requests = list(record.requests)
            requests[target] = b""  # the revoked holder's request record is not the new one's
            changed = record._replace(
                token_hashes=tuple(hashes),
                requests=tuple(requests),
                table=table.with_holder(target, holder).encode(),
            )
            entry = _seat_entry(record.version + 1, target, table.holders[target], holder, revoked)
            return (changed, entry), (caller_seat, code)

        record, (seat, code) = await self._changes.seat_change(record.match_id, reissue, record)
        state = self._matches.states.decode(record.state)
        view = convert.view_to_pb(
            state,
            seat,
            record.match_id,
            record.version,
            record.bots,
            records.seating(record.table, record.bots, state.seats),
        )
        log.info("invitation reissued", extra={"match_id": record.match_id, "seat": target})
        return pb.ReissueInvitationResponse(
            invitation=pb.Invitation(seat=target, code=code), view=view
        )


def _seat_entry(
    version: int,
    seat: int,
    before: records.SeatHolder,
    holder: records.SeatHolder,
    revoked: bytes = b"",
) -> EventEntry:
    """The event entry of a change of ``seat``'s holder from ``before`` to ``holder``
    (``revoked``: the hash of the seat token it revoked)."""
    event = convert.seat_changed_to_pb(version, seat, holder.claim, holder.name)
    command = records.seat_command(seat, before, revoked)
    return EventEntry(version, command, records.encode_events((event,)), ())


def _unsealed(invitation: str, sealed: bytes) -> str:
    """The seat token sealed under ``invitation`` in the seat table."""
    try:
        return auth.token_text(auth.open_for_invitation(invitation, sealed))
    except ValueError:
        raise internal() from None  # a table whose seal its own invitation does not open


def _invitation_invalid(match_id: str) -> ServiceError:
    return ServiceError(
        Reason.INVITATION_INVALID,
        "this invitation is none of the match's: ask its creator for a new one",
        {"match_id": match_id},
    )
