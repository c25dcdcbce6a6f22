// Retries through a loopback fault server: it answers 503 a given number of times, then passes
// requests on to the real server. Reads are sent again; a non-idempotent write is not.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { after, before, test } from "node:test";
import {
  ConflictError,
  PowerContextClient,
  TransportError,
  UnavailableError,
  UnexpectedResponseError,
} from "../dist/index.js";
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

/**
 * Run `check` with a client behind a proxy to the server that first answers `faults` requests with
 * 503 (with `retryAfter` as its Retry-After when given); `seen` lists what reached the proxy.
 */
async function withFaults({ faults, retryAfter, retry = {} }, check) {
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
    const headers = { ...req.headers };
    delete headers.host;
    delete headers["content-length"];
    const body = chunks.length ? Buffer.concat(chunks) : undefined;
    const answer = await fetch(`${server.url}${req.url}`, { method: req.method, headers, body });
    res.writeHead(answer.status, Object.fromEntries(answer.headers));
    res.end(Buffer.from(await answer.arrayBuffer()));
  });
  const port = await freePort();
  await new Promise((r) => proxy.listen(port, "127.0.0.1", r));
  const client = new PowerContextClient(`http://127.0.0.1:${port}`, { retry: { retries: 3, backoff: 0.01, ...retry } });
  try {
    await check({ client, seen });
  } finally {
    await new Promise((r) => proxy.close(r));
  }
}

test("a 503 on prepare is retried, and the answer is the server's", () =>
  withFaults({ faults: 2 }, async ({ client, seen }) => {
    const body = { scope_id: SCOPE, query: "what do retries repeat?" };
    assert.deepEqual(await client.prepareContext(body), await direct.prepareContext(body));
    assert.deepEqual(seen, Array(3).fill("POST /v1/context/prepare"));
  }));

test("retries stop after `retries`; the 503's code and request id reach the caller", () =>
  withFaults({ faults: 10, retryAfter: "0" }, async ({ client, seen }) => {
    const error = await client.getScope(SCOPE).catch((e) => e);
    assert.ok(error instanceof UnavailableError);
    assert.equal(error.code, "retrieval_unavailable");
    assert.equal(error.requestId, "f".repeat(32));
    assert.equal(seen.length, 4);
  }));

test("a non-idempotent write is sent once", () =>
  withFaults({ faults: 2 }, async ({ client, seen }) => {
    const before = (await direct.listMemoryEntries({ scope_id: SCOPE })).entries.length;
    await assert.rejects(client.remember({ scope_id: SCOPE, text: "Sent once." }), UnavailableError);
    await assert.rejects(client.createScope({ scope_id: "project:ts-once" }), UnavailableError);
    assert.deepEqual(seen, ["POST /v1/memory/remember", "POST /v1/scopes"]);
    assert.equal((await direct.listMemoryEntries({ scope_id: SCOPE })).entries.length, before);
  }));

test("createScope with existOk is retried, and its 409 reads the Scope", () =>
  withFaults({ faults: 1 }, async ({ client, seen }) => {
    assert.equal((await client.createScope({ scope_id: SCOPE }, { existOk: true })).scope_id, SCOPE);
    assert.deepEqual(seen, ["POST /v1/scopes", "POST /v1/scopes", `GET /v1/scopes/${encodeURIComponent(SCOPE)}`]);
  }));

test("PUT and DELETE are retried", async () => {
  const { version } = await direct.getScope(SCOPE);
  await withFaults({ faults: 1 }, async ({ client, seen }) => {
    assert.equal((await client.updateScope(SCOPE, { expected_version: version, title: "Retried" })).title, "Retried");
    assert.equal(seen.length, 2);
    await assert.rejects(client.updateScope(SCOPE, { expected_version: version, title: "Stale" }), ConflictError);
  });
  await direct.createScope({ scope_id: "project:ts-gone" });
  await withFaults({ faults: 1 }, async ({ client, seen }) => {
    assert.equal((await client.deleteScope("project:ts-gone")).scope_id, "project:ts-gone");
    assert.equal(seen.length, 2);
  });
});

for (const [name, options, call] of [
  ["an export is sent once, as the Python client sends it", {}, (pc) => pc.exportScope(SCOPE)],
  ["retries: 0 sends a read once", { retries: 0 }, (pc) => pc.getScope(SCOPE)],
]) {
  test(name, () =>
    withFaults({ faults: 1, retry: options }, async ({ client, seen }) => {
      await assert.rejects(call(client), UnavailableError);
      assert.equal(seen.length, 1);
    }));
}

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

test("an export cut off mid-stream breaks off with TransportError; a success that is not JSON is unexpected", async () => {
  const broken = createServer((req, res) => {
    const export_ = req.url.endsWith("/export");
    res.writeHead(200, { "Content-Type": export_ ? "application/x-ndjson" : "text/html", "X-PowerContext-Request-ID": "e".repeat(32) });
    if (!export_) return res.end("<html>a proxy's page</html>");
    res.write('{"format":"powercontext.scope-export"}\n{"type":');
    setTimeout(() => res.socket.destroy(), 50);
  });
  const port = await freePort();
  await new Promise((r) => broken.listen(port, "127.0.0.1", r));
  try {
    const pc = new PowerContextClient(`http://127.0.0.1:${port}`);
    const lines = [];
    const cut = await (async () => {
      for await (const line of await pc.exportScope(SCOPE)) lines.push(line);
    })().catch((e) => e);
    assert.ok(cut instanceof TransportError);
    assert.deepEqual(lines, ['{"format":"powercontext.scope-export"}']);
    const unexpected = await pc.getScope(SCOPE).catch((e) => e);
    assert.ok(unexpected instanceof UnexpectedResponseError);
    assert.equal(unexpected.status, 200);
    assert.equal(unexpected.requestId, "e".repeat(32));
  } finally {
    await new Promise((r) => broken.close(r));
  }
});
