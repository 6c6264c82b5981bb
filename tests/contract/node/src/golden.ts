// Golden vectors in TypeScript: the same format, placeholders and matching rules as
// tests/contract/golden.py (read its docstring for the format). Both must agree: the vectors are
// the contract's examples, replayed by both languages.

import { randomUUID } from "node:crypto";

import { fromJson, toJson, type JsonObject, type JsonValue } from "@bufbuild/protobuf";
import type { CallOptions } from "@connectrpc/connect";

import {
  ClaimSeatRequestSchema,
  ClaimSeatResponseSchema,
  CreateWatchTokenRequestSchema,
  CreateWatchTokenResponseSchema,
  CreateMatchRequestSchema,
  CreateMatchResponseSchema,
  DealRequestSchema,
  DealResponseSchema,
  GetMatchRequestSchema,
  GetMatchResponseSchema,
  ListPlansRequestSchema,
  ListRulesRequestSchema,
  ListRulesResponseSchema,
  ListPlansResponseSchema,
  PlayRequestSchema,
  PlayResponseSchema,
  ReissueInvitationRequestSchema,
  ReissueInvitationResponseSchema,
  RevokeWatchTokensRequestSchema,
  RevokeWatchTokensResponseSchema,
  ScoreRequestSchema,
  ScoreResponseSchema,
  WatchMatchRequestSchema,
  WatchMatchResponseSchema,
  type WatchMatchRequest,
} from "../gen/basra/v1/basra_service_pb.js";
import { CALL_TIMEOUT_MS, Rejection, type BasraClient } from "./basra.js";

export interface Step {
  rpc: string;
  note?: string;
  seat?: number;
  metadata?: Record<string, string>;
  request?: JsonObject;
  expect: Expect;
}

export interface Expect {
  response?: JsonValue;
  partial?: JsonValue;
  error?: JsonValue;
  stream?: JsonValue[];
  ends?: boolean;
}

export interface Vector {
  name: string;
  description: string;
  server: JsonObject;
  steps: Step[];
}

/** What a call returned: a response, stream messages, an error (for streams: after messages). */
export interface Outcome {
  response?: JsonValue;
  stream?: JsonValue[];
  ends?: boolean;
  error?: JsonObject;
}

export class VectorError extends Error {}

