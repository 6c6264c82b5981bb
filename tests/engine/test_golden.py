"""Whole seeded matches against their reviewed transcripts (tests/engine/golden/)."""

from __future__ import annotations

import pytest

from tests.engine.transcript import CASES, GOLDEN, case_transcript


@pytest.mark.parametrize("name", sorted(CASES))
def test_seeded_match_replays_its_golden_transcript(name: str) -> None:
    expected = (GOLDEN / f"{name}.txt").read_text(encoding="utf-8")
    assert case_transcript(name) == expected, (
        "the engine no longer replays this match; if the change is intended, review the diff of "
        "`python -m tests.engine.transcript --update`"
    )
