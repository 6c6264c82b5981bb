"""Display names: what a person's seat shows every seat and spectator.

A name is text another person's screen renders, so it is held to rules that keep it from
disguising itself or the text around it: trimmed, normalized to NFC, 1 to ``MAX_LENGTH``
characters (code points), and free of the characters that reorder or hide text. The
zero-width non-joiner and joiner stay allowed: Persian spelling and emoji sequences need them.
"""

from __future__ import annotations

import unicodedata
from typing import Final

from basra.service.errors import Reason, ServiceError

MAX_LENGTH: Final = 32
"""The most characters (code points, after NFC and trimming) a display name has."""
_MAX_INPUT: Final = 16 * MAX_LENGTH
"""Longer input is refused before normalizing it: the work stays bounded whatever is sent."""
BIDI_CONTROLS: Final = frozenset(
    {0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)}
)
"""Unicode's Bidi_Control characters: marks, embeddings, overrides and isolates."""
_JOINERS: Final = frozenset({0x200C, 0x200D})
"""The format characters a name may hold: zero-width non-joiner and joiner."""
_REFUSED: Final = frozenset({"Cc", "Cs", "Co", "Zl", "Zp"})
"""Categories refused outright: controls, surrogates, private use, line and paragraph
separators (format characters, Cf, are refused but for the joiners)."""


def display_name(text: str, field: str) -> str:
    """``text`` as a display name: trimmed and normalized (NFC).

    Raises:
        ServiceError: INVALID_ARGUMENT / DISPLAY_NAME_INVALID naming ``field``, metadata
            ``rule`` ("length", or "character" with the refused ``code_point``).
    """
    if len(text) > _MAX_INPUT:
        raise _invalid(field, "length", f"must be 1 to {MAX_LENGTH} characters")
    name = unicodedata.normalize("NFC", text).strip()
    if not 1 <= len(name) <= MAX_LENGTH:
        raise _invalid(field, "length", f"must be 1 to {MAX_LENGTH} characters once trimmed")
    for char in name:
        point = ord(char)
        category = unicodedata.category(char)
        if (
            point in BIDI_CONTROLS
            or category in _REFUSED
            or (category == "Cf" and point not in _JOINERS)
        ):
            code = f"U+{point:04X}"
            raise _invalid(
                field,
                "character",
                f"holds {code}, a control, bidirectional control or invisible character",
                code_point=code,
            )
    return name


def _invalid(field: str, rule: str, description: str, **metadata: str) -> ServiceError:
    return ServiceError(
        Reason.DISPLAY_NAME_INVALID,
        f"{field}: {description}",
        {"field": field, "rule": rule, **metadata},
        field_violations={field: description},
    )
