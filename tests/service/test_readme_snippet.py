"""The first match of README.md and of the API guide, run as written against a real server, so
that the documented client code cannot rot."""

from __future__ import annotations

import contextlib
import io
import re
import textwrap
from pathlib import Path

import pytest

import basra.client
from tests.support import ServerThread

ROOT = Path(__file__).resolve().parents[2]
MARKER = "<!-- first-match: tests/service/test_readme_snippet.py runs this block -->"


def snippet(document: str) -> str:
    """The python block right after the marker."""
    text = (ROOT / document).read_text(encoding="utf-8")
    after = text.split(MARKER, 1)[1]
    found = re.match(r"\s*```python\n(.*?)```", after, re.S)
    assert found, f"{document}: no python block after the marker"
    return found.group(1)


@pytest.mark.parametrize("document", ["README.md", "proto/README.md"])
def test_the_documented_first_match_plays_a_whole_match(
    document: str, any_server: ServerThread
) -> None:
    code = snippet(document)
    assert 12 <= len(code.splitlines()) <= 18, "about 15 lines"
    assert code.count('"localhost:50051"') == 1
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code.replace("localhost:50051", any_server.target), document, "exec"), {})
    lines = out.getvalue().splitlines()
    assert re.fullmatch(r"seat [12] wins", lines[-1])
    assert len(lines) > 96  # at least two hands of 48 plays
    assert all(re.fullmatch(r"seat [12] plays (10|[2-9AJQK])[CDHS]", line) for line in lines[:-1])


def test_the_readme_the_guide_and_the_package_docstring_show_the_same_code() -> None:
    docstring = basra.client.__doc__ or ""
    example = docstring.split("::\n\n", 1)[1].split("\n\n``Client``", 1)[0]
    assert snippet("README.md") == snippet("proto/README.md") == textwrap.dedent(example) + "\n"
