// A TypeScript frontend's whole match, through every RPC of basra.v1.
//
//   tsx src/client.ts --target HOST:PORT [--seed N] [--protocol grpc|connect|connect-json|grpc-web]
//                     [--rules NAME --seats N [--invitations]]
//   (or $BASRA_TARGET, $BASRA_SEED, $BASRA_PROTOCOL; the target is the HTTP port for Connect and
//   gRPC-Web)
//
// Creates a seeded match (ERAM for two seats with the creating Deal, or with --rules/--seats
// any rule system through CreateMatch; with --invitations the creator keeps seat 0's token and
// every other seat is claimed with its invitation, each claim retried once with its request id
// for the same token, and claimed again by someone else for INVITATION_CLAIMED) and retries the
// creation to show idempotency, watches it
// from version 0 as every seat, provokes rejections and unpacks their ErrorInfo and BadRequest,
// plays it to the end with the first-choice policy (the seat to move plays the first card
// ListPlans returns, with its plan 1, or trails it; seat 0 deals each next hand: the policy of
// tests/contract/policy.py), checks every response against the last, and checks that each
// WatchMatch stream carried exactly the events the calls returned and never another seat's
// cards. Prints the final Scoreboard as one line of Protobuf JSON on stdout; everything else
// goes to stderr. Exits non-zero on any failed check.

import { randomUUID } from "node:crypto";
import { parseArgs } from "node:util";

import { clone, create, equals, toJsonString } from "@bufbuild/protobuf";
import type { CallOptions } from "@connectrpc/connect";

import type { CreateMatchResponse, DealResponse, PlayResponse } from "../gen/basra/v1/basra_service_pb.js";
import {
  CardPlayedSchema,
  CardSchema,
  MatchEventSchema,
  MatchStatus,
  MatchViewSchema,
  ScoreboardSchema,
  SeatClaim,
  type Card,
  type MatchEvent,
  type MatchView,
} from "../gen/basra/v1/game_pb.js";
import { DOMAIN, asProtocol, asSeat, connect, rejected, type BasraClient, type Rejection } from "./basra.js";

class CheckFailed extends Error {}

function check(condition: boolean, message: string): asserts condition {
  if (!condition) throw new CheckFailed(message);
}

function log(message: string): void {
  process.stderr.write(`${message}\n`);
}

const cardText = (card: Card | undefined): string => (card ? `${card.rank}/${card.suit}` : "none");

/** The events one call returned, and the seat that made it (deal events carry its own cards). */
interface Returned {
  caller: number;
  events: MatchEvent[];
}

class Match {
  readonly returned: Returned[] = [];
  readonly seats: number[];
  /** Cards each seat gets in a deal (4; 6 in lobashev), read from the creation. */
  readonly dealSize: number;
  view: MatchView;

  constructor(
    readonly client: BasraClient,
    readonly matchId: string,
    readonly tokens: ReadonlyMap<number, string>,
    created: DealResponse | CreateMatchResponse,
  ) {
    check(created.view !== undefined, "the creation returns a view");
    this.view = created.view;
    this.seats = created.view.seats.map((s) => s.seat);
    this.dealSize = created.view.hand.length;
    check(this.seats.length === created.view.seatCount && tokens.size === this.seats.length, "one token per seat");
    this.returned.push({ caller: created.view.seat, events: created.events });
  }

  /** Start again from `view` (seat 0's, after changes of seat holders no call of this object
   *  made): the streams are then opened after its version. */
  resync(view: MatchView): void {
    this.view = withoutPresence(view);
    this.returned.length = 0;
  }

  as(seat: number): CallOptions {
    const token = this.tokens.get(seat);
    check(token !== undefined, `no token for seat ${seat}`);
    return asSeat(token);
  }

  /** Check a changing call's response and make its view current. */
  private advance(caller: number, view: MatchView | undefined, events: MatchEvent[]): MatchView {
    check(view !== undefined, "a changing call returns a view");
    const next = this.view.version + 1n;
    check(view.version === next, `version ${view.version} follows ${this.view.version}`);
    check(view.seat === caller && view.matchId === this.matchId, "the view is the caller's");
    check(events.length > 0 && events.every((e) => e.version === next), "events carry the new version");
    this.view = view;
    this.returned.push({ caller, events });
    return view;
  }

