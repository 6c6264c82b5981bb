"""Engine values to and from the basra.v1 messages. No logic of the game lives here."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final

from google.protobuf.message import Message

from basra.engine import (
    CARDS,
    BottomCard,
    Card,
    CardPlayed,
    CardsDealt,
    Event,
    FloorCollected,
    GameEnded,
    GameResult,
    HandScore,
    HandScored,
    HandStarted,
    MatchEnded,
    Phase,
    Plan,
    Profile,
    State,
    view,
)
from basra.engine.cards import cards_of
from basra.engine.game import current_target
from basra.engine.profile import RUBBER_FINAL_TARGET, RUBBER_WINS, RULE_SYSTEMS, RuleSystem
from basra.engine.rules import BASRA_VALUE, BasraValue, MajorityTie, SevenRule
from basra.service.errors import Reason, ServiceError, invalid_argument
from basra.service.records import Seating
from basra.v1 import basra_service_pb2, game_pb2, rules_pb2

_STATUS = {
    Phase.PLAYING: game_pb2.MATCH_STATUS_PLAYING,
    Phase.HAND_OVER: game_pb2.MATCH_STATUS_HAND_OVER,
    Phase.MATCH_OVER: game_pb2.MATCH_STATUS_MATCH_OVER,
}


def card_to_pb(card: Card) -> game_pb2.Card:
    # Rank and suit enums count from 1 in RULES.md's order (A..K, C D H S).
    return game_pb2.Card(rank=card.rank + 1, suit=card.suit + 1)  # type: ignore[arg-type]


# Every card's message, built once: a Play's views and events hold a dozen cards, and copying a
# built message costs a third of building one from keywords.
_CARD_PB: Final = tuple(card_to_pb(card) for card in CARDS)


def cards_to_pb(cards: Iterable[Card]) -> list[game_pb2.Card]:
    """The cards' messages, shared: pass them to a message constructor or ``extend``, which copy
    them, never mutate them."""
    return [_CARD_PB[c] for c in cards]


def card_from_pb(card: game_pb2.Card, field: str = "card") -> Card:
    """The engine card of a request's Card.

    Raises:
        ServiceError: INVALID_ARGUMENT / INVALID_CARD naming ``field``.
    """
    if not 1 <= card.rank <= 13 or not 1 <= card.suit <= 4:
        raise invalid_card(field)
    return CARDS[(card.suit - 1) * 13 + card.rank - 1]


def invalid_card(field: str) -> ServiceError:
    return invalid_argument(field, "must have a rank and a suit", reason=Reason.INVALID_CARD)


def status_of(phase: Phase) -> game_pb2.MatchStatus.ValueType:
    return _STATUS[phase]


def _card_fields(message: type[Message], field: str) -> tuple[bytes, ...]:
    """Each card as the Card field ``field`` of ``message`` holds it, its key included."""
    tag = message.DESCRIPTOR.fields_by_name[field].number << 3 | 2  # length-delimited
    assert tag < 1 << 14  # a key of one or two varint bytes
    key = bytes((tag,)) if tag < 128 else bytes((tag & 0x7F | 0x80, tag >> 7))
    return tuple(key + bytes((len(b),)) + b for b in (c.SerializeToString() for c in _CARD_PB))


_HAND: Final = _card_fields(game_pb2.MatchView, "hand")
_FLOOR: Final = _card_fields(game_pb2.MatchView, "floor")
_BOTTOM: Final = _card_fields(game_pb2.MatchView, "bottom_card")
_PLAYED_CARD: Final = _card_fields(game_pb2.CardPlayed, "card")
_CAPTURED: Final = _card_fields(game_pb2.CardPlayed, "captured")
_SPECIALS: Final = _card_fields(game_pb2.SideSummary, "captured_specials")


def view_to_pb(
    state: State,
    seat: int,
    match_id: str,
    version: int,
    bots: bytes = b"",
    seating: Seating | None = None,
    connected: frozenset[int] | None = None,
) -> game_pb2.MatchView:
    """One seat's view: its own hand and the table, never another hand or the stock's order.

    ``bots`` holds each seat's BotLevel, indexed by seat (0, or no entry: a person);
    ``seating`` each seat's holder and name; ``connected`` the seats connected now, when the
    call read presence (None: SeatSummary.connected stays unset).
    """
    out = game_pb2.MatchView()
    fill_view(out, state, seat, match_id, version, bots, seating, connected)
    return out


def fill_view(
    out: game_pb2.MatchView,
    state: State,
    seat: int,
    match_id: str,
    version: int,
    bots: bytes = b"",
    seating: Seating | None = None,
    connected: frozenset[int] | None = None,
) -> None:
    """``view_to_pb``'s view, written into ``out`` (empty), such as a response's own view:
    a view given to a response's constructor is copied (serialized and parsed again)."""
    seen = view(state, seat)
    profile = state.profile
    won = state.games_won
    # Set one by one, which costs no more than keywords given to a constructor.
    out.match_id = match_id
    out.version = version
    out.seat = seat
    out.stock_size = seen.stock_size
    # Kept as it always was for clients that read it; to_play is the meaningful one.
    out.turn = state.turn
    out.dealer = seen.dealer
    out.hand_number = seen.hand_number
    out.deal_number = seen.deal_number
    out.plays_left = seen.plays_left
    out.carry = seen.carry
    out.target = seen.target
    out.status = status_of(seen.phase)
    if seen.winner is not None:
        out.winner = _first_seat(state, seen.winner)
        out.winner_side = seen.winner
    if seen.last_capturer is not None:
        out.last_capturer = seen.last_capturer
    out.rules = profile.name
    out.side = seen.side
    if seen.turn is not None:
        out.to_play = seen.turn
    if seen.next_dealer is not None:
        out.next_dealer = seen.next_dealer
    # A rubber's games only: copied in, as the scoreboard's are.
    out.games.extend([game_result_to_pb(n, g) for n, g in enumerate(seen.games, start=1)])
    options = out.options
    options.SetInParent()  # present even with both options off
    options.rubber = profile.rubber_wins > 0
    options.bottom_card_shown = profile.bottom_card is BottomCard.EVERY_SEAT
    out.game = state.game
    out.seat_count = state.seats
    # Built in place (add), not built and then copied in.
    seats = out.seats
    for s, side in enumerate(seen.sides):
        seats.add(
            seat=s,
            hand_size=seen.hand_sizes[s],
            captured_count=seen.captured_counts[side],
            basras=seen.basras[side],
            score=seen.scores[side],
            side=side,
        )
    for s, level in enumerate(bots):
        if level:
            seats[s].bot = level  # type: ignore[assignment]
    if seating is not None:
        for s, (claim, name) in enumerate(zip(seating.claims, seating.names, strict=True)):
            holder = seats[s]
            holder.claim = claim  # type: ignore[assignment]
            if name:
                holder.display_name = name
    if connected is not None:
        for s in range(state.seats):
            seats[s].connected = s in connected or (s < len(bots) and bots[s] > 0)
    sides = out.sides
    for side in range(profile.sides):
        summary = sides.add(
            side=side,
            seats=_seats_of(state, side),
            captured_count=seen.captured_counts[side],
            basras=seen.basras[side],
            basra_points=seen.basra_points[side],
            score=seen.scores[side],
            games_won=won[side],
        )
        if specials := seen.captured_specials[side]:
            summary.MergeFromString(b"".join(map(_SPECIALS.__getitem__, specials)))
    # The cards parsed from their bytes in one call: a Card message given to the constructor
    # is copied by serializing and parsing it again, each on its own.
    cards = [*map(_HAND.__getitem__, seen.hand), *map(_FLOOR.__getitem__, seen.floor)]
    if seen.bottom_card is not None:
        cards.append(_BOTTOM[seen.bottom_card])
    out.MergeFromString(b"".join(cards))
    if (last := seen.last_play) is not None:
        _fill_card_played(
            out.last_play,
            profile,
            seat=last.seat,
            card=last.card,
            plan=last.plan,
            captured=last.captured,
            basra=last.basra_points > 0,
            sweep=last.sweep,
            trail=not last.captured,
            basra_points=last.basra_points,
        )


