// The strict check a host runs on a prepare answer before injecting it, on real answers.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { InvalidPreparedContextError, PowerContextClient, validatePreparedContext } from "../dist/index.js";
import { startServer } from "./support.mjs";

const SCOPE = "project:ts-validate";
let server;
let ready;
let empty;

before(async () => {
  server = await startServer();
  const pc = new PowerContextClient(server.url);
  await pc.createScope({ scope_id: SCOPE });
  empty = await pc.prepareContext({ scope_id: SCOPE, query: "anything stored yet?" });
  await pc.remember({ scope_id: SCOPE, text: "The host checks the answer — every byte — before injecting it." });
  ready = await pc.prepareContext({ scope_id: SCOPE, query: "what does the host check?", max_bytes: 2000 });
});
after(() => server?.stop());

test("a real ready answer passes and gives its content; an empty one gives null", () => {
  assert.equal(ready.status, "ready");
  assert.deepEqual(validatePreparedContext(ready, { maxBytes: 2000 }), { content: ready.content, contentBytes: ready.content_bytes });
  assert.equal(validatePreparedContext(empty, { maxBytes: 2000 }), null);
});

test("a wrong schema id is refused", () => {
  assert.throws(() => validatePreparedContext({ ...ready, schema: "powercontext.prepared-context.v2" }, { maxBytes: 2000 }), InvalidPreparedContextError);
});

test("a content_bytes that is not the UTF-8 length is refused", () => {
  // The content has non-ASCII text: its UTF-16 length is not its byte count.
  assert.notEqual(ready.content.length, ready.content_bytes);
  for (const contentBytes of [ready.content.length, ready.content_bytes + 1, String(ready.content_bytes)]) {
    assert.throws(() => validatePreparedContext({ ...ready, content_bytes: contentBytes }, { maxBytes: 2000 }), InvalidPreparedContextError);
  }
});

test("an answer over the host's cap is refused", () => {
  assert.throws(() => validatePreparedContext(ready, { maxBytes: ready.content_bytes - 1 }), /over the host's cap/);
  assert.ok(validatePreparedContext(ready, { maxBytes: ready.content_bytes }));
});

test("extra or missing keys, a wrong status and a blank content are refused", () => {
  const bad = [
    { ...ready, extra: 1 },
    { schema: ready.schema, status: ready.status, content: ready.content },
    { ...ready, status: "partial" },
    { ...ready, content: "   ", content_bytes: 3 },
    { ...empty, content_bytes: 1 },
    [ready],
    null,
  ];
  for (const payload of bad) {
    assert.throws(() => validatePreparedContext(payload, { maxBytes: 2000 }), InvalidPreparedContextError);
  }
});
