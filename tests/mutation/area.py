"""Prepare the copy of the tree that `make mutation AREA=...` runs mutmut in.

mutmut reads its settings from the pyproject.toml of the directory it runs in, and one run has
one test selection and one engine: the engine's mutants need its .py sources (tests/engine,
``BASRA_ENGINE=pure``), while the service's tests run in reasonable time only on the compiled
engine, which is then not mutated. So each area (``[tool.basra.mutation.<area>]`` in
pyproject.toml) runs in its own copy, ``build/mutation/<area>``: this copies the tree there
(keeping the copy's ``mutants/``, so a stopped run resumes and a rerun keeps its results) and
writes the copy's ``[tool.mutmut]``: the shared table with the area's keys in its place.

An area mutates one component (its ``component`` key): the copy holds that component's ``src/``
at its top, since mutmut names a module by its path below ``src/`` and puts ``mutants/src`` first
on ``sys.path``; the ``basra`` namespace then finds the mutated package there before the installed
one, and the other components where they are installed.
"""

from __future__ import annotations

import shutil
import sys
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SKIPPED = {
    ".git",
    ".venv",
    "build",
    "mutants",
    "node_modules",
    ".hypothesis",
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
    "__pycache__",
}


def _toml_value(value: Any) -> str:
    if isinstance(value, list):
        return "[\n" + "".join(f"    {_toml_value(v)},\n" for v in value) + "]"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, bool):  # before int: a bool is an int
        return "true" if value else "false"
    if isinstance(value, int | float):  # timeout_constant = 5.0
        return repr(value)
    raise TypeError(f"unexpected setting {value!r}")


def settings(area: str, pyproject: str) -> dict[str, Any]:
    """The area's mutmut settings: the shared ``[tool.mutmut]`` with the area's keys instead."""
    tool = tomllib.loads(pyproject)["tool"]
    areas = tool["basra"]["mutation"]
    if area not in areas:
        raise SystemExit(f"unknown mutation area {area!r}: one of {', '.join(areas)}")
    return {**tool["mutmut"], **{k: v for k, v in areas[area].items() if k != "component"}}


def mutmut_table(config: dict[str, Any]) -> str:
    return "[tool.mutmut]\n" + "".join(f"{k} = {_toml_value(v)}\n" for k, v in config.items())


def prepare(area: str) -> Path:
    target = ROOT / "build" / "mutation" / area
    shutil.copytree(
        ROOT,
        target,
        ignore=lambda _, names: [n for n in names if n in SKIPPED],
        dirs_exist_ok=True,
    )
    pyproject = (ROOT / "pyproject.toml").read_text()
    table = mutmut_table(settings(area, pyproject))
    component = tomllib.loads(pyproject)["tool"]["basra"]["mutation"][area]["component"]
    shutil.copytree(ROOT / component / "src", target / "src", dirs_exist_ok=True)
    start = pyproject.index("\n[tool.mutmut]\n") + 1
    end = pyproject.find("\n[", start)
    rest = pyproject[end + 1 :] if end != -1 else ""
    (target / "pyproject.toml").write_text(pyproject[:start] + table + "\n" + rest)
    return target


if __name__ == "__main__":
    print(prepare(sys.argv[1]))
