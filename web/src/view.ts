// Drawing the table from the state: plain functions from data to DOM, redrawn whole on every
// change (the table is small). Every card element carries data-card="10H"; the other seats' cards
// are drawn face down and carry none, since this page never knows them. A spectator's page has
// no hand at all.
import { MatchStatus, type Card, type CardPlans, type MatchEvent, type MatchView, type Plan, type Scoreboard } from "../gen/basra/v1/game_pb";
import type { RuleSystem } from "../gen/basra/v1/rules_pb";
import { cardCode, isRed, rankIndex, suitSymbol } from "./cards";
import { h } from "./dom";
import { cardList, cardName, formatList, formatNumber, t, type MessageId } from "./i18n";

/** What the table shows. */
export interface TableState {
  readonly view: MatchView;
  /** The match's rule system, as ListRules describes it. */
  readonly rules: RuleSystem | undefined;
  /** The plans of every card of my hand, at the view's version (while it is my turn). */
  readonly plans: readonly CardPlans[] | undefined;
  /** The code of the card I chose, until I pick its plan. */
  readonly selected: string | undefined;
  /** The scoreboard, once a hand is over. */
  readonly scoreboard: Scoreboard | undefined;
  /** The latest events, oldest first. */
  readonly events: readonly MatchEvent[];
  /** The seats this page plays for the bot. */
  readonly bots: ReadonlySet<number>;
  /** The invitation link of each seat a person plays, by seat. */
  readonly invites: Readonly<Record<number, string>>;
  readonly watchLink: string | undefined;
  readonly busy: boolean;
}

export interface TableActions {
  select(code: string | undefined): void;
  play(code: string, planId: number, trail: boolean): void;
  nextHand(): void;
  leave(): void;
  copy(link: string): void;
}

/** Who plays the other seats of a new match. */
export type Player = "bot" | "person";

/** The new match the lobby's form describes. */
export interface LobbyChoice {
  readonly rules: string;
  readonly seats: number;
  /** Who plays each seat after mine (index 0 is seat 1). */
  readonly others: readonly Player[];
  /** MatchOptions.rubber, where the rule system offers one. */
  readonly rubber: boolean;
  /** MatchOptions.bottom_card_shown, where the rule system offers it at that seat count. */
  readonly bottomCardShown: boolean;
}

/** A card face: its index and suit drawn as text, its name for screen readers. */
export function cardElement(card: Card, tag = "span", attributes: Record<string, string | boolean | EventListener> = {}, extraClass = ""): HTMLElement {
  const name = cardName(card);
  return h(
    tag,
    {
      class: ["card", isRed(card) ? "red" : "", extraClass].filter(Boolean).join(" "),
      "data-card": cardCode(card),
      "aria-label": name,
      title: name,
      ...(tag === "span" ? { role: "img" } : {}),
      ...attributes,
    },
    h("span", { class: "rank", "aria-hidden": "true" }, rankIndex(card)),
    h("span", { class: "suit", "aria-hidden": "true" }, suitSymbol(card)),
  );
}

/** A rule system's name in the player's language (the server's English title otherwise). */
const RULE_NAMES: Readonly<Record<string, MessageId>> = {
  eram: "rulesEram",
  egyptian: "rulesEgyptian",
  jordanian: "rulesJordanian",
  lobashev: "rulesLobashev",
  persian: "rulesPersian",
  "persian-partnership": "rulesPersianPartnership",
};

function ruleName(system: RuleSystem): string {
  const id = RULE_NAMES[system.name];
  return id ? t(id) : system.title;
}

export interface LobbyActions {
  change(choice: LobbyChoice): void;
  start(): void;
}

