"""The mutation score of `make mutation`, per area, against the project's targets.

Reads mutmut's results (``mutants/**/*.meta``, written by ``mutmut run``), leaves out the mutants
that tests/mutation/equivalent.txt lists as equivalent (each with its one line of reasoning), and
prints for the engine and for the service core: killed / non-equivalent, the score, and every
surviving mutant (``mutmut show NAME`` prints its diff). Exits 1 when an area is below its target
or a listed equivalent has no reason. Mutants not checked yet (a partial run) are counted apart.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

from mutmut.stats import status_by_exit_code

ROOT = Path(__file__).resolve().parents[2]
EQUIVALENT = Path(__file__).with_name("equivalent.txt")
TARGETS = {"engine": 0.95, "service": 0.90}
DETECTED = {"killed", "timeout", "caught by type check", "segfault"}


def area(name: str) -> str:
    return "engine" if name.startswith("basra.engine.") else "service"


def module(name: str) -> str:
    """``basra.engine.codec`` of ``basra.engine.codec.x_encode__mutmut_3`` (methods: ``xǁCǁm``)."""
    return name.rpartition(".")[0]


def function(name: str) -> str:
    return name.rpartition("__mutmut_")[0]


def equivalents(path: Path = EQUIVALENT) -> dict[str, str]:
    """Mutant name -> why it is equivalent, from ``NAME  reason`` lines (# starts a comment)."""
    listed = {}
    for line in path.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, _, reason = line.strip().partition(" ")
        listed[name] = reason.strip()
    return listed


def statuses(mutants: Path) -> dict[str, str]:
    found = {}
    for meta in sorted(mutants.rglob("*.meta")):
        for name, code in json.loads(meta.read_text())["exit_code_by_key"].items():
            found[name] = status_by_exit_code[code]
    return found


def main() -> int:
    found = statuses(ROOT / "mutants")
    if not found:
        print("no mutmut results: run `make mutation` first")
        return 1
    listed = equivalents()
    failed = False
    for name, reason in listed.items():
        if not reason:
            print(f"equivalent.txt: {name} needs its one line of reasoning")
            failed = True
        elif found.get(name) in DETECTED:
            print(f"equivalent.txt: {name} is killed now: remove it from the list")
    for part in ("engine", "service"):
        names = [n for n in found if area(n) == part]
        if not names:
            continue  # `make mutation AREA=...` ran the other area only
        counts = Counter(found[n] for n in names if n not in listed)
        equivalent = sum(1 for n in names if n in listed)
        detected = sum(counts[s] for s in DETECTED)
        unchecked = counts["not checked"]
        scored = sum(counts.values()) - unchecked
        score = detected / scored if scored else 1.0
        print(
            f"{part}: {detected} killed of {scored} non-equivalent mutants checked: "
            f"{score:.1%} (target {TARGETS[part]:.0%}); {equivalent} listed as equivalent, "
            f"{unchecked} not checked"
        )
        print("  " + ", ".join(f"{status} {n}" for status, n in sorted(counts.items())))
        for name in sorted(n for n in names if n not in listed and found[n] not in DETECTED):
            if found[name] != "not checked":
                print(f"  {found[name]}: {name}")
        if scored and score < TARGETS[part]:
            failed = True
    print("per module: mutants, not checked, equivalent, killed of the checked rest, score")
    for name in sorted({module(n) for n in found}):
        names = [n for n in found if module(n) == name]
        checked = [n for n in names if found[n] != "not checked" and n not in listed]
        killed = sum(1 for n in checked if found[n] in DETECTED)
        print(
            f"  {name}: {len(names)} mutants, "
            f"{sum(1 for n in names if found[n] == 'not checked')} not checked, "
            f"{sum(1 for n in names if n in listed)} equivalent, {killed}/{len(checked)} killed"
            + (f" ({killed / len(checked):.1%})" if checked else "")
        )
        partly = sorted(
            {function(n) for n in names if found[n] == "not checked"}
            & {function(n) for n in names if found[n] != "not checked"}
        )
        untouched = sorted({function(n) for n in names if found[n] == "not checked"} - set(partly))
        if untouched:
            print("    not checked at all: " + ", ".join(f.rpartition(".")[2] for f in untouched))
        if partly:
            print("    partly checked: " + ", ".join(f.rpartition(".")[2] for f in partly))
    print("each survivor: `.venv/bin/mutmut show NAME`; kill it or list it in " + str(EQUIVALENT))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
