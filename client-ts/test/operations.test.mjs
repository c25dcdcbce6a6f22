// Every operation of the contract through the client, against a real server; errors as typed classes;
// prepare's content byte for byte what the Python client gets.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import {
  ConflictError,
  InvalidRequestError,
  NotFoundError,
  OPERATIONS,
  PowerContextClient,
  PowerContextHTTPError,
  ScopeExport,
} from "../dist/index.js";
import { VENV_BIN, recordingFetch, run, specOperationIds, startServer } from "./support.mjs";

const SCOPE = "project:ts-client";
const COPY = "project:ts-copy";
const QUERY = "how do I validate an API change?";
let server;
let pc;
const seen = new Set();

before(async () => {
  server = await startServer();
  pc = new PowerContextClient(server.url, { fetch: recordingFetch(OPERATIONS, seen), retry: { retries: 0 } });
});
after(() => server?.stop());

test("the operation table is the spec's", () => {
  assert.deepEqual(Object.keys(OPERATIONS).sort(), specOperationIds());
});

test("every operation answers through its method", async () => {
  assert.equal((await pc.healthLive()).status, "ok");
  assert.equal((await pc.healthReady()).status, "ok");
  assert.ok((await pc.getCapabilities()).api_version);

  const created = await pc.createScope({ scope_id: SCOPE, title: "TS client" });
  assert.equal(created.version, 1);
  assert.equal((await pc.createScope({ scope_id: SCOPE }, { existOk: true })).title, "TS client");
  assert.equal((await pc.getScope(SCOPE)).scope_id, SCOPE);
  assert.ok((await pc.getScopeGrants(SCOPE)).actions.includes("scope.read"));
  assert.deepEqual((await pc.listScopes({ limit: 10 })).scopes.map((s) => s.scope_id), [SCOPE]);
  assert.equal((await pc.updateScope(SCOPE, { expected_version: 1, summary: "Über the API" })).version, 2);

  const entry = await pc.remember({ scope_id: SCOPE, text: "Run make contract-test after changing the API — always." });
  const batch = await pc.rememberBatch({ scope_id: SCOPE, entries: [{ text: "Regenerate with make api-generate." }, { text: "Déjà vu: the check fails on drift." }] });
  assert.equal(batch.citations.length, 2);
  const revised = await pc.reviseMemoryEntry({ scope_id: SCOPE, citation: batch.citations[0], text: "Regenerate with make api-generate, then commit." });
  assert.equal((await pc.getMemoryEntry({ scope_id: SCOPE, citation: revised.citation })).text, revised.text);
  assert.deepEqual((await pc.getMemoryEntryHistory({ scope_id: SCOPE, entry_id: revised.citation.entry_id })).versions.at(-1).citation, revised.citation);
  assert.equal((await pc.retireMemoryEntry({ scope_id: SCOPE, citation: batch.citations[1] })).state, "retired");
  assert.ok((await pc.listMemoryEntries({ scope_id: SCOPE, limit: 50 })).entries.length >= 2);
  assert.ok((await pc.searchMemory({ scope_id: SCOPE, query: "contract-test" })).hits.length >= 1);

  const prepared = await pc.prepareContext({ scope_id: SCOPE, query: QUERY, max_bytes: 2000 });
  assert.equal(prepared.status, "ready");
  const explained = await pc.explainPrepareContext({ scope_id: SCOPE, query: QUERY, max_bytes: 2000 });
  assert.equal(explained.content, prepared.content);
  assert.ok(explained.items.length >= 1);

  const experience = await pc.proposeExperience({ scope_id: SCOPE, situation: "The spec changed.", action: "Ran make api-generate.", outcome: "The check passed.", lesson: "Regenerate after every spec change." });
  const approved = await pc.approveCandidate({ scope_id: SCOPE, candidate_id: experience.candidate_id, expected_version: experience.version });
  assert.equal(approved.state, "approved");
  const ref = approved.committed;
  assert.equal((await pc.getExperience({ scope_id: SCOPE, artifact: ref })).lesson, "Regenerate after every spec change.");
  assert.ok((await pc.searchExperience({ scope_id: SCOPE, query: "spec change" })).hits.length >= 1);
  const revision = await pc.getArtifactRevision({ scope_id: SCOPE, family: ref.family, artifact_id: ref.artifact_id, revision: ref.revision });
  assert.equal(revision.artifact.artifact_id, ref.artifact_id);

  const profile = await pc.proposeProfile({ scope_id: SCOPE, content: "Prefers small commits." });
  assert.equal((await pc.getCandidate({ scope_id: SCOPE, candidate_id: profile.candidate_id })).state, "pending");
  assert.equal((await pc.listCandidates({ scope_id: SCOPE, state: "pending" })).candidates.length, 1);
  assert.equal((await pc.rejectCandidate({ scope_id: SCOPE, candidate_id: profile.candidate_id, expected_version: profile.version })).state, "rejected");
  await assert.rejects(pc.getProfile({ scope_id: SCOPE }), NotFoundError);

  const topic = await pc.putTopic({ scope_id: SCOPE, title: "API changes", summary: "Contract first." });
  assert.equal((await pc.getTopic({ scope_id: SCOPE, artifact: topic.artifact })).summary, "Contract first.");
  assert.ok((await pc.searchTopics({ scope_id: SCOPE, query: "contract" })).hits.length >= 1);

  const exported = await pc.exportScope(SCOPE);
  assert.ok(exported instanceof ScopeExport);
  const lines = [];
  for await (const line of exported) lines.push(line);
  assert.equal(JSON.parse(lines[0]).format, "powercontext.scope-export");
  assert.equal(JSON.parse(lines[1]).scope_id, SCOPE);
  const imported = await pc.importScope(COPY, lines.map((l) => `${l}\n`).join(""));
  assert.equal(imported.scope_id, COPY);
  const copied = await pc.getMemoryEntry({ scope_id: COPY, citation: entry.citation });
  assert.equal(copied.text, entry.text);

  assert.equal((await pc.eraseMemoryEntry({ scope_id: SCOPE, entry_id: entry.citation.entry_id })).entry_id, entry.citation.entry_id);
  assert.equal((await pc.deleteScope(COPY)).scope_id, COPY);
  await assert.rejects(pc.getScope(COPY), NotFoundError);
});