  async play(seat: number, card: Card, planId: number): Promise<PlayResponse> {
    const response = await this.client.play(
      { matchId: this.matchId, card, planId, expectedVersion: this.view.version, requestId: randomUUID() },
      this.as(seat),
    );
    const played = response.played;
    check(played !== undefined && played.seat === seat, "the play is the caller's");
    check(equals(CardSchema, played.card ?? create(CardSchema), card), `played ${cardText(played.card)}`);
    check(played.planId === planId, `plan ${played.planId} taken, ${planId} asked`);
    const first = response.events[0]?.event;
    check(first?.case === "cardPlayed" && equals(CardPlayedSchema, first.value, played), "the play is the first event");
    this.advance(seat, response.view, response.events);
    return response;
  }

  async deal(seat: number): Promise<DealResponse> {
    const hand = this.view.handNumber;
    const response = await this.client.deal(
      { matchId: this.matchId, expectedVersion: this.view.version, requestId: randomUUID() },
      this.as(seat),
    );
    const started = response.events[0]?.event;
    check(started?.case === "handStarted" && started.value.hand === hand + 1, `hand ${hand + 1} starts`);
    check(started.value.yourCards.length === this.dealSize, "the deal shows the caller its cards");
    this.advance(seat, response.view, response.events);
    return response;
  }
}

/** A view without its seats' `connected`: presence, read by GetMatch at the instant of the call,
 *  is the one part of a view that no version decides. */
function withoutPresence(view: MatchView): MatchView {
  const copy = clone(MatchViewSchema, view);
  for (const seat of copy.seats) delete seat.connected;
  return copy;
}

/** Every event of the match after `afterVersion` as `seat` receives it on WatchMatch. */
async function watch(client: BasraClient, matchId: string, token: string, afterVersion = 0n): Promise<MatchEvent[]> {
  const events: MatchEvent[] = [];
  for await (const message of client.watchMatch({ matchId, afterVersion }, asSeat(token, { timeoutMs: 0 }))) {
    check(message.event !== undefined, "every stream message holds an event");
    events.push(message.event);
  }
  return events;
}

/** The event without the receiving seat's own dealt cards (which differ between seats). */
function publicPart(event: MatchEvent): MatchEvent {
  const copy = clone(MatchEventSchema, event);
  if (copy.event.case === "handStarted" || copy.event.case === "cardsDealt") copy.event.value.yourCards = [];
  return copy;
}

/** The stream `seat` received must be every event the calls returned, in order. */
function compareStream(seat: number, streamed: MatchEvent[], returned: Returned[], dealSize: number): void {
  const expected = returned.flatMap((r) => r.events.map((event) => ({ caller: r.caller, event })));
  check(
    streamed.length === expected.length,
    `seat ${seat} streamed ${streamed.length} events, calls returned ${expected.length}`,
  );
  expected.forEach(({ caller, event }, i) => {
    const got = streamed[i]!;
    const same =
      caller === seat
        ? equals(MatchEventSchema, got, event)
        : equals(MatchEventSchema, publicPart(got), publicPart(event));
    check(same, `seat ${seat}'s event ${i} (version ${got.version}) differs from the one returned`);
    if (got.event.case === "handStarted" || got.event.case === "cardsDealt") {
      const cards = got.event.value.yourCards.length;
      check(cards === dealSize, `seat ${seat} sees its own dealt cards at version ${got.version}`);
    }
  });
}

function expectRejection(r: Rejection, code: string, reason: string, metadata: Record<string, string>): void {
  check(r.code === code && r.reason === reason, `expected ${code}/${reason}, got ${r.code}/${r.reason}`);
  check(r.domain === DOMAIN, `domain ${r.domain}`);
  const sorted = (m: Readonly<Record<string, string>>) => JSON.stringify(Object.entries(m).sort());
  check(sorted(r.metadata) === sorted(metadata), `${reason} metadata ${JSON.stringify(r.metadata)}`);
  log(`rejected as expected: ${r.code} ${r.reason} ${JSON.stringify(r.metadata)}: ${r.message}`);
}

