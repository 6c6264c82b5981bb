"""``basra-engine plans``, the rules oracle, run as users run it: a command in a shell."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Final

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from basra.engine import CARDS, MAX_PLANS, Card, capture_plans, parse_cards
from basra.engine.plans import plan_count
from tests.support import basra_engine

COMMAND: Final = basra_engine()  # the console command installed with the package


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


def test_t_is_ten_in_every_mode() -> None:
    single = run("--floor", "4S 6C", "--card", "TD", "--json")
    assert json.loads(single.stdout)["card"] == "10D"
    batch = run("--batch", "-", stdin='{"floor": "4S TC", "card": "td"}\n')
    assert json.loads(batch.stdout)["floor"] == ["4S", "10C"]


def test_batch_and_single_mode_take_the_same_input() -> None:
    floor = "AC 2\u2665 3d 4S 6C"
    single = json.loads(run("--floor", floor, "--card", "7H", "--json").stdout)
    lines = [{"floor": floor, "card": "7H"}, {"floor": floor.split(), "card": "7H"}]
    batch = run("--batch", "-", stdin="".join(json.dumps(q) + "\n" for q in lines))
    assert [json.loads(line) for line in batch.stdout.splitlines()] == [single, single]
    no_floor = run("--batch", "-", stdin='{"card": "7H"}\n')  # like a missing --floor
    assert json.loads(no_floor.stdout)["plans"] == []


def test_a_missing_batch_file_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    missing = tmp_path / "nope.jsonl"
    result = run("--batch", str(missing))
    assert result.returncode == 2
    assert result.stderr == f"error: cannot read --batch {missing}: No such file or directory\n"
    as_json = run("--batch", str(missing), "--json")
    assert as_json.returncode == 2
    assert json.loads(as_json.stdout)["error"]["reason"] == "BATCH_UNREADABLE"
    assert as_json.stderr == ""


def test_with_json_errors_are_json_too() -> None:
    result = run("--floor", "4S", "--card", "XX", "--json")
    assert result.returncode == 1
    assert result.stderr == ""
    error = json.loads(result.stdout)["error"]
    assert error["reason"] == "INVALID_CARD"
    assert "invalid card 'XX'" in error["message"]
    assert json.loads(run("--json").stdout)["error"]["reason"] == "CARD_MISSING"


def test_card_with_batch_is_refused() -> None:
    result = run("--batch", "-", "--card", "7H", stdin='{"card": "7H"}\n')
    assert result.returncode == 2
    assert "leave out --card/--floor" in result.stderr
    assert result.stdout == ""


def test_more_than_twelve_plans_are_announced() -> None:
    floor = "AC AD AH AS 2C 2D 2H 2S 3C 3D 4C 4D"
    text = run("--floor", floor, "--card", "10H")
    assert text.stdout.splitlines()[-1] == "105 plans exist: the rules offer only the first 12"
    document = json.loads(run("--floor", floor, "--card", "10H", "--json").stdout)
    assert len(document["plans"]) == 12
    assert document["plans_total"] == 105
    assert "plans_total" not in json.loads(run("--floor", "4S", "--card", "4H", "--json").stdout)


def test_the_card_notation_is_chosen_by_a_flag() -> None:
    result = run("--floor", "9S 8H", "--card", "7D", "--cards", "symbols")
    assert "plan 1: 8\u2665 9\u2660  (basra, sweep)" in result.stdout
    assert "card:  7\u2666" in result.stdout


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(CARDS), min_size=1, max_size=15, unique=True))
def test_the_plan_count_is_the_number_of_plans_below_the_cap(cards: list[Card]) -> None:
    card, floor = cards[0], cards[1:]
    plans = capture_plans(floor, card)
    total = plan_count(floor, card)
    if len(plans) < MAX_PLANS:
        assert total == len(plans)
    else:
        assert total >= MAX_PLANS
