"""A small reader of deploy/Dockerfile: stages, instructions, and the values tests need.

Enough of the Dockerfile syntax for this file: comments, line continuations, ``FROM ... AS``,
exec-form JSON arguments, ``KEY=VALUE`` ENV lists and COPY flags. Not a general parser.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from tests.deploy.manifests import DEPLOY, ROOT

DOCKERFILE: Final = DEPLOY / "Dockerfile"
DOCKERIGNORE: Final = ROOT / ".dockerignore"


@dataclass(frozen=True)
class Instruction:
    keyword: str
    """Upper case: FROM, RUN, COPY, ..."""
    arguments: str
    """The rest of the instruction, continuation lines joined with spaces."""

    def exec_form(self) -> list[str]:
        """The JSON array form of ENTRYPOINT or CMD.

        Raises:
            ValueError: the instruction is in shell form.
        """
        value = json.loads(self.arguments)
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise ValueError(f"{self.keyword} is not in exec form: {self.arguments}")
        return value


@dataclass(frozen=True)
class Stage:
    base: str
    name: str | None
    instructions: tuple[Instruction, ...]

    def all(self, keyword: str) -> list[Instruction]:
        return [i for i in self.instructions if i.keyword == keyword]

    def env(self) -> dict[str, str]:
        """ENV values set in this stage (KEY=VALUE form)."""
        values: dict[str, str] = {}
        for instruction in self.all("ENV"):
            for item in shlex.split(instruction.arguments):
                key, _, value = item.partition("=")
                values[key] = value
        return values


@dataclass(frozen=True)
class Copy:
    sources: tuple[str, ...]
    destination: str
    flags: dict[str, str]


def instructions(text: str) -> list[Instruction]:
    """The instructions of a Dockerfile, comments dropped and continuations joined."""
    found: list[Instruction] = []
    pending = ""
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.endswith("\\"):
            pending += stripped[:-1].strip() + " "
            continue
        whole = (pending + stripped).strip()
        pending = ""
        keyword, _, arguments = whole.partition(" ")
        found.append(Instruction(keyword.upper(), arguments.strip()))
    assert not pending, "the Dockerfile ends inside a continued line"
    return found


def stages(path: Path = DOCKERFILE) -> list[Stage]:
    """The build stages, in order."""
    result: list[Stage] = []
    current: list[Instruction] = []
    base, name = "", None
    for instruction in instructions(path.read_text()):
        if instruction.keyword == "FROM":
            if base:
                result.append(Stage(base, name, tuple(current)))
            words = instruction.arguments.split()
            assert not words[0].startswith("--"), "FROM flags are not used here"
            base = words[0]
            name = words[2] if len(words) == 3 and words[1].upper() == "AS" else None
            current = []
        else:
            assert base, f"{instruction.keyword} before the first FROM"
            current.append(instruction)
    result.append(Stage(base, name, tuple(current)))
    return result


def external_base(stage: Stage, all_stages: list[Stage]) -> str:
    """The registry image a stage is finally built on (following ``FROM <stage>``)."""
    names = {s.name: s for s in all_stages if s.name}
    while stage.base in names:
        stage = names[stage.base]
    return stage.base


def copies(stage: Stage) -> list[Copy]:
    result: list[Copy] = []
    for instruction in stage.all("COPY"):
        words = instruction.arguments.split()
        flags: dict[str, str] = {}
        for word in words:
            if word.startswith("--"):
                key, _, value = word[2:].partition("=")
                flags[key] = value
        paths = [w for w in words if not w.startswith("--")]
        result.append(Copy(tuple(paths[:-1]), paths[-1], flags))
    return result


def dockerignore() -> list[str]:
    """The .dockerignore patterns, in order."""
    lines = (line.strip() for line in DOCKERIGNORE.read_text().splitlines())
    return [line for line in lines if line and not line.startswith("#")]
