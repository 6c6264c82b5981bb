// The web table: a reference client of basra.v1 for frontend teams.
//
// The flow is the one the API guide describes. ListRules offers the rule systems (named and
// described for players in the page's language: RuleSystem.wordings); CreateMatch
// creates the match under the one chosen, with the service's bots in the seats given to a bot
// (CreateMatchRequest.bots, at the level chosen) and invitations for the other people's seats
// (CreateMatchRequest.invitations): it returns this page's own seat's token and one invitation
// per invited seat, which goes into a link. Whoever opens the link is told first what it opens
// (GetInvitation: its seat, still open or claimed already), then chooses a name and claims the
// seat (ClaimSeat: once; a second claim is refused), and only their page gets its token. The
// creator can give a seat a new invitation (ReissueInvitation: a lost player, a link sent to the
// wrong person). The page never plays a bot and never holds another seat's token: the service
// plays its bots, and their plays arrive like anyone's. The page shows its seat's MatchView, asks
// ListPlans when it is its turn, and sends Play with the version it saw and a fresh request_id.
// Every change anyone makes arrives through WatchMatch: on the last event of each version the
// page fetches its view again (GetMatch), so the server stays the only judge of the rules.
// CreateWatchToken gives the spectator link, whose page follows the same way with a read-only
// token and the public view.
import type { CardPlans, FloorCollected, HandScored, MatchEvent, MatchView, Scoreboard } from "../gen/basra/v1/game_pb";
import { InvitationState } from "../gen/basra/v1/basra_service_pb";
import { BotLevel, MatchStatus, SeatClaim } from "../gen/basra/v1/game_pb";
import type { RuleSystem } from "../gen/basra/v1/rules_pb";
import { backoff, basraClient, errorMetadata, errorReason, isUnreachable, pause, requestId, ruleSystems, untilAnswered, type Basra } from "./api";
import { cardCode } from "./cards";
import { h } from "./dom";
import { browserLanguage, isLanguage, isRightToLeft, LANGUAGES, numberingSystem, setLanguage, t, type Language, type MessageId } from "./i18n";
import * as session from "./session";
import { BOT_LEVELS, isolate, renderClaim, renderLobby, renderTable, resultText, seatLabel, sideLabel, type LobbyChoice, type Moment, type Sheet, type TableState } from "./view";

/** How many events the log keeps. The page fetches them again from the match on every load:
 * WatchMatch from this many versions back brings at least as many (a version holds one event
 * or more). */
const LOG_LENGTH = 8;
/** How long a moment (a basra, the end of a hand, a game, the match) stays over the felt. */
const MOMENT_MS = 1600;
/** How long a card takes to move to its new place (none when the player asks for less motion). */
const MOVE_MS = 350;
/** How long captured cards take to fly from the floor to the capturer's pile. */
const FLY_MS = 550;

const app = document.getElementById("app") as HTMLElement;
const alertBox = document.getElementById("alert") as HTMLElement;
const languageSelect = document.getElementById("language") as HTMLSelectElement;

/** Rejections that only mean "somebody else acted first": the page reloads its view quietly. */
const RACES = new Set(["VERSION_MISMATCH", "HAND_IN_PROGRESS", "NOT_YOUR_TURN"]);

/** The ErrorInfo reasons (errors.proto) the table words itself; others show the server's text. */
const WORDED_REASONS: ReadonlySet<string> = new Set<MessageId>([
  "NOT_YOUR_TURN", "CARD_NOT_IN_HAND", "PLAN_REQUIRED", "UNKNOWN_PLAN", "CAPTURE_REQUIRED",
  "HAND_IN_PROGRESS", "HAND_OVER", "MATCH_OVER", "VERSION_MISMATCH", "MATCH_NOT_FOUND",
  "TOKEN_MISSING", "TOKEN_INVALID", "API_KEY_MISSING", "API_KEY_INVALID", "STORE_UNAVAILABLE",
  "HISTORY_TRIMMED", "INTERNAL", "INVITATION_CLAIMED", "INVITATION_INVALID", "SEAT_TOKEN_REVOKED",
  "NOT_MATCH_CREATOR",
]);

/** The longest display name the service takes, in characters (ClaimSeatRequest.display_name). */
const NAME_MAX = 32;

/** A readable sentence for any failure: the ErrorInfo reason when the service sent one. */
function errorMessage(error: unknown): string {
  if (isUnreachable(error)) return t("unreachable");
  const reason = errorReason(error);
  if (reason === "RATE_LIMITED") {
    return t("RATE_LIMITED", { count: Math.ceil(Number(errorMetadata(error, "retry_after_s") ?? 1)) });
  }
  if (reason === "DISPLAY_NAME_INVALID") return nameRefused(errorMetadata(error, "rule"), errorMetadata(error, "seat"));
  if (reason && WORDED_REASONS.has(reason)) return t(reason as MessageId);
  return t("unknownError", { detail: error instanceof Error ? error.message : String(error) });
}

/** Why the service refused a display name, by the rule it names (ClaimSeatRequest.display_name):
 * the length (and any rule this page does not know), a hidden character, a name that shows
 * nothing, stacked marks, or a look-alike of another seat's name (that seat counted from 1). */