const WHOLE = /^\{\{(\w+)(?::([\w-]+))?\}\}$/;
const INSIDE = /\{\{(\w+)(?::([\w-]+))?\}\}/g;
const SHAPES: Record<string, RegExp> = {
  match_id: /^[A-Za-z0-9_-]{16,64}$/,
  token: /^[A-Za-z0-9_-]{43}$/,
  seconds: /^(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$/,
  duration: /^\d+(?:\.\d{1,9})?s$/,
  presence: /^(?:true|false)$/,
};
const BOUND = new Set(["match_id", "token"]);

const key = (kind: string, name: string | undefined): string => (name ? `${kind}:${name}` : kind);
const isObject = (v: JsonValue | undefined): v is JsonObject =>
  typeof v === "object" && v !== null && !Array.isArray(v);
const show = (v: JsonValue | undefined): string => (v === undefined ? "nothing" : JSON.stringify(v));

/** The values one replay has bound to placeholders. */
export class Bindings {
  readonly values = new Map<string, string>();

  /** `value` with the placeholders of a request or metadata replaced. */
  fill(value: JsonValue): JsonValue {
    if (Array.isArray(value)) return value.map((v) => this.fill(v));
    if (isObject(value)) {
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, this.fill(v)]));
    }
    if (typeof value === "string") {
      return value.replace(INSIDE, (_, kind: string, name: string | undefined) => this.value(kind, name));
    }
    return value;
  }

  private value(kind: string, name: string | undefined): string {
    const k = key(kind, name);
    if (kind === "request_id") {
      if (!this.values.has(k)) this.values.set(k, randomUUID());
      return this.values.get(k)!;
    }
    if (!BOUND.has(kind)) throw new VectorError(`placeholder {{${k}}} cannot appear in a request`);
    const bound = this.values.get(k);
    if (bound === undefined) throw new VectorError(`placeholder {{${k}}} used before it was bound`);
    return bound;
  }

  /** The differences of `actual` from `expected`, binding placeholders on the way. */
  match(expected: JsonValue, actual: JsonValue | undefined, path: string, partial: boolean): string[] {
    const placeholder = typeof expected === "string" ? WHOLE.exec(expected) : null;
    if (placeholder) return this.placeholder(placeholder[1]!, placeholder[2], actual, path);
    if (isObject(expected)) {
      if (!isObject(actual)) return [`${path}: expected an object, got ${show(actual)}`];
      const problems: string[] = [];
      const extra = Object.keys(actual).filter((k) => !(k in expected)).sort();
      if (extra.length > 0 && !partial) {
        problems.push(`${path}: unexpected ${extra.join(", ")} = ${extra.map((k) => show(actual[k])).join(", ")}`);
      }
      for (const [k, v] of Object.entries(expected)) {
        if (!(k in actual)) problems.push(`${path}.${k}: missing (expected ${show(v)})`);
        else problems.push(...this.match(v, actual[k], `${path}.${k}`, partial));
      }
      return problems;
    }
    if (Array.isArray(expected)) {
      if (!Array.isArray(actual) || actual.length !== expected.length) {
        return [`${path}: expected ${expected.length} items, got ${show(actual)}`];
      }
      return expected.flatMap((e, i) => this.match(e, actual[i], `${path}[${i}]`, false));
    }
    if (typeof expected !== typeof actual || expected !== actual) {
      return [`${path}: expected ${show(expected)}, got ${show(actual)}`];
    }
    return [];
  }

  private placeholder(
    kind: string,
    name: string | undefined,
    actual: JsonValue | undefined,
    path: string,
  ): string[] {
    const shape = SHAPES[kind];
    if (shape === undefined) throw new VectorError(`${path}: unknown placeholder kind ${kind}`);
    // A seat's `connected` depends on the replay's timing (is a stream open at that instant?).
    if (kind === "presence") return typeof actual === "boolean" ? [] : [`${path}: ${show(actual)} is not a presence (a boolean)`];
    if (typeof actual !== "string" || !shape.test(actual)) return [`${path}: ${show(actual)} is not a ${kind}`];
    if (kind === "seconds" || kind === "duration") {
      return Number(actual.replace(/s$/, "")) > 0 ? [] : [`${path}: ${actual} is not positive`];
    }
    const k = key(kind, name);
    const bound = this.values.get(k);
    if (bound === undefined) this.values.set(k, actual);
    else if (bound !== actual) return [`${path}: expected {{${k}}} = ${bound}, got ${actual}`];
    return [];
  }
}

/**
 * The unary call a step makes, its request parsed from JSON strictly (a field the contract does
 * not have is an error in the vector), returning the response in the JSON mapping.
 */
function unary(client: BasraClient, rpc: string, json: JsonValue): (o: CallOptions) => Promise<JsonValue> {
  switch (rpc) {
    case "Deal": {
      const request = fromJson(DealRequestSchema, json);
      return async (o) => toJson(DealResponseSchema, await client.deal(request, o));
    }
    case "ListPlans": {
      const request = fromJson(ListPlansRequestSchema, json);
      return async (o) => toJson(ListPlansResponseSchema, await client.listPlans(request, o));
    }
    case "Play": {
      const request = fromJson(PlayRequestSchema, json);
      return async (o) => toJson(PlayResponseSchema, await client.play(request, o));
    }
    case "Score": {
      const request = fromJson(ScoreRequestSchema, json);
      return async (o) => toJson(ScoreResponseSchema, await client.score(request, o));
    }
    case "GetMatch": {
      const request = fromJson(GetMatchRequestSchema, json);
      return async (o) => toJson(GetMatchResponseSchema, await client.getMatch(request, o));
    }
    case "CreateMatch": {
      const request = fromJson(CreateMatchRequestSchema, json);
      return async (o) => toJson(CreateMatchResponseSchema, await client.createMatch(request, o));
    }
    case "ListRules": {
      const request = fromJson(ListRulesRequestSchema, json);
      return async (o) => toJson(ListRulesResponseSchema, await client.listRules(request, o));
    }
    case "CreateWatchToken": {
      const request = fromJson(CreateWatchTokenRequestSchema, json);
      return async (o) =>
        toJson(CreateWatchTokenResponseSchema, await client.createWatchToken(request, o));
    }
    case "RevokeWatchTokens": {
      const request = fromJson(RevokeWatchTokensRequestSchema, json);
      return async (o) =>
        toJson(RevokeWatchTokensResponseSchema, await client.revokeWatchTokens(request, o));
    }
    case "ClaimSeat": {
      const request = fromJson(ClaimSeatRequestSchema, json);
      return async (o) => toJson(ClaimSeatResponseSchema, await client.claimSeat(request, o));
    }
    case "ReissueInvitation": {
      const request = fromJson(ReissueInvitationRequestSchema, json);
      return async (o) =>
        toJson(ReissueInvitationResponseSchema, await client.reissueInvitation(request, o));
    }
    default:
      throw new VectorError(`unknown rpc ${rpc}`);
  }
}

