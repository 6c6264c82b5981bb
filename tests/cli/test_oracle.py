"""``basra-engine plans``, the rules oracle, run as users run it: a command in a shell."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from basra.engine import Card, capture_plans, parse_cards

_FOUND = shutil.which("basra-engine", path=str(Path(sys.executable).parent))
assert _FOUND, "the basra-engine console command is installed with the package"
COMMAND: str = _FOUND


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [COMMAND, "plans", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_prints_the_plans_readably() -> None:
    result = run("--floor", "AC 2H 3D 4S 6C", "--card", "7H")
    assert result.returncode == 0
    assert result.stdout.splitlines() == [
        "floor: AC 2H 3D 4S 6C",
        "card:  7H",
        "plan 1: AC 3D 4S 6C",
        "plan 2: AC 2H 4S",
    ]


def test_json_is_the_documented_object() -> None:
    result = run("--floor", "4S 6H 10C 3D", "--card", "10H", "--json")
    assert result.returncode == 0
    assert json.loads(result.stdout) == {
        "floor": ["4S", "6H", "10C", "3D"],
        "card": "10H",
        "plans": [{"id": 1, "captures": ["10C", "4S", "6H"], "basra": False, "sweep": False}],
    }


def test_a_trailing_card_has_an_empty_plan_list_and_says_so() -> None:
    assert json.loads(run("--floor", "QS KH 9D", "--card", "8c", "--json").stdout)["plans"] == []
    assert "trails" in run("--floor", "QS KH 9D", "--card", "8C").stdout


def test_symbols_and_lower_case_are_accepted_and_flags_shown() -> None:
    result = run("--floor", "9\u2660 8h", "--card", "7\u2666")
    assert result.returncode == 0
    assert "plan 1: 8H 9S  (basra, sweep)" in result.stdout


@pytest.mark.parametrize(
    ("floor", "card", "message"),
    [
        ("4S 6H", "11H", "invalid card '11H'"),
        ("4S XX", "10H", "invalid card 'XX'"),
        ("4S 6H 4S", "10H", "'4S' appears more than once"),
        ("4S 10H", "10H", "'10H' cannot be played while on the floor"),
    ],
)
def test_bad_cards_and_duplicates_print_a_clear_error_and_exit_non_zero(
    floor: str, card: str, message: str
) -> None:
    result = run("--floor", floor, "--card", card)
    assert result.returncode == 1
    assert message in result.stderr
    assert result.stdout == ""


def test_batch_answers_each_line_in_order_in_one_process(tmp_path: Path) -> None:
    questions: list[dict[str, str | list[str]]] = [
        {"floor": ["AC", "2H", "3D", "4S", "6C"], "card": "7H"},
        {"floor": [], "card": "JS"},
        {"floor": ["QS"], "card": "QH"},
    ] * 200
    source = tmp_path / "questions.jsonl"
    source.write_text("".join(json.dumps(q) + "\n" for q in questions))
    result = run("--batch", str(source))
    assert result.returncode == 0
    answers = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(answers) == len(questions)
    for question, answer in zip(questions, answers, strict=True):
        floor, card = question["floor"], question["card"]
        assert isinstance(card, str)
        plans = capture_plans(parse_cards(floor), Card.parse(card))
        assert answer["card"] == question["card"]
        assert [p["captures"] for p in answer["plans"]] == [
            [str(c) for c in p.captures] for p in plans
        ]


def test_batch_keeps_answers_aligned_and_fails_on_bad_lines() -> None:
    stdin = '{"floor": ["QS"], "card": "QH"}\nnot json\n{"floor": ["ZZ"], "card": "QH"}\n[1]\n'
    result = run("--batch", "-", stdin=stdin)
    assert result.returncode == 1
    answers = [json.loads(line) for line in result.stdout.splitlines()]
    assert answers[0]["plans"][0]["basra"] is True
    assert [a["error"]["reason"] for a in answers[1:]] == [
        "INVALID_JSON",
        "INVALID_CARD",
        "INVALID_INPUT",
    ]
    assert [a["line"] for a in answers[1:]] == [2, 3, 4]
    assert "line 3: invalid card 'ZZ'" in result.stderr
