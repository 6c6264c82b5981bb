"""Chance: the generator of each deal and its shuffle, compiled with the rest of the engine.

Every deal is the one ``random.Random(key).shuffle`` gives (CPython's seeding of a string key and
its Fisher-Yates shuffle over ``getrandbits``), card for card: golden transcripts and stored
matches replay unchanged. It is written out here because random.py is interpreted: its string
seeding and the two Python calls per card of its shuffle cost more than the rest of a deal.
Fixing the algorithm here also keeps deals from following random.py's internals.
"""

from __future__ import annotations

import random
from hashlib import sha512
from typing import Final, TypeVar

T = TypeVar("T")


def seeded(key: str) -> random.Random:
    """``random.Random(key)``: a string seeds as the integer of its bytes and their SHA-512."""
    data = key.encode()
    return random.Random(int.from_bytes(data + sha512(data).digest()))


_RANDOM: Final = random.Random
_GETRANDBITS: Final = random.Random.getrandbits
"""The generator's own ``getrandbits`` (C), called on a ``random.Random`` without looking the
method up on the instance each time (compiled, that lookup cost about as much as the draw)."""


def below(rng: random.Random, bound: int) -> int:
    """``rng.randrange(bound)`` (and the index ``rng.choice`` draws), for ``bound >= 1``: draw
    ``bound.bit_length()`` bits until the number is below the bound (random's ``_randbelow``)."""
    bits = bound.bit_length()
    if type(rng) is _RANDOM:
        drawn = _GETRANDBITS(rng, bits)
        while drawn >= bound:
            drawn = _GETRANDBITS(rng, bits)
        return drawn
    # A subclass may draw its own way (random's SystemRandom): its method, as random.py calls.
    drawn = rng.getrandbits(bits)
    while drawn >= bound:
        drawn = rng.getrandbits(bits)
    return drawn


def shuffle(items: list[T], rng: random.Random) -> None:
    """``rng.shuffle(items)``: from the last position down, swap with a uniform lower one."""
    for i in range(len(items) - 1, 0, -1):
        j = below(rng, i + 1)
        items[i], items[j] = items[j], items[i]
