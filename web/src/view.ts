// Drawing the table from the state: plain functions from data to DOM, redrawn whole on every
// change (the table is small). Every card element carries data-card="10H"; the other seats' cards
// are drawn face down and carry none, since this page never knows them. A spectator's page has
// no hand at all.
import { BotLevel, MatchStatus, SeatClaim, type Card, type CardPlans, type CardPlayed, type FloorCollected, type HandScore, type MatchEvent, type MatchView, type Plan, type Rank } from "../gen/basra/v1/game_pb";
import { SeatingDirection, type RuleSystem, type RuleSystemWording } from "../gen/basra/v1/rules_pb";
import { cardCode, isRed, rankIndex, suitSymbol } from "./cards";
import { h } from "./dom";
import type { Invite } from "./session";
import { cardList, cardName, currentLanguage, formatList, formatNumber, rulesText, t, type MessageId } from "./i18n";

/** What the table shows. */
export interface TableState {
  readonly view: MatchView;
  /** The match's rule system, as ListRules describes it. */
  readonly rules: RuleSystem | undefined;
  /** Every rule system ListRules lists (How to play names them). */
  readonly systems: readonly RuleSystem[];
  /** The plans of every card of my hand, at the view's version (while it is my turn). */
  readonly plans: readonly CardPlans[] | undefined;
  /** The code of the card I chose, until I pick its plan. */
  readonly selected: string | undefined;
  /** The score sheet of the hand that just ended, while it is open (it stays open until the
   * player goes on, even when a bot or another player has dealt the next hand meanwhile). */
  readonly sheet: Sheet | undefined;
  /** The latest events, oldest first. */
  readonly events: readonly MatchEvent[];
  /** Where the leftover floor went at the end of the view's hand, once that hand is over
   * (FloorCollected, from the stream). */
  readonly collected: FloorCollected | undefined;
  /** The invitation link of each other person's seat, by seat (the creator's page only). */
  readonly invites: Readonly<Record<number, string>>;
  /** Whether each seat has a WatchMatch stream open somewhere, by seat (undefined: not known
   * yet), from GetMatch and the stream's Presence messages. */
  readonly connected: readonly (boolean | undefined)[];
  readonly watchLink: string | undefined;
  readonly busy: boolean;
  /** A short moment over the felt (a basra, the end of a hand, a game or the match). */
  readonly moment: Moment | undefined;
}

/** A finished hand's score sheet: its scoring, the game totals after it, and whether the totals
 * call for another hand (from the HandScored event, or from Score after a reload). */
export interface Sheet {
  readonly hand: HandScore | undefined;
  readonly sideTotals: readonly number[];
  readonly extraHand: boolean;
}

export interface Moment {
  readonly kind: "basra" | "hand" | "game" | "match";
  readonly text: string;
}

export interface TableActions {
  /** A card of the hand clicked: played at once when its outcome is forced, else its plans
   * shown (undefined: back to the hand). */
  choose(code: string | undefined): void;
  play(code: string, planId: number, trail: boolean): void;
  /** Deals the next hand, or, when it is dealt already, closes the score sheet. */
  nextHand(): void;
  /** Leaves the table (after asking). */
  leave(): void;
  /** Back to the lobby once the match is over. */
  newMatch(): void;
  /** Copies a link; `field` is the id of the text field that shows it. */
  copy(link: string, field: string): void;
  /** Gives a person's seat a new invitation (the creator's page only; asks first when someone
   * holds the seat). */
  reissue(seat: number): void;
}

/** Who plays the other seats of a new match: a person, or one of the service's bots at a level
 * (BotLevel), the strongest first. */
export const BOT_LEVELS = { strong: BotLevel.STRONG, greedy: BotLevel.GREEDY, random: BotLevel.RANDOM } as const;
export type BotName = keyof typeof BOT_LEVELS;
export type Player = BotName | "person";
const PLAYERS: readonly Player[] = ["strong", "greedy", "random", "person"];
const PLAYER_NAMES: Readonly<Record<Player, MessageId>> = { strong: "byStrong", greedy: "byGreedy", random: "byRandom", person: "byPerson" };
/** A bot seat's label, by its level. */
const BOT_LABELS: Readonly<Partial<Record<BotLevel, MessageId>>> = {
  [BotLevel.STRONG]: "seatBotStrong",
  [BotLevel.GREEDY]: "seatBotGreedy",
  [BotLevel.RANDOM]: "seatBotRandom",
};

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
  /** The creator's display name (empty: none). */
  readonly name: string;
}

/** A card face: its index and suit drawn as text, its name for screen readers. The accessible
 * name starts with the visible label ("A♥ ace of hearts"), so that voice control users can say
 * what they see (WCAG 2.5.3). */
export function cardElement(card: Card, tag = "span", attributes: Record<string, string | boolean | EventListener> = {}, extraClass = ""): HTMLElement {
  const name = `${rankIndex(card)}${suitSymbol(card)} ${cardName(card)}`;
  return h(
    tag,
    {
      class: ["card", isRed(card) ? "red" : "", extraClass].filter(Boolean).join(" "),
      "data-card": cardCode(card),
      "aria-label": name,
      ...(tag === "span" ? { role: "img" } : {}),
      ...attributes,
    },
    h("span", { class: "rank", "aria-hidden": "true" }, rankIndex(card)),
    h("span", { class: "suit", "aria-hidden": "true" }, suitSymbol(card)),
  );
}

