"""Invitations claimed once: the creator gets its own seat's token and an invitation per other
person seat; ClaimSeat exchanges one for its seat's token once (a retry of the same claim gets
the same token); the creator reissues a seat, revoking its claimant's token; display names are
trimmed, bounded and refused with a typed reason when they hold characters that disguise text;
a bot seat never gets a token or an invitation; a claimant sees its own hand only."""

from __future__ import annotations

import io
import json
import logging
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import cast

import grpc
import pytest
import redis

from basra.client.match import Rejection, to_card
from basra.engine import decode
from basra.service import auth, logs, records
from basra.service.errors import DOMAIN
from basra.service.store import MatchRecord, keys
from basra.service.store.codec import decode_record, encode_record
from basra.v1 import basra_service_pb2 as pb
from basra.v1 import game_pb2
from tests.service.conftest import rpc_error
from tests.service.driver import audit_states, bearer, snapshot, stored_record, stub
from tests.support import ServerThread, StreamReader, wait_until

PERSON = game_pb2.BOT_LEVEL_UNSPECIFIED
GREEDY = game_pb2.BOT_LEVEL_GREEDY
RANDOM = game_pb2.BOT_LEVEL_RANDOM
CREATOR = game_pb2.SEAT_CLAIM_CREATOR
HELD = game_pb2.SEAT_CLAIM_TOKEN
OPEN = game_pb2.SEAT_CLAIM_OPEN
CLAIMED = game_pb2.SEAT_CLAIM_CLAIMED
BOT = game_pb2.SEAT_CLAIM_UNSPECIFIED


def create(
    server: ServerThread,
    *,
    rules: str = "",
    seats: int = 0,
    bots: Sequence[game_pb2.BotLevel.ValueType] = (),
    name: str = "Host",
    invitations: bool = True,
    request_id: str = "",
    seat: int = 0,
) -> pb.CreateMatchResponse:
    response: pb.CreateMatchResponse = stub(server).CreateMatch(
        pb.CreateMatchRequest(
            rules=rules,
            seats=seats,
            bots=bots,
            seat=seat,
            seed=11,
            display_name=name,
            invitations=invitations,
            request_id=request_id,
        )
    )
    return response


def claim(
    server: ServerThread, match_id: str, code: str, name: str = "Guest", request_id: str = ""
) -> pb.ClaimSeatResponse:
    response: pb.ClaimSeatResponse = stub(server).ClaimSeat(
        pb.ClaimSeatRequest(
            match_id=match_id, invitation=code, display_name=name, request_id=request_id
        )
    )
    return response


def inspect(server: ServerThread, match_id: str, code: str) -> pb.GetInvitationResponse:
    """GetInvitation, with no token."""
    response: pb.GetInvitationResponse = stub(server).GetInvitation(
        pb.GetInvitationRequest(match_id=match_id, invitation=code)
    )
    return response


def reissue(
    server: ServerThread, match_id: str, token: str, seat: int
) -> pb.ReissueInvitationResponse:
    response: pb.ReissueInvitationResponse = stub(server).ReissueInvitation(
        pb.ReissueInvitationRequest(match_id=match_id, seat=seat), metadata=bearer(token)
    )
    return response


def view(server: ServerThread, match_id: str, token: str) -> game_pb2.MatchView:
    response = stub(server).GetMatch(pb.GetMatchRequest(match_id=match_id), metadata=bearer(token))
    return response.view


def seating(seen: game_pb2.MatchView) -> list[tuple[int, str]]:
    return [(s.claim, s.display_name) for s in seen.seats]


def refused(call: Callable[[], object]) -> Rejection:
    rejection = Rejection.of(rpc_error(call))
    assert rejection.domain == DOMAIN
    return rejection


@pytest.fixture
def store(redis_url: str) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(redis_url)
    yield client
    client.close()


def test_the_creator_gets_its_own_token_and_one_invitation_per_other_person_seat(
    any_server: ServerThread,
) -> None:
    created = create(any_server, rules="egyptian", seats=4, bots=[PERSON, PERSON, GREEDY, PERSON])
    assert [t.seat for t in created.seat_tokens] == [0]
    assert [i.seat for i in created.invitations] == [1, 3]
    codes = [i.code for i in created.invitations]
    assert len(set(codes)) == 2
    assert all(len(c) == 43 for c in codes)
    assert created.seat_tokens[0].token not in codes
    assert seating(created.view) == [(CREATOR, "Host"), (OPEN, ""), (BOT, ""), (OPEN, "")]
    # Nobody holds an open seat's token: the invitation is not one.
    for code in codes:
        rejection = refused(lambda c=code: view(any_server, created.match_id, c))  # type: ignore[misc]
        assert (rejection.code, rejection.reason) == (
            grpc.StatusCode.PERMISSION_DENIED,
            "TOKEN_INVALID",
        )


