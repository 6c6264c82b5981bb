"""Display names: what a person's seat shows every seat and spectator.

A name is text another person's screen renders, so it is held to rules that keep it from
disguising itself or the text around it: trimmed, normalized to NFC, 1 to ``MAX_LENGTH``
characters (code points), free of the characters that reorder or hide text, with at least one
visible character, no run of more than ``MAX_MARKS`` combining marks, and, at a table, unlike
every other seat's name. The zero-width non-joiner and joiner stay allowed: Persian spelling and
emoji sequences need them.

NFC, not NFKC: a compatibility character the person typed (a ligature, a circled digit, a
fullwidth letter) is kept as typed. Looking like another seat's name is decided on Unicode
TR39 skeletons, ICU's (PyICU's ``SpoofChecker``), so a fullwidth or Cyrillic look-alike of a
name at the table is refused there without being folded anywhere else.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from typing import Final

import icu  # type: ignore[import-untyped]

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
MAX_MARKS: Final = 4
"""The most combining marks (Mn, Mc, Me) in a row after NFC. Writing needs few: Arabic's shadda
with its vowel is 2, pointed Hebrew's dagesh, shin dot and vowel 3, a Tibetan stack 3; a taller
stack draws over the lines around the name."""
_BLANK_SYMBOLS: Final = frozenset({0x2800})
"""Symbols drawn as empty space though neither white space nor default-ignorable: U+2800
BRAILLE PATTERN BLANK (a cell with no dot)."""
_SPOOF: Final = icu.SpoofChecker()
"""ICU's TR39 checker: its ``getSkeleton`` is the confusables mapping of UTS #39."""


def display_name(text: str, field: str) -> str:
    """``text`` as a display name: trimmed and normalized (NFC).

    Raises:
        ServiceError: INVALID_ARGUMENT / DISPLAY_NAME_INVALID naming ``field``, metadata
            ``rule``: "length"; "character" with the refused ``code_point``; "marks" (a run of
            more than ``MAX_MARKS`` combining marks); "blank" (no visible character).
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
    if _longest_run_of_marks(name) > MAX_MARKS:
        raise _invalid(
            field, "marks", f"stacks more than {MAX_MARKS} combining marks on one character"
        )
    if not any(_visible(char) for char in name):
        raise _invalid(field, "blank", "shows no visible character")
    return name


def check_unlike(name: str, others: Iterable[tuple[int, str]], field: str) -> None:
    """Refuses ``name`` when it looks like one of ``others`` (seat, display name): the same
    TR39 skeleton once default-ignorable characters are dropped and runs of white space are one
    space (a page draws "Ann  Lee" as "Ann Lee"). An identical name looks alike too.

    Raises:
        ServiceError: INVALID_ARGUMENT / DISPLAY_NAME_INVALID naming ``field``, metadata
            ``rule`` "confusable" and the ``seat`` whose name it looks like.
    """
    mine = skeleton(name)
    for seat, other in others:
        if other and skeleton(other) == mine:
            raise _invalid(
                field,
                "confusable",
                f"looks like the name of seat {seat} at this table: choose another",
                seat=str(seat),
            )


def skeleton(name: str) -> str:
    """``name``'s TR39 skeleton (ICU's), without its default-ignorable characters and with
    each run of white space as one space: two names with one skeleton look alike."""
    shown = "".join(char for char in name if not _ignorable(char))
    return str(_SPOOF.getSkeleton(0, " ".join(shown.split())))


def _ignorable(char: str) -> bool:
    """Unicode's Default_Ignorable_Code_Point: drawn as nothing (ICU's property data)."""
    return bool(icu.Char.hasBinaryProperty(char, icu.UProperty.DEFAULT_IGNORABLE_CODE_POINT))


def _visible(char: str) -> bool:
    """Whether ``char`` draws ink on its own: not a combining mark, not default-ignorable (the
    Hangul fillers, variation selectors, joiners), not white space and not a blank symbol."""
    return not (
        unicodedata.category(char).startswith("M")
        or _ignorable(char)
        or icu.Char.hasBinaryProperty(char, icu.UProperty.WHITE_SPACE)
        or ord(char) in _BLANK_SYMBOLS
    )


def _longest_run_of_marks(name: str) -> int:
    """The most combining marks in a row in ``name``; a joiner between two marks does not end
    the run (it draws nothing), anything else does."""
    longest = run = 0
    for char in name:
        if unicodedata.category(char).startswith("M"):
            run += 1
            longest = max(longest, run)
        elif ord(char) not in _JOINERS:
            run = 0
    return longest


def _invalid(field: str, rule: str, description: str, **metadata: str) -> ServiceError:
    return ServiceError(
        Reason.DISPLAY_NAME_INVALID,
        f"{field}: {description}",
        {"field": field, "rule": rule, **metadata},
        field_violations={field: description},
    )