/** A rule system's wording for players, as ListRules gives it: the one of the page's language,
 * else the English one, else none. */
function wording(system: RuleSystem): RuleSystemWording | undefined {
  const of = (lang: string) => system.wordings.find((candidate) => candidate.language.toLowerCase().split("-")[0] === lang);
  return of(currentLanguage()) ?? of("en");
}

/** A rule system's name for players (its title when the service words it in no language). */
function ruleName(system: RuleSystem): string {
  return wording(system)?.name || system.title;
}

export interface LobbyActions {
  change(choice: LobbyChoice): void;
  /** The name typed so far (kept without redrawing the lobby). */
  rename(name: string): void;
  start(): void;
}

/** The lobby: the rule system, a seat count it allows, and who plays each other seat. */
export function renderLobby(systems: readonly RuleSystem[] | undefined, choice: LobbyChoice, actions: LobbyActions, busy: boolean): HTMLElement {
  const system = systems?.find((candidate) => candidate.name === choice.rules);
  const description = system ? wording(system)?.description : undefined;
  const seatCount = system?.seatCounts.find((count) => count.seats === choice.seats);
  const onRules = (event: Event) => {
    const next = systems?.find((candidate) => candidate.name === (event.target as HTMLSelectElement).value);
    const seats = next?.seatCounts[0]?.seats ?? 2;
    actions.change({ rules: next?.name ?? "eram", seats, others: Array.from({ length: seats - 1 }, (_, at) => choice.others[at] ?? "strong"), rubber: false, bottomCardShown: false, name: choice.name });
  };
  const onSeats = (event: Event) => {
    const seats = Number((event.target as HTMLSelectElement).value);
    // An option offered at one seat count only is dropped at another.
    const bottomCardShown = choice.bottomCardShown && (system?.seatCounts.find((count) => count.seats === seats)?.bottomCardShownOption ?? false);
    actions.change({ ...choice, seats, others: Array.from({ length: seats - 1 }, (_, at) => choice.others[at] ?? "strong"), bottomCardShown });
  };
  const option = (id: string, label: string, checked: boolean, set: (checked: boolean) => LobbyChoice) =>
    h("p", { class: "field" },
      h("input", { type: "checkbox", id, "data-focus": id, checked, disabled: busy, onchange: (event: Event) => actions.change(set((event.target as HTMLInputElement).checked)) }),
      h("label", { for: id }, label));
  const onPlayer = (at: number) => (event: Event) => {
    const others = [...choice.others];
    const value = (event.target as HTMLSelectElement).value;
    others[at] = PLAYERS.find((player) => player === value) ?? "strong";
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
        h("select", { id: "rules", "data-focus": "rules", disabled: busy || !systems, onchange: onRules, "aria-describedby": description ? "rules-description" : undefined },
          (systems ?? []).map((candidate) =>
            h("option", { value: candidate.name, selected: candidate.name === choice.rules }, ruleName(candidate))))),
      // The chosen rule system in one line, under its name (a long name is clipped on a phone).
      description ? h("p", { id: "rules-description", class: "note" }, description) : null,
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
      h("p", {}, t("youSitFirst", { seat: 1 })),
      nameField(choice.name, busy, actions.rename, false),
      choice.others.map((player, at) =>
        h("p", { class: "field" },
          h("label", { for: `seat-${at + 1}` }, t("seatChoice", { seat: at + 2 })),
          h("select", { id: `seat-${at + 1}`, "data-focus": `seat-${at + 1}`, disabled: busy, onchange: onPlayer(at) },
            PLAYERS.map((option) => h("option", { value: option, selected: player === option }, t(PLAYER_NAMES[option])))))),
      h("button", { type: "submit", id: "start", disabled: busy || !system }, t("start")),
    ),
    h("p", { class: "note" }, t("botNote")),
    renderRules(undefined, systems ?? []),
  );
}

/** The player's name: text typed as it is (the server trims it and checks it), written in its
 * own direction (dir=auto). Optional for the creator, required to claim a seat. */
function nameField(name: string, busy: boolean, rename: (name: string) => void, required: boolean): HTMLElement {
  return h("p", { class: "field" },
    h("label", { for: "name" }, t("nameLabel")),
    h("input", {
      id: "name", "data-focus": "name", type: "text", dir: "auto", autocomplete: "nickname", value: name,
      required, disabled: busy, "aria-describedby": "name-note",
      oninput: (event: Event) => rename((event.target as HTMLInputElement).value),
    }),
    h("span", { id: "name-note", class: "note" }, t(required ? "nameNoteRequired" : "nameNote")));
}

export interface ClaimActions {
  rename(name: string): void;
  claim(): void;
  cancel(): void;
}

/** An invitation opened: the seat it offers, the name to sit down under, and Take the seat
 * (ClaimSeat). */