def test_a_claim_hands_out_its_seats_token_once_and_every_seat_sees_the_name(
    any_server: ServerThread,
) -> None:
    created = create(any_server)
    host = created.seat_tokens[0].token
    (invitation,) = created.invitations
    watching = StreamReader(
        stub(any_server).WatchMatch(
            pb.WatchMatchRequest(match_id=created.match_id, after_version=1),
            metadata=bearer(host),
        )
    )
    claimed = claim(any_server, created.match_id, invitation.code, name="  Leïla ")
    assert claimed.seat_token.seat == 1
    token = claimed.seat_token.token
    assert claimed.view.seat == 1
    assert claimed.view.version == 2  # the claim is a version of its own
    assert seating(claimed.view) == [(CREATOR, "Host"), (CLAIMED, "Leïla")]
    assert seating(view(any_server, created.match_id, token)) == seating(claimed.view)
    assert seating(view(any_server, created.match_id, host)) == seating(claimed.view)
    # The host's stream hears of it: a SeatChanged event, its version complete.
    wait_until(lambda: watching.has(2), what="the host's stream receives the claim")
    (changed,) = [e for e in watching.events if e.version == 2]
    assert changed.WhichOneof("event") == "seat_changed"
    assert (changed.seat_changed.seat, changed.seat_changed.claim) == (1, CLAIMED)
    assert changed.seat_changed.display_name == "Leïla"
    assert changed.version_complete
    watching.close()
    # The same invitation, claimed again by someone else: refused, nothing changes.
    rejection = refused(lambda: claim(any_server, created.match_id, invitation.code, "Mallory"))
    assert (rejection.code, rejection.reason) == (
        grpc.StatusCode.FAILED_PRECONDITION,
        "INVITATION_CLAIMED",
    )
    assert rejection.metadata["seat"] == "1"
    assert seating(view(any_server, created.match_id, token)) == seating(claimed.view)
    assert view(any_server, created.match_id, token).version == 2


def test_a_second_claim_changes_nothing_stored(server: ServerThread, store: redis.Redis) -> None:
    created = create(server)
    (invitation,) = created.invitations
    claim(server, created.match_id, invitation.code, request_id=str(uuid.uuid4()))
    before = snapshot(store, created.match_id)
    for request_id in ("", str(uuid.uuid4())):
        rejection = refused(
            lambda r=request_id: claim(server, created.match_id, invitation.code, "Bob", r)  # type: ignore[misc]
        )
        assert rejection.reason == "INVITATION_CLAIMED"
    assert snapshot(store, created.match_id) == before


def test_a_claim_retried_with_its_request_id_answers_the_same_token_and_claims_once(
    any_server: ServerThread,
) -> None:
    created = create(any_server)
    (invitation,) = created.invitations
    request_id = str(uuid.uuid4())
    first = claim(any_server, created.match_id, invitation.code, "Guest", request_id=request_id)
    again = claim(
        any_server, created.match_id, invitation.code, "Guest", request_id=request_id.upper()
    )
    assert again.seat_token == first.seat_token
    assert again.view.version == first.view.version == 2  # not claimed twice
    # The same request_id for another claim (another name) is a reused id, not a retry.
    rejection = refused(
        lambda: claim(any_server, created.match_id, invitation.code, "Other", request_id)
    )
    assert (rejection.code, rejection.reason) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "REQUEST_ID_REUSED",
    )
    assert rejection.metadata["field"] == "request_id"


@pytest.mark.parametrize(
    "request_id",
    [
        "1",
        "claim-1",
        "00000000-0000-0000-0000-000000000000",
        "6ba7b810-9dad-11d1-80b4-00c04fd430c8",
    ],
)
def test_a_claims_request_id_is_a_random_uuid_as_secret_as_the_token_it_returns(
    server: ServerThread, store: redis.Redis, request_id: str
) -> None:
    """Anyone holding the link could otherwise get the claimer's token back by repeating the
    claim with a guessable request_id and the public display name."""
    created = create(server)
    (invitation,) = created.invitations
    before = snapshot(store, created.match_id)
    rejection = refused(
        lambda: claim(server, created.match_id, invitation.code, "Guest", request_id)
    )
    assert (rejection.code, rejection.reason) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "INVALID_ARGUMENT",
    )
    assert rejection.metadata["field"] == "request_id"
    assert snapshot(store, created.match_id) == before


def test_a_claim_without_request_id_keeps_no_copy_of_the_token(
    server: ServerThread, store: redis.Redis
) -> None:
    created = create(server)
    (invitation,) = created.invitations
    assert records.Table.decode(stored_record(store, created.match_id).table).holders[1].sealed
    claim(server, created.match_id, invitation.code)
    holder = records.Table.decode(stored_record(store, created.match_id).table).holders[1]
    assert (holder.claim, holder.sealed, holder.claim_request) == (CLAIMED, b"", b"")
    rejection = refused(lambda: claim(server, created.match_id, invitation.code))
    assert rejection.reason == "INVITATION_CLAIMED"


