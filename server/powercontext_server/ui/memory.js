// The Memory page: pick a Scope, list and search its entries, read an entry's versions, revise,
// retire, set or clear its expiry, erase it, and review pending Candidates, all through the public
// API with the token typed into the page (kept in `state` only). Which controls it offers comes
// from the API: the token's actions on the Scope (get_scope_grants), and whether the served
// contract has `expires_at`.
import { call, contractSchemas, describe, fillScopes, scopeIds, serverFields } from "./api.js";
import { candidateCard, entryRow, experienceText, firstWords, historyRow } from "./memory_view.js";

const state = {
  token: "",
  scopeId: "",
  actions: new Set(),
  expiry: false, // the served contract has `expires_at` (and `include_expired` on list)
  entry: null,
  cursor: null,
};

const $ = (id) => document.getElementById(id);

function say(text, isError) {
  $("status").textContent = text;
  $("status").className = isError ? "error" : "";
}

function may(action) {
  return state.actions.has(action);
}

// Runs one page action; any failure is said with the API's code and message.
function guarded(what, action) {
  return async (event) => {
    if (event && event.preventDefault) event.preventDefault();
    try {
      await action();
    } catch (error) {
      say(`${what} failed: ${describe(error)}`, true);
    }
  };
}

async function loadScopes() {
  state.token = $("token").value.trim();
  const ids = await scopeIds(state.token);
  fillScopes($("scope"), ids);
  say(ids.length ? `${ids.length} Scope(s).` : "No Scopes you may read.", false);
}

async function openScope() {
  state.token = $("token").value.trim();
  const scopeId = $("scope").value;
  if (!scopeId) throw new Error("choose a Scope first");
  const path = `/v1/scopes/${encodeURIComponent(scopeId)}/grants`;
  const grants = await call(state.token, "GET", path);
  state.scopeId = scopeId;
  state.actions = new Set(grants.actions);
  state.entry = null;
  $("grants").textContent = `your actions: ${grants.actions.join(", ")}`;
  $("entry").hidden = true;
  $("memory").hidden = false;
  $("candidates").hidden = false;
  for (const element of document.querySelectorAll(".expiry")) element.hidden = !state.expiry;
  await listEntries(false);
  await loadCandidates();
  say(`Opened ${scopeId}.`, false);
}

async function listEntries(more) {
  const body = { scope_id: state.scopeId, limit: 50 };
  // Expired entries are never recalled, but they are what a person may want to fix or erase.
  if (state.expiry) body.include_expired = true;
  if (more && state.cursor) body.cursor = state.cursor;
  const page = await call(state.token, "POST", "/v1/memory/entries/list", body);
  showEntries(page.entries, more);
  state.cursor = page.next_cursor;
  $("more-entries").hidden = !page.next_cursor;
}

async function searchEntries() {
  const query = $("query").value;
  const found = await call(state.token, "POST", "/v1/memory/search", {
    scope_id: state.scopeId,
    query,
    limit: 50,
  });
  showEntries(found.hits, false);
  $("more-entries").hidden = true;
  say(`${found.hits.length} hit(s) for the search.`, false);
}

function showEntries(entries, append) {
  const rows = entries.map((entry) =>
    entryRow(entry, state.expiry, guarded("Opening the entry", () => openEntry(entry.citation.entry_id))),
  );
  const body = $("entries").tBodies[0];
  if (append) body.append(...rows);
  else body.replaceChildren(...rows);
}

async function openEntry(entryId) {
  const history = await call(state.token, "POST", "/v1/memory/entries/history", {
    scope_id: state.scopeId,
    entry_id: entryId,
  });
  const head = history.versions[history.versions.length - 1];
  state.entry = { entryId, citation: head.citation, text: head.text, state: history.state };
  $("entry-id").textContent = entryId;
  $("entry-state").textContent = `(${history.kind}, ${history.state})`;
  $("history").tBodies[0].replaceChildren(...history.versions.map((v) => historyRow(v, state.expiry)));
  $("revise-text").value = head.text;
  // The store writes `2026-01-31T12:00:00.000000+00:00`; the field takes its first 19 characters.
  $("expires-at").value = head.expires_at ? head.expires_at.slice(0, 19) : "";
  const active = history.state === "active";
  $("write-controls").hidden = !(active && may("scope.write"));
  $("expiry-controls").hidden = !(active && state.expiry && may("scope.write"));
  $("erase-controls").hidden = !may("scope.erase");
  $("entry").hidden = false;
}