export function renderClaim(invite: Invite, name: string, actions: ClaimActions, busy: boolean): HTMLElement {
  return h("section", { class: "claim lobby", id: "claim", "aria-labelledby": "claim-heading" },
    h("h2", { id: "claim-heading" }, t("claimHeading")),
    h("form", {
        id: "claim-form",
        onsubmit: (event: Event) => {
          event.preventDefault();
          actions.claim();
        },
      },
      h("p", {}, t("claimIntro", { seat: invite.seat + 1 })),
      nameField(name, busy, actions.rename, true),
      h("p", { class: "actions" },
        h("button", { type: "submit", id: "claim-seat", disabled: busy }, t("claimButton")),
        h("button", { type: "button", id: "claim-cancel", class: "quiet", disabled: busy, onclick: actions.cancel }, t("claimCancel")))));
}

/** My seat, or undefined on a spectator's page. */
function mySeat(view: MatchView): number | undefined {
  return view.spectator ? undefined : view.seat;
}

/** A name a person chose, isolated from the sentence around it (FIRST STRONG ISOLATE … POP
 * DIRECTIONAL ISOLATE, the plain-text <bdi>): a name written right to left cannot reorder an
 * English sentence, nor a Latin name an Arabic one. Names always go into the page as text. */
export function isolate(name: string): string {
  return `\u2068${name}\u2069`;
}

/** How the table names a seat: "You", "Strong bot (seat 2)", the name its player chose, or
 * "Player (seat 3)" (counted from 1). The view says which seats the service's bots play, at
 * what level, and each person's display name. */
export function seatLabel(state: TableState, seat: number): string {
  if (seat === mySeat(state.view)) return t("you");
  const summary = state.view.seats[seat];
  const bot = BOT_LABELS[summary?.bot ?? BotLevel.UNSPECIFIED];
  if (bot) return t(bot, { seat: seat + 1 });
  if (summary?.displayName) return isolate(summary.displayName);
  return t("seatPlayer", { seat: seat + 1 });
}

/** A seat's name as a heading's content: a person's name in its own <bdi> element. */
function seatHeading(state: TableState, seat: number): Node | (Node | string)[] {
  const name = state.view.seats[seat]?.displayName;
  return seat !== mySeat(state.view) && name ? h("bdi", {}, name) : unbroken(seatLabel(state, seat));
}

/** A label for a narrow place (a side seat, a table's header): each parenthesis of the table's
 * own ("(seat 2)") stays on one line, so the label wraps before it, never inside it. The text
 * is unchanged; names people chose (isolated, see isolate) wrap as they are. */
function unbroken(label: string): (Node | string)[] {
  return label
    .split(/(\u2068[^\u2069]*\u2069|\([^()\u2068\u2069]*\))/)
    .filter((part) => part !== "")
    .map((part) => (part.startsWith("(") ? h("span", { class: "nowrap" }, part) : part));
}

/** Whether a person plays the seat (not one of the service's bots). */
function isPerson(view: MatchView, seat: number): boolean {
  return (view.seats[seat]?.bot ?? BotLevel.UNSPECIFIED) === BotLevel.UNSPECIFIED;
}

/** What a person's seat shows of its player: invited and not here yet, here, or away. */
function presence(state: TableState, seat: number): HTMLElement | null {
  if (!isPerson(state.view, seat)) return null;
  if (state.view.seats[seat]?.claim === SeatClaim.OPEN) return h("span", { class: "badge presence open" }, t("presenceInvited"));
  const connected = state.connected[seat];
  if (connected === undefined) return null;
  return h("span", { class: connected ? "badge presence here" : "badge presence away" }, t(connected ? "presenceHere" : "presenceAway"));
}

/** SeatClaim as the seat's data-claim attribute ("open", "claimed", "creator", "token"). */
function claimName(claim: SeatClaim | undefined): string {
  return claim === undefined || claim === SeatClaim.UNSPECIFIED ? "" : SeatClaim[claim].toLowerCase();
}

/** A side's seats, mine first: "You and Bot (seat 3)"; without partnerships, the seat's name. */
export function sideLabel(state: TableState, side: number): string {
  const me = mySeat(state.view);
  const seats = [...(state.view.sides[side]?.seats ?? [side])].sort((a, b) => Number(b === me) - Number(a === me) || a - b);
  return formatList(seats.map((seat) => seatLabel(state, seat)));
}

/** Where a seat sits around the felt, seen from mine (seat 0's place on a spectator's page).
 * The rule system names the direction of play (VARIANTS.md): anticlockwise, the next seat sits
 * to my right; clockwise, to my left. The places are physical sides of the screen, the same in
 * right-to-left pages, so the direction of play reads the same in every language. */
export type Place = "bottom" | "top" | "left" | "right";
export function placeOf(seat: number, count: number, base: number, direction: SeatingDirection): Place {
  const offset = (seat - base + count) % count;
  const next: Place = direction === SeatingDirection.CLOCKWISE ? "left" : "right";
  const last: Place = next === "left" ? "right" : "left";
  if (offset === 0) return "bottom";
  if (count === 2) return "top";
  if (count === 3) return offset === 1 ? next : last;
  return offset === 1 ? next : offset === 2 ? "top" : last;
}

/** The special points of each card code, from ListRules: what a capture choice is worth. */
function specialPoints(rules: RuleSystem | undefined): Map<string, number> {
  return new Map((rules?.specialCards ?? []).flatMap(({ card, points }) => (card ? [[cardCode(card), points] as const] : [])));
}