def test_reissuing_a_claimed_seat_revokes_its_token_and_the_new_invitation_works(
    any_server: ServerThread,
) -> None:
    created = create(any_server)
    host = created.seat_tokens[0].token
    (invitation,) = created.invitations
    old = claim(any_server, created.match_id, invitation.code, "Lost").seat_token.token
    stream = StreamReader(
        stub(any_server).WatchMatch(
            pb.WatchMatchRequest(match_id=created.match_id, after_version=2), metadata=bearer(old)
        )
    )
    reissued = reissue(any_server, created.match_id, host, 1)
    assert reissued.invitation.seat == 1
    assert reissued.invitation.code != invitation.code
    assert reissued.view.seat == 0
    assert reissued.view.version == 3
    assert seating(reissued.view) == [(CREATOR, "Host"), (OPEN, "")]
    # The old claimant's open stream gets the change, then ends with the typed reason.
    wait_until(lambda: stream.error is not None, what="the revoked seat's stream ends")
    assert stream.error is not None
    ended = Rejection.of(stream.error)
    assert (ended.code, ended.reason) == (grpc.StatusCode.PERMISSION_DENIED, "SEAT_TOKEN_REVOKED")
    assert ended.metadata["seat"] == "1"
    assert [e.WhichOneof("event") for e in stream.events] == ["seat_changed"]
    # Its token no longer works for anything, and neither does the old invitation.
    for call in (
        lambda: view(any_server, created.match_id, old),
        lambda: stub(any_server).Deal(
            pb.DealRequest(match_id=created.match_id), metadata=bearer(old)
        ),
        lambda: next(
            iter(
                stub(any_server).WatchMatch(
                    pb.WatchMatchRequest(match_id=created.match_id), metadata=bearer(old)
                )
            )
        ),
    ):
        rejection = refused(call)
        assert (rejection.code, rejection.reason) == (
            grpc.StatusCode.PERMISSION_DENIED,
            "TOKEN_INVALID",
        )
    rejection = refused(lambda: claim(any_server, created.match_id, invitation.code))
    assert (rejection.code, rejection.reason) == (
        grpc.StatusCode.PERMISSION_DENIED,
        "INVITATION_INVALID",
    )
    fresh = claim(any_server, created.match_id, reissued.invitation.code, "Found")
    assert fresh.seat_token.seat == 1
    assert fresh.seat_token.token != old
    assert seating(view(any_server, created.match_id, fresh.seat_token.token)) == [
        (CREATOR, "Host"),
        (CLAIMED, "Found"),
    ]


def test_reissuing_an_unclaimed_invitation_replaces_it(any_server: ServerThread) -> None:
    created = create(any_server)
    (invitation,) = created.invitations
    reissued = reissue(any_server, created.match_id, created.seat_tokens[0].token, 1)
    rejection = refused(lambda: claim(any_server, created.match_id, invitation.code))
    assert rejection.reason == "INVITATION_INVALID"
    assert claim(any_server, created.match_id, reissued.invitation.code).seat_token.seat == 1


def test_a_play_retried_after_a_seat_change_answers_as_it_did(any_server: ServerThread) -> None:
    """A retried Play is answered by replaying the match's history to the version it ran on:
    the seat changes in that history change no card."""
    created = create(any_server, rules="egyptian", seats=4)
    tokens = {0: created.seat_tokens[0].token}
    for invitation in created.invitations:
        tokens[invitation.seat] = claim(
            any_server, created.match_id, invitation.code, f"Guest {invitation.seat}"
        ).seat_token.token
    seen = view(any_server, created.match_id, tokens[0])
    assert seen.version == 4  # three claims
    mover = seen.to_play
    plans = stub(any_server).ListPlans(
        pb.ListPlansRequest(match_id=created.match_id), metadata=bearer(tokens[mover])
    )
    option = plans.cards[0]
    request = pb.PlayRequest(
        match_id=created.match_id,
        card=option.card,
        plan_id=1 if option.plans else 0,
        request_id="play-1",
    )
    first = stub(any_server).Play(request, metadata=bearer(tokens[mover]))
    # Another seat changes holder after the play, then the play is retried.
    other = next(s for s in (1, 2, 3) if s != mover)
    reissue(any_server, created.match_id, tokens[0], other)
    again = stub(any_server).Play(request, metadata=bearer(tokens[mover]))
    assert again == first
    assert first.view.version == 5
    assert view(any_server, created.match_id, tokens[0]).version == 6