/** Replays steps with one client, keeping the placeholder bindings of one vector. */
export class Session {
  readonly bindings = new Bindings();

  constructor(private readonly client: BasraClient) {}

  /** The call metadata of a step: its seat's token, then its own metadata (which wins). */
  headers(step: Step): Record<string, string> {
    const headers: Record<string, string> = {};
    if (step.seat !== undefined) headers["authorization"] = `Bearer {{token:${step.seat}}}`;
    Object.assign(headers, step.metadata ?? {});
    return Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, this.bindings.fill(v) as string]));
  }

  /** Make the step's call; a stream is read as far as its expectation says. */
  async perform(step: Step): Promise<Outcome> {
    const request = this.bindings.fill(step.request ?? {});
    const options: CallOptions = { headers: this.headers(step), timeoutMs: CALL_TIMEOUT_MS };
    if (step.rpc === "WatchMatch") {
      return this.watch(fromJson(WatchMatchRequestSchema, request), step.expect, options);
    }
    const call = unary(this.client, step.rpc, request);
    try {
      return { response: await call(options) };
    } catch (error) {
      return { error: Rejection.of(error).toJson() };
    }
  }

  private async watch(
    request: WatchMatchRequest,
    expect: Expect,
    options: CallOptions,
  ): Promise<Outcome> {
    const wanted = expect.stream?.length ?? 0;
    const toEnd = expect.ends === true || expect.error !== undefined;
    const abort = new AbortController();
    const outcome: Outcome = { stream: [], ends: false };
    try {
      for await (const message of this.client.watchMatch(request, { ...options, signal: abort.signal })) {
        outcome.stream!.push(toJson(WatchMatchResponseSchema, message));
        if (outcome.stream!.length >= wanted && !toEnd) {
          abort.abort(); // the first messages are all this step looks at: cancel the call
          return outcome;
        }
      }
      outcome.ends = true;
    } catch (error) {
      outcome.error = Rejection.of(error).toJson();
    }
    return outcome;
  }

  /** How `outcome` differs from the step's expectation (empty: it matches). */
  check(step: Step, outcome: Outcome): string[] {
    const expect = step.expect;
    const problems: string[] = [];
    if (expect.stream !== undefined) {
      problems.push(...this.bindings.match(expect.stream, outcome.stream, "stream", false));
      if (expect.ends === true && outcome.ends !== true) {
        problems.push("stream: expected the server to end the stream");
      }
    }
    if (expect.error !== undefined) {
      problems.push(...this.bindings.match(expect.error, outcome.error, "error", false));
    } else if (expect.response !== undefined) {
      problems.push(...this.bindings.match(expect.response, outcome.response, "response", false));
    } else if (expect.partial !== undefined) {
      problems.push(...this.bindings.match(expect.partial, outcome.response, "response", true));
    } else if (expect.stream === undefined) {
      throw new VectorError(`step expects nothing: ${Object.keys(expect).join(", ")}`);
    }
    if (outcome.error !== undefined && expect.error === undefined) {
      problems.push(`unexpected error ${JSON.stringify(outcome.error)}`);
    }
    return problems;
  }
}

/**
 * Replay every step of `vector`; returns the number of steps.
 * Throws VectorError at the first step whose outcome differs.
 */
export async function replay(vector: Vector, client: BasraClient): Promise<number> {
  const session = new Session(client);
  for (const [index, step] of vector.steps.entries()) {
    const outcome = await session.perform(step);
    const problems = session.check(step, outcome);
    if (problems.length > 0) {
      const label = `${vector.name} step ${index} (${step.rpc}${step.note ? `: ${step.note}` : ""})`;
      throw new VectorError(`${label}\n  ${problems.slice(0, 20).join("\n  ")}`);
    }
  }
  return vector.steps.length;
}