function nameRefused(rule: string | undefined, seat: string | undefined): string {
  switch (rule) {
    case "character":
      return t("nameCharacter");
    case "blank":
      return t("nameBlank");
    case "marks":
      return t("nameMarks");
    case "confusable":
      return seat === undefined ? t("DISPLAY_NAME_INVALID", { max: NAME_MAX }) : t("nameConfusable", { seat: Number(seat) + 1 });
    default:
      return t("DISPLAY_NAME_INVALID", { max: NAME_MAX });
  }
}

const RECONNECTING = (): string => t("reconnecting");

/** The message in the alert region; kept as a function so a language switch rewrites it. While
 * the server is away the table is greyed and inert: nothing on it can be clicked or focused, so
 * no "Your turn" button stays live under the banner. */
let alertText: (() => string) | undefined;
function showAlert(text: (() => string) | undefined): void {
  alertText = text;
  alertBox.textContent = text ? text() : "";
  const offline = text === RECONNECTING;
  app.inert = offline;
  document.body.classList.toggle("offline", offline);
}
function showError(error: unknown): void {
  console.warn(error);
  showAlert(() => errorMessage(error));
}

/** One seat (or a spectator) at one match: its view, the plans while it is its turn, the event
 * log, and the score sheet of the hand that just ended. */
class Table {
  private readonly me: Basra;
  private readonly stop = new AbortController();
  private view: MatchView;
  private plans: CardPlans[] | undefined;
  private selected: string | undefined;
  /** The hand whose score sheet is open: from the hand's end until the player goes on, even
   * when a bot (or another player) has dealt the next hand meanwhile. */
  private sheetHand: number | undefined;
  /** Each hand's HandScored event, by hand number, as the stream brought them. */
  private readonly scored = new Map<number, HandScored>();
  /** Score's answer, for a sheet whose HandScored event this page did not see (a reload). */
  private scoreboard: Scoreboard | undefined;
  private events: MatchEvent[] = [];
  /** Where each hand's leftover floor went, by hand number: the FloorCollected event of the
   * version whose HandScored names the hand. */
  private readonly collected = new Map<number, FloorCollected>();
  /** A FloorCollected event waiting for its version's HandScored. */
  private collecting: { version: bigint; event: FloorCollected } | undefined;
  private busy = false;
  private moment: Moment | undefined;
  private momentTimer: ReturnType<typeof setTimeout> | undefined;
  /** The version last drawn: cards move (animated) only when it changes. */
  private drawn = -1n;
  /** The last play drawn ("hand:seat:card"): its captured cards fly to the pile once. */
  private drawnPlay = "";
  /** Who is connected, by seat: from GetMatch's views and the stream's Presence messages (the
   * views of changes leave SeatSummary.connected unset). */
  private connected: (boolean | undefined)[] = [];

  /** The match's rule system, as ListRules describes it, and every rule system it lists. */
  private readonly rules: RuleSystem | undefined;

  constructor(private saved: session.Saved, view: MatchView, private readonly systems: readonly RuleSystem[]) {
    this.rules = systems.find((system) => system.name === view.rules);
    this.me = basraClient(saved.me.token);
    this.view = view;
    this.notePresence(view);
    // Back between hands (a reload, a link): the sheet of the hand that ended is open.
    if (view.status !== MatchStatus.PLAYING) this.sheetHand = view.handNumber;
  }

  /** A spectator's page: a watch token, the public view, nothing to play. */
  private get watching(): boolean {
    return this.saved.me.seat === undefined;
  }

  get matchId(): string {
    return this.saved.me.matchId;
  }

  /** Starts following the match. The stream starts a few versions back (0: from the match's
   * first event), so that the log shows the latest lines on every load, a reload's included,
   * and the end of a hand shows where its leftover floor went. */
  async open(): Promise<void> {
    const back = BigInt(LOG_LENGTH);
    const after = this.view.version > back ? this.view.version - back : 0n;
    this.accept(this.view);
    void this.watch(after, this.stop.signal);
    if (!this.watching && this.saved.watchLink === undefined) void this.fetchWatchLink();
    await this.afterChange();
  }

  /** The spectator link: CreateWatchToken with this seat's token (the same token on every call,
   * so asking again after a reload is harmless). */
  private async fetchWatchLink(): Promise<void> {
    try {
      const { watchToken } = await untilAnswered(() => this.me.createWatchToken({ matchId: this.matchId }));
      if (this.stop.signal.aborted) return; // left the table meanwhile
      this.saved = { ...this.saved, watchLink: session.watchLink(this.matchId, watchToken) };
      session.save(this.saved);
      this.render();
    } catch (error) {
      // The table plays on without the link; the message says why it is missing.
      if (!this.stop.signal.aborted) showError(error);
    }
  }

  close(): void {
    this.stop.abort();
  }

