/** `PowerContextClient`: one method per operation of `openapi/powercontext.yaml`. */

import createClient from "openapi-fetch";
import { ConflictError } from "./errors.js";
import type { OperationId } from "./generated/operations.js";
import type { paths } from "./generated/schema.js";
import { type RetryPolicy, retryPolicy } from "./retry.js";
import { type ImportSource, ScopeExport, importBody } from "./transfer.js";
import { type CallInit, type TransportOptions, readJson, send } from "./transport.js";
import type { Body, PathParams, QueryParams, Result } from "./types.js";

export interface ClientOptions {
  /** Sent as `Authorization: Bearer <token>`. */
  token?: string;
  /** Milliseconds each attempt may take until its answer is read (default 10,000). */
  timeoutMs?: number;
  /** Repeats of retryable calls after a 503 or failed connection (`retries: 0` turns them off). */
  retry?: Partial<RetryPolicy>;
  /** The `fetch` to send with (default: the global one). */
  fetch?: typeof globalThis.fetch;
}

const SCOPE_EXISTS = "scope_exists";

/**
 * A PowerContext API client. Every method returns the answer of its operation as the contract
 * types it; failures throw subclasses of `PowerContextError`.
 *
 * Reads (prepare included), `updateScope`, `deleteScope` and
 * `createScope(..., { existOk: true })` are sent again after a failed connection or a 503, up to
 * `retry.retries` times; other writes are sent once.
 */
export class PowerContextClient {
  readonly #transport: TransportOptions;

  constructor(baseUrl: string, options: ClientOptions = {}) {
    const timeoutMs = options.timeoutMs ?? 10_000;
    if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) throw new RangeError("timeoutMs must be a positive number");
    const headers: Record<string, string> = { Accept: "application/json" };
    if (options.token !== undefined) headers.Authorization = `Bearer ${options.token}`;
    const http = createClient<paths>({ baseUrl, headers, ...(options.fetch ? { fetch: options.fetch } : {}) });
    this.#transport = { http, timeoutMs, retry: retryPolicy(options.retry) };
  }

  async #json<K extends OperationId>(operationId: K, init: CallInit = {}): Promise<Result<K>> {
    return readJson<Result<K>>(operationId, await send(this.#transport, operationId, init));
  }

  // Service
  healthLive() {
    return this.#json("health_live");
  }
  healthReady() {
    return this.#json("health_ready");
  }
  getCapabilities() {
    return this.#json("get_capabilities");
  }

  // Scopes
  listScopes(query: QueryParams<"list_scopes"> = {}) {
    return this.#json("list_scopes", { params: { query } });
  }
  /** A taken id throws `ConflictError`, unless `existOk`: then it answers the existing Scope. */
  async createScope(body: Body<"create_scope">, options: { existOk?: boolean } = {}) {
    const existOk = options.existOk ?? false;
    try {
      return await this.#json("create_scope", { body, repeatable: existOk });
    } catch (error) {
      if (existOk && error instanceof ConflictError && error.code === SCOPE_EXISTS) return this.getScope(body.scope_id);
      throw error;
    }
  }
  getScope(scopeId: string) {
    return this.#json("get_scope", { params: { path: { scope_id: scopeId } } });
  }
  getScopeGrants(scopeId: string) {
    return this.#json("get_scope_grants", { params: { path: { scope_id: scopeId } } });
  }
  updateScope(scopeId: string, body: Body<"update_scope">) {
    return this.#json("update_scope", { params: { path: { scope_id: scopeId } }, body });
  }
  deleteScope(scopeId: string) {
    return this.#json("delete_scope", { params: { path: { scope_id: scopeId } } });
  }
  /** Resolves once the export starts (errors throw here); iterate the result for its lines. Sent once. */
  async exportScope(scopeId: string): Promise<ScopeExport> {
    const answer = await send(this.#transport, "export_scope", {
      params: { path: { scope_id: scopeId } },
      headers: { Accept: "application/x-ndjson, application/json" },
      once: true,
    });
    answer.done(); // the lines arrive as the server reads them: no timeout on the whole stream
    return new ScopeExport(answer.body ?? new Blob([]).stream(), answer.response);
  }
  /** Recreate a Scope under `scopeId` from an export; waits for the answer however long it takes. */
  importScope(scopeId: string, source: ImportSource) {
    return this.#json("import_scope", {
      params: { path: { scope_id: scopeId } },
      body: importBody(source),
      headers: { "Content-Type": "application/x-ndjson" },
      bodySerializer: (body) => body as BodyInit,
      patient: true,
    });
  }

  // Memory
  remember(body: Body<"remember">) {
    return this.#json("remember", { body });
  }
  rememberBatch(body: Body<"remember_batch">) {
    return this.#json("remember_batch", { body });
  }
  reviseMemoryEntry(body: Body<"revise_memory_entry">) {
    return this.#json("revise_memory_entry", { body });
  }
  retireMemoryEntry(body: Body<"retire_memory_entry">) {
    return this.#json("retire_memory_entry", { body });
  }
  getMemoryEntry(body: Body<"get_memory_entry">) {
    return this.#json("get_memory_entry", { body });
  }
  getMemoryEntryHistory(body: Body<"get_memory_entry_history">) {
    return this.#json("get_memory_entry_history", { body });
  }
  eraseMemoryEntry(body: Body<"erase_memory_entry">) {
    return this.#json("erase_memory_entry", { body });
  }
  listMemoryEntries(body: Body<"list_memory_entries">) {
    return this.#json("list_memory_entries", { body });
  }
  searchMemory(body: Body<"search_memory">) {
    return this.#json("search_memory", { body });
  }

  // Context
  /** The prepared text; run `validatePreparedContext` on it before injecting it. */
  prepareContext(body: Body<"prepare_context">) {
    return this.#json("prepare_context", { body });
  }
  explainPrepareContext(body: Body<"explain_prepare_context">) {
    return this.#json("explain_prepare_context", { body });
  }
  getArtifactRevision(path: PathParams<"get_artifact_revision">) {
    return this.#json("get_artifact_revision", { params: { path } });
  }

  // Experience, Profile, candidates, Topic Memory
  proposeExperience(body: Body<"propose_experience">) {
    return this.#json("propose_experience", { body });
  }
  searchExperience(body: Body<"search_experience">) {
    return this.#json("search_experience", { body });
  }
  getExperience(body: Body<"get_experience">) {
    return this.#json("get_experience", { body });
  }
  proposeProfile(body: Body<"propose_profile">) {
    return this.#json("propose_profile", { body });
  }
  getProfile(body: Body<"get_profile">) {
    return this.#json("get_profile", { body });
  }
  approveCandidate(body: Body<"approve_candidate">) {
    return this.#json("approve_candidate", { body });
  }
  rejectCandidate(body: Body<"reject_candidate">) {
    return this.#json("reject_candidate", { body });
  }
  listCandidates(body: Body<"list_candidates">) {
    return this.#json("list_candidates", { body });
  }
  getCandidate(body: Body<"get_candidate">) {
    return this.#json("get_candidate", { body });
  }
  putTopic(body: Body<"put_topic">) {
    return this.#json("put_topic", { body });
  }
  searchTopics(body: Body<"search_topics">) {
    return this.#json("search_topics", { body });
  }
  getTopic(body: Body<"get_topic">) {
    return this.#json("get_topic", { body });
  }
}