def spectator_view_to_pb(
    state: State,
    match_id: str,
    version: int,
    bots: bytes = b"",
    seating: Seating | None = None,
    connected: frozenset[int] | None = None,
) -> game_pb2.MatchView:
    """A spectator's view: what every seat's view shows alike, no hand at all, and no card only
    some seats may see (the stock's bottom card shown to its dealer)."""
    views = [
        view_to_pb(state, seat, match_id, version, bots, seating, connected)
        for seat in range(state.seats)
    ]
    public = views[0]
    public.ClearField("hand")
    if not all(v.HasField("bottom_card") for v in views):
        public.ClearField("bottom_card")
    public.spectator = True
    return public


def _seats_of(state: State, side: int) -> list[int]:
    return [s for s in range(state.seats) if state.profile.side_of(s) == side]


def _first_seat(state: State, side: int) -> int:
    """The lower-numbered seat of ``side``: what the per-seat ``winner`` fields carry."""
    return _seats_of(state, side)[0]


def _per_seat(profile: Profile, per_side: Sequence[int]) -> list[int]:
    return [per_side[profile.side_of(s)] for s in range(profile.seats)]


def game_result_to_pb(number: int, game: GameResult) -> game_pb2.GameResult:
    return game_pb2.GameResult(game=number, winner_side=game.winner, side_totals=game.totals)