/** Provoke rejections before the first play; none may change the match. */
async function provoke(match: Match): Promise<void> {
  const { client, matchId } = match;
  const turn = match.view.toPlay;
  check(turn !== undefined, "a seat is to play");
  const other = (turn + 1) % match.seats.length;
  const theirs = (await client.getMatch({ matchId }, match.as(other))).view;
  check(theirs !== undefined && theirs.hand.length === match.dealSize, "the next seat holds its cards");
  const card = theirs.hand[0]!;

  const notYourTurn = await rejected(() => client.play({ matchId, card }, match.as(other)));
  expectRejection(notYourTurn, "FAILED_PRECONDITION", "NOT_YOUR_TURN", { turn: String(turn) });

  const badPlan = await rejected(() => client.play({ matchId, card, planId: -1 }, match.as(turn)));
  expectRejection(badPlan, "INVALID_ARGUMENT", "INVALID_ARGUMENT", { field: "plan_id" });
  const violations = badPlan.badRequest?.fieldViolations ?? [];
  check(violations.length === 1 && violations[0]!.field === "plan_id", "BadRequest names plan_id");
  log(`BadRequest: ${violations[0]!.field}: ${violations[0]!.description}`);

  const noCard = await rejected(() => client.play({ matchId }, match.as(turn)));
  expectRejection(noCard, "INVALID_ARGUMENT", "INVALID_CARD", { field: "card" });
  check(noCard.badRequest?.fieldViolations[0]?.field === "card", "BadRequest names card");

  const noToken = await rejected(() => client.getMatch({ matchId }, { timeoutMs: 10_000 }));
  expectRejection(noToken, "UNAUTHENTICATED", "TOKEN_MISSING", {});

  const after = (await client.getMatch({ matchId }, match.as(turn))).view;
  check(after !== undefined && after.version === match.view.version, "rejected calls changed nothing");
}

/** Claim an invitation (retried once with its request id: the same token), then show that
 *  someone else's claim of it is refused. */