  /** Takes a newer view (an older one, from a slower answer, is ignored). */
  private accept(view: MatchView | undefined): boolean {
    if (!view || view.version < this.view.version) return false;
    const changed = view.version !== this.view.version;
    if (changed) {
      const ended = endedHand(this.view, view);
      if (ended !== undefined) {
        this.sheetHand = ended;
        this.scoreboard = undefined;
      }
      this.showMoment(this.view, view, ended);
    }
    this.view = view;
    this.notePresence(view);
    if (changed) {
      this.plans = undefined;
      this.selected = undefined;
    }
    return changed;
  }

  /** Keeps what a view says of who is connected (GetMatch's views say it; others do not). */
  private notePresence(view: MatchView): void {
    view.seats.forEach((summary, seat) => {
      if (summary.connected !== undefined) this.connected[seat] = summary.connected;
    });
  }

  /** Gives a person's seat a new invitation: its old link stops working, and whoever claimed
   * it loses the seat (asked first when someone holds it). */
  private async reissue(seat: number): Promise<void> {
    const summary = this.view.seats[seat];
    if (summary?.claim !== SeatClaim.OPEN) {
      const who = summary?.displayName ? isolate(summary.displayName) : t("seatPlayer", { seat: seat + 1 });
      const sure = await confirmDialog("reissue", t("reissueQuestion", { seat: seat + 1, name: who }), t("reissueNo"), t("reissueYes"));
      if (!sure) return;
    }
    await this.act(async () => {
      // Not idempotent by design: a retry issues yet another invitation (and revokes the one a
      // lost answer held), so the link shown is always the latest.
      const answer = await untilAnswered(() => this.me.reissueInvitation({ matchId: this.matchId, seat }), () => this.reconnecting());
      const code = answer.invitation?.code ?? "";
      this.saved = { ...this.saved, invites: { ...this.saved.invites, [seat]: session.inviteLink({ matchId: this.matchId, seat, code }) } };
      session.save(this.saved);
      this.accept(answer.view);
      showAlert(() => t("newInviteSent", { seat: seat + 1 }));
    }, false);
  }

  /** A short moment over the felt when a view brings a basra (naming who made it), or ends a
   * hand, a game or the match (the biggest of these wins). `ended` is the hand that ended
   * between the two views, if one did. */
  private showMoment(before: MatchView, after: MatchView, ended: number | undefined): void {
    let moment: Moment | undefined;
    const state = { ...this.state(), view: after };
    const play = after.lastPlay;
    if (after.status === MatchStatus.MATCH_OVER && after.winnerSide !== undefined) {
      moment = { kind: "match", text: resultText(state, after.winnerSide) };
    } else if (after.games.length > before.games.length) {
      const game = after.games.at(-1);
      moment = { kind: "game", text: t("gameEnded", { game: game?.game ?? after.games.length, who: sideLabel(state, game?.winnerSide ?? 0) }) };
    } else if (ended !== undefined) {
      moment = { kind: "hand", text: t("handOverMoment", { hand: ended }) };
    } else if (play?.basra && playKey(after) !== playKey(before)) {
      const mine = !after.spectator && play.seat === after.seat;
      moment = { kind: "basra", text: mine ? t("basraYou") : t("basraBy", { who: seatLabel(state, play.seat) }) };
    }
    if (!moment) return;
    this.moment = moment;
    clearTimeout(this.momentTimer);
    this.momentTimer = setTimeout(() => {
      this.moment = undefined;
      this.render();
    }, MOMENT_MS);
  }

  /** After any change: the plans if it is my turn, the scoreboard when a sheet is open whose
   * HandScored event this page has not seen. */
  private async afterChange(): Promise<void> {
    const view = this.view;
    if (view.status === MatchStatus.PLAYING && !this.watching && view.toPlay === view.seat && this.plans === undefined) {
      const answer = await untilAnswered(() => this.me.listPlans({ matchId: this.matchId }));
      if (answer.version === this.view.version) this.plans = answer.cards;
    }
    const hand = this.sheetHand;
    if (hand !== undefined && !this.scored.has(hand) && this.scoreboard === undefined) {
      this.scoreboard = (await untilAnswered(() => this.me.score({ matchId: this.matchId }))).scoreboard;
    }
    this.render();
  }

  /** Fetches my view again (after an event, a race or a reconnection). */
  async refresh(): Promise<void> {
    const answer = await untilAnswered(() => this.me.getMatch({ matchId: this.matchId }), () => this.reconnecting());
    // The server answered: the table is live again.
    if (alertText === RECONNECTING) showAlert(undefined);
    this.accept(answer.view);
    await this.afterChange();
  }

  /** A card of the hand clicked: a forced outcome (it trails, or it has a single plan) plays at
   * once; a choice shows the card's plans. */
  private choose(code: string | undefined): void {
    const cardPlans = this.plans?.find((candidate) => candidate.card && cardCode(candidate.card) === code);
    if (code && cardPlans?.trails) return void this.play(code, 0, true);
    const only = cardPlans?.plans.length === 1 ? cardPlans.plans[0] : undefined;
    if (code && only) return void this.play(code, only.id, false);
    this.select(code);
  }