def test_only_the_creator_reissues_and_only_another_person_seat(
    server: ServerThread, store: redis.Redis
) -> None:
    created = create(server, rules="egyptian", seats=4, bots=[PERSON, PERSON, RANDOM, PERSON])
    host = created.seat_tokens[0].token
    guest = claim(server, created.match_id, created.invitations[0].code).seat_token.token
    watch = stub(server).CreateWatchToken(
        pb.CreateWatchTokenRequest(match_id=created.match_id), metadata=bearer(host)
    )
    before = snapshot(store, created.match_id)
    cases = [
        (guest, 3, grpc.StatusCode.PERMISSION_DENIED, "NOT_MATCH_CREATOR"),
        (watch.watch_token, 1, grpc.StatusCode.PERMISSION_DENIED, "WATCH_TOKEN_READ_ONLY"),
        (host, 0, grpc.StatusCode.INVALID_ARGUMENT, "INVALID_ARGUMENT"),  # its own seat
        (host, 2, grpc.StatusCode.INVALID_ARGUMENT, "INVALID_ARGUMENT"),  # a bot seat
        (host, 4, grpc.StatusCode.INVALID_ARGUMENT, "INVALID_ARGUMENT"),  # no such seat
        (host, -1, grpc.StatusCode.INVALID_ARGUMENT, "INVALID_ARGUMENT"),
        ("x" * 43, 1, grpc.StatusCode.PERMISSION_DENIED, "TOKEN_INVALID"),
    ]
    for token, seat, code, reason in cases:
        rejection = refused(
            lambda t=token, s=seat: reissue(server, created.match_id, t, s)  # type: ignore[misc]
        )
        assert (rejection.code, rejection.reason) == (code, reason), (seat, rejection)
        if code is grpc.StatusCode.INVALID_ARGUMENT:
            assert rejection.metadata["field"] == "seat"
            assert "seat" in rejection.field_violations
    assert snapshot(store, created.match_id) == before


def test_a_claim_with_a_bad_invitation_is_refused_and_changes_nothing(
    server: ServerThread, store: redis.Redis
) -> None:
    created = create(server)
    other = create(server)
    before = snapshot(store, created.match_id)
    cases = [
        (created.match_id, "", grpc.StatusCode.INVALID_ARGUMENT, "INVALID_ARGUMENT"),
        (created.match_id, "y" * 43, grpc.StatusCode.PERMISSION_DENIED, "INVITATION_INVALID"),
        (
            created.match_id,
            other.invitations[0].code,
            grpc.StatusCode.PERMISSION_DENIED,
            "INVITATION_INVALID",
        ),
        (
            created.match_id,
            created.seat_tokens[0].token,  # a seat token is no invitation
            grpc.StatusCode.PERMISSION_DENIED,
            "INVITATION_INVALID",
        ),
        ("N" * 22, created.invitations[0].code, grpc.StatusCode.NOT_FOUND, "MATCH_NOT_FOUND"),
        (
            "bad id",
            created.invitations[0].code,
            grpc.StatusCode.INVALID_ARGUMENT,
            "INVALID_ARGUMENT",
        ),
    ]
    for match_id, code, status, reason in cases:
        rejection = refused(lambda m=match_id, c=code: claim(server, m, c))  # type: ignore[misc]
        assert (rejection.code, rejection.reason) == (status, reason), rejection
    assert snapshot(store, created.match_id) == before
    assert claim(server, created.match_id, created.invitations[0].code).seat_token.seat == 1


def test_an_invitation_tells_its_seat_and_whether_it_is_open_before_a_claim_changing_nothing(
    server: ServerThread, store: redis.Redis
) -> None:
    """GetInvitation: open, then claimed; a reissued or mistyped code answers as ClaimSeat
    would (INVITATION_INVALID) and the reissued one is open; nothing stored changes."""
    created = create(server, rules="persian", seats=3, bots=[PERSON, GREEDY, PERSON])
    (invitation,) = created.invitations
    assert invitation.seat == 2
    before = snapshot(store, created.match_id)
    opened = inspect(server, created.match_id, invitation.code)
    assert (opened.seat, opened.state) == (2, pb.INVITATION_STATE_OPEN)
    assert snapshot(store, created.match_id) == before  # asking is no change
    claim(server, created.match_id, invitation.code, "Guest")
    taken = inspect(server, created.match_id, invitation.code)
    assert (taken.seat, taken.state) == (2, pb.INVITATION_STATE_CLAIMED)
    reissued = reissue(server, created.match_id, created.seat_tokens[0].token, 2)
    after = snapshot(store, created.match_id)
    cases = [
        (
            created.match_id,
            invitation.code,
            grpc.StatusCode.PERMISSION_DENIED,
            "INVITATION_INVALID",
        ),
        (created.match_id, "y" * 43, grpc.StatusCode.PERMISSION_DENIED, "INVITATION_INVALID"),
        (created.match_id, "", grpc.StatusCode.INVALID_ARGUMENT, "INVALID_ARGUMENT"),
        (
            created.match_id,
            created.seat_tokens[0].token,  # a seat token is no invitation
            grpc.StatusCode.PERMISSION_DENIED,
            "INVITATION_INVALID",
        ),
        ("N" * 22, invitation.code, grpc.StatusCode.NOT_FOUND, "MATCH_NOT_FOUND"),
        ("bad id", invitation.code, grpc.StatusCode.INVALID_ARGUMENT, "INVALID_ARGUMENT"),
    ]
    for match_id, code, status, reason in cases:
        rejection = refused(lambda m=match_id, c=code: inspect(server, m, c))  # type: ignore[misc]
        assert (rejection.code, rejection.reason) == (status, reason), rejection
    fresh = inspect(server, created.match_id, reissued.invitation.code)
    assert (fresh.seat, fresh.state) == (2, pb.INVITATION_STATE_OPEN)
    assert snapshot(store, created.match_id) == after


