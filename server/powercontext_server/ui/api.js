// The pages' one way to the public API: JSON in and out, the typed token (held by the caller, in
// page memory only) as a bearer credential, and an error answer as an ApiError carrying the API's
// error code and message.

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

export async function call(token, method, path, body) {
  const headers = {};
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (token) headers["Authorization"] = "Bearer " + token;
  const response = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (response.ok) return response.json();
  let error = null;
  try {
    error = (await response.json()).error;
  } catch (_) { /* not JSON */ }
  throw error
    ? new ApiError(response.status, error.code, error.message)
    : new ApiError(response.status, "http_error", response.statusText);
}

// "409 revision_conflict: …" for an API error; a stale expected version says so.
export function describe(error) {
  if (!(error instanceof ApiError)) return error.message;
  const text = `${error.status} ${error.code}: ${error.message}`;
  return error.status === 409 ? `${text} (stale: it changed since this page read it; reload and retry)` : text;
}

// Every Scope the token may read, in id order.
export async function scopeIds(token) {
  const ids = [];
  let cursor = null;
  do {
    const query = "/v1/scopes?limit=200" + (cursor ? "&cursor=" + encodeURIComponent(cursor) : "");
    const page = await call(token, "GET", query);
    ids.push(...page.scopes.map((s) => s.scope_id));
    cursor = page.next_cursor;
  } while (cursor);
  return ids;
}

export function fillScopes(select, ids) {
  const chosen = select.value;
  select.replaceChildren(...ids.map((id) => new Option(id, id, false, id === chosen)));
}

export async function contractSchemas() {
  return (await call("", "GET", "/openapi.json")).components.schemas;
}

// The Server fieldset both pages share: the token field (its value stays in the page) and the
// button that lists the Scopes it may read.
export function serverFields(fieldset) {
  const legend = document.createElement("legend");
  legend.textContent = "Server";
  const token = Object.assign(document.createElement("input"), {
    id: "token",
    type: "password",
    autocomplete: "off",
    placeholder: "only when access is enforced",
  });
  const label = document.createElement("label");
  label.append("Token ", token);
  const load = Object.assign(document.createElement("button"), { id: "load-scopes", type: "button" });
  load.textContent = "Load Scopes";
  const note = Object.assign(document.createElement("span"), { id: "token-note" });
  note.textContent = "Kept in this page's memory only; never stored.";
  fieldset.replaceChildren(legend, label, " ", load, " ", note);
}