/** The lobby: the rule system, a seat count it allows, and who plays each other seat. */
export function renderLobby(systems: readonly RuleSystem[] | undefined, choice: LobbyChoice, actions: LobbyActions, busy: boolean): HTMLElement {
  const system = systems?.find((candidate) => candidate.name === choice.rules);
  const seatCount = system?.seatCounts.find((count) => count.seats === choice.seats);
  const onRules = (event: Event) => {
    const next = systems?.find((candidate) => candidate.name === (event.target as HTMLSelectElement).value);
    const seats = next?.seatCounts[0]?.seats ?? 2;
    actions.change({ rules: next?.name ?? "eram", seats, others: Array.from({ length: seats - 1 }, () => "bot"), rubber: false, bottomCardShown: false });
  };
  const onSeats = (event: Event) => {
    const seats = Number((event.target as HTMLSelectElement).value);
    // An option offered at one seat count only is dropped at another.
    const bottomCardShown = choice.bottomCardShown && (system?.seatCounts.find((count) => count.seats === seats)?.bottomCardShownOption ?? false);
    actions.change({ ...choice, seats, others: Array.from({ length: seats - 1 }, (_, at) => choice.others[at] ?? "bot"), bottomCardShown });
  };
  const option = (id: string, label: string, checked: boolean, set: (checked: boolean) => LobbyChoice) =>
    h("p", { class: "field" },
      h("input", { type: "checkbox", id, "data-focus": id, checked, disabled: busy, onchange: (event: Event) => actions.change(set((event.target as HTMLInputElement).checked)) }),
      h("label", { for: id }, label));
  const onPlayer = (at: number) => (event: Event) => {
    const others = [...choice.others];
    others[at] = (event.target as HTMLSelectElement).value === "person" ? "person" : "bot";
    actions.change({ ...choice, others });
  };
  return h(
    "section",
    { class: "lobby", "aria-labelledby": "lobby-intro" },
    h("p", { id: "lobby-intro" }, t("intro")),
    h("form", {
        id: "new-match",
        onsubmit: (event: Event) => {
          event.preventDefault();
          actions.start();
        },
      },
      h("p", { class: "field" },
        h("label", { for: "rules" }, t("rulesLabel")),
        h("select", { id: "rules", "data-focus": "rules", disabled: busy || !systems, onchange: onRules },
          (systems ?? []).map((candidate) =>
            h("option", { value: candidate.name, selected: candidate.name === choice.rules }, ruleName(candidate))))),
      h("p", { class: "field" },
        h("label", { for: "seats" }, t("seatsLabel")),
        h("select", { id: "seats", "data-focus": "seats", disabled: busy || !system, onchange: onSeats },
          (system?.seatCounts ?? []).map(({ seats, partnerships }) =>
            h("option", { value: seats, selected: seats === choice.seats }, t(partnerships ? "seatCountPartners" : "seatCount", { count: seats }))))),
      system?.rubber
        ? option("rubber", t("rubberOption", { wins: system.rubber.wins, games: system.rubber.games }), choice.rubber, (rubber) => ({ ...choice, rubber }))
        : null,
      seatCount?.bottomCardShownOption
        ? option("bottom-card-shown", t("bottomCardOption"), choice.bottomCardShown, (bottomCardShown) => ({ ...choice, bottomCardShown }))
        : null,
      h("p", {}, t("youSitFirst")),
      choice.others.map((player, at) =>
        h("p", { class: "field" },
          h("label", { for: `seat-${at + 1}` }, t("seatChoice", { seat: at + 2 })),
          h("select", { id: `seat-${at + 1}`, "data-focus": `seat-${at + 1}`, disabled: busy, onchange: onPlayer(at) },
            h("option", { value: "bot", selected: player === "bot" }, t("byBot")),
            h("option", { value: "person", selected: player === "person" }, t("byPerson"))))),
      h("button", { type: "submit", id: "start", disabled: busy || !system }, t("start")),
    ),
    h("p", { class: "note" }, t("botNote")),
  );
}

/** My seat, or undefined on a spectator's page. */
function mySeat(view: MatchView): number | undefined {
  return view.spectator ? undefined : view.seat;
}

/** How the table names a seat: "You", "Bot (seat 2)", "Player (seat 3)" (counted from 1). */
function seatLabel(state: TableState, seat: number): string {
  if (seat === mySeat(state.view)) return t("you");
  return t(state.bots.has(seat) ? "seatBot" : "seatPlayer", { seat: seat + 1 });
}

/** A side's seats, mine first: "You and Bot (seat 3)"; without partnerships, the seat's name. */
function sideLabel(state: TableState, side: number): string {
  const me = mySeat(state.view);
  const seats = [...(state.view.sides[side]?.seats ?? [side])].sort((a, b) => Number(b === me) - Number(a === me) || a - b);
  return formatList(seats.map((seat) => seatLabel(state, seat)));
}