BAD_NAMES = [
    ("", "length"),
    ("   ", "length"),
    ("\t\n", "length"),
    ("a" * 33, "length"),
    ("x" * 4096, "length"),
    ("evil\u202egnp.exe", "character"),  # right-to-left override
    ("a\u2066b\u2069", "character"),  # isolate
    ("\u200fname", "character"),  # right-to-left mark
    ("a\u061cb", "character"),  # Arabic letter mark
    ("bell\x07", "character"),
    ("two\nlines", "character"),
    ("null\x00", "character"),
    ("a\u2028b", "character"),  # line separator
    ("soft\u00adhyphen", "character"),  # an invisible format character
    ("zero\u200bwidth", "character"),
    ("tag\U000e0041", "character"),
    ("private\ue000", "character"),
    ("\u3164", "blank"),  # Hangul filler: default-ignorable, drawn as nothing
    ("\u3164\u3164 \u3164", "blank"),
    ("\u115f", "blank"),  # Hangul choseong filler
    ("\u2800", "blank"),  # Braille pattern blank: a symbol with no dot
    ("\u0301\u0308", "blank"),  # combining marks alone
    ("\u200c", "blank"),  # a joiner alone
    ("\ufe0f\u200d\u20dd", "blank"),  # a variation selector, a joiner, an enclosing mark
    ("x" + "\u0301" * 31, "marks"),  # stacked marks, drawn over the lines around the name
    ("x" + "\u0301" * 5, "marks"),  # one more than the bound
    ("x\u0301\u0301\u200d\u0301\u0301\u0301", "marks"),  # a joiner does not end the run
]


@pytest.mark.parametrize(("name", "rule"), BAD_NAMES, ids=[repr(n)[:20] for n, _ in BAD_NAMES])
def test_a_bad_display_name_is_refused_with_its_reason_and_changes_nothing(
    server: ServerThread, store: redis.Redis, name: str, rule: str
) -> None:
    created = create(server)
    before = snapshot(store, created.match_id)
    rejection = refused(lambda: claim(server, created.match_id, created.invitations[0].code, name))
    assert (rejection.code, rejection.reason) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "DISPLAY_NAME_INVALID",
    )
    assert rejection.metadata["field"] == "display_name"
    assert rejection.metadata["rule"] == rule
    assert "display_name" in rejection.field_violations
    if rule == "character":
        assert rejection.metadata["code_point"].startswith("U+")
    assert snapshot(store, created.match_id) == before
    # Nor is a match created under that name (the creator's empty name means no name).
    if name:
        keys_before = sorted(store.scan_iter("basra:{*"))
        rejection = refused(lambda: create(server, name=name))
        assert rejection.reason == "DISPLAY_NAME_INVALID"
        assert sorted(store.scan_iter("basra:{*")) == keys_before