  private select(code: string | undefined): void {
    this.selected = code;
    showAlert(undefined);
    this.render();
    // Keyboard players land on the first choice of the card they picked.
    if (code) document.querySelector<HTMLElement>("#plans button")?.focus();
  }

  private async play(code: string, planId: number, trail: boolean): Promise<void> {
    const card = this.view.hand.find((held) => cardCode(held) === code);
    if (!card || this.busy) return;
    // Built once: a retry after a lost answer sends the same request_id and cannot play twice.
    const request = { matchId: this.matchId, card, planId, trail, expectedVersion: this.view.version, requestId: requestId() };
    await this.act(async () => {
      const answer = await untilAnswered(() => this.me.play(request), () => this.reconnecting());
      this.accept(answer.view);
    });
    document.querySelector<HTMLElement>("#hand button:not([disabled])")?.focus();
  }

  /** The sheet's button: deals the next hand, or goes on to it once it is dealt (a bot deals
   * the hands it is next to deal, and any other player may deal first). */
  private async nextHand(): Promise<void> {
    if (this.view.status === MatchStatus.PLAYING) {
      this.closeSheet();
      return;
    }
    const request = { matchId: this.matchId, expectedVersion: this.view.version, requestId: requestId() };
    const dealt = await this.act(async () => {
      const answer = await untilAnswered(() => this.me.deal(request), () => this.reconnecting());
      this.accept(answer.view);
    });
    if (dealt) this.closeSheet();
  }

  private closeSheet(): void {
    this.sheetHand = undefined;
    this.scoreboard = undefined;
    this.render();
    document.querySelector<HTMLElement>("#hand button:not([disabled])")?.focus();
  }

  /** Runs one of my moves: errors become messages, races a quiet reload. True when the move was
   * made, or lost a race to the same change (the table moved on without it). `quiet`: a success
   * clears the message area (a move's own message stays otherwise). */
  private async act(move: () => Promise<void>, quiet = true): Promise<boolean> {
    this.busy = true;
    this.render();
    let done = true;
    try {
      await move();
      if (quiet) showAlert(undefined);
    } catch (error) {
      done = RACES.has(errorReason(error) ?? "");
      if (!done) showError(error);
      await this.refresh().catch(showError);
    } finally {
      this.busy = false;
    }
    await this.afterChange().catch(showError);
    return done;
  }

  /** Follows the match through WatchMatch, for as long as the table is open. A stream that
   * drops (a server restart, a proxy timeout, the server's periodic recycling) is opened again
   * after the last version received whole, so no event is lost or shown twice. */
  private async watch(after: bigint, signal: AbortSignal): Promise<void> {
    let attempt = 0;
    while (!signal.aborted) {
      try {
        // Back after a lost connection: the view first, which lifts the banner, then the events.
        if (alertText === RECONNECTING) await this.refresh();
        // presence: also a Presence message now and whenever a seat connects or disconnects.
        for await (const { event, presence } of this.me.watchMatch({ matchId: this.matchId, afterVersion: after, presence: true }, { signal })) {
          if (presence) {
            this.connected = [...presence.connected];
            this.render();
          }
          if (!event) continue;
          attempt = 0;
          this.events = [...this.events, event].slice(-LOG_LENGTH);
          this.note(event);
          if (event.versionComplete) {
            after = event.version;
            if (alertText === RECONNECTING) showAlert(undefined);
            if (event.version > this.view.version) await this.refresh();
            else this.render();
          }
        }
        // The stream ends after the match ends; otherwise the server recycled it: reconnect.
        if (this.view.status === MatchStatus.MATCH_OVER) return;
      } catch (error) {
        if (signal.aborted) return;
        if (errorReason(error) === "HISTORY_TRIMMED") {
          await this.refresh().catch(showError);
          after = this.view.version;
        } else if (errorReason(error) === "SEAT_TOKEN_REVOKED" || (errorReason(error) === "TOKEN_INVALID" && !this.watching)) {
          // The creator gave this seat a new invitation: this page's token no longer works (the
          // stream ends with SEAT_TOKEN_REVOKED; a call made first gets TOKEN_INVALID).
          leave();
          showAlert(() => t("SEAT_TOKEN_REVOKED"));
          return;
        } else if (isUnreachable(error)) {
          this.reconnecting();
        } else {
          showError(error);
        }
      }
      await pause(backoff(attempt++), signal);
    }
  }

  /** Keeps what the table draws from events: each hand's HandScored, and where its leftover
   * floor went (FloorCollected comes before the HandScored of the same version). */
  private note(event: MatchEvent): void {
    const { event: what } = event;
    if (what.case === "floorCollected") this.collecting = { version: event.version, event: what.value };
    if (what.case !== "handScored") return;
    const hand = what.value.score?.hand;
    if (hand === undefined) return;
    this.scored.set(hand, what.value);
    if (this.collecting?.version === event.version) this.collected.set(hand, this.collecting.event);
    this.collecting = undefined;
  }

  private reconnecting(): void {
    showAlert(RECONNECTING);
  }

