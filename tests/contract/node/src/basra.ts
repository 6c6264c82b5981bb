// What every TypeScript caller of basra.v1 needs: a client over gRPC (the gRPC port) or Connect or
// gRPC-Web (the HTTP port), the seat-token metadata, and rejections unpacked into their
// google.rpc details (AIP-193), the same way clients/python/src/basra/client's Rejection.of does it in Python.

import { toJson, type JsonObject } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type CallOptions, type Client } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";

import { BasraService } from "../gen/basra/v1/basra_service_pb.js";
import {
  BadRequestSchema,
  ErrorInfoSchema,
  RetryInfoSchema,
  type BadRequest,
  type RetryInfo,
} from "../gen/google/rpc/error_details_pb.js";

export type BasraClient = Client<typeof BasraService>;

/** The ErrorInfo domain of every basra.v1 rejection. */
export const DOMAIN = "basra.v1";
export const CALL_TIMEOUT_MS = 10_000;

/** The protocols a client can speak: gRPC on either port, Connect and gRPC-Web on the HTTP port. */
export const PROTOCOLS = ["grpc", "connect", "connect-json", "grpc-web"] as const;
export type Protocol = (typeof PROTOCOLS)[number];

export function asProtocol(name: string): Protocol {
  const found = PROTOCOLS.find((p) => p === name);
  if (found === undefined) throw new Error(`protocol ${name}: expected one of ${PROTOCOLS.join(", ")}`);
  return found;
}

/**
 * A client of the server at `target` ("host:port", plaintext). gRPC needs HTTP/2; Connect
 * (binary, or JSON as browsers often send it) and gRPC-Web go over HTTP/1.1, as from a browser.
 */
export function connect(target: string, protocol: Protocol = "grpc"): BasraClient {
  const baseUrl = `http://${target}`;
  switch (protocol) {
    case "grpc":
      return createClient(BasraService, createGrpcTransport({ baseUrl }));
    case "connect":
      return createClient(BasraService, createConnectTransport({ baseUrl, httpVersion: "1.1", useBinaryFormat: true }));
    case "connect-json":
      return createClient(BasraService, createConnectTransport({ baseUrl, httpVersion: "1.1" }));
    case "grpc-web":
      return createClient(BasraService, createGrpcWebTransport({ baseUrl, httpVersion: "1.1" }));
  }
}

/** Call options authenticating as one seat: `authorization: Bearer <token>`. */
export function asSeat(token: string, extra: CallOptions = {}): CallOptions {
  return { timeoutMs: CALL_TIMEOUT_MS, ...extra, headers: { authorization: `Bearer ${token}` } };
}

// Connect's Code enum has the gRPC status numbers; these are their canonical gRPC names.
const GRPC_CODE_NAMES = [
  "OK",
  "CANCELLED",
  "UNKNOWN",
  "INVALID_ARGUMENT",
  "DEADLINE_EXCEEDED",
  "NOT_FOUND",
  "ALREADY_EXISTS",
  "PERMISSION_DENIED",
  "RESOURCE_EXHAUSTED",
  "FAILED_PRECONDITION",
  "ABORTED",
  "OUT_OF_RANGE",
  "UNIMPLEMENTED",
  "INTERNAL",
  "UNAVAILABLE",
  "DATA_LOSS",
  "UNAUTHENTICATED",
] as const;

/** The gRPC name of a status code, such as "FAILED_PRECONDITION". */
export function codeName(code: Code): string {
  return GRPC_CODE_NAMES[code] ?? `CODE_${code}`;
}

const KNOWN_DETAILS = new Set<string>([
  ErrorInfoSchema.typeName,
  BadRequestSchema.typeName,
  RetryInfoSchema.typeName,
]);

/** A rejected call as a client sees it: the status code and the unpacked details. */
export class Rejection {
  constructor(
    readonly code: string,
    readonly message: string,
    readonly reason: string,
    readonly domain: string,
    readonly metadata: Readonly<Record<string, string>>,
    readonly badRequest: BadRequest | undefined,
    readonly retryInfo: RetryInfo | undefined,
  ) {}

  /**
   * Unpack a failed call's google.rpc.Status details (Connect decodes the
   * grpc-status-details-bin trailer into ConnectError.details).
   *
   * Throws when the error breaks the error model: anything but exactly one ErrorInfo, a repeated
   * or unknown detail, or a failure that is not a ConnectError at all.
   */
  static of(error: unknown): Rejection {
    if (!(error instanceof ConnectError)) {
      throw new Error(`not a rejection: ${String(error)}`, { cause: error });
    }
    const types = error.details.map((d) => ("desc" in d ? d.desc.typeName : d.type));
    const infos = error.findDetails(ErrorInfoSchema);
    if (infos.length !== 1) {
      throw new Error(`${codeName(error.code)} needs exactly one ErrorInfo, has [${types}]: ${error.message}`);
    }
    if (new Set(types).size !== types.length || types.some((t) => !KNOWN_DETAILS.has(t))) {
      throw new Error(`${codeName(error.code)} has unexpected details [${types}]`);
    }
    const info = infos[0]!;
    return new Rejection(
      codeName(error.code),
      error.rawMessage,
      info.reason,
      info.domain,
      info.metadata,
      error.findDetails(BadRequestSchema)[0],
      error.findDetails(RetryInfoSchema)[0],
    );
  }

  /** The rejection as a golden vector's `error` (the details in the Protobuf JSON mapping). */
  toJson(): JsonObject {
    const out: JsonObject = {
      code: this.code,
      reason: this.reason,
      domain: this.domain,
      metadata: { ...this.metadata },
    };
    if (this.badRequest !== undefined) out["badRequest"] = toJson(BadRequestSchema, this.badRequest);
    if (this.retryInfo !== undefined) out["retryInfo"] = toJson(RetryInfoSchema, this.retryInfo);
    return out;
  }
}

/** Run a call that must be rejected; returns the rejection (throws if the call succeeds). */
export async function rejected(call: () => Promise<unknown>): Promise<Rejection> {
  try {
    await call();
  } catch (error) {
    return Rejection.of(error);
  }
  throw new Error("the call was expected to be rejected");
}
