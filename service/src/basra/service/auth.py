"""Seat tokens, API keys, match ids and request ids: the service's secrets and identifiers.

Seat tokens are 256-bit random secrets; a seat's read-only watch token (for spectators) is
derived from it one way, under the match's current watch salt (a revocation draws a new one).
The store keeps only their SHA-256 (a fast hash is right
for high-entropy secrets), tokens are compared in constant time, and nothing here ever logs one.
The only copy of the tokens the service keeps is inside a match's creation record, encrypted
under a key derived from the creating request's request_id, so that a retry of that Deal can be
answered with the original tokens and nobody without the request_id can read them.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from collections.abc import Sequence
from typing import Final

from basra.service.errors import Reason, ServiceError, invalid_argument

TOKEN_BYTES: Final = 32
HASH_BYTES: Final = 32
_MATCH_ID = re.compile(r"[A-Za-z0-9_-]{16,64}")
_REQUEST_ID = re.compile(r"[\x21-\x7e]{1,128}")
# AIP-155: a creating request_id is a random UUID (version 4, RFC 9562 variant), canonical form.
_RANDOM_UUID = re.compile(
    r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}", re.IGNORECASE
)


def new_token() -> tuple[str, bytes]:
    """A fresh seat token (the secret handed to the player) and the raw bytes it encodes."""
    raw = secrets.token_bytes(TOKEN_BYTES)
    return token_text(raw), raw


def token_text(raw: bytes) -> str:
    """The token string of raw token bytes (base64url, no padding)."""
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def token_raw(token: str) -> bytes:
    """The raw bytes of a token string ``token_text`` made."""
    return base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))


def token_hash(token: str) -> bytes:
    """What the store keeps of a token."""
    return hashlib.sha256(token.encode()).digest()


Metadata = Sequence[tuple[str, str | bytes]]


def bearer_token(metadata: Metadata) -> str:
    """The seat token of ``authorization: Bearer <token>`` call metadata.

    Raises:
        ServiceError: UNAUTHENTICATED / TOKEN_MISSING when absent or not a Bearer token.
    """
    for key, value in metadata:
        if key.lower() == "authorization" and isinstance(value, str):
            scheme, _, token = value.strip().partition(" ")
            if scheme.lower() == "bearer" and token.strip():
                return token.strip()
    raise ServiceError(
        Reason.TOKEN_MISSING,
        "send the seat token as 'authorization: Bearer <token>' metadata",
    )


def seat_of(token: str, hashes: Sequence[bytes]) -> int:
    """The seat whose stored hash matches ``token``, for a call that needs a seat.

    Raises:
        ServiceError: PERMISSION_DENIED / TOKEN_INVALID when no token matches, a watch token
            included (the servicer tells one apart against the match's watch access).
    """
    seat = seat_or_none(token, hashes)
    if seat is None:
        raise token_invalid()
    return seat


def read_only() -> ServiceError:
    """The rejection of a watch token where a seat token is needed."""
    return ServiceError(
        Reason.WATCH_TOKEN_READ_ONLY,
        "a watch token only reads (GetMatch, Score, WatchMatch): this call needs a seat token",
    )


def seat_or_none(token: str, hashes: Sequence[bytes]) -> int | None:
    """The seat whose stored hash matches ``token`` (every hash compared, in constant time)."""
    presented = token_hash(token)
    seat = None
    for index, stored in enumerate(hashes):
        if hmac.compare_digest(presented, stored):
            seat = index
    return seat


def is_one_of(token: str, hashes: Sequence[bytes]) -> bool:
    """Whether ``token``'s hash is one of ``hashes`` (every one compared, in constant time;
    an empty hash, a seat without a watch token, matches nothing)."""
    presented = token_hash(token)
    found = False
    for stored in hashes:
        if hmac.compare_digest(presented, stored):
            found = True
    return found


def token_invalid() -> ServiceError:
    """The rejection of a token that is none of the match's."""
    return ServiceError(Reason.TOKEN_INVALID, "the seat token is not valid here")


def watch_token(seat_token: str, salt: bytes = b"") -> str:
    """The read-only watch token of a seat under the match's watch ``salt``: one-way derived
    from its seat token (HMAC-SHA256), so every request for it returns the same token until a
    revocation draws a new salt, and the store keeps only its hash. ``b""`` is the derivation
    of the tokens matches kept in their record before RevokeWatchTokens existed."""
    label = b"basra/watch-token" + (b"/" + salt if salt else b"")
    raw = hmac.new(seat_token.encode(), label, hashlib.sha256).digest()
    return token_text(raw)


def check_api_key(metadata: Metadata, expected: str | None) -> None:
    """Require ``x-api-key`` metadata equal to the configured key (when one is configured).

    Raises:
        ServiceError: UNAUTHENTICATED / API_KEY_MISSING, or PERMISSION_DENIED / API_KEY_INVALID.
    """
    if expected is None:
        return
    presented = next(
        (v for k, v in metadata if k.lower() == "x-api-key" and isinstance(v, str)), None
    )
    if presented is None:
        raise ServiceError(Reason.API_KEY_MISSING, "send 'x-api-key' metadata")
    if not hmac.compare_digest(presented.encode(), expected.encode()):
        raise ServiceError(Reason.API_KEY_INVALID, "the API key is not valid")