  /** The open sheet's figures: the hand's HandScored event, else Score's record of that hand
   * (undefined until Score answers). */
  private sheet(): Sheet | undefined {
    const hand = this.sheetHand;
    if (hand === undefined) return undefined;
    const event = this.scored.get(hand);
    if (event) return { hand: event.score, sideTotals: event.sideTotals, extraHand: event.extraHand };
    const board = this.scoreboard;
    if (!board) return undefined;
    const tie = this.view.status === MatchStatus.HAND_OVER && board.sideTotals.some((total) => total >= board.target);
    return { hand: board.hands.find((scored) => scored.hand === hand), sideTotals: board.sideTotals, extraHand: tie };
  }

  private state(): TableState {
    return {
      view: this.view,
      rules: this.rules,
      systems: this.systems,
      plans: this.plans,
      selected: this.selected,
      sheet: this.sheet(),
      events: this.events,
      // Drawn once the hand is over, until the next deal.
      collected: this.view.status === MatchStatus.PLAYING ? undefined : this.collected.get(this.view.handNumber),
      invites: this.saved.invites ?? {},
      connected: this.connected,
      watchLink: this.saved.watchLink,
      busy: this.busy,
      moment: this.moment,
    };
  }

  render(): void {
    const state = this.state();
    const moved = state.view.version !== this.drawn;
    this.drawn = state.view.version;
    // A new capture: its cards fly from the floor to the capturer's pile.
    const play = state.view.lastPlay;
    const key = playKey(state.view);
    const flight: Flight | undefined = moved && play && key !== this.drawnPlay && play.captured.length > 0
      ? { cards: play.captured.map(cardCode), seat: play.seat, side: state.view.seats[play.seat]?.side ?? play.seat }
      : undefined;
    this.drawnPlay = key;
    draw(
      renderTable(state, {
        choose: (code) => this.choose(code),
        play: (code, planId, trail) => void this.play(code, planId, trail),
        nextHand: () => void this.nextHand(),
        leave: () => void confirmLeave(this.view),
        newMatch: () => leave(),
        copy: (link, field) => void copyLink(link, field),
        reissue: (seat) => void this.reissue(seat),
      }),
      this.view,
      moved,
      flight,
    );
  }
}

/** The hand that ended between two views of a match, if one did: the view after is between
 * hands, or already in a later hand (a bot, or another player, dealt it before this page looked). */
function endedHand(before: MatchView, after: MatchView): number | undefined {
  if (after.status !== MatchStatus.PLAYING) return before.status === MatchStatus.PLAYING || after.handNumber > before.handNumber ? after.handNumber : undefined;
  return after.handNumber > before.handNumber && before.status === MatchStatus.PLAYING ? after.handNumber - 1 : undefined;
}

/** Names a view's last play ("hand:seat:card"; a card is played once a hand), or "" for none. */
function playKey(view: MatchView): string {
  const play = view.lastPlay;
  return play?.card ? `${view.handNumber}:${play.seat}:${cardCode(play.card)}` : "";
}

/** Captured cards on their way to a pile: their codes, the capturer's seat and side. */
interface Flight {
  readonly cards: readonly string[];
  readonly seat: number;
  readonly side: number;
}


let table: Table | undefined;

/** Replaces the page's content, keeping the keyboard focus on the same control. When `moved`,
 * cards glide from where they were to where they are now ("FLIP": each element carrying the
 * same data-card, or a face-down card's seat, is measured before and after the redraw and
 * animated from the old place), and the cards of a new capture (`flight`) fly from the floor to
 * the capturer's pile; none of it when the player prefers reduced motion. */
function draw(content: HTMLElement, view?: MatchView, moved = false, flight?: Flight): void {
  const focused = document.activeElement instanceof HTMLElement ? document.activeElement.dataset["focus"] : undefined;
  const animate = moved && !matchMedia("(prefers-reduced-motion: reduce)").matches;
  const before = animate ? places() : undefined;
  const leaving = animate && flight ? faces(flight.cards) : [];
  app.replaceChildren(content);
  if (before) glide(before);
  if (flight && leaving.length > 0) {
    // The capturer's pile: on its seat, or (when the hand is over and mine is gone) its side's row.
    const pile = app.querySelector(`.standing[data-seat="${flight.seat}"] .pile`) ?? app.querySelector(`.scores tr[data-side="${flight.side}"]`);
    if (pile) fly(leaving, pile, flight.seat);
  }
  // State for tests and tools, on the root: the version and hand shown, whose turn ("you", or
  // another seat's), the seat to play, where the match stands, and whether this page only watches.
  if (view) {
    const playing = view.status === MatchStatus.PLAYING && view.toPlay !== undefined;
    app.dataset["version"] = String(view.version);
    app.dataset["hand"] = String(view.handNumber);
    app.dataset["turn"] = playing ? (!view.spectator && view.toPlay === view.seat ? "you" : "other") : "";
    app.dataset["toPlay"] = playing ? String(view.toPlay) : "";
    app.dataset["status"] = MatchStatus[view.status].toLowerCase().replace("_", "-");
    app.dataset["role"] = view.spectator ? "spectator" : "seat";
  } else {
    for (const key of ["version", "hand", "turn", "toPlay", "status", "role"]) delete app.dataset[key];
  }
  if (focused) app.querySelector<HTMLElement>(`[data-focus="${focused}"]`)?.focus();
}