/** A plan's points: its special cards (the played card joins the pile too) and its basra. */
export function planPoints(plan: Plan, card: Card, rules: RuleSystem | undefined): number {
  const special = specialPoints(rules);
  return [card, ...plan.captures].reduce((sum, taken) => sum + (special.get(cardCode(taken)) ?? 0), plan.basraPoints);
}

export function renderTable(state: TableState, actions: TableActions): HTMLElement {
  const { view } = state;
  const me = mySeat(view);
  const myTurn = view.status === MatchStatus.PLAYING && me !== undefined && view.toPlay === me;
  const chosen = state.plans?.find((cardPlans) => cardPlans.card && cardCode(cardPlans.card) === state.selected);
  const mayTake = new Set(chosen?.plans.flatMap((plan) => plan.captures.map(cardCode)) ?? []);
  const count = view.seatCount || view.seats.length;
  const direction = state.rules?.seatingDirection ?? SeatingDirection.UNSPECIFIED;
  // Every seat but mine sits around the felt (every seat, for a spectator: seat 0 at the bottom).
  const around = Array.from({ length: count }, (_, seat) => seat).filter((seat) => seat !== me);
  // Between hands (or while the last hand's sheet is still open) the sheet takes the hand's place.
  const between = view.status !== MatchStatus.PLAYING || state.sheet !== undefined;
  // A card can be played: the hand is on screen, its plans are known, no move is under way.
  const playable = myTurn && !between && !state.busy && state.plans !== undefined;

  return h(
    "div",
    { class: "table", "data-seats": count },
    renderStatus(state, playable, between, actions),
    renderMatchEnd(state, actions),
    me === undefined ? h("p", { id: "watching", class: "note" }, t("watching")) : null,
    h("div", { class: "felt", id: "felt" },
      around.map((seat) => renderSeat(state, seat, placeOf(seat, count, me ?? 0, direction))),
      h("section", { class: "floor", "aria-labelledby": "floor-heading" },
        h("h2", { id: "floor-heading" }, t("floor")),
        view.floor.length === 0
          ? h("p", { class: "empty" }, t("emptyFloor"))
          : h("ul", { id: "floor" }, view.floor.map((card) => h("li", {}, cardElement(card, "span", {}, mayTake.has(cardCode(card)) ? "may-take" : ""))))),
      renderStrip(state),
      // The stock's last card, in the views that may see it (the dealer's, in some rule systems).
      view.bottomCard
        ? h("section", { id: "bottom", class: "bottom", "aria-labelledby": "bottom-heading" },
            h("h2", { id: "bottom-heading" }, t("bottomCard")), cardElement(view.bottomCard, "span", {}, "mini"))
        : null,
      state.moment ? h("div", { id: "moment", class: "moment", "data-kind": state.moment.kind, "aria-hidden": "true" }, state.moment.text) : null,
    ),
    me === undefined || between ? null : renderHand(state, myTurn, actions),
    chosen?.card && myTurn && !between ? renderPlans(chosen.card, chosen, state, actions) : null,
    state.sheet ? renderSheet(state, state.sheet, actions) : null,
    renderScores(state),
    renderLog(state),
    renderInvitations(state, actions),
    state.watchLink ? renderLink("watch", t("watchLabel"), state.watchLink, actions) : null,
    renderRules(state.rules, state.systems),
  );
}

/** A seat's side's standing, shown on its place: points this game, its pile, its basras. */
function standing(state: TableState, seat: number): HTMLElement {
  const side = state.view.sides[state.view.seats[seat]?.side ?? seat];
  const basras = side?.basras ?? 0;
  return h("p", { class: "standing", "data-seat": seat },
    h("span", { class: "points" }, t("points", { count: side?.score ?? 0 })),
    " · ",
    h("span", { class: "pile" }, t("pile", { count: side?.capturedCount ?? 0 })),
    // Counted as they happen, not only on the score sheet; set apart like the other figures, so
    // that neither the eye nor a screen reader runs it into the pile's count.
    basras > 0 ? [" · ", h("span", { class: "badge basras", "data-basras": basras }, t("basraCount", { count: basras }))] : null);
}

/** Another seat: its name, whether it deals or plays next, its hand face down, its standing. */
function renderSeat(state: TableState, seat: number, place: Place): HTMLElement {
  const { view } = state;
  const handSize = view.seats[seat]?.handSize ?? 0;
  const me = mySeat(view);
  const partner = me !== undefined && seat !== me && view.seats[seat]?.side === view.side;
  const toPlay = view.status === MatchStatus.PLAYING && view.toPlay === seat;
  const connected = state.connected[seat];
  return h("section", {
      class: ["seat", toPlay ? "to-play" : "", partner ? "partner" : ""].filter(Boolean).join(" "),
      "data-seat": seat,
      "data-place": place,
      // For tools and tests: how the seat is held, and whether its player is connected.
      "data-claim": claimName(view.seats[seat]?.claim),
      "data-connected": connected === undefined ? undefined : String(connected),
      "aria-labelledby": `seat-heading-${seat}`,
    },
    h("div", { class: "seat-head" },
      h("h2", { id: `seat-heading-${seat}` }, seatHeading(state, seat)),
      presence(state, seat),
      partner ? h("span", { class: "badge partner" }, t("partner")) : null,
      seat === view.dealer ? h("span", { class: "badge" }, t("dealer")) : null,
      toPlay ? h("span", { class: "badge turn-badge" }, t("toPlay")) : null),
    h("div", { class: "backs", "aria-hidden": "true" }, Array.from({ length: handSize }, () => h("span", { class: "card back" }))),
    h("p", { class: "hand-size" }, t("cardsHeld", { count: handSize })),
    standing(state, seat),
  );
}

