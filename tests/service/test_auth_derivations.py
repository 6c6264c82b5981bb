"""What the store keeps is derived the same way in every release: known answers.

Stored records hold request hashes, token hashes and match ids derived from request ids; a
change to any derivation (a prefix, a length) would orphan the records of matches in flight, so
each is pinned to the value an independent computation gives.
"""

from __future__ import annotations

import base64
import hashlib
import re

import pytest

from basra.service import auth
from basra.service.errors import ServiceError


def test_request_hash_is_the_first_16_bytes_of_a_prefixed_sha256() -> None:
    expected = hashlib.sha256(b"basra/request/req-0001").digest()[:16]
    assert auth.request_hash("req-0001") == expected


def test_token_hash_is_the_sha256_of_the_token_text() -> None:
    assert auth.token_hash("abc") == hashlib.sha256(b"abc").digest()


def test_match_id_for_a_request_id_is_a_prefixed_sha256_in_base64url() -> None:
    digest = hashlib.sha256(b"basra/match-id/req-0001-abcdef").digest()[:16]
    expected = base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
    assert auth.match_id_for("req-0001-abcdef") == expected
    assert len(expected) == 22


def test_a_random_match_id_holds_128_bits_in_22_characters() -> None:
    ids = {auth.new_match_id() for _ in range(50)}
    assert len(ids) == 50
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{22}", i) for i in ids)


def test_sealed_tokens_refuse_another_request_id_with_a_clear_message() -> None:
    raws = [bytes(range(32)), bytes(range(32, 64))]
    sealed = auth.seal_tokens("request-0001-abcdef", raws)
    with pytest.raises(ValueError, match=r"^sealed tokens do not open") as refused:
        auth.open_tokens("request-0002-abcdef", sealed, 2)
    assert str(refused.value) == "sealed tokens do not open with this request_id"


def test_token_refusals_tell_the_caller_what_to_send() -> None:
    with pytest.raises(ServiceError) as missing:
        auth.bearer_token([("authorization", "Basic abc")])
    assert (missing.value.reason, str(missing.value)) == (
        "TOKEN_MISSING",
        "send the seat token as 'authorization: Bearer <token>' metadata",
    )
    with pytest.raises(ServiceError) as invalid:
        auth.seat_of("nope", [auth.token_hash("a"), auth.token_hash("b")])
    assert (invalid.value.reason, str(invalid.value)) == (
        "TOKEN_INVALID",
        "the seat token is not valid here",
    )
    assert auth.seat_of("b", [auth.token_hash("a"), auth.token_hash("b")]) == 1
    assert auth.seat_of("a", [auth.token_hash("a"), auth.token_hash("b")]) == 0
