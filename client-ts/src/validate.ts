/** `validatePreparedContext`: the checks a host runs on a prepare answer before injecting it. */

import { InvalidPreparedContextError } from "./errors.js";
import type { components } from "./generated/schema.js";

type PreparedContext = components["schemas"]["PreparedContext"];

/** The only schema id of a prepare answer (typed by the contract, so a new id fails to compile). */
export const PREPARED_CONTEXT_SCHEMA: PreparedContext["schema"] = "powercontext.prepared-context.v1";
const KEYS = ["content", "content_bytes", "schema", "status"];

/** A `ready` answer that passed every check: inject `content` as it is. */
export interface ValidatedContext {
  content: string;
  contentBytes: number;
}

/**
 * Check a prepare answer against the contract and the host's own byte cap.
 *
 * Returns the content of a `ready` answer, null for an `empty` one, and throws
 * `InvalidPreparedContextError` when any of these fails: the keys are exactly `schema`, `status`,
 * `content`, `content_bytes`; `schema` is `powercontext.prepared-context.v1`; `status` is `ready`
 * with a non-blank string `content`, or `empty` with `content` null and `content_bytes` 0;
 * `content_bytes` is an integer equal to the UTF-8 length of `content`; `content_bytes` is at most
 * `maxBytes`, the host's cap (not necessarily what it asked for).
 */
export function validatePreparedContext(payload: unknown, options: { maxBytes: number }): ValidatedContext | null {
  const { maxBytes } = options;
  if (!Number.isInteger(maxBytes) || maxBytes < 0) {
    throw new RangeError(`maxBytes must be a non-negative integer, not ${String(maxBytes)}`);
  }
  if (typeof payload !== "object" || payload === null || Array.isArray(payload)) {
    throw new InvalidPreparedContextError(`the answer is ${Array.isArray(payload) ? "an array" : typeof payload}, not a JSON object`);
  }
  const keys = Object.keys(payload).sort();
  if (keys.join() !== KEYS.join()) {
    throw new InvalidPreparedContextError(
      `the answer must have exactly the keys ${KEYS.join(", ")}; got ${keys.join(", ") || "none"}`,
    );
  }
  const { schema, status, content, content_bytes: contentBytes } = payload as Record<string, unknown>;
  if (schema !== PREPARED_CONTEXT_SCHEMA) {
    throw new InvalidPreparedContextError(`schema is ${JSON.stringify(schema)}, not "${PREPARED_CONTEXT_SCHEMA}"`);
  }
  if (typeof contentBytes !== "number" || !Number.isInteger(contentBytes)) {
    throw new InvalidPreparedContextError(`content_bytes is ${JSON.stringify(contentBytes)}, not an integer`);
  }
  if (status === "empty") {
    if (content !== null || contentBytes !== 0) {
      throw new InvalidPreparedContextError("an empty answer must have content null and content_bytes 0");
    }
    return null;
  }
  if (status !== "ready") {
    throw new InvalidPreparedContextError(`status is ${JSON.stringify(status)}, not "ready" or "empty"`);
  }
  if (typeof content !== "string" || !content.trim()) {
    throw new InvalidPreparedContextError("a ready answer must have a non-blank string content");
  }
  if (!content.isWellFormed()) {
    throw new InvalidPreparedContextError("content is not encodable as UTF-8");
  }
  const actual = new TextEncoder().encode(content).length;
  if (contentBytes !== actual) {
    throw new InvalidPreparedContextError(`content_bytes is ${contentBytes} but content is ${actual} bytes of UTF-8`);
  }
  if (contentBytes > maxBytes) {
    throw new InvalidPreparedContextError(`content is ${contentBytes} bytes, over the host's cap of ${maxBytes}`);
  }
  return { content, contentBytes };
}
