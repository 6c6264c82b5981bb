// Talking to the service: one Connect client per seat, retries that never play twice, and
// readable errors from the ErrorInfo reason the service attaches to every rejection.
import { Code, ConnectError, createClient, type Client, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { BasraService } from "../gen/basra/v1/basra_service_pb";
import type { RuleSystem } from "../gen/basra/v1/rules_pb";
import { ErrorInfoSchema } from "../gen/google/rpc/error_details_pb";

export type Basra = Client<typeof BasraService>;

/** The service is on the page's own origin: `basra-engine serve` serves this page and the API
 * on one HTTP port, so the browser needs no CORS. A page served elsewhere would name the API's
 * origin here, and the service would list the page's origin in --cors-origin. */
const API_BASE = location.origin;

/** A client of the service; with a token, every call speaks for that token's seat. */
export function basraClient(token?: string): Basra {
  const interceptors: Interceptor[] = [];
  if (token !== undefined) {
    interceptors.push((next) => (request) => {
      request.header.set("authorization", `Bearer ${token}`);
      return next(request);
    });
  }
  // The Connect protocol (JSON on the wire, easy to read in the browser's network panel).
  // createGrpcWebTransport from the same package would speak gRPC-Web to the same server.
  return createClient(BasraService, createConnectTransport({ baseUrl: API_BASE, interceptors }));
}

let rules: Promise<RuleSystem[]> | undefined;

/** The rule systems the service plays (ListRules, asked once per page: they never change while
 * a server runs). What the lobby offers, and the figures the table shows (deals per hand, the
 * majority's threshold). */
export function ruleSystems(): Promise<RuleSystem[]> {
  rules ??= untilAnswered(() => basraClient().listRules({}), undefined, Infinity).then(
    (answer) => answer.rules,
    (error: unknown) => {
      rules = undefined; // asked again next time
      throw error;
    },
  );
  return rules;
}

/** A fresh idempotency key: a retry that sends the same one is answered, never played twice.
 * A random UUID (version 4, the form CreateMatch requires) from crypto.getRandomValues, which
 * every page has: crypto.randomUUID exists only in secure contexts (HTTPS, localhost), and a
 * table opened over plain HTTP at a LAN address (http://192.168.1.20:8080) is not one. */
export function requestId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[6] = ((bytes[6] ?? 0) & 0x0f) | 0x40; // version 4
  bytes[8] = ((bytes[8] ?? 0) & 0x3f) | 0x80; // the RFC 9562 variant
  const hex = Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** The ErrorInfo reason of a rejection ("NOT_YOUR_TURN"), if the service sent one. */
export function errorReason(error: unknown): string | undefined {
  return ConnectError.from(error).findDetails(ErrorInfoSchema)[0]?.reason;
}

/** An ErrorInfo metadata value of a rejection ("retry_after_s" of RATE_LIMITED). */
export function errorMetadata(error: unknown, key: string): string | undefined {
  return ConnectError.from(error).findDetails(ErrorInfoSchema)[0]?.metadata[key];
}

/** The server did not answer (it restarts, the network dropped, a proxy said 502/503): the same
 * request may be sent again. Everything else is an answer, and retrying it would not help. */
export function isUnreachable(error: unknown): boolean {
  const connectError = ConnectError.from(error);
  if (connectError.code === Code.Unavailable) return true;
  // fetch() rejects with a TypeError when nothing answers at all.
  return connectError.code === Code.Unknown && connectError.cause instanceof TypeError;
}

export function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

/** Waits between attempts: 0.25 s, 0.5 s, 1 s … up to 4 s. */
export function backoff(attempt: number): number {
  return Math.min(250 * 2 ** attempt, 4000);
}

/** Calls until the server answers, at most `attempts` times. The request is built once, so a
 * retried Play or Deal carries the same request_id and the service answers it without
 * playing it again. `onRetry` lets the page say that it is reconnecting. */
export async function untilAnswered<T>(call: () => Promise<T>, onRetry?: () => void, attempts = 8): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (error) {
      if (!isUnreachable(error) || attempt >= attempts) throw error;
      onRetry?.();
      await pause(backoff(attempt));
    }
  }
}