/** Under the floor: the last play and, once the hand is over, where the leftover floor went. */
function renderStrip(state: TableState): HTMLElement | null {
  const plays = [renderLastPlay(state), renderCollected(state)].filter((play) => play !== null);
  return plays.length > 0 ? h("div", { class: "strip" }, plays) : null;
}

/** The last play, until the next one (the hand's last stays until the next deal): who, the card,
 * what it took (and a basra). */
function renderLastPlay(state: TableState): HTMLElement | null {
  const played = state.view.lastPlay;
  if (!played?.card) return null;
  return h("section", { id: "last-play", class: played.basra ? "last-play basra" : "last-play", "data-seat": played.seat, "aria-labelledby": "last-play-heading" },
    h("h2", { id: "last-play-heading", class: "visually-hidden" }, t("lastPlay")),
    h("p", { class: "minis" },
      cardElement(played.card, "span", {}, "mini played"),
      played.captured.length ? h("span", { class: "arrow", "aria-hidden": "true" }, "⟶") : null,
      played.captured.map((card) => cardElement(card, "span", {}, "mini"))),
    h("p", { class: "what" }, playLine(played, state)));
}

/** The hand's end as a play of its own: the leftover floor going to the last capturer's side
 * (or to nobody), drawn like the last play before it. Its cards carry no data-card: they are
 * pictures of cards that left the floor, named for screen readers. */
function renderCollected(state: TableState): HTMLElement | null {
  const collected = state.collected;
  if (!collected || collected.cards.length === 0) return null;
  const { seat } = collected;
  const who = seat === undefined ? t("leftoverNobody") : seat === mySeat(state.view) ? t("leftoverYou") : t("leftoverSeat", { who: seatLabel(state, seat) });
  return h("section", { id: "floor-taken", class: "last-play collected", "data-seat": seat, "aria-labelledby": "floor-taken-heading" },
    h("h2", { id: "floor-taken-heading", class: "visually-hidden" }, t("leftover")),
    h("p", { class: "minis" }, collected.cards.map((card) => cardElement(card, "span", { "data-card": false }, "mini"))),
    h("p", { class: "what" }, who));
}

/** Where the leftover floor went, in words (the past tense of the other plays). */
function collectedLine(collected: FloorCollected, state: TableState): string {
  const { seat } = collected;
  if (collected.cards.length === 0) return t("floorEmptyAtEnd");
  const cards = cardList(collected.cards);
  if (seat === undefined) return t("nobodyCollects", { cards });
  return seat === mySeat(state.view) ? t("youCollect", { cards }) : t("seatCollects", { who: seatLabel(state, seat), cards });
}

function renderHand(state: TableState, myTurn: boolean, actions: TableActions): HTMLElement {
  const { view } = state;
  const plans = new Map((state.plans ?? []).flatMap((cardPlans) => (cardPlans.card ? [[cardCode(cardPlans.card), cardPlans] as const] : [])));
  return h("section", { class: myTurn ? "hand to-play" : "hand", "aria-labelledby": "hand-heading" },
    h("div", { class: "seat-head" },
      h("h2", { id: "hand-heading" }, t("yourHand")),
      view.seat === view.dealer ? h("span", { class: "badge" }, t("dealer")) : null,
      myTurn ? h("span", { class: "badge turn-badge" }, t("toPlay")) : null),
    // Screen readers hear "can capture" after the name of each card that can.
    h("span", { id: "can-take-note", hidden: true }, t("canTake")),
    h("div", { id: "hand", role: "group", "aria-labelledby": "hand-heading", onkeydown: moveAlongHand },
      view.hand.map((card) => {
        const code = cardCode(card);
        const choices = plans.get(code)?.plans.length ?? 0;
        return cardElement(card, "button", {
          type: "button",
          "data-focus": `hand-${code}`,
          // How many capture choices the card has (0: it trails); one or none plays at once.
          "data-plans": String(choices),
          ...(choices > 0 ? { "aria-describedby": "can-take-note" } : {}),
          "aria-pressed": String(code === state.selected),
          disabled: !myTurn || state.busy || state.plans === undefined,
          onclick: () => actions.choose(code === state.selected ? undefined : code),
        }, choices > 0 ? "can-take" : "");
      })),
    standing(state, view.seat),
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

/** The status line. It says "Your turn" only while a card of the hand can be played (`playable`):
 * never under a score sheet, even when the next hand is dealt and waits for this seat. */
function renderStatus(state: TableState, playable: boolean, between: boolean, actions: TableActions): HTMLElement {
  const { view } = state;
  const deals = state.rules?.seatCounts.find((count) => count.seats === view.seatCount)?.dealsPerHand ?? view.dealNumber;
  const myTurn = view.status === MatchStatus.PLAYING && mySeat(view) !== undefined && view.toPlay === mySeat(view);
  let turn = "";
  if (view.status === MatchStatus.MATCH_OVER) turn = ""; // the match's end says it, below
  else if (between) turn = t("handOverStatus", { hand: state.sheet?.hand?.hand ?? view.handNumber });
  else if (playable) turn = t("yourTurn");
  else if (!myTurn && view.status === MatchStatus.PLAYING && view.toPlay !== undefined) turn = t("turnOf", { who: seatLabel(state, view.toPlay) });
  return h(
    "section",
    { class: "status" },
    h("p", { id: "rules-name" }, state.rules ? ruleName(state.rules) : view.rules),
    view.options?.rubber ? h("p", { id: "game" }, t("gameOfRubber", { game: view.game })) : null,
    h("p", {}, t("handAndDeal", { hand: view.handNumber, deal: view.dealNumber, deals })),
    h("p", { id: "stock" }, t("stock", { count: view.stockSize })),
    // Announced to screen readers whenever the turn changes.
    h("p", { id: "turn", class: playable ? "turn mine" : "turn", "aria-live": "polite" }, turn),
    // Leaving forgets the seat on this tab: it asks first (main.ts), and sits far from the links.
    h("button", { type: "button", id: "leave", class: "quiet", onclick: actions.leave }, t("leave")),
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
        h("th", { scope: "row" }, unbroken(sideLabel(state, side.side))),
        h("td", { class: "score" }, t("points", { count: side.score })),
        h("td", {}, t("captured", { count: side.capturedCount })),
        h("td", { class: "basras" }, t("basraCount", { count: side.basras })),
        view.options?.rubber ? h("td", { class: "games" }, t("gamesWon", { count: side.gamesWon })) : null)))),
    h("p", { id: "target" }, t("target", { target: view.target })),
    h("p", { id: "carry", class: "note" }, t("carry", { carry: view.carry })),
  );
}