def plan_to_pb(plan: Plan, card: Card, profile: Profile) -> game_pb2.Plan:
    value = BASRA_VALUE[profile.basra_value](card, profile.basra_points) if plan.basra else 0
    return game_pb2.Plan(
        id=plan.id,
        captures=cards_to_pb(plan.captures),
        basra=plan.basra,
        sweep=plan.sweep,
        basra_points=value,
    )


def card_plans_to_pb(card: Card, plans: Sequence[Plan], profile: Profile) -> game_pb2.CardPlans:
    return game_pb2.CardPlans(
        card=card_to_pb(card), plans=[plan_to_pb(p, card, profile) for p in plans], trails=not plans
    )


def hand_score_to_pb(score: HandScore, profile: Profile, game: int = 1) -> game_pb2.HandScore:
    def seat_score(seat: int) -> game_pb2.SeatHandScore:
        s = score.sides[profile.side_of(seat)]
        return game_pb2.SeatHandScore(
            seat=seat,
            cards=s.cards,
            majority=s.majority,
            carry=s.carry,
            specials=s.specials,
            basras=s.basras,
            basra_points=s.basra_points,
            total=s.total,
        )

    return game_pb2.HandScore(
        hand=score.hand,
        dealer=score.dealer,
        seats=[seat_score(seat) for seat in range(profile.seats)],
        carry_before=score.carry_before,
        carry_after=score.carry_after,
        sides=[
            game_pb2.SideHandScore(
                side=side,
                seats=[t for t in range(profile.seats) if profile.side_of(t) == side],
                cards=s.cards,
                majority=s.majority,
                carry=s.carry,
                specials=s.specials,
                basras=s.basras,
                basra_points=s.basra_points,
                total=s.total,
            )
            for side, s in enumerate(score.sides)
        ],
        game=game,
    )


def scoreboard_to_pb(state: State) -> game_pb2.Scoreboard:
    profile = state.profile
    return game_pb2.Scoreboard(
        hands=[hand_score_to_pb(h, profile, state.game) for h in state.history],
        totals=_per_seat(profile, state.scores),
        carry=state.carry,
        target=current_target(state),
        status=status_of(state.phase),
        winner=None if state.winner is None else _first_seat(state, state.winner),
        side_totals=state.scores,
        games=[game_result_to_pb(n, g) for n, g in enumerate(state.games, start=1)],
        winner_side=state.winner,
        seat_sides=[profile.side_of(s) for s in range(state.seats)],
    )


def match_result_to_pb(state: State, event: MatchEnded) -> game_pb2.MatchResult:
    return game_pb2.MatchResult(
        winner=_first_seat(state, event.winner),
        totals=_per_seat(state.profile, event.totals),
        winner_side=event.winner,
        side_totals=event.totals,
        games=[game_result_to_pb(n, g) for n, g in enumerate(state.games, start=1)],
    )


def _fill_card_played(
    out: game_pb2.CardPlayed,
    profile: Profile,
    *,
    seat: int,
    card: Card,
    plan: int,
    captured: Sequence[Card],
    basra: bool,
    sweep: bool,
    trail: bool,
    basra_points: int,
) -> None:
    """A play (a Play's event, a view's last play) written into ``out`` (empty), in place and
    its cards parsed from bytes: building a CardPlayed and copying it in costs twice as much."""
    out.seat = seat
    out.MergeFromString(_PLAYED_CARD[card] + b"".join(map(_CAPTURED.__getitem__, captured)))
    out.plan_id = plan
    out.basra = basra
    out.sweep = sweep
    out.trail = trail
    out.basra_points = basra_points
    out.side = profile.side_of(seat)


