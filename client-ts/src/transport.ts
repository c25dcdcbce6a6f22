/** One call on the wire: the generated request function, the timeout, the retries, the typed errors. */

import type { Client } from "openapi-fetch";
import { REQUEST_ID_HEADER, TransportError, UnexpectedResponseError, httpError } from "./errors.js";
import { OPERATIONS, type OperationId } from "./generated/operations.js";
import type { paths } from "./generated/schema.js";
import { RETRY_STATUS, type RetryPolicy, repeatable, retryDelay, sleep } from "./retry.js";

export interface CallInit {
  params?: { path?: Record<string, string | number>; query?: Record<string, string | number | undefined> };
  body?: unknown;
  headers?: Record<string, string>;
  bodySerializer?: (body: unknown) => BodyInit;
  /** Sent again after a 503 or a failed connection even though the operation is a write. */
  repeatable?: boolean;
  /** Sent once whatever the operation (an export, whose lines the caller may already be consuming). */
  once?: boolean;
  /** Waits for the answer however long it takes (an import answers only once it is done). */
  patient?: boolean;
}

export interface TransportOptions {
  http: Client<paths>;
  timeoutMs: number;
  retry: RetryPolicy;
}

/** The answer of a successful call, its body not read yet. */
export interface Answer {
  response: Response;
  body: ReadableStream<Uint8Array> | null;
  /** Clears the timeout once the caller has read the body (a stream is read past the timeout). */
  done(): void;
  /** Whether the timeout ended the call while its body was being read. */
  timedOut(): boolean;
}

/** Send `operationId` with retries per the policy; an error status throws its typed error. */
export async function send(options: TransportOptions, operationId: OperationId, init: CallInit): Promise<Answer> {
  const mayRepeat = !init.once && repeatable(operationId, init.repeatable);
  for (let attempt = 0; ; attempt++) {
    const canRepeat = mayRepeat && attempt < options.retry.retries;
    const timer = init.patient ? null : deadline(options.timeoutMs);
    let result;
    try {
      result = await attemptOnce(options.http, operationId, init, timer?.signal);
    } catch (cause) {
      timer?.clear();
      if (timer?.expired()) {
        throw new TransportError(`${operationId}: no answer within ${options.timeoutMs} ms`, { cause, timedOut: true });
      }
      if (canRepeat && cause instanceof TypeError) {
        await sleep(retryDelay(options.retry, attempt));
        continue;
      }
      throw new TransportError(`${operationId}: ${describe(cause)}`, { cause });
    }
    const { response, data, error } = result;
    if (response.ok) {
      return { response, body: (data as ReadableStream<Uint8Array> | undefined) ?? null, done: () => timer?.clear(), timedOut: () => timer?.expired() ?? false };
    }
    timer?.clear();
    if (response.status === RETRY_STATUS && canRepeat) {
      await sleep(retryDelay(options.retry, attempt, response));
      continue;
    }
    throw httpError(response, error);
  }
}

function attemptOnce(http: Client<paths>, operationId: OperationId, init: CallInit, signal: AbortSignal | undefined) {
  const { method, path } = OPERATIONS[operationId];
  // The table's paths are the contract's, so openapi-fetch's per-path types hold; the methods of
  // PowerContextClient carry the per-operation types instead.
  const request = http.request as unknown as (
    method: string,
    path: string,
    init: Record<string, unknown>,
  ) => Promise<{ response: Response; data?: unknown; error?: unknown }>;
  return request(method.toLowerCase(), path, {
    params: init.params ?? {},
    body: init.body,
    headers: init.headers,
    bodySerializer: init.bodySerializer,
    parseAs: "stream",
    redirect: "manual",
    signal,
    // Needed by Node's fetch to send a stream as the body.
    ...(init.body instanceof ReadableStream ? { duplex: "half" } : {}),
  });
}

/** A timeout for one attempt that the caller clears once it has what it waited for. */
function deadline(ms: number) {
  const controller = new AbortController();
  let expired = false;
  const handle = setTimeout(() => {
    expired = true;
    controller.abort(new DOMException("timeout", "TimeoutError"));
  }, ms);
  return { signal: controller.signal, expired: () => expired, clear: () => clearTimeout(handle) };
}

function describe(cause: unknown): string {
  if (cause instanceof Error) {
    const inner = cause.cause instanceof Error ? `: ${cause.cause.message}` : "";
    return `${cause.message}${inner}`;
  }
  return String(cause);
}

/** The JSON body of a successful answer, read whole. */
export async function readJson<T>(operationId: OperationId, answer: Answer): Promise<T> {
  let text: string;
  try {
    text = answer.body ? await new Response(answer.body).text() : "";
  } catch (cause) {
    const timedOut = answer.timedOut();
    const why = timedOut ? "the answer did not arrive in time" : `the answer broke off: ${describe(cause)}`;
    throw new TransportError(`${operationId}: ${why}`, { cause, timedOut });
  } finally {
    answer.done();
  }
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new UnexpectedResponseError(
      `${operationId}: HTTP ${answer.response.status} body is not JSON`,
      answer.response.status,
      answer.response.headers.get(REQUEST_ID_HEADER),
    );
  }
}
