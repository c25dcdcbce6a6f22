/** Scope export and import bodies: JSON Lines streamed both ways. */

import { REQUEST_ID_HEADER, TransportError } from "./errors.js";

/**
 * A Scope export being received: iterate it for its lines (each one JSON object, without the line
 * break), or read `body` for the bytes as sent (to write them to a file or pass to `importScope`).
 * A stream the server could not finish breaks off with a `TransportError`.
 */
export class ScopeExport implements AsyncIterable<string> {
  readonly requestId: string | null;

  constructor(
    readonly body: ReadableStream<Uint8Array>,
    response: Response,
  ) {
    this.requestId = response.headers.get(REQUEST_ID_HEADER);
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<string> {
    const decoder = new TextDecoder("utf-8", { fatal: true });
    let pending = "";
    try {
      for await (const bytes of this.body) {
        const parts = (pending + decoder.decode(bytes, { stream: true })).split("\n");
        pending = parts.pop() ?? "";
        yield* parts;
      }
    } catch (cause) {
      throw new TransportError(`export_scope: the stream broke off: ${String(cause)}`, { cause });
    }
    pending += decoder.decode();
    if (pending) yield pending;
  }
}

/** What `importScope` sends: an export as text, bytes, a byte stream, chunks, or a `ScopeExport`. */
export type ImportSource =
  | string
  | Uint8Array
  | ReadableStream<Uint8Array>
  | AsyncIterable<string | Uint8Array>
  | ScopeExport;

/** The request body for `source`: fixed bytes as they are, anything else as a stream. */
export function importBody(source: ImportSource): Uint8Array | ReadableStream<Uint8Array> {
  if (source instanceof ScopeExport) return source.body;
  if (typeof source === "string") return new TextEncoder().encode(source);
  if (source instanceof Uint8Array || source instanceof ReadableStream) return source;
  const encoder = new TextEncoder();
  const chunks = source[Symbol.asyncIterator]();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { value, done } = await chunks.next();
      if (done) controller.close();
      else controller.enqueue(typeof value === "string" ? encoder.encode(value) : value);
    },
    async cancel(reason) {
      await chunks.return?.(reason);
    },
  });
}
