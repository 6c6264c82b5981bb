"""What the documents say about the code and the repository, checked against them."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from basra.client import Client, greedy_choice
from basra.v1 import game_pb2
from tests.support import ServerThread

ROOT = Path(__file__).resolve().parents[2]
DOCS = ("README.md", "proto/README.md", "deploy/README.md", "engine/src/basra/engine/RULES.md")


def read(path: str) -> str:
    return (ROOT / path).read_text(encoding="utf-8")


def test_a_hand_makes_the_number_of_versions_the_operator_guide_gives(
    any_server: ServerThread,
) -> None:
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
    claim = f"a two-seat hand makes {versions}: its deal and 48 plays"
    assert claim in " ".join(read("deploy/README.md").split())
    assert claim in read("deploy/kustomize/base/config.env")


def test_the_image_check_of_the_deploy_guide_works_with_kubectl() -> None:
    guide = " ".join(read("deploy/README.md").split())
    command = "kubectl kustomize deploy/kustomize/overlays/production | grep 'image:'"
    assert f"`{command}`" in guide
    assert "kustomize edit set" not in guide
    kubectl = shutil.which("kubectl")
    assert kubectl, "make test installs kubectl"
    rendered = subprocess.run(
        [kubectl, "kustomize", "deploy/kustomize/overlays/production"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    images = set(re.findall(r"image: (\S+)", rendered))
    assert "registry.example.com/basra/basra-engine:0.1.0" in images


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


def test_the_quick_start_states_what_each_command_needs() -> None:
    readme = " ".join(read("README.md").split())
    assert "only Python" not in readme
    # make run builds the web table: Node.js and npm are needed from the first command on.
    assert "`make run` needs Python >= 3.11, make, and Node.js 20+ with npm" in readme
    for path in ("Makefile", ".ci/run"):
        head = read(path)[:400]
        assert "nothing but Python" not in head
        assert "Node.js 20+" in head
