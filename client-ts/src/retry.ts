/**
 * When a request is sent again, and after how long: the Python client's rule.
 *
 * A request is repeated after a failed connection or a 503 only when a repeat cannot do more than
 * the first attempt may already have done: reads (every `public` and `scope.read` operation,
 * prepare included), PUT and DELETE (`updateScope`, `deleteScope`), and `createScope` with
 * `existOk`, where a repeat's 409 reads the existing Scope. `exportScope` is sent once, as the
 * Python client sends it. Every other write (remember, revise, propose, approve, importScope, ...)
 * is sent once: a lost answer may hide a
 * committed write, and sending it again could commit it twice. A timeout is not retried either:
 * the server may still be working on the request.
 *
 * The delay before repeat `n` (from 0) is `backoff * 2**n` seconds, or the 503's `Retry-After`
 * when it has one; never more than `maxDelay`.
 */

import { OPERATIONS, type OperationId } from "./generated/operations.js";

export interface RetryPolicy {
  /** Repeats at most; 0 sends each request once. */
  retries: number;
  /** Seconds before the first repeat, doubling each time. */
  backoff: number;
  /** The longest wait in seconds, whatever `Retry-After` says. */
  maxDelay: number;
}

export const DEFAULT_RETRY: Readonly<RetryPolicy> = Object.freeze({ retries: 3, backoff: 0.2, maxDelay: 5 });
export const RETRY_STATUS = 503;

const READ_ACCESS: ReadonlySet<string> = new Set(["public", "scope.read"]);
const IDEMPOTENT_METHODS: ReadonlySet<string> = new Set(["GET", "HEAD", "PUT", "DELETE"]);

/** A policy with every field checked: a whole number of repeats, finite non-negative seconds. */
export function retryPolicy(given: Partial<RetryPolicy> = {}): RetryPolicy {
  const policy = { ...DEFAULT_RETRY, ...given };
  if (!Number.isInteger(policy.retries) || policy.retries < 0) {
    throw new RangeError("retries must be a whole number, 0 or more");
  }
  for (const name of ["backoff", "maxDelay"] as const) {
    if (!Number.isFinite(policy[name]) || policy[name] < 0) {
      throw new RangeError(`${name} must be a finite number of seconds, 0 or more`);
    }
  }
  return policy;
}

/** Whether sending `operationId` again can do no more than sending it once. */
export function repeatable(operationId: OperationId, markedRepeatable = false): boolean {
  const { access, method } = OPERATIONS[operationId];
  return markedRepeatable || READ_ACCESS.has(access) || IDEMPOTENT_METHODS.has(method);
}

/** Seconds to wait before repeat number `attempt` (from 0), after `response` when it was a 503. */
export function retryDelay(policy: RetryPolicy, attempt: number, response?: Response): number {
  const wait = response ? retryAfter(response) : null;
  return Math.min(wait ?? policy.backoff * 2 ** attempt, policy.maxDelay);
}

/** `Retry-After` in seconds (delta-seconds or an HTTP date), or null when absent or unreadable. */
function retryAfter(response: Response): number | null {
  const value = (response.headers.get("Retry-After") ?? "").trim();
  if (!value) return null;
  if (/^\d+$/.test(value)) return Number(value);
  const when = Date.parse(value);
  return Number.isNaN(when) ? null : Math.max(0, (when - Date.now()) / 1000);
}

export function sleep(seconds: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, seconds * 1000));
}