function planLabel(plan: Plan): string {
  const cards = cardList(plan.captures);
  if (plan.basra) return t("planBasra", { cards });
  if (plan.sweep) return t("planSweep", { cards });
  return t("plan", { cards });
}

/** The choice between a card's plans: each plan as the small cards it takes and its points. */
function renderPlans(card: Card, chosen: CardPlans, state: TableState, actions: TableActions): HTMLElement {
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
        actions.choose(undefined);
        document.querySelector<HTMLElement>(`#hand [data-card="${code}"]`)?.focus();
      },
    },
    h("h2", { id: "plans-heading" }, t("choosePlan", { card: cardName(card) })),
    h("div", { class: "actions", id: "plans" },
      chosen.plans.map((plan) =>
        h("button", {
          type: "button",
          class: plan.basra ? "plan basra" : "plan",
          "data-plan": plan.id,
          "data-focus": `plan-${code}-${plan.id}`,
          "data-takes": plan.captures.map(cardCode).join(" "),
          disabled: state.busy,
          onclick: () => actions.play(code, plan.id, false),
          onmouseenter: preview(plan),
          onfocus: preview(plan),
          onmouseleave: preview(undefined),
          onblur: preview(undefined),
        },
        // The visible label first (the small cards, the points), then the sentence for screen
        // readers: the accessible name starts with what the button shows.
        h("span", { class: "minis" }, plan.captures.map((taken) => miniFace(taken))),
        h("span", { class: "plan-points" }, t("planPoints", { count: planPoints(plan, card, state.rules) })),
        plan.basra ? h("span", { class: "badge basras" }, t("basra")) : null,
        h("span", { class: "visually-hidden" }, planLabel(plan)))),
      h("button", { type: "button", class: "quiet", onclick: () => actions.choose(undefined) }, t("cancel")),
    ),
  );
}

/** A small card face inside a control: its index and suit as visible text, no data-card (it is
 * a picture of a floor card, not the card itself). */
function miniFace(card: Card): HTMLElement {
  return h("span", { class: isRed(card) ? "card mini red" : "card mini" },
    h("span", { class: "rank" }, rankIndex(card)), h("span", { class: "suit" }, suitSymbol(card)));
}

/** "10♦ 3 points, each J 1 point": the special cards of a rule system, from ListRules. */
function specialsText(rules: RuleSystem | undefined): string {
  const byRank = new Map<Rank, { suits: number; points: Set<number>; cards: Card[] }>();
  for (const { card, points } of rules?.specialCards ?? []) {
    if (!card) continue;
    const entry = byRank.get(card.rank) ?? { suits: 0, points: new Set<number>(), cards: [] };
    entry.suits += 1;
    entry.points.add(points);
    entry.cards.push(card);
    byRank.set(card.rank, entry);
  }
  const special = specialPoints(rules);
  const parts = [...byRank.values()].flatMap(({ suits, points, cards }) => {
    const first = cards[0];
    if (suits === 4 && points.size === 1 && first) return [t("specialRank", { rank: rankIndex(first), count: [...points][0] ?? 0 })];
    return cards.map((card) => t("specialCard", { card: rankIndex(card) + suitSymbol(card), count: special.get(cardCode(card)) ?? 0 }));
  });
  return formatList(parts);
}

/** The last hand's score sheet, one column per side, as HandScored and Score report it; then
 * the next deal (or, once a bot or another player has dealt it, a button to go on to it). Once
 * the match is over the sheet shows its last hand, and the match's end (renderMatchEnd) the
 * result. */
