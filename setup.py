"""The whole service as one distribution, ``basra-engine``, gathered from its components.

Each component is a project of its own with a ``src/`` layout (``engine/``, ``proto/python/``,
``clients/python/``, ``service/``); ``make`` installs those, editable. ``pip install .`` here
(and the image) builds them into one wheel instead: their packages and package data at their
own paths, the union of their dependencies (less the components themselves) and their commands,
read from their pyproject.toml files so that nothing is written twice. The engine is compiled
with mypyc as ``engine/setup.py`` compiles it (``BASRA_ENGINE_COMPILE``).
"""

from __future__ import annotations

import importlib.util
import re
import tomllib
from pathlib import Path
from typing import Any

from setuptools import setup

HERE = Path(__file__).resolve().parent
COMPONENTS = ("engine", "proto/python", "clients/python", "service")


def project(component: str) -> dict[str, Any]:
    return tomllib.loads((HERE / component / "pyproject.toml").read_text())


def gathered() -> dict[str, Any]:
    names = {project(c)["project"]["name"] for c in COMPONENTS}
    package_dir: dict[str, str] = {}
    package_data: dict[str, list[str]] = {}
    requires: list[str] = []
    scripts: dict[str, str] = {}
    for component in COMPONENTS:
        config = project(component)
        tool = config["tool"]["setuptools"]
        src = tool["package-dir"][""]
        for package in tool["packages"]:
            package_dir[package] = f"{component}/{src}/{package.replace('.', '/')}"
        package_data.update(tool.get("package-data", {}))
        for requirement in config["project"]["dependencies"]:
            name = re.split(r"[\s\[<>=!~;(]", requirement, maxsplit=1)[0]
            if name not in names and requirement not in requires:
                requires.append(requirement)
        scripts.update(config["project"].get("scripts", {}))
    return {
        "packages": list(package_dir),
        "package_dir": package_dir,
        "package_data": package_data,
        "install_requires": requires,
        "entry_points": {"console_scripts": [f"{k} = {v}" for k, v in scripts.items()]},
    }


def engine_extensions() -> list[Any]:
    spec = importlib.util.spec_from_file_location("engine_build", HERE / "engine" / "setup.py")
    if spec is None or spec.loader is None:
        raise RuntimeError("engine/setup.py cannot be loaded")
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    extensions: list[Any] = build.engine_extensions(Path("engine/src/basra/engine"))
    return extensions


setup(ext_modules=engine_extensions(), **gathered())