@pytest.mark.parametrize(
    ("given", "shown"),
    [
        ("  Leïla  ", "Leïla"),
        ("Cafe\u0301", "Café"),  # normalized to NFC
        ("\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645",) * 2,  # Persian, with a non-joiner
        (
            "\U0001f468\u200d\U0001f469\u200d\U0001f467",
            "\U0001f468\u200d\U0001f469\u200d\U0001f467",
        ),
        ("\u0633\u0627\u0631\u0627",) * 2,  # Arabic script, right to left
        ("x" * 32, "x" * 32),
        ("Ann Lee", "Ann Lee"),
        # Arabic with its vowels: shadda and fatha stacked on one letter.
        # (NFC puts the fatha before the shadda: canonical order.)
        (
            "\u0645\u064f\u062d\u064e\u0645\u0651\u064e\u062f",
            "\u0645\u064f\u062d\u064e\u0645\u064e\u0651\u062f",
        ),
        # Persian with its vowels and a non-joiner.
        ("\u0645\u064e\u0646\u0650\u06cc\u0698\u0647\u200c\u0647\u0627",) * 2,
        # Pointed Hebrew: dagesh, sin dot and qamats on one letter.
        ("\u05d9\u05b4\u05e9\u05b8\u05bc\u05c2\u05e9\u05db\u05b8\u05e8",) * 2,
        ("x" + "\u0301" * 4,) * 2,  # as many marks in a row as a name may hold
        ("\u2764\ufe0f Ann",) * 2,  # an emoji with its variation selector
        # NFC, not NFKC: a compatibility character is kept as typed.
        ("\ufb01 Lee", "\ufb01 Lee"),  # the fi ligature
        ("\u2460", "\u2460"),  # a circled digit
        ("\uff21lice", "\uff21lice"),  # a fullwidth A
    ],
)
def test_a_good_display_name_is_trimmed_and_normalized(
    any_server: ServerThread, given: str, shown: str
) -> None:
    created = create(any_server, name=given)
    assert seating(created.view)[0] == (CREATOR, shown)
    # Claimed at another table: at the same one the name would look like the creator's.
    hosted = create(any_server)
    claimed = claim(any_server, hosted.match_id, hosted.invitations[0].code, given)
    assert seating(claimed.view) == [(CREATOR, "Host"), (CLAIMED, shown)]


LOOK_ALIKES = [
    ("Alice", "\u0410lice"),  # a Cyrillic A
    ("\u0410lice", "Alice"),
    ("Alice", "\uff21lice"),  # a fullwidth A
    ("\uff21lice", "Alice"),
    ("Alice", "Alice"),
    ("Alice", "  Alice "),
    ("Alice", "Al\u200cice"),  # with a zero-width non-joiner
    ("Alice", "Alice\u3164"),  # with a Hangul filler
    ("Ann Lee", "Ann  Lee"),  # a page draws both spaces as one
    ("Ann Lee", "Ann\u00a0Lee"),  # a no-break space
    ("Bob0", "BobO"),
    ("\u0645\u062d\u0645\u062f", "\u0645\u062d\u0645\u062f\u200c"),
]


@pytest.mark.parametrize(
    ("sitting", "claiming"), LOOK_ALIKES, ids=[f"{s!a}~{c!a}" for s, c in LOOK_ALIKES]
)
def test_a_name_that_looks_like_the_creators_is_refused_and_changes_nothing(
    server: ServerThread, store: redis.Redis, sitting: str, claiming: str
) -> None:
    created = create(server, name=sitting)
    before = snapshot(store, created.match_id)
    rejection = refused(
        lambda: claim(server, created.match_id, created.invitations[0].code, claiming)
    )
    assert (rejection.code, rejection.reason) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "DISPLAY_NAME_INVALID",
    )
    assert rejection.metadata["field"] == "display_name"
    assert rejection.metadata["rule"] == "confusable"
    assert rejection.metadata["seat"] == "0"
    assert "display_name" in rejection.field_violations
    assert snapshot(store, created.match_id) == before


def test_a_name_that_looks_like_a_claimants_is_refused_and_others_are_not(
    server: ServerThread, store: redis.Redis
) -> None:
    created = create(server, rules="egyptian", seats=4, bots=[PERSON] * 4)
    codes = [invitation.code for invitation in created.invitations]
    claim(server, created.match_id, codes[0], "Alice")
    before = snapshot(store, created.match_id)
    rejection = refused(lambda: claim(server, created.match_id, codes[1], "\u0410lice"))
    assert (rejection.reason, rejection.metadata["rule"]) == ("DISPLAY_NAME_INVALID", "confusable")
    assert rejection.metadata["seat"] == str(created.invitations[0].seat)
    assert snapshot(store, created.match_id) == before
    # Different names sit side by side, similar ones included.
    claim(server, created.match_id, codes[1], "Alicia")
    last = claim(server, created.match_id, codes[2], "Al\u00ed")
    assert [name for _, name in seating(last.view)] == ["Host", "Alice", "Alicia", "Al\u00ed"]


