"""What the store keeps is derived the same way in every release: known answers.

Stored records hold request hashes, token hashes and match ids derived from request ids; a
change to any derivation (a prefix, a length) would orphan the records of matches in flight, so
each is pinned to the value an independent computation gives.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import uuid
from collections.abc import Callable

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


@pytest.mark.parametrize(
    ("call", "reason", "violations", "message"),
    [
        (lambda: auth.check_api_key([], "k"), "API_KEY_MISSING", {}, "send 'x-api-key' metadata"),
        (
            lambda: auth.check_api_key([("x-api-key", "j")], "k"),
            "API_KEY_INVALID",
            {},
            "the API key is not valid",
        ),
        (
            lambda: auth.check_match_id("short"),
            "INVALID_ARGUMENT",
            {"match_id": "must be 16 to 64 characters of A-Z a-z 0-9 _ -"},
            None,
        ),
        (
            lambda: auth.check_request_id("a b"),
            "INVALID_ARGUMENT",
            {"request_id": "must be 1 to 128 printable ASCII characters"},
            None,
        ),
        (
            lambda: auth.check_request_id("x" * 36, creating=True),
            "INVALID_ARGUMENT",
            {
                "request_id": "must be a random UUID (version 4, e.g. "
                "3f2c1e9a-8d4b-4c6e-9a1f-0b2d4e6f8a0c): a retry with it answers a seat "
                "token, so it must be as hard to guess"
            },
            None,
        ),
    ],
)
def test_each_refusal_says_what_is_expected(
    call: Callable[[], object],
    reason: str,
    violations: dict[str, str],
    message: str | None,
) -> None:
    with pytest.raises(ServiceError) as refused:
        call()
    assert refused.value.reason == reason
    assert refused.value.field_violations == violations
    if message is not None:
        assert str(refused.value) == message


def test_well_formed_ids_and_the_configured_key_pass() -> None:
    auth.check_api_key([("X-Api-Key", "k")], "k")
    auth.check_api_key([], None)
    assert auth.check_match_id("A" * 16) == "A" * 16
    assert auth.check_match_id("z" * 64) == "z" * 64
    assert auth.check_request_id("") == ""
    assert auth.check_request_id("~" * 128) == "~" * 128
    creating = str(uuid.uuid4())
    assert auth.check_request_id(creating, creating=True) == creating


def test_the_caller_scope_is_a_prefixed_digest_of_the_api_key_or_nothing() -> None:
    digest = hashlib.sha256(b"basra/caller/k3y").hexdigest()[:32]
    assert auth.caller_scope("k3y") == digest + "/"
    assert auth.caller_scope(None) == ""


def test_a_fingerprint_is_the_rpc_a_zero_byte_and_the_request_hashed() -> None:
    expected = hashlib.sha256(b"Play\0" + b"\x0a\x02hi").digest()[:16]
    assert auth.fingerprint("Play", b"\x0a\x02hi") == expected


def test_sealed_tokens_are_an_hmac_keystream_and_tag_under_the_request_id() -> None:
    """An independent computation of seal_tokens' documented construction."""
    request_id, raws = "request-0001-abcdef", [bytes(range(32)), bytes(range(32, 64))]
    key = hashlib.sha256(b"basra/seal-key/" + request_id.encode()).digest()
    stream = b"".join(
        hmac.new(key, b"stream" + i.to_bytes(4, "big"), hashlib.sha256).digest() for i in (0, 1)
    )
    body = bytes(a ^ b for a, b in zip(b"".join(raws), stream, strict=True))
    tag = hmac.new(key, b"tag" + body, hashlib.sha256).digest()[:16]
    assert auth.seal_tokens(request_id, raws) == body + tag


def test_a_watch_token_is_an_hmac_of_a_fixed_label_keyed_by_the_seat_token() -> None:
    """Derived again on every CreateWatchToken: a change would hand out tokens whose stored
    hashes the matches in flight do not hold."""
    raw = hmac.new(b"seat-token", b"basra/watch-token", hashlib.sha256).digest()
    assert auth.watch_token("seat-token") == base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
