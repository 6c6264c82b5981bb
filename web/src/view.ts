// Drawing the table from the state: plain functions from data to DOM, redrawn whole on every
// change (the table is small). Every card element carries data-card="10H"; the opponent's cards
// are drawn face down and carry none, since this page never knows them.
import { MatchStatus, type Card, type CardPlans, type MatchEvent, type MatchView, type Plan, type Scoreboard } from "../gen/basra/v1/game_pb";
import { cardCode, isRed, rankIndex, suitSymbol } from "./cards";
import { h } from "./dom";
import { cardList, cardName, formatNumber, t, type MessageId } from "./i18n";

/** What the table shows. */
export interface TableState {
  readonly view: MatchView;
  /** The plans of every card of my hand, at the view's version (while it is my turn). */
  readonly plans: readonly CardPlans[] | undefined;
  /** The code of the card I chose, until I pick its plan. */
  readonly selected: string | undefined;
  /** The scoreboard, once a hand is over. */
  readonly scoreboard: Scoreboard | undefined;
  /** The latest events, oldest first. */
  readonly events: readonly MatchEvent[];
  readonly opponentIsBot: boolean;
  readonly invite: string | undefined;
  readonly busy: boolean;
}

export interface TableActions {
  select(code: string | undefined): void;
  play(code: string, planId: number, trail: boolean): void;
  nextHand(): void;
  leave(): void;
  copyInvite(): void;
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

export function renderLobby(start: (opponent: "bot" | "friend") => void, busy: boolean): HTMLElement {
  return h(
    "section",
    { class: "lobby", "aria-labelledby": "lobby-intro" },
    h("p", { id: "lobby-intro" }, t("intro")),
    h("div", { class: "actions" },
      h("button", { type: "button", id: "play-bot", disabled: busy, onclick: () => start("bot") }, t("playBot")),
      h("button", { type: "button", id: "play-friend", disabled: busy, onclick: () => start("friend") }, t("playFriend")),
    ),
    h("p", { class: "note" }, t("botNote")),
  );
}

export function renderTable(state: TableState, actions: TableActions): HTMLElement {
  const { view } = state;
  const me = view.seat;
  const opponent = 1 - me;
  const myTurn = view.status === MatchStatus.PLAYING && view.turn === me;
  const chosen = state.plans?.find((cardPlans) => cardPlans.card && cardCode(cardPlans.card) === state.selected);
  const mayTake = new Set(chosen?.plans.flatMap((plan) => plan.captures.map(cardCode)) ?? []);

  return h(
    "div",
    { class: "table" },
    renderStatus(state, myTurn),
    renderScores(view, state.opponentIsBot),
    h("section", { class: "opponent", "aria-labelledby": "opponent-heading" },
      h("h2", { id: "opponent-heading" }, t("opponentHand")),
      h("div", { class: "backs", "aria-hidden": "true" },
        Array.from({ length: view.seats[opponent]?.handSize ?? 0 }, () => h("span", { class: "card back" }))),
      h("p", { id: "opponent-hand-size" }, t("cardsHeld", { count: view.seats[opponent]?.handSize ?? 0 })),
    ),
    h("section", { class: "floor", "aria-labelledby": "floor-heading" },
      h("h2", { id: "floor-heading" }, t("floor")),
      view.floor.length === 0
        ? h("p", {}, t("emptyFloor"))
        : h("ul", { id: "floor" }, view.floor.map((card) => h("li", {}, cardElement(card, "span", {}, mayTake.has(cardCode(card)) ? "may-take" : "")))),
    ),
    chosen?.card && myTurn ? renderPlans(chosen.card, chosen, actions, state.busy) : null,
    h("section", { class: "hand", "aria-labelledby": "hand-heading" },
      h("h2", { id: "hand-heading" }, t("yourHand")),
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
    ),
    view.status !== MatchStatus.PLAYING && state.scoreboard ? renderSheet(view, state.scoreboard, actions, state.busy) : null,
    renderLog(state.events, me),
    state.invite ? renderInvite(state.invite, actions) : null,
    h("button", { type: "button", id: "leave", class: "quiet", onclick: actions.leave }, t("leave")),
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
  let turn: MessageId | undefined;
  if (view.status === MatchStatus.PLAYING) turn = myTurn ? "yourTurn" : state.opponentIsBot ? "botTurn" : "opponentTurn";
  return h(
    "section",
    { class: "status" },
    h("p", {}, t("handAndDeal", { hand: view.handNumber, deal: view.dealNumber, deals: 6 })),
    h("p", { id: "stock" }, t("stock", { count: view.stockSize })),
    // Announced to screen readers whenever the turn changes.
    h("p", { id: "turn", class: myTurn ? "turn mine" : "turn", "aria-live": "polite" }, turn ? t(turn) : ""),
  );
}

function renderScores(view: MatchView, opponentIsBot: boolean): HTMLElement {
  const me = view.seat;
  const row = (seat: number, label: MessageId) =>
    h("tr", { "data-seat": seat },
      h("th", { scope: "row" }, t(label)),
      h("td", { class: "score" }, t("points", { count: view.seats[seat]?.score ?? 0 })),
      h("td", {}, t("captured", { count: view.seats[seat]?.capturedCount ?? 0 })));
  return h(
    "section",
    { class: "scores", "aria-labelledby": "scores-heading" },
    h("h2", { id: "scores-heading" }, t("scores")),
    h("table", {}, h("tbody", {}, row(me, "you"), row(1 - me, opponentIsBot ? "bot" : "opponent"))),
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

function renderSheet(view: MatchView, scoreboard: Scoreboard, actions: TableActions, busy: boolean): HTMLElement {
  const me = view.seat;
  const hand = scoreboard.hands.at(-1);
  const seats = [me, 1 - me];
  const row = (label: MessageId, value: (seat: number) => number) =>
    h("tr", {}, h("th", { scope: "row" }, t(label)), seats.map((seat) => h("td", {}, formatNumber(value(seat)))));
  const winner = scoreboard.winner;
  const totals = { you: scoreboard.totals[me] ?? 0, opponent: scoreboard.totals[1 - me] ?? 0 };
  return h(
    "section",
    { class: "sheet", id: "sheet", "aria-labelledby": "sheet-heading" },
    hand
      ? [
          h("h2", { id: "sheet-heading" }, t("sheet", { hand: hand.hand })),
          h("table", {},
            h("thead", {}, h("tr", {}, h("td", {}), h("th", { scope: "col" }, t("you")), h("th", { scope: "col" }, t("opponent")))),
            h("tbody", {},
              row("sheetCards", (seat) => hand.seats[seat]?.cards ?? 0),
              row("sheetMajority", (seat) => hand.seats[seat]?.majority ?? 0),
              row("sheetCarry", (seat) => hand.seats[seat]?.carry ?? 0),
              row("sheetSpecials", (seat) => hand.seats[seat]?.specials ?? 0),
              row("sheetBasras", (seat) => hand.seats[seat]?.basraPoints ?? 0),
              row("sheetHand", (seat) => hand.seats[seat]?.total ?? 0),
              row("sheetMatch", (seat) => scoreboard.totals[seat] ?? 0))),
        ]
      : null,
    winner === undefined
      ? h("button", { type: "button", id: "next-hand", "data-focus": "next-hand", disabled: busy, onclick: actions.nextHand }, t("nextHand"))
      : [
          h("p", { id: "result", class: "result", role: "status" }, t(winner === me ? "youWon" : "opponentWon", totals)),
          h("button", { type: "button", id: "new-match", onclick: actions.leave }, t("newMatch")),
        ],
  );
}

/** One line per event, in the player's language (the events are kept, not their text, so that
 * switching the language rewrites the whole log). */
export function describe(event: MatchEvent, me: number): string | undefined {
  const { event: what } = event;
  switch (what.case) {
    case "handStarted":
      return t("handStarted", { hand: what.value.hand });
    case "cardsDealt":
      return t("cardsDealt", { count: what.value.cardsEach });
    case "cardPlayed": {
      const played = what.value;
      const mine = played.seat === me;
      const card = played.card ? cardName(played.card) : "?";
      if (played.trail) return t(mine ? "youTrailed" : "opponentTrailed", { card });
      const cards = cardList(played.captured);
      if (played.basra) return t(mine ? "youBasra" : "opponentBasra", { card, cards });
      return t(mine ? "youTook" : "opponentTook", { card, cards });
    }
    case "floorCollected":
      if (what.value.seat === undefined) return t("nobodyCollects");
      return t(what.value.seat === me ? "youCollect" : "opponentCollects");
    case "handScored":
      return t("handScored", { hand: what.value.score?.hand ?? 0 });
    case "matchEnded": {
      const totals = { you: what.value.totals[me] ?? 0, opponent: what.value.totals[1 - me] ?? 0 };
      return t(what.value.winner === me ? "youWon" : "opponentWon", totals);
    }
    default:
      return undefined;
  }
}

function renderLog(events: readonly MatchEvent[], me: number): HTMLElement {
  const lines = events.map((event) => describe(event, me)).filter((line) => line !== undefined);
  return h(
    "section",
    { class: "log", "aria-labelledby": "log-heading" },
    h("h2", { id: "log-heading" }, t("log")),
    // A polite live region: screen readers read the opponent's plays as they arrive.
    h("ol", { id: "log", "aria-live": "polite" }, lines.map((line) => h("li", {}, line))),
  );
}

function renderInvite(link: string, actions: TableActions): HTMLElement {
  return h(
    "section",
    { class: "invite" },
    h("label", { for: "invite-link" }, t("inviteLabel")),
    h("input", { id: "invite-link", type: "text", readonly: true, value: link, onfocus: (event: Event) => (event.target as HTMLInputElement).select() }),
    h("button", { type: "button", id: "copy-invite", onclick: actions.copyInvite }, t("copyLink")),
  );
}