def test_a_claimant_sees_its_own_hand_only(server: ServerThread, store: redis.Redis) -> None:
    created = create(server, rules="egyptian", seats=4, bots=[PERSON, PERSON, GREEDY, PERSON])
    claimed = claim(server, created.match_id, created.invitations[1].code)
    seat = claimed.seat_token.seat
    assert seat == 3
    state = decode(stored_record(store, created.match_id).state)
    hands = [sorted(str(c) for c in hand) for hand in state.hands]
    assert sorted(str(to_card(c)) for c in claimed.view.hand) == hands[seat]
    assert len(claimed.view.hand) == len(state.hands[seat]) > 0
    others = {card for s, hand in enumerate(hands) if s != seat for card in hand}
    events = StreamReader(
        stub(server).WatchMatch(
            pb.WatchMatchRequest(match_id=created.match_id),
            metadata=bearer(claimed.seat_token.token),
        )
    )
    wait_until(lambda: events.has(2), what="the claimant's stream catches up")
    events.close()
    dealt = [
        str(to_card(c))
        for e in events.events
        if e.HasField("hand_started")
        for c in e.hand_started.your_cards
    ]
    assert sorted(dealt) == hands[seat]
    assert not others & {str(to_card(c)) for c in claimed.view.hand}
    assert [s.hand_size for s in claimed.view.seats] == [len(h) for h in hands]


def test_a_bot_seat_never_gets_a_token_or_an_invitation(any_server: ServerThread) -> None:
    created = create(any_server, rules="egyptian", seats=4, bots=[PERSON, GREEDY, RANDOM, PERSON])
    assert [t.seat for t in created.seat_tokens] == [0]
    assert [i.seat for i in created.invitations] == [3]
    host = created.seat_tokens[0].token
    seen = view(any_server, created.match_id, host)
    assert [(s.bot, s.claim) for s in seen.seats][1:3] == [(GREEDY, BOT), (RANDOM, BOT)]
    assert [s.connected for s in seen.seats][1:3] == [True, True]  # the service plays them
    for seat in (1, 2):
        rejection = refused(
            lambda s=seat: reissue(any_server, created.match_id, host, s)  # type: ignore[misc]
        )
        assert rejection.reason == "INVALID_ARGUMENT"


def test_a_match_created_without_invitations_hands_out_every_token_as_before(
    any_server: ServerThread,
) -> None:
    created = create(any_server, invitations=False, name="")
    assert [t.seat for t in created.seat_tokens] == [0, 1]
    assert not created.invitations
    assert seating(created.view) == [(CREATOR, ""), (HELD, "")]
    # The creator can still give a lost seat to someone else: the held token stops working.
    lost = created.seat_tokens[1].token
    reissued = reissue(any_server, created.match_id, created.seat_tokens[0].token, 1)
    assert refused(lambda: view(any_server, created.match_id, lost)).reason == "TOKEN_INVALID"
    claimed = claim(any_server, created.match_id, reissued.invitation.code, "Newcomer")
    assert seating(claimed.view) == [(CREATOR, ""), (CLAIMED, "Newcomer")]


def test_a_retried_creation_answers_the_same_token_and_invitations(
    any_server: ServerThread,
) -> None:
    request_id = str(uuid.uuid4())
    first = create(
        any_server,
        rules="egyptian",
        seats=4,
        bots=[PERSON, PERSON, GREEDY, PERSON],
        request_id=request_id,
    )
    again = create(
        any_server,
        rules="egyptian",
        seats=4,
        bots=[PERSON, PERSON, GREEDY, PERSON],
        request_id=request_id,
    )
    assert again == first
    assert len(first.invitations) == 2
    # The same request_id asking without invitations is another request.
    rejection = refused(
        lambda: create(
            any_server,
            rules="egyptian",
            seats=4,
            bots=[PERSON, PERSON, GREEDY, PERSON],
            request_id=request_id,
            invitations=False,
        )
    )
    assert rejection.reason == "REQUEST_ID_REUSED"


def test_a_creations_sealed_copy_holds_no_invited_seats_token(
    server: ServerThread, store: redis.Redis
) -> None:
    """Whoever knows the creating request_id can have the creation answered again; the copy
    that answers it holds what the creation handed out (the creator's token, the invitations),
    never an invited seat's token."""
    request_id = str(uuid.uuid4())
    created = create(
        server,
        rules="egyptian",
        seats=4,
        bots=[PERSON, PERSON, GREEDY, PERSON],
        request_id=request_id,
    )
    guest = claim(server, created.match_id, created.invitations[0].code).seat_token.token
    record = stored_record(store, created.match_id)
    creation = records.Creation.decode(record.creation)
    assert creation is not None
    # The seats not invited in seat order (the creator's, the bot's unused one), then the codes.
    kept = auth.open_tokens(request_id, creation.sealed_tokens, 4)
    assert kept[0] == auth.token_raw(created.seat_tokens[0].token)
    assert kept[2:] == [auth.token_raw(i.code) for i in created.invitations]
    assert auth.token_raw(guest) not in kept