test("an import streams its body from an export's bytes", async () => {
  const exported = await pc.exportScope(SCOPE);
  const imported = await pc.importScope("project:ts-streamed", exported);
  assert.equal(imported.scope_id, "project:ts-streamed");
  assert.equal((await pc.getScope("project:ts-streamed")).summary, "Über the API");
});

test("every operation of the spec was called", () => {
  assert.deepEqual([...seen].sort(), specOperationIds());
});

test("errors arrive as typed classes with the envelope's code and the request id", async () => {
  const missing = await pc.getScope("project:nowhere").catch((e) => e);
  assert.ok(missing instanceof NotFoundError && missing instanceof PowerContextHTTPError);
  assert.equal(missing.status, 404);
  assert.equal(missing.code, "scope_not_found");
  assert.match(missing.requestId, /^[0-9a-f]{32}$/);
  const invalid = await pc.prepareContext({ scope_id: SCOPE, query: QUERY, max_bytes: 0 }).catch((e) => e);
  assert.ok(invalid instanceof InvalidRequestError);
  assert.equal(invalid.code, "invalid_request");
  assert.ok(Array.isArray(invalid.details.errors));
  const taken = await pc.createScope({ scope_id: SCOPE }).catch((e) => e);
  assert.ok(taken instanceof ConflictError);
  assert.equal(taken.code, "scope_exists");
  const refused = await pc.importScope(SCOPE, "{}\n").catch((e) => e);
  assert.ok(refused instanceof PowerContextHTTPError);
  assert.ok(["invalid_export", "scope_exists"].includes(refused.code));
});

test("prepare's content is byte for byte what the Python client gets", async () => {
  const body = { scope_id: SCOPE, query: QUERY, max_bytes: 1500, assembly: {} };
  const prepared = await pc.prepareContext(body);
  const script = [
    "import json, sys",
    "from powercontext_client import PowerContextClient",
    "url, body = sys.argv[1], json.loads(sys.argv[2])",
    "with PowerContextClient(url) as pc:",
    "    answer = pc.prepare_context(body['scope_id'], body['query'], max_bytes=body['max_bytes'], assembly=body['assembly'])",
    "sys.stdout.buffer.write(answer.content.encode('utf-8'))",
  ].join("\n");
  const { stdout } = await run(`${VENV_BIN}/python`, ["-c", script, server.url, JSON.stringify(body)], { encoding: "buffer" });
  assert.ok(stdout.length > 0);
  assert.ok(Buffer.from(prepared.content, "utf-8").equals(stdout));
  assert.equal(prepared.content_bytes, stdout.length);
});
