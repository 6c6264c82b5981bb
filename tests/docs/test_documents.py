"""What the README and docs/ tell a newcomer to run, run: the shell commands, the curl call, the
make targets and the links. Prose is not pinned; commands and code are."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import unicodedata
from pathlib import Path
from typing import Final

import pytest

from basra.service.cli import build_parser
from tests.cli.test_serve_command import CLEAN_ENV, Running
from tests.support import basra_engine

ROOT: Final = Path(__file__).resolve().parents[2]
README: Final = ROOT / "README.md"
# The documents a newcomer reads from the README on: their links must lead somewhere.
DOCUMENTS: Final = (
    README,
    *sorted((ROOT / "docs").glob("*.md")),
    ROOT / "engine" / "README.md",
    ROOT / "web" / "README.md",
    ROOT / "tests" / "contract" / "README.md",
    ROOT / "proto" / "README.md",
    ROOT / "deploy" / "README.md",
)
VENV_COMMAND: Final = ".venv/bin/basra-engine "


def text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def shell_lines(document: Path) -> list[str]:
    """Every command line of the document's code (indented blocks and fenced blocks), with
    backslash continuations joined and trailing comments dropped."""
    lines: list[str] = []
    pending = ""
    for raw in text(document).splitlines():
        line = raw.strip()
        if pending:
            line = pending + " " + line
            pending = ""
        if line.endswith("\\"):
            pending = line[:-1].rstrip()
            continue
        lines.append(line)
    return lines


def commands(document: Path) -> list[list[str]]:
    """The ``basra-engine`` commands the document shows, as argument lists."""
    found = []
    for line in shell_lines(document):
        if line.startswith(VENV_COMMAND):
            words = shlex.split(line, comments=True)
            found.append([w for w in words[1:] if w not in ("[--json]",)])
    return found


def slug(heading: str) -> str:
    """The anchor a forge (GitHub, GitLab) gives a Markdown heading."""
    heading = re.sub(r"[`*]|\[|\]\([^)]*\)", "", heading.strip().lower())
    kept = "".join(
        c for c in heading if c in " -" or unicodedata.category(c)[0] in "LN" or c == "_"
    )
    return kept.replace(" ", "-")


def anchors(document: Path) -> set[str]:
    body = re.sub(r"```.*?```", "", text(document), flags=re.S)
    return {slug(h) for h in re.findall(r"^#{1,6} (.+)$", body, re.M)}


def links(document: Path) -> list[str]:
    body = re.sub(r"```.*?```", "", text(document), flags=re.S)
    return re.findall(r"\]\(([^)\s]+)\)", body)


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(document: Path) -> None:
    broken = []
    for link in links(document):
        if re.match(r"[a-z]+:", link):  # http:, https:, mailto:
            continue
        path, _, anchor = link.partition("#")
        target = (document.parent / path).resolve() if path else document
        if not target.exists() or (
            anchor and target.suffix == ".md" and anchor not in anchors(target)
        ):
            broken.append(link)
    assert not broken, f"{document.relative_to(ROOT)}: {broken}"


def test_every_make_target_the_readme_and_docs_name_exists() -> None:
    makefile = text(ROOT / "Makefile")
    targets = set(re.findall(r"^([a-z][a-z-]*):", makefile, re.M))
    named = set()
    for document in (README, *sorted((ROOT / "docs").glob("*.md"))):
        named |= set(re.findall(r"`make ([a-z][a-z-]*)", text(document)))
        named |= {
            line.split()[1]
            for line in shell_lines(document)
            if line.startswith("make ") and len(line.split()) > 1
        }
    assert {"run", "test", "test-all", "help"} <= named
    assert named <= targets, named - targets


def test_every_command_line_of_the_readme_parses() -> None:
    shown = commands(README)
    assert {words[0] for words in shown} >= {"serve", "demo", "play", "plans", "rules"}
    parser = build_parser()
    for words in shown:
        parser.parse_args(words)  # argparse exits (a test error) on any unknown flag


def test_the_readme_oracle_commands_answer() -> None:
    for words in commands(README):
        if words[0] in ("plans", "rules"):
            done = subprocess.run(
                [basra_engine(), *words],
                capture_output=True,
                text=True,
                check=True,
                timeout=60,
                env=CLEAN_ENV,
            )
            assert done.stdout.strip(), words


def test_the_readme_serve_command_serves_and_its_curl_call_answers(tmp_path: Path) -> None:
    """The README's serve command with other ports, as written but for the port numbers (free
    ones: the README's may be taken here), then its Connect call with curl against that
    server's HTTP port, at the host names the README gives."""
    curl = shutil.which("curl")
    assert curl, "curl is needed"
    serves = [w for w in commands(README) if w[0] == "serve" and "--store" in w]
    local = [w for w in serves if "0.0.0.0" not in " ".join(w)]
    assert local, "the README shows a serve command on local ports"
    words = list(local[0])
    # Port 0 for each (the server picks free ones and says which in its "serving" line): the
    # README's ports may be taken here, and a port found free could be taken before the bind.
    for flag in ("--listen", "--http-listen", "--metrics-port"):
        host, _, _ = words[words.index(flag) + 1].rpartition(":")
        words[words.index(flag) + 1] = f"{host}:0" if host else "0"
    grpc_host, _, _ = words[words.index("--listen") + 1].rpartition(":")
    http_host, _, _ = words[words.index("--http-listen") + 1].rpartition(":")
    block = re.search(r"<!-- connect-curl:[^>]*-->\s*```sh\n(.*?)```", text(README), re.S)
    assert block, "README.md: no curl block after the connect-curl marker"
    running = Running([basra_engine(), *words], tmp_path / "serve.log")
    try:
        serving = running.serving_line()
        running.wait_serving(int(serving["port"]), grpc_host)
        http_address = f"{http_host}:{serving['http_port']}"
        call = block.group(1).replace("localhost:8080", http_address)
        assert http_address in call
        answered = subprocess.run(
            ["sh", "-c", call], capture_output=True, text=True, check=True, timeout=60
        )
    finally:
        running.close()
    rules = json.loads(answered.stdout)["rules"]
    assert "eram" in {rule["name"] for rule in rules}