async function claim(client: BasraClient, matchId: string, seat: number, invitation: string): Promise<string> {
  const request = { matchId, invitation, displayName: `  Seat ${seat} `, requestId: randomUUID() };
  const first = await client.claimSeat(request, { timeoutMs: 10_000 });
  check(first.seatToken?.seat === seat, `the invitation opens seat ${seat}`);
  check(first.view?.seats[seat]?.displayName === `Seat ${seat}`, "the name is trimmed");
  const retried = await client.claimSeat(request, { timeoutMs: 10_000 });
  check(retried.seatToken?.token === first.seatToken.token, "a retried claim answers the same token");
  const other = await rejected(() =>
    client.claimSeat({ ...request, displayName: "Someone", requestId: randomUUID() }, { timeoutMs: 10_000 }),
  );
  expectRejection(other, "FAILED_PRECONDITION", "INVITATION_CLAIMED", { seat: String(seat) });
  return first.seatToken.token;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      target: { type: "string" },
      seed: { type: "string" },
      protocol: { type: "string" },
      rules: { type: "string" },
      seats: { type: "string" },
      invitations: { type: "boolean" },
    },
  });
  const invitations = values.invitations === true;
  const target = values.target ?? process.env["BASRA_TARGET"];
  const seed = BigInt(values.seed ?? process.env["BASRA_SEED"] ?? "42");
  const protocol = asProtocol(values.protocol ?? process.env["BASRA_PROTOCOL"] ?? "grpc");
  check(target !== undefined, "give the server as --target HOST:PORT or $BASRA_TARGET");
  const client = connect(target, protocol);
  log(`protocol ${protocol}`);

  const requestId = randomUUID();
  const create = () =>
    values.rules === undefined
      ? client.deal({ seed, seat: 0, requestId }, { timeoutMs: 10_000 })
      : client.createMatch(
          {
            rules: values.rules,
            seats: Number(values.seats ?? "0"),
            seed,
            seat: 0,
            requestId,
            invitations,
            displayName: invitations ? "Host" : "",
          },
          { timeoutMs: 10_000 },
        );
  const created = await create();
  const tokens = new Map(created.seatTokens.map((t) => [t.seat, t.token]));
  const again = await create();
  check(again.matchId === created.matchId, "a retried creation returns the same match");
  check(again.seatTokens.every((t) => tokens.get(t.seat) === t.token), "and the same tokens");
  const codes = "invitations" in created ? created.invitations : [];
  check(codes.length === (invitations ? created.view!.seatCount - 1 : 0), "an invitation per invited seat");
  for (const invitation of codes) {
    const claimed = await claim(client, created.matchId, invitation.seat, invitation.code);
    tokens.set(invitation.seat, claimed);
  }
  const match = new Match(client, created.matchId, tokens, created);
  const seats = match.seats;
  log(`match ${match.matchId} seed ${seed}, ${match.view.rules} rules, ${seats.length} seats`);
  if (invitations) {
    const now = (await client.getMatch({ matchId: match.matchId }, match.as(0))).view;
    check(now !== undefined && now.version === 1n + BigInt(codes.length), "each claim is a version");
    const names = now.seats.map((s) => (s.claim === SeatClaim.CREATOR ? "creator" : s.displayName));
    check(names.join(",") === ["creator", ...codes.map((c) => `Seat ${c.seat}`)].join(","), "every name shows");
    match.resync(now);
  }
  const from = match.view.version - (invitations ? 0n : 1n);

  // Watch as every seat while the match is played (from version 0, or after the claims); each
  // stream ends by itself after the MatchEnded event.
  const streams = seats.map((s) => watch(client, match.matchId, tokens.get(s)!, from));
  streams.forEach((s) => s.catch(() => undefined)); // awaited below; do not crash before then

  await provoke(match);

  let plays = 0;
  let result: PlayResponse["result"];
  while (match.view.status !== MatchStatus.MATCH_OVER) {
    if (match.view.status === MatchStatus.HAND_OVER) {
      await match.deal(0);
      continue;
    }
    const seat = match.view.toPlay;
    check(seat !== undefined, "a seat is to play while a hand is in progress");
    const listed = await client.listPlans({ matchId: match.matchId }, match.as(seat));
    check(listed.version === match.view.version, "plans are computed at the current version");
    const first = listed.cards[0];
    check(first !== undefined && first.card !== undefined, `seat ${seat} has a card to play`);
    check(first.trails === (first.plans.length === 0), "a card trails exactly when it has no plan");
    const response = await match.play(seat, first.card, first.plans[0]?.id ?? 0);
    plays++;
    if (response.handScore !== undefined) {
      log(`hand ${response.handScore.hand} scored: totals ${match.view.seats.map((s) => s.score).join("/")}`);
    }
    result = response.result ?? result;
  }
  check(result !== undefined, "the last play reports the result");

  for (const seat of seats) {
    const got = (await client.getMatch({ matchId: match.matchId }, match.as(seat))).view;
    check(got !== undefined && got.version === match.view.version, `seat ${seat}'s view is current`);
    check(got.seats.every((s) => s.connected !== undefined), "GetMatch reads presence");
    const view = withoutPresence(got);
    check(view.winner === result.winner && view.status === MatchStatus.MATCH_OVER, "GetMatch shows the winner");
    // The last play's view, as the other seat sees it: the same but for the seat and its side.
    const last = clone(MatchViewSchema, match.view);
    last.seat = seat;
    last.side = last.seats[seat]?.side ?? seat;
    check(equals(MatchViewSchema, view, last), `seat ${seat}'s view is the last play's`);
  }
  const scores = await Promise.all(seats.map((s) => client.score({ matchId: match.matchId }, match.as(s))));
  const board = scores[0]!.scoreboard;
  check(board !== undefined, "Score returns the scoreboard");
  check(scores.every((s) => equals(ScoreboardSchema, board, s.scoreboard!)), "every seat sees one scoreboard");
  check(scores.every((s) => s.version === match.view.version), "the scoreboard is current");
  check(board.winner === result.winner && board.status === MatchStatus.MATCH_OVER, "the scoreboard names the winner");
  seats.forEach((s) => {
    const sum = board.hands.reduce((total, hand) => total + (hand.seats[s]?.total ?? 0), 0);
    check(board.totals[s] === sum && result.totals[s] === sum, `seat ${s}'s total is the sum of its hands`);
    const side = board.seatSides[s]!;
    check(board.sideTotals[side] === sum, `seat ${s}'s total is its side's`);
  });
  board.hands.forEach((hand) => {
    const cards = hand.sides.reduce((total, side) => total + side.cards, 0);
    check(cards === 52, `hand ${hand.hand}: the sides' piles hold the 52 cards`);
  });
  check(result.winnerSide === board.winnerSide, "the result and the scoreboard name one side");

  const streamed = await Promise.all(streams);
  seats.forEach((s, i) => compareStream(s, streamed[i]!, match.returned, match.dealSize));
  log(`${plays} plays, ${board.hands.length} hands, winner seat ${board.winner}; streams match`);

  process.stdout.write(`${toJsonString(ScoreboardSchema, board)}\n`);
}

try {
  await main();
  process.exit(0);
} catch (error) {
  log(`FAILED: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  process.exit(1);
}