/** Where each card (by data-card) and each seat's place is on screen. */
function places(): Map<string, DOMRect> {
  const found = new Map<string, DOMRect>();
  for (const element of app.querySelectorAll<HTMLElement>("[data-card], .seat[data-seat]")) {
    const key = element.dataset["card"] ?? `seat-${element.dataset["seat"]}`;
    if (!found.has(key)) found.set(key, element.getBoundingClientRect());
  }
  return found;
}

/** Animates every floor card and the card just played from its old place (for a card just
 * played by another seat, from that seat's place) to its new one. The captured cards shown with
 * the last play appear in place: their floor cards fly to the pile instead (fly). */
function glide(before: Map<string, DOMRect>): void {
  const lastPlay = app.querySelector<HTMLElement>("#last-play");
  for (const element of app.querySelectorAll<HTMLElement>("#floor [data-card], #last-play .played")) {
    const from = before.get(element.dataset["card"] ?? "") ?? (element.closest("#floor, .played") ? before.get(`seat-${lastPlay?.dataset["seat"]}`) : undefined);
    if (!from) continue;
    const to = element.getBoundingClientRect();
    const dx = from.left - to.left;
    const dy = from.top - to.top;
    if (Math.abs(dx) < 1 && Math.abs(dy) < 1) continue;
    element.animate([{ transform: `translate(${dx}px, ${dy}px)` }, { transform: "none" }], { duration: MOVE_MS, easing: "ease-out" });
  }
}

/** Copies of the floor cards about to be captured, with their places, before the redraw. */
function faces(codes: readonly string[]): { code: string; rect: DOMRect; face: HTMLElement }[] {
  return codes.flatMap((code) => {
    const card = app.querySelector<HTMLElement>(`#floor [data-card="${code}"]`);
    return card ? [{ code, rect: card.getBoundingClientRect(), face: card.cloneNode(true) as HTMLElement }] : [];
  });
}

/** Flies copies of captured cards from their floor places to the capturer's pile, shrinking, then
 * removes them. The copies are pictures only: no data-card, hidden from screen readers (the log
 * and the last play say what was taken); data-flies (the card) and data-to (the seat) let tools
 * follow them. */
function fly(leaving: readonly { code: string; rect: DOMRect; face: HTMLElement }[], pile: Element, seat: number): void {
  const to = pile.getBoundingClientRect();
  leaving.forEach(({ code, rect, face }, at) => {
    for (const name of ["data-card", "role", "aria-label", "aria-describedby"]) face.removeAttribute(name);
    face.classList.remove("may-take", "taking");
    face.classList.add("flying");
    face.setAttribute("aria-hidden", "true");
    face.dataset["flies"] = code;
    face.dataset["to"] = String(seat);
    // Set through the CSSOM, which the page's Content-Security-Policy allows (inline style
    // attributes it would not).
    face.style.setProperty("left", `${rect.left}px`);
    face.style.setProperty("top", `${rect.top}px`);
    face.style.setProperty("width", `${rect.width}px`);
    face.style.setProperty("height", `${rect.height}px`);
    document.body.append(face);
    const dx = to.left + to.width / 2 - (rect.left + rect.width / 2);
    const dy = to.top + to.height / 2 - (rect.top + rect.height / 2);
    const flight = face.animate(
      [{ transform: "none", opacity: 1 }, { transform: `translate(${dx}px, ${dy}px) scale(0.35)`, opacity: 0.4 }],
      { duration: FLY_MS, delay: at * 70, easing: "ease-in", fill: "both" },
    );
    const land = (): void => face.remove();
    flight.finished.then(land, land);
  });
}

/** Asks a yes-or-no question in a modal dialog (#<id>-dialog; the safe answer, #<id>-cancel,
 * is the default); true when the person confirms (#<id>-confirm). */
async function confirmDialog(id: string, question: string, no: string, yes: string): Promise<boolean> {
  const dialog = h("dialog", { id: `${id}-dialog`, "aria-labelledby": `${id}-question` },
    h("p", { id: `${id}-question` }, question),
    h("form", { method: "dialog", class: "actions" },
      h("button", { value: "no", id: `${id}-cancel`, autofocus: true }, no),
      h("button", { value: "yes", id: `${id}-confirm`, class: "danger" }, yes)),
  ) as HTMLDialogElement;
  document.body.append(dialog);
  const answer = await new Promise<string>((resolve) => {
    dialog.addEventListener("close", () => resolve(dialog.returnValue), { once: true });
    dialog.showModal();
  });
  dialog.remove();
  return answer === "yes";
}

/** Leaving forgets this tab's seat: a dialog asks first ("Stay" is the default). The creator's
 * seat can never be given back; another person's, with a new invitation. */
async function confirmLeave(view: MatchView): Promise<void> {
  const creator = !view.spectator && view.seats[view.seat]?.claim === SeatClaim.CREATOR;
  if (await confirmDialog("leave", t(creator ? "leaveQuestionCreator" : "leaveQuestion"), t("leaveNo"), t("leaveYes"))) leave();
}

