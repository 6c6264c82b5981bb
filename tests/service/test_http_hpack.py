"""The HTTP port's HPACK (basra.service.http_hpack): ``LeanDecoder`` reads RFC 7541's own
examples, and reads what hpack's encoder writes, malformed blocks included, exactly as hpack's
decoder does (the same fields, the same table, the same errors); what ``LeanEncoder`` writes
reads back whole in hpack's decoder; and neither keeps a credential in its caches."""

from __future__ import annotations

from collections.abc import Iterable

import hpack
import pytest
from hpack import HeaderTuple, NeverIndexedHeaderTuple
from hypothesis import given
from hypothesis import strategies as st

from basra.service import http_hpack
from basra.service.http_hpack import LeanDecoder, LeanEncoder

# RFC 7541 appendix C.4: three requests on one connection, Huffman-coded, the dynamic table
# carried from one to the next.
RFC_REQUESTS = [
    (
        "8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff",
        [
            (b":method", b"GET"),
            (b":scheme", b"http"),
            (b":path", b"/"),
            (b":authority", b"www.example.com"),
        ],
    ),
    (
        "8286 84be 5886 a8eb 1064 9cbf",
        [
            (b":method", b"GET"),
            (b":scheme", b"http"),
            (b":path", b"/"),
            (b":authority", b"www.example.com"),
            (b"cache-control", b"no-cache"),
        ],
    ),
    (
        "8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf",
        [
            (b":method", b"GET"),
            (b":scheme", b"https"),
            (b":path", b"/index.html"),
            (b":authority", b"www.example.com"),
            (b"custom-key", b"custom-value"),
        ],
    ),
]

NAMES = st.sampled_from(
    [
        b":path",
        b":authority",
        b":method",
        b"content-type",
        b"authorization",
        b"user-agent",
        b"x-custom",
        b"cookie",
        b"te",
    ]
) | st.binary(min_size=1, max_size=20)
VALUES = st.sampled_from([b"", b"/", b"GET", b"application/proto", b"Bearer abc_-XYZ09"]) | (
    st.binary(max_size=300)
)
FIELDS = st.lists(st.tuples(NAMES, VALUES, st.booleans()), max_size=10)


def test_rfc_7541_examples_decode() -> None:
    decoder = LeanDecoder()
    for encoded, fields in RFC_REQUESTS:
        assert decoder.decode(bytes.fromhex(encoded.replace(" ", "")), raw=True) == fields
    assert list(decoder.header_table.dynamic_entries) == [
        (b"custom-key", b"custom-value"),
        (b"cache-control", b"no-cache"),
        (b":authority", b"www.example.com"),
    ]
    # hpack types the fields as bytes whatever ``raw`` says
    as_text: Iterable[object] = LeanDecoder().decode(
        bytes.fromhex(RFC_REQUESTS[0][0].replace(" ", ""))
    )
    assert list(as_text) == [
        (":method", "GET"),
        (":scheme", "http"),
        (":path", "/"),
        (":authority", "www.example.com"),
    ]


def outcome(decoder: hpack.Decoder, block: bytes) -> object:
    """What decoding ``block`` gives: the fields with their types, or the exception's type."""
    try:
        return [(type(h), tuple(h)) for h in decoder.decode(block, raw=True)]
    except Exception as error:
        return type(error)


@given(
    st.lists(st.tuples(FIELDS, st.booleans(), st.sampled_from([None, 0, 64, 4096]))),
    st.integers(100, 2**16),
)
def test_decodes_what_hpack_encodes_as_hpack_does(
    blocks: list[tuple[list[tuple[bytes, bytes, bool]], bool, int | None]], limit: int
) -> None:
    """Blocks written by hpack's encoder (indexed, incrementally indexed, never-indexed, Huffman
    or not, table size updates), read by both decoders in step: the same fields and tables."""
    encoder = hpack.Encoder()
    ours, theirs = LeanDecoder(limit), hpack.Decoder(limit)
    for fields, huffman, table_size in blocks:
        if table_size is not None:
            encoder.header_table_size = table_size
        block = encoder.encode(fields, huffman=huffman)
        expected = outcome(theirs, block)
        assert outcome(ours, block) == expected
        if not isinstance(expected, list):
            return  # a decoder's state after an error is not defined: the connection ends
        assert ours.header_table.dynamic_entries == theirs.header_table.dynamic_entries
        assert ours.header_table_size == theirs.header_table_size


@given(FIELDS, st.data())
def test_malformed_blocks_fail_as_in_hpack(
    fields: list[tuple[bytes, bytes, bool]], data: st.DataObject
) -> None:
    """A valid block cut short, with a byte changed, or bytes at random: both decoders, on the
    same table, give the same fields or raise the same error."""
    block = hpack.Encoder().encode(fields, huffman=data.draw(st.booleans()))
    edit = data.draw(st.sampled_from(["cut", "flip", "random", "append"]))
    if edit == "cut" and block:
        block = block[: data.draw(st.integers(0, len(block) - 1))]
    elif edit == "flip" and block:
        at = data.draw(st.integers(0, len(block) - 1))
        block = block[:at] + bytes((data.draw(st.integers(0, 255)),)) + block[at + 1 :]
    elif edit == "random":
        block = data.draw(st.binary(max_size=40))
    else:
        block += data.draw(st.binary(min_size=1, max_size=6))
    primer = hpack.Encoder().encode([(b"x-primed", b"1")])
    ours, theirs = LeanDecoder(), hpack.Decoder()
    ours.decode(primer), theirs.decode(primer)
    assert outcome(ours, block) == outcome(theirs, block)