function renderSheet(state: TableState, sheet: Sheet, actions: TableActions): HTMLElement {
  const { view } = state;
  const { hand } = sheet;
  const sides = hand?.sides ?? [];
  const row = (label: string, value: (side: number) => number) =>
    h("tr", {}, h("th", { scope: "row" }, label), sides.map(({ side }) => h("td", {}, formatNumber(value(side)))));
  const figure = (side: number) => sides[side];
  // "Majority (27 cards or more)", or where the most cards is the whole rule, just that.
  const threshold = state.rules?.majorityMinCards ?? 0;
  const majority = threshold > 1 ? t("sheetMajority", { count: threshold }) : t("sheetMajorityMost");
  const winner = view.status === MatchStatus.MATCH_OVER ? view.winnerSide : undefined;
  const specials = specialsText(state.rules);
  return h(
    "section",
    { class: "sheet", id: "sheet", "aria-labelledby": "sheet-heading" },
    hand
      ? [
          h("h2", { id: "sheet-heading" }, t("sheet", { hand: hand.hand })),
          h("table", {},
            h("thead", {}, h("tr", {}, h("td", {}), sides.map(({ side }) => h("th", { scope: "col", "data-side": side }, unbroken(sideLabel(state, side)))))),
            h("tbody", {},
              row(t("sheetCards"), (side) => figure(side)?.cards ?? 0),
              row(majority, (side) => figure(side)?.majority ?? 0),
              row(t("sheetCarry"), (side) => figure(side)?.carry ?? 0),
              row(t("sheetSpecials"), (side) => figure(side)?.specials ?? 0),
              row(t("sheetBasras"), (side) => figure(side)?.basras ?? 0),
              row(t("sheetBasraPoints"), (side) => figure(side)?.basraPoints ?? 0),
              row(t("sheetHand"), (side) => figure(side)?.total ?? 0),
              row(t("sheetMatch"), (side) => sheet.sideTotals[side] ?? 0))),
          // What the less obvious rows mean, in words.
          h("p", { class: "note", id: "sheet-carry-note" }, t("sheetCarryNote")),
          specials ? h("p", { class: "note", id: "sheet-specials-note" }, t("sheetSpecialsNote", { cards: specials })) : null,
        ]
      : null,
    sheet.extraHand && winner === undefined ? h("p", { id: "extra-hand" }, t("extraHand")) : null,
    winner !== undefined
      ? null
      // Any seat deals the next hand (the deal is the same whoever asks); a spectator cannot.
      // Once it is dealt (by a bot that deals it, or another player) the button goes on to it.
      : view.status === MatchStatus.PLAYING
        ? h("button", { type: "button", id: "next-hand", "data-focus": "next-hand", onclick: actions.nextHand }, t("goOn", { hand: view.handNumber }))
        : mySeat(view) === undefined
          ? null
          : h("button", { type: "button", id: "next-hand", "data-focus": "next-hand", disabled: state.busy, onclick: actions.nextHand }, t("nextHand")),
  );
}

/** The match's end, at the top of the table: who won, each side's final score (the winner
 * first, then by score; the games each side won in a rubber), and the way to a new match (back
 * to the lobby, this seat forgotten). */
function renderMatchEnd(state: TableState, actions: TableActions): HTMLElement | null {
  const { view } = state;
  const winner = view.winnerSide;
  if (view.status !== MatchStatus.MATCH_OVER || winner === undefined) return null;
  const sides = [...view.sides].sort((a, b) => Number(b.side === winner) - Number(a.side === winner) || b.score - a.score || a.side - b.side);
  return h("section", { class: "match-end", id: "match-end", "aria-labelledby": "match-end-heading" },
    h("h2", { id: "match-end-heading" }, t("matchOverHeading")),
    h("p", { id: "result", class: "result", role: "status" }, resultText(state, winner)),
    h("table", { id: "final-scores" },
      h("caption", {}, t("finalScores")),
      h("tbody", {}, sides.map((side) =>
        h("tr", { "data-side": side.side, class: side.side === winner ? "winner" : "" },
          h("th", { scope: "row" }, unbroken(sideLabel(state, side.side)), side.side === winner ? [" ", h("span", { class: "badge" }, t("winnerBadge"))] : null),
          h("td", { class: "score" }, t("points", { count: side.score })),
          view.options?.rubber ? h("td", { class: "games" }, t("gamesWon", { count: side.gamesWon })) : null)))),
    h("p", { class: "actions" },
      h("button", { type: "button", id: "new-match", "data-focus": "new-match", "aria-describedby": "new-match-note", onclick: actions.newMatch }, t("newMatch"))),
    h("p", { id: "new-match-note", class: "note" }, t("newMatchNote")));
}

export function resultText(state: TableState, winnerSide: number): string {
  const { view } = state;
  if (mySeat(view) !== undefined && winnerSide === view.side) {
    return t((view.sides[winnerSide]?.seats.length ?? 1) > 1 ? "yourSideWon" : "youWon");
  }
  return t("seatWon", { who: sideLabel(state, winnerSide) });
}

/** One play in words: "You took 3♣ with 7♦", "Basra for Bot (seat 2): …". */
export function playLine(played: CardPlayed, state: TableState): string {
  const card = played.card ? cardName(played.card) : "?";
  const cards = cardList(played.captured);
  if (played.seat === mySeat(state.view)) {
    if (played.trail) return t("youTrailed", { card });
    return t(played.basra ? "youBasra" : "youTook", { card, cards });
  }
  const who = seatLabel(state, played.seat);
  if (played.trail) return t("seatTrailed", { who, card });
  return t(played.basra ? "seatBasra" : "seatTook", { who, card, cards });
}