/** The new match the lobby's form describes (kept while the page lives, so that a language
 * switch or a failed start keeps the choices). */
let choice: LobbyChoice = { rules: "eram", seats: 2, others: ["strong"], rubber: false, bottomCardShown: false, name: "" };
let systems: RuleSystem[] | undefined;

/** A match is being created or joined: the lobby's Start waits, or the page would sit at two
 * matches (the first answer to come would replace the other's table). */
let joining = false;

function lobby(): void {
  table = undefined;
  invited = undefined;
  // The name is typed without a redraw: the form's other changes keep the latest one.
  const actions = {
    change: (next: LobbyChoice) => ((choice = { ...next, name: choice.name }), lobby()),
    rename: (name: string) => (choice = { ...choice, name }),
    start: () => void start(),
  };
  draw(renderLobby(systems, choice, actions, joining));
  if (!systems) {
    ruleSystems().then((loaded) => {
      systems = loaded;
      if (!table && !invited) lobby();
    }, showError);
  }
}

/** Creates a match: this page takes seat 0; every other seat goes to one of the service's bots
 * (at the level chosen) or into an invitation link of its own. */
async function start(): Promise<void> {
  if (joining) return;
  joining = true;
  lobby();
  const client = basraClient();
  // The request_id makes a retry return the same match. bots is indexed by seat: mine (0) is a
  // person's, BOT_LEVEL_UNSPECIFIED, as is each invited person's. invitations: the answer holds
  // my seat's token only, and an invitation for each other person's seat.
  const options = { rubber: choice.rubber, bottomCardShown: choice.bottomCardShown };
  const bots = [BotLevel.UNSPECIFIED, ...choice.others.map((player) => (player === "person" ? BotLevel.UNSPECIFIED : BOT_LEVELS[player]))];
  const displayName = choice.name.trim();
  const request = { rules: choice.rules, seats: choice.seats, options, seat: 0, bots, invitations: true, displayName, requestId: requestId() };
  try {
    const answer = await untilAnswered(() => client.createMatch(request), () => showAlert(RECONNECTING));
    if (displayName) session.saveName(displayName);
    // Read by seat, never by position.
    const token = answer.seatTokens.find((seatToken) => seatToken.seat === 0)?.token ?? "";
    const saved: session.Saved = {
      me: { matchId: answer.matchId, seat: 0, token },
      invites: Object.fromEntries(answer.invitations.map(({ seat, code }) => [seat, session.inviteLink({ matchId: answer.matchId, seat, code })])),
    };
    session.save(saved);
    showAlert(undefined);
    await sit(saved, answer.view);
  } catch (error) {
    joining = false;
    showError(error);
    lobby();
  }
}

/** Sits down at a match (or watches it): with the view CreateMatch returned, or after asking
 * for it (a reload, a link). A pass whose match is gone or whose token is refused goes back to
 * the lobby. */
async function sit(saved: session.Saved, view?: MatchView): Promise<void> {
  let all: RuleSystem[];
  joining = true;
  try {
    if (!view) {
      if (!table) lobby(); // drawn at start-up already: its Start now waits for this answer
      // However long the server is away: giving up here would forget the seat.
      const client = basraClient(saved.me.token);
      const answer = await untilAnswered(() => client.getMatch({ matchId: saved.me.matchId }), () => showAlert(RECONNECTING), Infinity);
      view = answer.view;
      showAlert(undefined);
    }
    all = await ruleSystems();
  } catch (error) {
    joining = false;
    showError(error);
    session.forget();
    return lobby();
  }
  joining = false;
  if (!view) return lobby();
  invited = undefined;
  table?.close();
  table = new Table(saved, view, all);
  await table.open().catch(showError);
}

function leave(): void {
  table?.close();
  session.forget();
  showAlert(undefined);
  lobby();
}

/** The invitation on screen, the name being typed on its form, and whether the claim is under
 * way. */
let invited: session.Invite | undefined;
let claimName = "";
let claiming = false;

/** An invitation link opened: GetInvitation says first what it opens. An open seat asks for a
 * name (claimPage); a claimed one, or an invitation that no longer works (replaced, mistyped),
 * says so at once and leaves the lobby free. Meanwhile the lobby shows with its Start disabled. */
async function openInvite(invite: session.Invite): Promise<void> {
  joining = true;
  lobby();
  try {
    const answer = await untilAnswered(() => basraClient().getInvitation({ matchId: invite.matchId, invitation: invite.code }), () => showAlert(RECONNECTING));
    joining = false;
    if (answer.state === InvitationState.CLAIMED) {
      session.forgetInvite();
      showAlert(() => t("INVITATION_CLAIMED"));
      return lobby();
    }
    showAlert(undefined);
    // The seat the service names, whatever the link says.
    const open = { ...invite, seat: answer.seat };
    session.saveInvite(open);
    claimPage(open);
  } catch (error) {
    joining = false;
    showError(error);
    // The server away: the name form, whose claim retries; any answer: no seat here.
    if (isUnreachable(error)) return claimPage(invite);
    session.forgetInvite();
    lobby();
  }
}

