// What the Memory page draws: table rows, version lists and Candidate cards, built from API answers.
// Every piece of stored text goes in through textContent, never as markup, so hostile entry text is
// shown as the characters it is.

import { lineDiff } from "./line_diff.js";

export function cell(text, className) {
  const td = document.createElement("td");
  td.textContent = text;
  if (className) td.className = className;
  return td;
}

export function button(label, onClick, className) {
  const element = document.createElement("button");
  element.type = "button";
  element.textContent = label;
  if (className) element.className = className;
  element.addEventListener("click", onClick);
  return element;
}

// The first words of a text, for naming an entry in a confirmation.
export function firstWords(text, count = 8) {
  const words = text.trim().split(/\s+/);
  return words.slice(0, count).join(" ") + (words.length > count ? " …" : "");
}

// One row of the entries table: a listed entry (with kind) or a search hit (without).
export function entryRow(entry, showExpiry, onOpen) {
  const citation = entry.citation;
  const row = document.createElement("tr");
  row.dataset.entryId = citation.entry_id;
  const expiry = cell(entry.expires_at || "-", "expiry");
  expiry.hidden = !showExpiry;
  const open = button("Open", onOpen, "open");
  open.setAttribute("aria-label", `open ${citation.entry_id}`);
  const action = document.createElement("td");
  action.append(open);
  row.append(
    cell(citation.entry_id),
    cell(entry.kind || "-"),
    cell(String(citation.memory_ref.revision), "number"),
    cell(citation.entry_version_id),
    expiry,
    cell(entry.text, "text"),
    action,
  );
  return row;
}

export function historyRow(version, showExpiry) {
  const row = document.createElement("tr");
  const expiry = cell(version.expires_at || "-", "expiry");
  expiry.hidden = !showExpiry;
  row.append(
    cell(String(version.citation.memory_ref.revision), "number"),
    cell(version.citation.entry_version_id),
    cell(version.removed_revision === null ? "live head" : String(version.removed_revision)),
    expiry,
    cell(version.text, "text"),
  );
  return row;
}

// The text a Candidate proposes, as lines, so that the diff against the current revision reads well.
export function proposedText(candidate) {
  return candidate.family === "profile" ? candidate.profile : experienceText(candidate.experience);
}

export function experienceText(fields) {
  return ["situation", "action", "outcome", "lesson"].map((name) => `${name}: ${fields[name]}`).join("\n");
}

export function diffBlock(oldText, newText) {
  const pre = document.createElement("pre");
  pre.className = "diff";
  for (const { op, line } of lineDiff(oldText, newText)) {
    const span = document.createElement("span");
    span.className = op === "+" ? "added" : op === "-" ? "removed" : "kept";
    span.textContent = `${op} ${line}\n`;
    pre.append(span);
  }
  return pre;
}

// A Candidate with its diff; `decide(approve)` is given only when the token may review.
export function candidateCard(candidate, currentText, decide) {
  const card = document.createElement("article");
  card.className = "candidate";
  card.dataset.candidateId = candidate.candidate_id;
  const title = document.createElement("h3");
  const target = candidate.target_artifact_id === null ? "new" : candidate.target_artifact_id;
  title.textContent =
    `${candidate.candidate_id}: ${candidate.family} (${target}, based on revision ${candidate.base_revision}), ` +
    `version ${candidate.version}`;
  card.append(title, diffBlock(currentText, proposedText(candidate)));
  if (decide) {
    const approve = button("Approve", () => decide(true), "approve");
    approve.setAttribute("aria-label", `approve ${candidate.candidate_id}`);
    const reject = button("Reject", () => decide(false), "reject");
    reject.setAttribute("aria-label", `reject ${candidate.candidate_id}`);
    card.append(approve, reject);
  }
  return card;
}