export function renderTable(state: TableState, actions: TableActions): HTMLElement {
  const { view } = state;
  const me = mySeat(view);
  const myTurn = view.status === MatchStatus.PLAYING && me !== undefined && view.toPlay === me;
  const chosen = state.plans?.find((cardPlans) => cardPlans.card && cardCode(cardPlans.card) === state.selected);
  const mayTake = new Set(chosen?.plans.flatMap((plan) => plan.captures.map(cardCode)) ?? []);
  // The other seats in playing order from mine (every seat, for a spectator).
  const count = view.seatCount || view.seats.length;
  const others = Array.from({ length: me === undefined ? count : count - 1 }, (_, at) => ((me ?? -1) + 1 + at) % count);

  return h(
    "div",
    { class: "table" },
    me === undefined ? h("p", { id: "watching", class: "note" }, t("watching")) : null,
    renderStatus(state, myTurn),
    renderScores(state),
    h("div", { class: "seats" }, others.map((seat) => renderSeat(state, seat))),
    h("section", { class: "floor", "aria-labelledby": "floor-heading" },
      h("h2", { id: "floor-heading" }, t("floor")),
      view.floor.length === 0
        ? h("p", {}, t("emptyFloor"))
        : h("ul", { id: "floor" }, view.floor.map((card) => h("li", {}, cardElement(card, "span", {}, mayTake.has(cardCode(card)) ? "may-take" : "")))),
    ),
    // The stock's last card, in the views that may see it (the dealer's, in some rule systems).
    view.bottomCard
      ? h("section", { id: "bottom", class: "bottom", "aria-labelledby": "bottom-heading" },
          h("h2", { id: "bottom-heading" }, t("bottomCard")), cardElement(view.bottomCard))
      : null,
    chosen?.card && myTurn ? renderPlans(chosen.card, chosen, actions, state.busy) : null,
    me === undefined ? null : renderHand(state, myTurn, actions),
    view.status !== MatchStatus.PLAYING && state.scoreboard ? renderSheet(state, state.scoreboard, actions) : null,
    renderLog(state),
    Object.entries(state.invites).map(([seat, link]) =>
      renderLink(`invite-${seat}`, t("inviteLabel", { seat: Number(seat) + 1 }), link, actions)),
    state.watchLink ? renderLink("watch", t("watchLabel"), state.watchLink, actions) : null,
    h("button", { type: "button", id: "leave", class: "quiet", onclick: actions.leave }, t("leave")),
  );
}

/** Another seat: its name, whether it deals, its hand face down and the number of its cards. */
function renderSeat(state: TableState, seat: number): HTMLElement {
  const handSize = state.view.seats[seat]?.handSize ?? 0;
  return h("section", { class: "seat", "data-seat": seat, "aria-labelledby": `seat-heading-${seat}` },
    h("div", { class: "seat-head" },
      h("h2", { id: `seat-heading-${seat}` }, seatLabel(state, seat)),
      seat === state.view.dealer ? h("span", { class: "badge" }, t("dealer")) : null),
    h("div", { class: "backs", "aria-hidden": "true" }, Array.from({ length: handSize }, () => h("span", { class: "card back" }))),
    h("p", { class: "hand-size" }, t("cardsHeld", { count: handSize })),
  );
}

function renderHand(state: TableState, myTurn: boolean, actions: TableActions): HTMLElement {
  const { view } = state;
  return h("section", { class: "hand", "aria-labelledby": "hand-heading" },
    h("div", { class: "seat-head" },
      h("h2", { id: "hand-heading" }, t("yourHand")),
      view.seat === view.dealer ? h("span", { class: "badge" }, t("dealer")) : null),
    h("div", { id: "hand", role: "group", "aria-labelledby": "hand-heading", onkeydown: moveAlongHand },
      view.hand.map((card) => {
        const code = cardCode(card);
        return cardElement(card, "button", {
          type: "button",
          "data-focus": `hand-${code}`,
          "aria-pressed": String(code === state.selected),
          disabled: !myTurn || state.busy || state.plans === undefined,
          onclick: () => actions.select(code === state.selected ? undefined : code),
        });
      })),
  );
}

/** Arrow keys move between the cards of the hand (in reading order: right to left in Arabic
 * and Persian); Tab reaches them too. */
function moveAlongHand(event: Event): void {
  const { key } = event as KeyboardEvent;
  if (key !== "ArrowLeft" && key !== "ArrowRight") return;
  const cards = [...document.querySelectorAll<HTMLButtonElement>("#hand button:not([disabled])")];
  const at = cards.indexOf(document.activeElement as HTMLButtonElement);
  if (at < 0) return;
  const forward = (key === "ArrowRight") === (document.documentElement.dir !== "rtl");
  cards[(at + (forward ? 1 : cards.length - 1)) % cards.length]?.focus();
  event.preventDefault();
}

