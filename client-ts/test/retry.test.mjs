// Retries through a loopback fault server: it answers 503 a given number of times, then passes
// requests on to the real server. Reads are sent again; a non-idempotent write is not.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { after, before, test } from "node:test";
import { ConflictError, PowerContextClient, TransportError, UnavailableError } from "../dist/index.js";
import { freePort, startServer } from "./support.mjs";

const SCOPE = "project:ts-retry";
let server;
let direct;

before(async () => {
  server = await startServer();
  direct = new PowerContextClient(server.url);
  await direct.createScope({ scope_id: SCOPE });
  await direct.remember({ scope_id: SCOPE, text: "Retries repeat reads, never a remember." });
});
after(() => server?.stop());

/** A proxy to the server that first answers `faults` requests with 503; counts what reached it. */
async function faultServer(faults, retryAfter, retry = {}) {
  const seen = [];
  const proxy = createServer(async (req, res) => {
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    seen.push(`${req.method} ${req.url}`);
    if (faults-- > 0) {
      const headers = { "Content-Type": "application/json", "X-PowerContext-Request-ID": "f".repeat(32) };
      if (retryAfter !== undefined) headers["Retry-After"] = retryAfter;
      res.writeHead(503, headers);
      res.end(JSON.stringify({ error: { code: "retrieval_unavailable", message: "injected", details: {} } }));
      return;
    }
    const body = chunks.length ? Buffer.concat(chunks) : undefined;
    const headers = { ...req.headers };
    delete headers.host;
    delete headers["content-length"];
    const answer = await fetch(`${server.url}${req.url}`, { method: req.method, headers, body });
    res.writeHead(answer.status, Object.fromEntries(answer.headers));
    res.end(Buffer.from(await answer.arrayBuffer()));
  });
  const port = await freePort();
  await new Promise((r) => proxy.listen(port, "127.0.0.1", r));
  const client = new PowerContextClient(`http://127.0.0.1:${port}`, { retry: { retries: 3, backoff: 0.01, ...retry } });
  return { client, seen, close: () => new Promise((r) => proxy.close(r)) };
}

test("a 503 on prepare is retried, and the answer is the server's", async () => {
  const fault = await faultServer(2);
  try {
    const body = { scope_id: SCOPE, query: "what do retries repeat?" };
    const prepared = await fault.client.prepareContext(body);
    assert.deepEqual(prepared, await direct.prepareContext(body));
    assert.deepEqual(fault.seen, Array(3).fill("POST /v1/context/prepare"));
  } finally {
    await fault.close();
  }
});

test("a 503's Retry-After is honoured within the cap, and retries stop after `retries`", async () => {
  const fault = await faultServer(10, "0");
  try {
    const error = await fault.client.getScope(SCOPE).catch((e) => e);
    assert.ok(error instanceof UnavailableError);
    assert.equal(error.code, "retrieval_unavailable");
    assert.equal(error.requestId, "f".repeat(32));
    assert.equal(fault.seen.length, 4);
  } finally {
    await fault.close();
  }
});

test("a non-idempotent write is sent once", async () => {
  const fault = await faultServer(2);
  try {
    const before = (await direct.listMemoryEntries({ scope_id: SCOPE })).entries.length;
    await assert.rejects(fault.client.remember({ scope_id: SCOPE, text: "Sent once." }), UnavailableError);
    await assert.rejects(fault.client.createScope({ scope_id: "project:ts-once" }), UnavailableError);
    assert.deepEqual(fault.seen, ["POST /v1/memory/remember", "POST /v1/scopes"]);
    assert.equal((await direct.listMemoryEntries({ scope_id: SCOPE })).entries.length, before);
  } finally {
    await fault.close();
  }
});

test("idempotent writes are retried: PUT, DELETE, createScope with existOk", async () => {
  const fault = await faultServer(1);
  try {
    const scope = await fault.client.createScope({ scope_id: SCOPE }, { existOk: true });
    assert.equal(scope.scope_id, SCOPE);
    assert.deepEqual(fault.seen.slice(0, 3), ["POST /v1/scopes", "POST /v1/scopes", `GET /v1/scopes/${encodeURIComponent(SCOPE)}`]);
  } finally {
    await fault.close();
  }
  const put = await faultServer(1);
  try {
    const { version } = await direct.getScope(SCOPE);
    assert.equal((await put.client.updateScope(SCOPE, { expected_version: version, title: "Retried" })).title, "Retried");
    assert.equal(put.seen.length, 2);
    await assert.rejects(put.client.updateScope(SCOPE, { expected_version: version, title: "Stale" }), ConflictError);
  } finally {
    await put.close();
  }
  await direct.createScope({ scope_id: "project:ts-gone" });
  const del = await faultServer(1);
  try {
    assert.equal((await del.client.deleteScope("project:ts-gone")).scope_id, "project:ts-gone");
    assert.equal(del.seen.length, 2);
  } finally {
    await del.close();
  }
});

test("an export is sent once, as the Python client sends it", async () => {
  const fault = await faultServer(1);
  try {
    await assert.rejects(fault.client.exportScope(SCOPE), UnavailableError);
    assert.equal(fault.seen.length, 1);
  } finally {
    await fault.close();
  }
});

test("retries: 0 sends a read once", async () => {
  const fault = await faultServer(1, undefined, { retries: 0 });
  try {
    await assert.rejects(fault.client.getScope(SCOPE), UnavailableError);
    assert.equal(fault.seen.length, 1);
  } finally {
    await fault.close();
  }
});

test("a refused connection is a TransportError after the retries; a silent server times out", async () => {
  const closed = await freePort();
  const refused = new PowerContextClient(`http://127.0.0.1:${closed}`, { retry: { backoff: 0.01 } });
  const error = await refused.healthLive().catch((e) => e);
  assert.ok(error instanceof TransportError);
  assert.equal(error.timedOut, false);

  const silent = createServer(() => {}); // accepts, never answers
  const port = await freePort();
  await new Promise((r) => silent.listen(port, "127.0.0.1", r));
  try {
    const slow = new PowerContextClient(`http://127.0.0.1:${port}`, { timeoutMs: 200 });
    const timeout = await slow.healthLive().catch((e) => e);
    assert.ok(timeout instanceof TransportError);
    assert.equal(timeout.timedOut, true);
  } finally {
    silent.closeAllConnections();
    await new Promise((r) => silent.close(r));
  }
});
