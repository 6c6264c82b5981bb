"""What the documents say about the code and the repository, checked against them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from basra.client import Client, greedy_choice
from basra.service import config
from basra.v1 import game_pb2
from tests.support import ServerThread

ROOT = Path(__file__).resolve().parents[2]
DOCS = (
    "README.md",
    "docs/testing.md",
    "docs/performance.md",
    "docs/design.md",
    "proto/README.md",
    "deploy/README.md",
    "engine/src/basra/engine/RULES.md",
)


def read(path: str) -> str:
    return (ROOT / path).read_text(encoding="utf-8")


def test_a_hand_makes_the_number_of_versions_the_retention_constant_gives(
    any_server: ServerThread,
) -> None:
    """The retention constant's why gives the versions a hand makes: the figure is the code's
    (prose around it is free)."""
    with Client(any_server.target) as client:
        match = client.create_match(seed=21)
        view = match.view()
        first = view.version
        while view.status == game_pb2.MATCH_STATUS_PLAYING:
            seat = match.seat(view.turn)
            card, plan_id = greedy_choice(seat.plans())
            seat.play(card, plan_id)
            view = match.view()
    versions = view.version - first + 1  # the deal's version and one per play
    assert versions == 49
    why = config.CONSTANTS["events_maxlen"]
    given = re.findall(r"a two-seat hand makes (\d+): its deal and (\d+) plays", why)
    assert given == [(str(versions), str(versions - 1))]


@pytest.mark.parametrize("document", DOCS)
def test_no_document_leans_on_placeholders_or_files_outside_the_repository(document: str) -> None:
    text = read(document)
    assert "github.com/ORG" not in text
    assert "seeds/" not in text
    assert "shared/RULES.md" not in text
    assert "issue note" not in text
    # Shell lines call the installed command by its path in the venv (or say to activate it).
    assert not re.search(r"^[ ]{2,}basra-engine [a-z]", text, re.M)


def test_the_rules_page_names_only_files_of_the_repository() -> None:
    paths = re.findall(r"`([\w./-]+/[\w./-]*)`", read("engine/src/basra/engine/RULES.md"))
    assert paths
    for path in paths:
        assert (ROOT / path).exists(), path
