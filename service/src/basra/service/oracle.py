"""``basra-engine plans`` and ``basra-engine rules``: the rules oracle for frontend teams, QA and
rule disputes.

``plans`` answers "what may this card take from this floor?" with the engine's own plan function
under a rule system (``--rules``, default eram), one position at a time or a JSON-lines batch in
one process. ``rules`` lists the rule systems as the service's ListRules describes them.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Sequence
from typing import IO, Any

from basra.engine import (
    ERAM,
    MAX_PLANS,
    BasraError,
    Card,
    InvalidInputError,
    Plan,
    Profile,
    capture_plans,
    parse_cards,
    rule_system,
)
from basra.engine.cards import format_cards
from basra.engine.plans import plan_count
from basra.engine.rules import BASRA_VALUE


def plans_document(
    floor_tokens: str | Sequence[str], card_token: str, rules: str = ERAM.name
) -> dict[str, Any]:
    """The JSON answer for one position under rule system ``rules``. Under any rules but eram
    the answer names them and gives each plan's basra points.

    Raises:
        InvalidInputError: a bad card token, a repeated card, the card also on the floor, or
            unknown rules.
    """
    profile = rule_system(rules).base
    floor = parse_cards(floor_tokens)
    card = Card.parse(card_token)
    if card in floor:
        raise InvalidInputError(f"card {str(card)!r} cannot be played while on the floor")
    plans = capture_plans(floor, card, profile)
    document: dict[str, Any] = {"floor": [str(c) for c in floor], "card": str(card)}
    if profile != ERAM:
        document["rules"] = profile.name
    document["plans"] = [_plan_json(p, card, profile) for p in plans]
    total = plan_count(floor, card, profile)
    if total > len(plans):
        document["plans_total"] = total  # only the first MAX_PLANS are offered
    return document


def _plan_json(plan: Plan, card: Card, profile: Profile) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": plan.id,
        "captures": [str(c) for c in plan.captures],
        "basra": plan.basra,
        "sweep": plan.sweep,
    }
    if profile != ERAM:
        value = BASRA_VALUE[profile.basra_value](card, profile.basra_points)
        out["basra_points"] = value if plan.basra else 0
    return out


def rules_document() -> dict[str, Any]:
    """Every rule system, exactly as the service's ListRules answers (Protobuf JSON mapping)."""
    from google.protobuf import json_format

    from basra.service import convert

    document: dict[str, Any] = json_format.MessageToDict(convert.list_rules_response())
    return document


def render_rules(document: dict[str, Any]) -> str:
    """The rule systems as people read them."""
    lines: list[str] = []
    for system in document["rules"]:
        seats = ", ".join(
            f"{s['seats']}" + (" (two partnerships)" if s.get("partnerships") else "")
            for s in system["seatCounts"]
        )
        english = system["wordings"][0]
        lines += [
            f"{english['name']} (--rules {system['name']})",
            f"  {english['description']}",
            f"  seats {seats}; target {system['target']}; deals of {system['cardsPerDeal']}"
            + (" one card at a time" if system.get("dealtOneAtATime") else "")
            + (f"; a rubber of {system['rubber']['games']} games" if "rubber" in system else ""),
            f"  7D: {system['sevenOfDiamonds']}",
            f"  majority: {system['majority']}",
            f"  basra: {system['basra']}",
            f"  bottom card: {system['bottomCard']}",
        ]
    lines += [f"({left['reason']})" for left in document.get("leftOut", [])]
    return "\n".join(lines)


def rules_main(as_json: bool) -> int:
    """Entry point of ``basra-engine rules``; returns the exit status."""
    document = rules_document()
    print(json.dumps(document, ensure_ascii=False) if as_json else render_rules(document))
    return 0