function renderStatus(state: TableState, myTurn: boolean): HTMLElement {
  const { view } = state;
  const deals = state.rules?.seatCounts.find((count) => count.seats === view.seatCount)?.dealsPerHand ?? view.dealNumber;
  let turn = "";
  if (myTurn) turn = t("yourTurn");
  else if (view.status === MatchStatus.PLAYING && view.toPlay !== undefined) turn = t("turnOf", { who: seatLabel(state, view.toPlay) });
  return h(
    "section",
    { class: "status" },
    h("p", { id: "rules-name" }, state.rules ? ruleName(state.rules) : view.rules),
    view.options?.rubber ? h("p", { id: "game" }, t("gameOfRubber", { game: view.game })) : null,
    h("p", {}, t("handAndDeal", { hand: view.handNumber, deal: view.dealNumber, deals })),
    h("p", { id: "stock" }, t("stock", { count: view.stockSize })),
    // Announced to screen readers whenever the turn changes.
    h("p", { id: "turn", class: myTurn ? "turn mine" : "turn", "aria-live": "polite" }, turn),
  );
}

/** One row per side (a seat, or two partners): its score and its pile this hand. */
function renderScores(state: TableState): HTMLElement {
  const { view } = state;
  return h(
    "section",
    { class: "scores", "aria-labelledby": "scores-heading" },
    h("h2", { id: "scores-heading" }, t("scores")),
    h("table", {}, h("tbody", {}, view.sides.map((side) =>
      h("tr", { "data-side": side.side, class: side.side === view.side && mySeat(view) !== undefined ? "mine" : "" },
        h("th", { scope: "row" }, sideLabel(state, side.side)),
        h("td", { class: "score" }, t("points", { count: side.score })),
        h("td", {}, t("captured", { count: side.capturedCount })),
        view.options?.rubber ? h("td", { class: "games" }, t("gamesWon", { count: side.gamesWon })) : null)))),
    h("p", { id: "carry" }, t("carry", { carry: view.carry })),
    h("p", { id: "target" }, t("target", { target: view.target })),
  );
}

function planLabel(plan: Plan): string {
  const cards = cardList(plan.captures);
  if (plan.basra) return t("planBasra", { cards });
  if (plan.sweep) return t("planSweep", { cards });
  return t("plan", { cards });
}

function renderPlans(card: Card, chosen: CardPlans, actions: TableActions, busy: boolean): HTMLElement {
  const code = cardCode(card);
  // Hovering or focusing a plan marks the floor cards it would take.
  const preview = (plan: Plan | undefined) => () => {
    const taking = new Set(plan?.captures.map(cardCode));
    for (const element of document.querySelectorAll<HTMLElement>("#floor [data-card]")) {
      element.classList.toggle("taking", taking.has(element.dataset["card"] ?? ""));
    }
  };
  return h(
    "section",
    {
      class: "plans",
      "aria-labelledby": "plans-heading",
      // Escape goes back to the hand.
      onkeydown: (event: Event) => {
        if ((event as KeyboardEvent).key !== "Escape") return;
        actions.select(undefined);
        document.querySelector<HTMLElement>(`#hand [data-card="${code}"]`)?.focus();
      },
    },
    h("h2", { id: "plans-heading" }, t("choosePlan", { card: cardName(card) })),
    h("div", { class: "actions", id: "plans" },
      chosen.plans.map((plan) =>
        h("button", {
          type: "button",
          "data-plan": plan.id,
          "data-focus": `plan-${code}-${plan.id}`,
          "data-takes": plan.captures.map(cardCode).join(" "),
          disabled: busy,
          onclick: () => actions.play(code, plan.id, false),
          onmouseenter: preview(plan),
          onfocus: preview(plan),
          onmouseleave: preview(undefined),
          onblur: preview(undefined),
        }, planLabel(plan))),
      chosen.trails
        ? h("button", { type: "button", id: "trail", "data-focus": `trail-${code}`, disabled: busy, onclick: () => actions.play(code, 0, true) }, t("trail", { card: cardName(card) }))
        : null,
      h("button", { type: "button", class: "quiet", onclick: () => actions.select(undefined) }, t("cancel")),
    ),
  );
}

/** The last hand's score sheet, one column per side, as HandScored and Score report it; then
 * the next deal, or the match's result. */