@pytest.mark.parametrize(
    ("block", "error", "match"),
    [
        (b"\x80", hpack.InvalidTableIndex, "index 0"),
        # a name length in six bytes past its prefix (five continue): over hpack's limit
        (b"\x00\x7f\x80\x80\x80\x80\x80\x00", hpack.HPACKDecodingError, "too long"),
        (b"\x82\x3f\xe1\x1f", hpack.HPACKDecodingError, "not at the start"),
        (b"\x3f\xe2\x1f", hpack.InvalidTableSizeError, "max allowable"),
        (b"\x00\x81\xff\x00", hpack.HPACKDecodingError, "Huffman"),  # all EOS
        (b"\x00\x03ab", hpack.HPACKDecodingError, "Truncated"),
        (b"\x00\x01a\x05ab", hpack.HPACKDecodingError, "Truncated"),
        (b"\x00\x01a\x01\xff", hpack.HPACKDecodingError, "UTF-8"),
    ],
)
def test_malformed_blocks(block: bytes, error: type[Exception], match: str) -> None:
    for decoder in (LeanDecoder(), hpack.Decoder()):
        with pytest.raises(error, match=match):
            decoder.decode(block)


def test_a_table_over_a_lowered_limit_is_refused() -> None:
    """Once the limit is lowered (h2 does when its smaller table size is acknowledged), a block
    that does not shrink the table to it is refused."""
    for decoder in (LeanDecoder(), hpack.Decoder()):
        decoder.max_allowed_table_size = 100
        with pytest.raises(hpack.InvalidTableSizeError):
            decoder.decode(b"\x82")
        assert LeanDecoder().decode(b"\x3f\x45\x82", raw=True) == [(b":method", b"GET")]


def test_a_header_list_over_the_limit_is_refused() -> None:
    block = hpack.Encoder().encode([(b"x-big", b"v" * 200)])
    assert LeanDecoder(300).decode(block, raw=True) == [(b"x-big", b"v" * 200)]
    with pytest.raises(hpack.OversizedHeaderListError):
        LeanDecoder(200).decode(block)


@given(FIELDS, st.booleans())
def test_what_lean_encoder_writes_reads_back_whole(
    fields: list[tuple[bytes, bytes, bool]], huffman: bool
) -> None:
    encoder, decoder = LeanEncoder(), hpack.Decoder()
    headers = [NeverIndexedHeaderTuple(n, v) if s else HeaderTuple(n, v) for n, v, s in fields]
    for _ in range(2):  # the second time from the encoder's cache
        decoded = decoder.decode(encoder.encode(headers, huffman=huffman), raw=True)
        assert [(type(h), tuple(h)) for h in decoded] == [(type(h), tuple(h)) for h in headers]
        assert not decoder.header_table.dynamic_entries  # nothing added to the peer's table


def test_lean_encoder_sends_static_fields_as_indices_and_table_size_updates_first() -> None:
    encoder = LeanEncoder()
    assert encoder.encode([(b":status", b"200")]) == b"\x88"
    encoder.header_table_size = 100
    decoder = hpack.Decoder()
    block = encoder.encode([(b":status", b"200"), (b"content-type", b"application/proto")])
    assert block[:1] == b"\x3f"  # a dynamic table size update (100 = 31 + 69)
    assert decoder.decode(block, raw=True) == [
        (b":status", b"200"),
        (b"content-type", b"application/proto"),
    ]
    assert decoder.header_table_size == 100
    assert encoder.encode([(b":status", b"200")]) == b"\x88"  # sent once
    assert encoder.encode({":status": "200", "x-a": 1}) == b"\x88" + LeanEncoder().encode(
        [("x-a", "1")]
    )


def test_no_credential_is_kept_in_a_cache() -> None:
    """A bearer token sent never-indexed, or indexed, Huffman-coded, is decoded every time and
    never remembered; the encoder does not remember sensitive fields."""
    token = b"Bearer QtEwKNKWGhKGFgOQS1Wl1f-yt3R3VX4YJfhFPEukgCU"
    encoder = hpack.Encoder()
    blocks = [
        encoder.encode([NeverIndexedHeaderTuple(b"authorization", token)]),
        encoder.encode([HeaderTuple(b"authorization", token), (b"x-api-key", token)]),
        encoder.encode([(b":path", b"/basra.v1.BasraService/Play")]),
    ]
    decoder = LeanDecoder()
    decoded = [decoder.decode(b, raw=True) for b in blocks]
    assert decoded[0] == [(b"authorization", token)]
    assert decoded[2] == [(b":path", b"/basra.v1.BasraService/Play")]
    assert b"/basra.v1.BasraService/Play" in http_hpack._huffman_decoded.values()
    assert token not in http_hpack._huffman_decoded.values()
    LeanEncoder().encode([NeverIndexedHeaderTuple(b"authorization", token)])
    assert not [key for key in http_hpack._encoded_fields if token in key]