def event_to_pb(event: Event, version: int, after: State) -> game_pb2.MatchEvent:
    """The public MatchEvent of an engine event (no seat's cards: see ``for_seat``); ``after``
    is the state the event's step produced."""
    profile = after.profile
    out = game_pb2.MatchEvent(version=version)
    if isinstance(event, HandStarted):
        out.hand_started.CopyFrom(
            game_pb2.HandStarted(
                hand=event.hand,
                dealer=event.dealer,
                leader=event.leader,
                floor=cards_to_pb(event.floor),
                game=event.game,
            )
        )
    elif isinstance(event, CardsDealt):
        out.cards_dealt.CopyFrom(
            game_pb2.CardsDealt(
                hand=event.hand,
                deal=event.deal,
                cards_each=event.cards_each,
                stock_left=event.stock_left,
            )
        )
    elif isinstance(event, CardPlayed):
        _fill_card_played(
            out.card_played,
            profile,
            seat=event.seat,
            card=event.card,
            plan=event.plan,
            captured=event.captured,
            basra=event.basra,
            sweep=event.sweep,
            trail=event.trail,
            basra_points=event.basra_points,
        )
    elif isinstance(event, FloorCollected):
        out.floor_collected.CopyFrom(
            game_pb2.FloorCollected(
                seat=event.seat,
                cards=cards_to_pb(event.cards),
                side=None if event.seat is None else profile.side_of(event.seat),
            )
        )
    elif isinstance(event, HandScored):
        out.hand_scored.CopyFrom(
            game_pb2.HandScored(
                score=hand_score_to_pb(event.score, profile, event.game),
                totals=_per_seat(profile, event.totals),
                extra_hand=event.extra_hand,
                side_totals=event.totals,
            )
        )
    elif isinstance(event, GameEnded):
        out.game_ended.CopyFrom(
            game_pb2.GameEnded(
                game=event.game,
                winner_side=event.winner,
                side_totals=event.totals,
                games_won=event.games_won,
            )
        )
    elif isinstance(event, MatchEnded):
        out.match_ended.CopyFrom(
            game_pb2.MatchEnded(
                winner=_first_seat(after, event.winner),
                totals=_per_seat(profile, event.totals),
                winner_side=event.winner,
                side_totals=event.totals,
            )
        )
    return out


def seat_changed_to_pb(version: int, seat: int, claim: int, name: str) -> game_pb2.MatchEvent:
    """The public event of a change of a seat's holder (a claim, a reissued invitation)."""
    out = game_pb2.MatchEvent(version=version, version_complete=True)
    changed = out.seat_changed
    changed.SetInParent()
    changed.seat = seat
    changed.claim = claim  # type: ignore[assignment]
    changed.display_name = name
    return out


def for_seat(event: game_pb2.MatchEvent, dealt: Sequence[Card]) -> game_pb2.MatchEvent:
    """The event as one seat receives it: a deal carries that seat's own new cards."""
    kind = event.WhichOneof("event")
    if kind not in ("hand_started", "cards_dealt") or not dealt:
        return event
    seat_event = game_pb2.MatchEvent()
    seat_event.CopyFrom(event)
    getattr(seat_event, kind).your_cards.extend(cards_to_pb(dealt))
    return seat_event