/** One line per event, in the player's language (the events are kept, not their text, so that
 * switching the language rewrites the whole log). */
export function describe(event: MatchEvent, state: TableState): string | undefined {
  const { event: what } = event;
  switch (what.case) {
    case "handStarted":
      return t("handStarted", { hand: what.value.hand });
    case "cardsDealt":
      return t("cardsDealt", { count: what.value.cardsEach });
    case "cardPlayed":
      return playLine(what.value, state);
    case "floorCollected":
      return collectedLine(what.value, state);
    case "handScored":
      return t("handScored", { hand: what.value.score?.hand ?? 0 });
    case "gameEnded":
      return t("gameEnded", { game: what.value.game, who: sideLabel(state, what.value.winnerSide) });
    case "matchEnded":
      return resultText(state, what.value.winnerSide);
    case "seatChanged": {
      const { seat, claim, displayName } = what.value;
      if (claim === SeatClaim.OPEN) return t("seatReopened", { seat: seat + 1 });
      return t("seatClaimed", { who: displayName ? isolate(displayName) : t("seatPlayer", { seat: seat + 1 }), seat: seat + 1 });
    }
    default:
      return undefined;
  }
}

/** What happened, the latest lines (rebuilt from the match's events after a reload); nothing
 * until the first line arrives. */
function renderLog(state: TableState): HTMLElement | null {
  const lines = state.events.map((event) => describe(event, state)).filter((line) => line !== undefined);
  if (lines.length === 0) return null;
  return h(
    "section",
    { class: "log", "aria-labelledby": "log-heading" },
    h("h2", { id: "log-heading" }, t("log")),
    // A polite live region: screen readers read the other seats' plays as they arrive.
    h("ol", { id: "log", "aria-live": "polite" }, lines.map((line) => h("li", {}, line))),
  );
}

/** The creator's list of the other people's seats: who has joined, the invitation link of each
 * seat still open, and a button that gives a seat a new invitation (a lost player's, or a link
 * sent to the wrong person). */
function renderInvitations(state: TableState, actions: TableActions): HTMLElement | null {
  const { view } = state;
  const me = mySeat(view);
  if (me === undefined || view.seats[me]?.claim !== SeatClaim.CREATOR) return null;
  const seats = view.seats.map((_, seat) => seat).filter((seat) => seat !== me && isPerson(view, seat));
  if (seats.length === 0) return null;
  return h("section", { class: "invites", id: "invites", "aria-labelledby": "invites-heading" },
    h("h2", { id: "invites-heading" }, t("invitesHeading")),
    seats.map((seat) => {
      const summary = view.seats[seat];
      const open = summary?.claim === SeatClaim.OPEN;
      const link = state.invites[seat];
      const status = open
        ? t("seatWaiting", { seat: seat + 1 })
        : summary?.displayName
          ? t("seatJoined", { seat: seat + 1, name: isolate(summary.displayName) })
          : t("seatTaken", { seat: seat + 1 });
      return h("div", { class: "invite", "data-seat": seat, "data-claim": claimName(summary?.claim) },
        h("p", { class: "invite-status" }, status, " ", presence(state, seat)),
        open && link ? renderLink(`invite-${seat}`, t("inviteLabel", { seat: seat + 1 }), link, actions) : null,
        h("button", { type: "button", id: `reissue-${seat}`, class: "quiet", "data-focus": `reissue-${seat}`, disabled: state.busy, onclick: () => actions.reissue(seat) }, t("reissue", { seat: seat + 1 })));
    }));
}

/** A link to hand on (an invitation, the spectator link), with a button to copy it. The link
 * is an address, so it reads left to right even inside a right-to-left page. */
function renderLink(id: string, label: string, link: string, actions: TableActions): HTMLElement {
  return h(
    "section",
    { class: "link" },
    h("label", { for: `${id}-link` }, label),
    h("input", { id: `${id}-link`, type: "text", dir: "ltr", readonly: true, value: link, onfocus: (event: Event) => (event.target as HTMLInputElement).select() }),
    h("button", { type: "button", id: `copy-${id}`, onclick: () => actions.copy(link, `${id}-link`) }, t("copyLink")),
  );
}

/** How to play, in the page's language: a panel that opens in place. The rule systems are the
 * service's (ListRules), each by its name and its line. */
export function renderRules(rules: RuleSystem | undefined, systems: readonly RuleSystem[]): HTMLElement {
  const described = systems.flatMap((system) => {
    const line = wording(system)?.description;
    return line ? [h("dt", {}, ruleName(system)), h("dd", {}, line)] : [];
  });
  return h("details", { class: "rules", id: "how-to-play" },
    h("summary", {}, t("howToPlay")),
    rulesText().flatMap(([heading, text]) => [h("h3", {}, heading), h("p", {}, text)]),
    described.length > 0 ? [h("h3", {}, t("ruleSystemsHeading")), h("dl", { class: "systems" }, described)] : null,
    rules ? h("p", { class: "note" }, t("thisMatch", { name: ruleName(rules) })) : null);
}
