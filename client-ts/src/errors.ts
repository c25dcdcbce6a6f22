/**
 * The client's error classes, the same tree as the Python client's:
 *
 * PowerContextError
 * ├── TransportError               no HTTP response: connection refused, timeout, broken stream
 * ├── UnexpectedResponseError      a success status whose body is not the JSON the contract promises
 * ├── InvalidPreparedContextError  a prepare answer fails `validatePreparedContext`
 * └── PowerContextHTTPError        the server answered with a non-success status
 *     ├── UnauthorizedError        401
 *     ├── ForbiddenError           403
 *     ├── NotFoundError            404
 *     ├── ConflictError            409
 *     ├── InvalidRequestError      422
 *     └── ServerError              5xx
 *         └── UnavailableError     503
 */

export const REQUEST_ID_HEADER = "X-PowerContext-Request-ID";

/** Base class of every error this client throws on purpose. */
export class PowerContextError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** The request got no HTTP response (connection failure, timeout, cut-off body); `cause` says why. */
export class TransportError extends PowerContextError {
  /** Whether the client's own timeout ended the request. */
  readonly timedOut: boolean;

  constructor(message: string, options: { cause?: unknown; timedOut?: boolean } = {}) {
    super(message, { cause: options.cause });
    this.timedOut = options.timedOut ?? false;
  }
}

/** The server answered with a success status, but the body is not what the contract says. */
export class UnexpectedResponseError extends PowerContextError {
  constructor(
    message: string,
    readonly status: number,
    readonly requestId: string | null,
  ) {
    super(message);
  }
}

/** A prepare answer failed `validatePreparedContext`: a host injects nothing and goes on. */
export class InvalidPreparedContextError extends PowerContextError {}

/** What an error answer carries: its `{"error": {...}}` body and the request id header. */
export interface ErrorAnswer {
  status: number;
  /** The envelope's code; null when the body is not the envelope (a proxy's page, say). */
  code: string | null;
  message: string;
  details: Record<string, unknown> | null;
  requestId: string | null;
}

/** The server answered with an error status. */
export class PowerContextHTTPError extends PowerContextError {
  readonly status: number;
  readonly code: string | null;
  readonly details: Record<string, unknown> | null;
  readonly requestId: string | null;

  constructor(answer: ErrorAnswer) {
    super(`HTTP ${answer.status} ${answer.code ?? "error"}: ${answer.message}`);
    this.status = answer.status;
    this.code = answer.code;
    this.details = answer.details;
    this.requestId = answer.requestId;
  }
}

/** 401 `unauthorized`: the credential is missing or not valid. */
export class UnauthorizedError extends PowerContextHTTPError {}
/** 403 `forbidden`: the Principal may not perform this operation on every Scope it needs. */
export class ForbiddenError extends PowerContextHTTPError {}
/** 404: the Scope (`scope_not_found`) or the cited item does not exist. */
export class NotFoundError extends PowerContextHTTPError {}
/** 409: a stale `expected_version`/`expected_revision`, or an id that is taken. */
export class ConflictError extends PowerContextHTTPError {}
/** 422 `invalid_request`: `details.errors` lists each problem. */
export class InvalidRequestError extends PowerContextHTTPError {}
/** Any 5xx answer. */
export class ServerError extends PowerContextHTTPError {}
/** 503: a configured storage or retrieval service failed; reads are retried. */
export class UnavailableError extends ServerError {}

const BY_STATUS: ReadonlyMap<number, typeof PowerContextHTTPError> = new Map([
  [401, UnauthorizedError],
  [403, ForbiddenError],
  [404, NotFoundError],
  [409, ConflictError],
  [422, InvalidRequestError],
  [503, UnavailableError],
]);

/** The most specific error class for an error status. */
export function errorClassFor(status: number): typeof PowerContextHTTPError {
  return BY_STATUS.get(status) ?? (status >= 500 && status <= 599 ? ServerError : PowerContextHTTPError);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The typed error for an error answer, from its parsed body (or its text when it was not JSON). */
export function httpError(response: Response, body: unknown): PowerContextHTTPError {
  const envelope = isRecord(body) && isRecord(body.error) ? body.error : null;
  const code = envelope && typeof envelope.code === "string" ? envelope.code : null;
  const message = envelope && typeof envelope.message === "string" ? envelope.message : null;
  const Class = errorClassFor(response.status);
  return new Class({
    status: response.status,
    code: code !== null && message !== null ? code : null,
    message: code !== null && message !== null ? message : response.statusText || "error",
    details: code !== null && message !== null && isRecord(envelope?.details) ? envelope.details : null,
    requestId: response.headers.get(REQUEST_ID_HEADER),
  });
}