/** An open invitation: ask for a name, then claim the seat. */
function claimPage(invite: session.Invite): void {
  table = undefined;
  invited = invite;
  draw(renderClaim(invite, claimName, {
    rename: (name) => (claimName = name),
    claim: () => void claim(invite),
    cancel: () => {
      session.forgetInvite();
      showAlert(undefined);
      lobby();
    },
  }, claiming));
}

/** ClaimSeat: the invitation and the name for this seat's token, once. The request_id makes a
 * retry after a lost answer get the same token instead of INVITATION_CLAIMED. A refused claim
 * (the seat taken, the invitation replaced) says why and goes back to the lobby: the page gets
 * no seat. A name the service refuses asks for another. */
async function claim(invite: session.Invite): Promise<void> {
  if (claiming) return;
  claiming = true;
  claimPage(invite);
  const displayName = claimName.trim();
  const request = { matchId: invite.matchId, invitation: invite.code, displayName, requestId: requestId() };
  try {
    const answer = await untilAnswered(() => basraClient().claimSeat(request), () => showAlert(RECONNECTING));
    const seat = answer.seatToken?.seat ?? invite.seat;
    const saved: session.Saved = { me: { matchId: invite.matchId, seat, token: answer.seatToken?.token ?? "" } };
    session.forgetInvite();
    session.save(saved);
    session.saveName(displayName);
    claiming = false;
    showAlert(undefined);
    await sit(saved, answer.view);
  } catch (error) {
    claiming = false;
    showError(error);
    if (errorReason(error) === "DISPLAY_NAME_INVALID") {
      claimPage(invite);
      document.getElementById("name")?.focus();
    } else if (!isUnreachable(error)) {
      session.forgetInvite();
      lobby();
    } else {
      claimPage(invite);
    }
  }
}

/** Copies a link to the clipboard. navigator.clipboard exists only in secure contexts (HTTPS,
 * localhost), and the browser may refuse it: then the link's field is selected and the message
 * asks the person to copy it themselves. */
async function copyLink(link: string, field: string): Promise<void> {
  try {
    if (!("clipboard" in navigator)) throw new Error("no clipboard in this context");
    await navigator.clipboard.writeText(link);
    showAlert(() => t("linkCopied"));
  } catch (error) {
    console.warn(error);
    const input = document.getElementById(field);
    if (input instanceof HTMLInputElement) {
      input.focus();
      input.select();
    }
    showAlert(() => t("linkSelected"));
  }
}

function applyLanguage(lang: Language): void {
  setLanguage(lang);
  document.documentElement.lang = lang;
  document.documentElement.dir = isRightToLeft(lang) ? "rtl" : "ltr";
  document.documentElement.dataset["digits"] = numberingSystem();
  document.title = t("title");
  (document.getElementById("title") as HTMLElement).textContent = t("title");
  (document.getElementById("language-label") as HTMLElement).textContent = t("language");
  languageSelect.value = lang;
  if (alertText) alertBox.textContent = alertText();
  if (table) table.render();
  else if (invited) claimPage(invited);
  else lobby();
}

function main(): void {
  // Whatever fails without its own message (a bug, a refused browser feature) still says so on
  // the page, not only in the console.
  addEventListener("unhandledrejection", (event) => showError(event.reason));
  addEventListener("error", (event) => showError(event.error ?? event.message));
  languageSelect.replaceChildren(...LANGUAGES.map((lang) => h("option", { value: lang, lang }, t("languageName", {}, lang))));
  languageSelect.addEventListener("change", () => {
    const lang = languageSelect.value;
    if (isLanguage(lang)) {
      session.saveLanguage(lang);
      applyLanguage(lang);
    }
  });
  const chosen = session.savedLanguage();
  applyLanguage(isLanguage(chosen) ? chosen : browserLanguage());

  claimName = session.savedName();
  choice = { ...choice, name: claimName };
  openLink();
  // A link pasted into the address bar of an open table changes only the fragment: the page
  // does not load again, so it reads the new link itself.
  addEventListener("hashchange", () => {
    if (location.hash.length < 2) return;
    table?.close();
    table = undefined;
    showAlert(undefined);
    openLink();
  });
}

/** Opens what the address's fragment carries, else what this tab sat at: an invitation link
 * asks for a name and claims its seat, a spectator link makes its holder a spectator (either
 * replaces whatever this tab sat at before). */
function openLink(): void {
  const link = session.takeLink();
  const held = session.load()?.me;
  if (link && "invite" in link && held?.matchId === link.invite.matchId && held.seat === link.invite.seat) {
    // This tab holds that seat's token already (it claimed the invitation): back to its table.
    session.forgetInvite();
  } else if (link && "invite" in link) {
    session.forget();
    session.saveInvite(link.invite);
  } else if (link) {
    session.forgetInvite();
    session.save({ me: link.pass });
  }
  const invite = session.loadInvite();
  const saved = session.load();
  if (invite) void openInvite(invite);
  else if (saved) void sit(saved);
  else lobby();
}

main();