function renderSheet(state: TableState, scoreboard: Scoreboard, actions: TableActions): HTMLElement {
  const { view } = state;
  const hand = scoreboard.hands.at(-1);
  const sides = hand?.sides ?? [];
  const row = (label: string, value: (side: number) => number) =>
    h("tr", {}, h("th", { scope: "row" }, label), sides.map(({ side }) => h("td", {}, formatNumber(value(side)))));
  const figure = (side: number) => sides[side];
  // "Majority (27 cards or more)", or where the most cards is the whole rule, just that.
  const threshold = state.rules?.majorityMinCards ?? 0;
  const majority = threshold > 1 ? t("sheetMajority", { count: threshold }) : t("sheetMajorityMost");
  const winner = scoreboard.winnerSide;
  const tie = view.status === MatchStatus.HAND_OVER && scoreboard.sideTotals.some((total) => total >= scoreboard.target);
  return h(
    "section",
    { class: "sheet", id: "sheet", "aria-labelledby": "sheet-heading" },
    hand
      ? [
          h("h2", { id: "sheet-heading" }, t("sheet", { hand: hand.hand })),
          h("table", {},
            h("thead", {}, h("tr", {}, h("td", {}), sides.map(({ side }) => h("th", { scope: "col", "data-side": side }, sideLabel(state, side))))),
            h("tbody", {},
              row(t("sheetCards"), (side) => figure(side)?.cards ?? 0),
              row(majority, (side) => figure(side)?.majority ?? 0),
              row(t("sheetCarry"), (side) => figure(side)?.carry ?? 0),
              row(t("sheetSpecials"), (side) => figure(side)?.specials ?? 0),
              row(t("sheetBasras"), (side) => figure(side)?.basras ?? 0),
              row(t("sheetBasraPoints"), (side) => figure(side)?.basraPoints ?? 0),
              row(t("sheetHand"), (side) => figure(side)?.total ?? 0),
              row(t("sheetMatch"), (side) => scoreboard.sideTotals[side] ?? 0))),
        ]
      : null,
    tie ? h("p", { id: "extra-hand" }, t("extraHand")) : null,
    winner !== undefined
      ? [
          h("p", { id: "result", class: "result", role: "status" }, resultText(state, winner)),
          h("button", { type: "button", id: "new-match", onclick: actions.leave }, t("newMatch")),
        ]
      // Any seat deals the next hand (the deal is the same whoever asks); a spectator cannot.
      : mySeat(view) === undefined
        ? null
        : h("button", { type: "button", id: "next-hand", "data-focus": "next-hand", disabled: state.busy, onclick: actions.nextHand }, t("nextHand")),
  );
}

function resultText(state: TableState, winnerSide: number): string {
  const { view } = state;
  if (mySeat(view) !== undefined && winnerSide === view.side) {
    return t((view.sides[winnerSide]?.seats.length ?? 1) > 1 ? "yourSideWon" : "youWon");
  }
  return t("seatWon", { who: sideLabel(state, winnerSide) });
}

/** One line per event, in the player's language (the events are kept, not their text, so that
 * switching the language rewrites the whole log). */
export function describe(event: MatchEvent, state: TableState): string | undefined {
  const { event: what } = event;
  const me = mySeat(state.view);
  switch (what.case) {
    case "handStarted":
      return t("handStarted", { hand: what.value.hand });
    case "cardsDealt":
      return t("cardsDealt", { count: what.value.cardsEach });
    case "cardPlayed": {
      const played = what.value;
      const card = played.card ? cardName(played.card) : "?";
      const cards = cardList(played.captured);
      if (played.seat === me) {
        if (played.trail) return t("youTrailed", { card });
        return t(played.basra ? "youBasra" : "youTook", { card, cards });
      }
      const who = seatLabel(state, played.seat);
      if (played.trail) return t("seatTrailed", { who, card });
      return t(played.basra ? "seatBasra" : "seatTook", { who, card, cards });
    }
    case "floorCollected": {
      const { seat } = what.value;
      if (seat === undefined) return t("nobodyCollects");
      return seat === me ? t("youCollect") : t("seatCollects", { who: seatLabel(state, seat) });
    }
    case "handScored":
      return t("handScored", { hand: what.value.score?.hand ?? 0 });
    case "gameEnded":
      return t("gameEnded", { game: what.value.game, who: sideLabel(state, what.value.winnerSide) });
    case "matchEnded":
      return resultText(state, what.value.winnerSide);
    default:
      return undefined;
  }
}

function renderLog(state: TableState): HTMLElement {
  const lines = state.events.map((event) => describe(event, state)).filter((line) => line !== undefined);
  return h(
    "section",
    { class: "log", "aria-labelledby": "log-heading" },
    h("h2", { id: "log-heading" }, t("log")),
    // A polite live region: screen readers read the other seats' plays as they arrive.
    h("ol", { id: "log", "aria-live": "polite" }, lines.map((line) => h("li", {}, line))),
  );
}

/** A link to hand on (an invitation, the spectator link), with a button to copy it. */
function renderLink(id: string, label: string, link: string, actions: TableActions): HTMLElement {
  return h(
    "section",
    { class: "link" },
    h("label", { for: `${id}-link` }, label),
    h("input", { id: `${id}-link`, type: "text", readonly: true, value: link, onfocus: (event: Event) => (event.target as HTMLInputElement).select() }),
    h("button", { type: "button", id: `copy-${id}`, onclick: () => actions.copy(link) }, t("copyLink")),
  );
}