_SEATING: Final = {
    "unspecified": rules_pb2.SEATING_DIRECTION_UNSPECIFIED,
    "anticlockwise": rules_pb2.SEATING_DIRECTION_ANTICLOCKWISE,
    "clockwise": rules_pb2.SEATING_DIRECTION_CLOCKWISE,
}
_MAJORITY_TIE: Final = {
    MajorityTie.CARRY: rules_pb2.MAJORITY_TIE_CARRY,
    MajorityTie.NOTHING: rules_pb2.MAJORITY_TIE_NOTHING,
}
_BASRA_VALUE: Final = {
    BasraValue.FIXED: rules_pb2.BASRA_VALUE_FIXED,
    BasraValue.TWICE_THE_CARD: rules_pb2.BASRA_VALUE_TWICE_THE_CARD,
}
# {seven}: how the seven of diamonds stands apart, or nothing where it is an ordinary seven.
_BASRA_WORDS: Final = {
    BasraValue.FIXED: "A capture by any card but a jack that leaves the floor empty scores {points}"
    "{seven}. A jack's sweep is never a basra.",
    BasraValue.TWICE_THE_CARD: "A capture by any card but a jack that leaves the floor empty "
    "scores twice the value of the card that made it, queen and king counting 10 (a seven 14, a "
    "queen 20, an ace 2{seven}). A jack's sweep is never a basra.",
}
_SPECIAL_SEVEN_WORDS: Final = {
    BasraValue.FIXED: " (the seven of diamonds by its own rule)",
    BasraValue.TWICE_THE_CARD: "; the seven of diamonds by its own rule, 14",
}
# VARIANTS.md, "Not a profile: the Lebanese game": the published list says it is left out.
LEFT_OUT: Final = (
    (
        "lebanese",
        "The Lebanese game is not played: its source says a basra happens in only two cases and "
        "the text of those cases is missing.",
    ),
)
_BOTTOM_WORDS: Final = {
    BottomCard.HIDDEN: "Nobody sees the stock's bottom card.",
    BottomCard.DEALER: "The stock's bottom card (dealt last) is shown to the dealer after the "
    "shuffle, until it is dealt.",
}


def rule_system_to_pb(system: RuleSystem) -> rules_pb2.RuleSystem:
    """What ListRules says of a rule system, read from its profile (its data is the truth)."""
    base = system.base
    points = base.points.points
    tie = (
        "a tie for the most cards scores nothing and its value is carried to the next majority"
        if base.majority_tie is MajorityTie.CARRY
        else "a tie for the most cards scores nothing and carries nothing"
    )
    need = f", and at least {base.majority_cards} of the 52," if base.majority_cards > 1 else ""
    out = rules_pb2.RuleSystem(
        name=system.name,
        title=system.title,
        seat_counts=[
            rules_pb2.SeatCount(
                seats=seats,
                partnerships=profile.partnerships,
                sides=profile.sides,
                deals_per_hand=profile.deals_per_hand,
                bottom_card_shown_option=seats in system.bottom_card_seats,
            )
            for seats in system.seat_counts
            for profile in (system.profile(seats),)
        ],
        target=base.target,
        cards_per_deal=base.cards_per_deal,
        dealt_one_at_a_time=base.deal_singly,
        floor_cards=base.floor_cards,
        buried=cards_to_pb(cards_of(base.buried)),
        special_cards=[
            rules_pb2.CardPoints(card=card_to_pb(CARDS[c]), points=p)
            for c, p in enumerate(points)
            if p
        ],
        majority_points=base.majority_points,
        majority_min_cards=base.majority_cards,
        majority_tie=_MAJORITY_TIE[base.majority_tie],
        basra_value=_BASRA_VALUE[base.basra_value],
        basra_points=base.basra_points,
        fixed_points=base.fixed_points,
        seven_of_diamonds=system.seven_in_words,
        majority=f"The side with more cards than every other side{need} scores "
        f"{base.majority_points}; {tie}.",
        basra=_BASRA_WORDS[base.basra_value].format(
            points=base.basra_points,
            seven=""
            if base.seven is SevenRule.ORDINARY
            else _SPECIAL_SEVEN_WORDS[base.basra_value],
        ),
        bottom_card=_BOTTOM_WORDS[base.bottom_card]
        + (
            " With option bottom_card_shown (at 2 seats) every seat sees it."
            if system.bottom_card_seats
            else ""
        ),
        seating_direction=_SEATING[system.direction],
        source=system.source,
        wordings=[
            rules_pb2.RuleSystemWording(
                language=wording.language, name=wording.name, description=wording.description
            )
            for wording in system.wordings
        ],
    )
    if system.rubber:
        out.rubber.CopyFrom(
            rules_pb2.RubberRules(
                games=2 * RUBBER_WINS - 1, wins=RUBBER_WINS, final_target=RUBBER_FINAL_TARGET
            )
        )
    return out


def list_rules_response() -> basra_service_pb2.ListRulesResponse:
    """ListRules' answer: every rule system the service plays, and the ones it leaves out."""
    return basra_service_pb2.ListRulesResponse(
        rules=[rule_system_to_pb(system) for system in RULE_SYSTEMS.values()],
        left_out=[rules_pb2.LeftOutRuleSystem(name=name, reason=why) for name, why in LEFT_OUT],
    )
