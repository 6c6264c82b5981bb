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

/** A fresh idempotency key: a retry that sends the same one is answered, never played twice. */
export function requestId(): string {
  return crypto.randomUUID();
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