def render(document: dict[str, Any], *, symbols: bool = False) -> str:
    """The answer as people read it."""

    def cards(tokens: Iterable[str]) -> str:
        return format_cards((Card.parse(t) for t in tokens), symbols=symbols)

    lines = [
        f"floor: {cards(document['floor']) or '(empty)'}",
        f"card:  {cards([document['card']])}",
    ]
    if not document["plans"]:
        lines.append("no capture plan: the card trails (stays on the floor)")
    for plan in document["plans"]:
        flags = [f for f in ("basra", "sweep") if plan[f]]
        if plan.get("basra_points"):
            flags[0] = f"basra +{plan['basra_points']}"
        lines.append(
            f"plan {plan['id']}: {cards(plan['captures'])}"
            + (f"  ({', '.join(flags)})" if flags else "")
        )
    if "plans_total" in document:
        lines.append(
            f"{document['plans_total']} plans exist: the rules offer only the first {MAX_PLANS}"
        )
    return "\n".join(lines)


def run_batch(source: IO[str], out: IO[str], err: IO[str], default_rules: str = ERAM.name) -> int:
    """Answer JSON lines ``{"floor": ..., "card": "..."}`` one per line, in order (a line may
    name its ``"rules"``; else ``default_rules``).

    ``floor`` is written as on the command line (``"4S 6H"``) or as a list (``["4S", "6H"]``),
    and may be left out (an empty floor); cards as ``--card`` takes them (``10D``, ``TD``, ``10♦``).

    A bad line gets ``{"line": n, "error": {...}}`` in its place, so answers stay aligned with
    questions; the exit status is 1 when any line failed.
    """
    failed = False
    for number, line in enumerate(source, start=1):
        if not line.strip():
            continue
        try:
            request = json.loads(line)
            if not isinstance(request, dict):
                raise InvalidInputError("each line must be a JSON object")
            floor, card = request.get("floor", ""), request.get("card")
            rules = request.get("rules", default_rules)
            if not isinstance(floor, str) and not (
                isinstance(floor, list) and all(isinstance(t, str) for t in floor)
            ):
                raise InvalidInputError(
                    '"floor" must be a string of cards ("4S 6H") or a list of card strings'
                )
            if not isinstance(card, str):
                raise InvalidInputError('"card" must be a card string')
            if not isinstance(rules, str):
                raise InvalidInputError('"rules" must be a rule system name')
            answer: dict[str, Any] = plans_document(floor, card, rules)
        except (BasraError, json.JSONDecodeError) as exc:
            failed = True
            reason = exc.reason if isinstance(exc, BasraError) else "INVALID_JSON"
            answer = {"line": number, "error": {"reason": reason, "message": str(exc)}}
            print(f"line {number}: {exc}", file=err)
        out.write(json.dumps(answer, ensure_ascii=False) + "\n")
    return 1 if failed else 0


def main(
    floor: str | None,
    card: str | None,
    batch: str | None,
    as_json: bool,
    *,
    symbols: bool = False,
    rules: str = ERAM.name,
) -> int:
    """Entry point of ``basra-engine plans``; returns the exit status.

    Errors are one line on stderr, or with ``as_json`` one ``{"error": {...}}`` object on stdout.
    """

    def fail(reason: str, message: str, status: int) -> int:
        if as_json:
            print(json.dumps({"error": {"reason": reason, "message": message}}, ensure_ascii=False))
        else:
            print(f"error: {message}", file=sys.stderr)
        return status

    if batch is not None and (card is not None or floor):
        return fail(
            "FLAGS_CONFLICT",
            "--batch reads each line's floor and card: leave out --card/--floor",
            2,
        )
    if batch is not None:
        if batch == "-":
            return run_batch(sys.stdin, sys.stdout, sys.stderr, rules)
        try:
            with open(batch, encoding="utf-8") as source:
                return run_batch(source, sys.stdout, sys.stderr, rules)
        except OSError as exc:
            return fail("BATCH_UNREADABLE", f"cannot read --batch {batch}: {exc.strerror}", 2)
    if card is None:
        return fail("CARD_MISSING", "give --card (and --floor), or --batch FILE", 2)
    try:
        document = plans_document(floor or "", card, rules)
    except BasraError as exc:
        return fail(exc.reason, str(exc), 1)
    print(
        json.dumps(document, ensure_ascii=False) if as_json else render(document, symbols=symbols)
    )
    return 0
