// The prepare preview page. It reads the served contract (/openapi.json) for the families, limits
// and max_bytes bounds instead of restating them, and asks POST /v1/context/prepare/explain, whose
// content is byte-identical to prepare's. Untrusted text is only ever set as textContent.
import { call, contractSchemas, describe, fillScopes, scopeIds, serverFields } from "./api.js";

const state = { token: "", schemas: null };

const $ = (id) => document.getElementById(id);

function say(text, isError) {
  const status = $("status");
  status.textContent = text;
  status.className = isError ? "error" : "";
}

function sectionSchema(family) {
  const mapping = state.schemas.AssemblySection.discriminator.mapping;
  return state.schemas[mapping[family].split("/").pop()];
}

function addSectionRow(family, used, limit) {
  const limitSchema = sectionSchema(family).properties.limit;
  const row = document.createElement("tr");
  row.dataset.family = family;
  const use = document.createElement("input");
  use.type = "checkbox";
  use.checked = used;
  use.className = "use";
  use.setAttribute("aria-label", `use ${family}`);
  const name = document.createElement("code");
  name.textContent = family;
  const count = document.createElement("input");
  count.type = "number";
  count.className = "limit";
  count.min = limitSchema.minimum;
  count.max = limitSchema.maximum;
  count.value = Math.min(limit, limitSchema.maximum);
  count.setAttribute("aria-label", `${family} limit`);
  const up = document.createElement("button");
  up.type = "button";
  up.textContent = "↑";
  up.setAttribute("aria-label", `move ${family} up`);
  up.addEventListener("click", () => {
    if (row.previousElementSibling) row.parentNode.insertBefore(row, row.previousElementSibling);
  });
  const down = document.createElement("button");
  down.type = "button";
  down.textContent = "↓";
  down.setAttribute("aria-label", `move ${family} down`);
  down.addEventListener("click", () => {
    if (row.nextElementSibling) row.parentNode.insertBefore(row.nextElementSibling, row);
  });
  for (const content of [[use], [name], [count], [up, down]]) {
    const cell = document.createElement("td");
    cell.append(...content);
    row.append(cell);
  }
  $("sections").tBodies[0].append(row);
}

async function loadContract() {
  try {
    state.schemas = await contractSchemas();
  } catch (error) {
    throw new Error(`the contract could not be read: ${describe(error)}`);
  }
  const maxBytes = state.schemas.PrepareContextRequest.properties.max_bytes;
  Object.assign($("max-bytes"), { min: maxBytes.minimum, max: maxBytes.maximum, value: maxBytes.default });
  const defaults = state.schemas.Assembly.properties.sections.default;
  const families = state.schemas.Family.enum;
  for (const section of defaults) addSectionRow(section.family, true, section.limit);
  for (const family of families) {
    if (!defaults.some((s) => s.family === family)) {
      addSectionRow(family, false, sectionSchema(family).properties.limit.maximum);
    }
  }
}

async function loadScopes() {
  state.token = $("token").value.trim();
  try {
    const ids = await scopeIds(state.token);
    fillScopes($("scope"), ids);
    say(ids.length ? `${ids.length} Scope(s).` : "No Scopes yet.", false);
  } catch (error) {
    say(`Scopes could not be listed: ${describe(error)}`, true);
  }
}

function requestBody() {
  const body = {
    scope_id: $("scope").value,
    query: $("query").value,
    max_bytes: Number($("max-bytes").value),
  };
  if ($("legacy").checked) return body;
  const sections = [];
  for (const row of $("sections").tBodies[0].rows) {
    if (row.querySelector(".use").checked) {
      sections.push({ family: row.dataset.family, limit: Number(row.querySelector(".limit").value) });
    }
  }
  const show = [];
  if ($("show-confidence").checked) show.push("confidence");
  if ($("show-recall-rank").checked) show.push("recall_rank");
  body.assembly = { sections, show };
  return body;
}

function cell(text, numeric) {
  const td = document.createElement("td");
  td.textContent = text;
  if (numeric) td.className = "number";
  return td;
}

function showExplanation(explained) {
  $("result").hidden = false;
  $("content").textContent = explained.content === null ? "" : explained.content;
  $("content-bytes").textContent = `(${explained.status}, ${explained.content_bytes} bytes)`;
  const rows = explained.items.map((item) => {
    const tr = document.createElement("tr");
    tr.className = item.included ? "included" : "left-out";
    const result = item.included ? (item.truncated ? "included, truncated" : "included") : `left out: ${item.reason}`;
    tr.append(
      cell(item.family),
      cell(item.recall_rank === null ? "-" : String(item.recall_rank), true),
      cell(item.scope_id),
      cell(item.artifact_id),
      cell(String(item.revision), true),
      cell(item.entry_version_id || "-"),
      cell(String(item.bytes), true),
      cell(String(item.body_bytes), true),
      cell(result),
    );
    return tr;
  });
  $("receipt").tBodies[0].replaceChildren(...rows);
}

async function prepare(event) {
  event.preventDefault();
  state.token = $("token").value.trim();
  say("Preparing…", false);
  let explained;
  try {
    explained = await call(state.token, "POST", "/v1/context/prepare/explain", requestBody());
  } catch (error) {
    say(`Prepare failed: ${describe(error)}`, true);
    return;
  }
  showExplanation(explained);
  const included = explained.items.filter((item) => item.included).length;
  say(`Prepared: ${explained.content_bytes} bytes, ${included} of ${explained.items.length} candidates included.`, false);
}

document.addEventListener("DOMContentLoaded", async () => {
  serverFields($("server-fields"));
  $("legacy").addEventListener("change", () => { $("assembly").disabled = $("legacy").checked; });
  $("load-scopes").addEventListener("click", loadScopes);
  $("request").addEventListener("submit", (event) => {
    prepare(event).catch((error) => say(`Prepare failed: ${error.message}`, true));
  });
  try {
    await loadContract();
    await loadScopes();
    document.body.dataset.ready = "true";
  } catch (error) {
    say(error.message, true);
  }
});