def check_match_id(match_id: str) -> str:
    """``match_id`` if well formed.

    Raises:
        ServiceError: INVALID_ARGUMENT naming match_id.
    """
    if not _MATCH_ID.fullmatch(match_id):
        raise invalid_argument("match_id", "must be 16 to 64 characters of A-Z a-z 0-9 _ -")
    return match_id


def check_request_id(request_id: str, *, creating: bool = False) -> str:
    """``request_id`` if well formed ("" means none). ``creating``: the request_id of a call
    whose retry answers seat tokens (CreateMatch, a creating Deal, ClaimSeat), so it is as
    secret as they are: a random UUID, in canonical form.

    Raises:
        ServiceError: INVALID_ARGUMENT naming request_id.
    """
    if not request_id:
        return request_id
    if not _REQUEST_ID.fullmatch(request_id):
        raise invalid_argument("request_id", "must be 1 to 128 printable ASCII characters")
    if creating and not _RANDOM_UUID.fullmatch(request_id):
        raise invalid_argument(
            "request_id",
            "must be a random UUID (version 4, e.g. 3f2c1e9a-8d4b-4c6e-9a1f-0b2d4e6f8a0c): a "
            "retry with it answers a seat token, so it must be as hard to guess",
        )
    # One UUID, one call: its canonical form is lower case (RFC 9562), whatever case was sent.
    return request_id.lower() if creating else request_id


def caller_scope(api_key: str | None) -> str:
    """What scopes a creating request_id: the API key when the server requires one (a digest:
    the key itself is never stored), else nothing. The same request_id sent with another key
    names another match, and cannot open this one's sealed tokens."""
    if api_key is None:
        return ""
    return hashlib.sha256(b"basra/caller/" + api_key.encode()).hexdigest()[:32] + "/"


def new_match_id() -> str:
    """A random match id (22 characters, 128 bits)."""
    return secrets.token_urlsafe(16)


def match_id_for(request_id: str) -> str:
    """The match id a creating request_id always yields, so retries find their match."""
    digest = hashlib.sha256(b"basra/match-id/" + request_id.encode()).digest()[:16]
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def request_hash(request_id: str) -> bytes:
    """What the store keeps of a request_id (16 bytes)."""
    return hashlib.sha256(b"basra/request/" + request_id.encode()).digest()[:16]


def fingerprint(rpc: str, request_bytes: bytes) -> bytes:
    """Identifies a request's content (without its request_id) to detect a reused request_id."""
    return hashlib.sha256(rpc.encode() + b"\0" + request_bytes).digest()[:16]


def seal_tokens(request_id: str, raw_tokens: Sequence[bytes]) -> bytes:
    """Encrypt the raw seat tokens under a key only the creating request_id yields.

    HMAC-SHA256 as a keystream (counter mode) and as a 16-byte tag (encrypt-then-MAC): standard
    library only, and the key never reaches the store.
    """
    key = _key(request_id)
    plain = b"".join(raw_tokens)
    sealed = bytes(a ^ b for a, b in zip(plain, _keystream(key, len(plain)), strict=True))
    return sealed + hmac.new(key, b"tag" + sealed, hashlib.sha256).digest()[:16]


def open_tokens(request_id: str, sealed: bytes, seats: int) -> list[bytes]:
    """The ``seats`` raw secrets ``seal_tokens`` encrypted.

    Raises:
        ValueError: the record was not sealed with this request_id or was altered.
    """
    key = _key(request_id)
    body, tag = sealed[:-16], sealed[-16:]
    if len(body) != seats * TOKEN_BYTES or not hmac.compare_digest(
        tag, hmac.new(key, b"tag" + body, hashlib.sha256).digest()[:16]
    ):
        raise ValueError("sealed tokens do not open with this request_id")
    plain = bytes(a ^ b for a, b in zip(body, _keystream(key, len(body)), strict=True))
    return [plain[i : i + TOKEN_BYTES] for i in range(0, len(plain), TOKEN_BYTES)]


def seal_for_invitation(invitation: str, raw_token: bytes) -> bytes:
    """A seat's raw token sealed under its invitation (``seal_tokens``): what the seat table
    keeps, so that the claim (and the retries of a claim) can hand the token out while the
    store holds neither the token nor the invitation."""
    return seal_tokens(_INVITATION_SEAL + invitation, [raw_token])


def open_for_invitation(invitation: str, sealed: bytes) -> bytes:
    """The raw token ``seal_for_invitation`` sealed under ``invitation``.

    Raises:
        ValueError: it was not sealed under this invitation.
    """
    return open_tokens(_INVITATION_SEAL + invitation, sealed, 1)[0]


_INVITATION_SEAL: Final = "basra/invitation/"
"""What an invitation's seal key is derived from, apart from every request_id's (a creating
request_id is a UUID, never this)."""


def _key(request_id: str) -> bytes:
    return hashlib.sha256(b"basra/seal-key/" + request_id.encode()).digest()


def _keystream(key: bytes, length: int) -> bytes:
    blocks = (
        hmac.new(key, b"stream" + i.to_bytes(4, "big"), hashlib.sha256).digest()
        for i in range(-(-length // 32))
    )
    return b"".join(blocks)[:length]