@pytest.mark.parametrize("invitations", [True, False])
@pytest.mark.parametrize("creator", [0, 1, 3])
def test_a_creations_seating_is_its_tables(invitations: bool, creator: int) -> None:
    from basra.service.creation import _creation_seating, _creation_table, _invited_seats

    levels = bytes((0, 0, GREEDY, 0))
    tokens = [auth.new_token()[0] for _ in range(4)]
    invited = _invited_seats(4, levels, creator, invitations=invitations)
    codes = [auth.new_token()[0] for _ in invited]
    table = _creation_table(levels, creator, "Host", tokens, invited, codes)
    assert records.seating(table, levels, 4) == _creation_seating(
        levels, creator, "Host", invited, 4
    )


def test_invitations_and_tokens_are_stored_only_as_hashes_and_never_logged(
    server: ServerThread, store: redis.Redis
) -> None:
    buffer = io.StringIO()
    logs.setup("DEBUG", buffer)
    try:
        created = create(
            server, rules="egyptian", seats=4, bots=[PERSON, PERSON, GREEDY, PERSON], request_id=""
        )
        host = created.seat_tokens[0].token
        codes = [i.code for i in created.invitations]
        first = claim(
            server, created.match_id, codes[0], request_id=str(uuid.uuid4())
        ).seat_token.token
        refused(lambda: claim(server, created.match_id, codes[0]))
        reissued = reissue(server, created.match_id, host, 3).invitation.code
        second = claim(server, created.match_id, reissued, "Robin").seat_token.token
    finally:
        logging.getLogger("basra").handlers.clear()
    secrets = [host, first, second, reissued, *codes]
    lines = buffer.getvalue().splitlines()
    assert any(json.loads(line).get("msg") == "seat claimed" for line in lines)
    assert any(json.loads(line).get("msg") == "invitation reissued" for line in lines)
    for line in lines:
        for secret in secrets:
            assert secret not in line
    stored = b"".join(
        stored_bytes(store, key) for key in store.scan_iter(f"basra:{{{created.match_id}}}:*")
    )
    assert len(stored) > 500  # the record and its history
    for secret in secrets:
        assert secret.encode() not in stored
        assert auth.token_raw(secret) not in stored
    # What is kept: the hashes.
    record = stored_record(store, created.match_id)
    assert auth.token_hash(second) == record.token_hashes[3]
    table = records.Table.decode(record.table)
    assert table.holders[3].invitation == auth.token_hash(reissued)


def stored_bytes(store: redis.Redis, key: bytes) -> bytes:
    """Every byte a key of a match holds, as stored (no dump: it compresses)."""
    kind = store.type(key)
    if kind == b"string":
        return cast(bytes, store.get(key))
    if kind == b"stream":
        entries = cast(list[tuple[bytes, dict[bytes, bytes]]], store.xrange(key))
        return b"".join(k + v for _, fields in entries for k, v in fields.items())
    assert kind == b"zset", kind
    return b"".join(cast(list[bytes], store.zrange(key, 0, -1)))


def test_the_audit_history_replays_through_claims_and_reissues(
    server: ServerThread, store: redis.Redis
) -> None:
    created = create(server)
    claim(server, created.match_id, created.invitations[0].code)
    reissue(server, created.match_id, created.seat_tokens[0].token, 1)
    states = audit_states(store, created.match_id)
    assert sorted(states) == [1, 2, 3]
    assert (
        states[1] == states[2] == states[3] == decode(stored_record(store, created.match_id).state)
    )
    stream = cast(
        list[tuple[bytes, dict[bytes, bytes]]], store.xrange(keys.events_key(created.match_id))
    )
    commands = [fields[keys.COMMAND.encode()][:1] for _, fields in stream]
    assert commands == [records.NEW_MATCH, records.SEAT, records.SEAT]


@pytest.mark.parametrize(
    "table",
    [
        b"",
        records.Table(0, (records.SeatHolder(CREATOR, "Host"), records.SeatHolder(HELD))).encode(),
        records.Table(
            1,
            (
                records.SeatHolder(
                    CLAIMED, "\u0633\u0627\u0631\u0627", b"i" * 32, b"s" * 48, b"r" * 32
                ),
                records.SeatHolder(CREATOR, "x" * 32),
            ),
        ).encode(),
    ],
)
@pytest.mark.parametrize("levels", [b"", b"\x00\x03"])
@pytest.mark.parametrize("watch", [(), (b"w" * 32, b"x" * 32)])
def test_a_record_keeps_its_seat_table_through_the_codec(
    table: bytes, levels: bytes, watch: tuple[bytes, ...]
) -> None:
    record = MatchRecord(
        match_id="m",
        version=5,
        state=b"state",
        token_hashes=(b"a" * 32, bytes(32)),
        creation=b"",
        requests=(b"", b"r"),
        watch_hashes=watch,
        bots=levels,
        table=table,
    )
    assert decode_record("m", encode_record(record)) == record
    if table:
        assert records.Table.decode(table).encode() == table