// Revise with the head citation the page read: if the entry moved on since, the API answers 409.
async function revise(fields, done) {
  const body = { scope_id: state.scopeId, citation: state.entry.citation, text: state.entry.text, ...fields };
  const revised = await call(state.token, "POST", "/v1/memory/entries/revise", body);
  await refreshAfter(revised.citation.entry_id, `${done}: ${revised.citation.entry_version_id}.`);
}

async function retire() {
  const body = { scope_id: state.scopeId, citation: state.entry.citation };
  const retired = await call(state.token, "POST", "/v1/memory/entries/retire", body);
  await refreshAfter(retired.citation.entry_id, `Retired ${retired.citation.entry_id}.`);
}

function expiryValue() {
  const value = $("expires-at").value;
  if (!value) throw new Error("choose the instant it expires");
  // datetime-local has no zone; the page means UTC, as the label says.
  return (value.length === 16 ? value + ":00" : value) + "Z";
}

function askToErase() {
  $("erase-entry-id").textContent = state.entry.entryId;
  $("erase-words").textContent = firstWords(state.entry.text);
  $("confirm-erase").showModal();
}

async function erase() {
  $("confirm-erase").close();
  const body = { scope_id: state.scopeId, entry_id: state.entry.entryId };
  const erased = await call(state.token, "POST", "/v1/memory/entries/erase", body);
  state.entry = null;
  $("entry").hidden = true;
  await listEntries(false);
  say(`Erased ${erased.entry_id}: ${erased.versions} version(s).`, false);
}

async function refreshAfter(entryId, message) {
  await listEntries(false);
  await openEntry(entryId);
  say(message, false);
}

async function loadCandidates() {
  const listed = await call(state.token, "POST", "/v1/candidates/list", {
    scope_id: state.scopeId,
    state: "pending",
    limit: 200,
  });
  const cards = [];
  for (const candidate of listed.candidates) {
    const decide = may("scope.review")
      ? (approve) => guarded(approve ? "Approval" : "Rejection", () => decideCandidate(candidate, approve))()
      : null;
    cards.push(candidateCard(candidate, await currentText(candidate), decide));
  }
  $("candidate-list").replaceChildren(...cards);
  $("no-candidates").hidden = cards.length > 0;
}

// The text of the revision a Candidate was proposed against ("" when it proposes the first one).
async function currentText(candidate) {
  if (candidate.target_artifact_id === null || candidate.base_revision === 0) return "";
  const path =
    `/v1/scopes/${encodeURIComponent(state.scopeId)}/artifacts/${candidate.family}/` +
    `${encodeURIComponent(candidate.target_artifact_id)}/revisions/${candidate.base_revision}`;
  const revision = await call(state.token, "GET", path);
  return candidate.family === "profile" ? revision.profile : experienceText(revision.experience);
}

async function decideCandidate(candidate, approve) {
  const body = { scope_id: state.scopeId, candidate_id: candidate.candidate_id, expected_version: candidate.version };
  const decided = await call(state.token, "POST", approve ? "/v1/candidates/approve" : "/v1/candidates/reject", body);
  await loadCandidates();
  say(`${decided.candidate_id} ${decided.state}.`, false);
}

document.addEventListener("DOMContentLoaded", async () => {
  serverFields($("server-fields"));
  $("load-scopes").addEventListener("click", guarded("Listing Scopes", loadScopes));
  $("server").addEventListener("submit", guarded("Listing Scopes", loadScopes)); // Enter in the token field
  $("open-scope").addEventListener("click", guarded("Opening the Scope", openScope));
  $("search").addEventListener("submit", guarded("Search", searchEntries));
  $("list-all").addEventListener("click", guarded("Listing", () => listEntries(false)));
  $("more-entries").addEventListener("click", guarded("Listing", () => listEntries(true)));
  $("revise").addEventListener("click", guarded("Revision", () => revise({ text: $("revise-text").value }, "Revised")));
  $("retire").addEventListener("click", guarded("Retiring", retire));
  $("set-expiry").addEventListener("click", guarded("Setting the expiry", () => revise({ expires_at: expiryValue() }, "Expiry set")));
  $("clear-expiry").addEventListener("click", guarded("Clearing the expiry", () => revise({ expires_at: null }, "Expiry cleared")));
  $("erase").addEventListener("click", askToErase);
  $("erase-cancel").addEventListener("click", () => $("confirm-erase").close());
  $("erase-confirm").addEventListener("click", guarded("Erasure", erase));
  try {
    const schemas = await contractSchemas();
    state.expiry =
      "expires_at" in schemas.ReviseEntryRequest.properties && "include_expired" in schemas.ListEntriesRequest.properties;
    await loadScopes();
  } catch (error) {
    say(describe(error), true);
  }
  document.body.dataset.ready = "true";
});
