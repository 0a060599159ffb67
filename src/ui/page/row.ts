/**
 * One row of the table, from one entry of GET /v1/containers: its cells (the container, the
 * running and the available version, the policy, the state) and its actions (row-menu.ts).
 */
import { breakable, type Child, h, safeHref } from "./dom.ts";
import {
  ageWords,
  dayTime,
  fromNow,
  localTime,
  messageOf,
  policyWords,
  type StateWords,
  shortDigest,
  stateWords,
} from "./format.ts";
import { releaseNotesCell, vulnerabilitiesCell } from "./release-notes.ts";
import { rowActions } from "./row-menu.ts";
import { labelOf, notify, type Row, state } from "./store.ts";

/** A row, or in its place what keeps it from being shown: the other rows are shown whatever one holds. */
export function shownRow(c: Row): HTMLTableRowElement {
  try {
    return renderRow(c);
  } catch (failure) {
    return h(
      "tr",
      { "data-container": String(c.name), "data-host": String(c.host), class: "broken" },
      h("td", { colspan: 7, class: "error" }, `${labelOf(c)} cannot be shown: ${messageOf(failure)}`),
    );
  }
}

/**
 * One row, from one entry of GET /v1/containers: everything it shows comes from the entry (and
 * whether its host is reachable), so what a row says is added here and nowhere else.
 */
function renderRow(c: Row): HTMLTableRowElement {
  const select = h("input", {
    type: "checkbox",
    "aria-label": `Select ${labelOf(c)}`,
    checked: state.selected.has(c.key),
    disabled: !c.canAct,
  });
  select.addEventListener(
    "change",
    () => (select.checked ? state.selected.add(c.key) : state.selected.delete(c.key), notify("selection")),
  );
  const peerDown = c.peer !== null && state.peers.some((p) => p.name === c.peer && !p.up);
  return h(
    "tr",
    {
      "data-container": c.name,
      "data-host": c.host,
      class: [c.available_version ? "has-update" : "", peerDown ? "unreachable" : ""].join(" ").trim(),
    },
    h("td", { class: "select" }, select),
    h(
      "td",
      { "data-label": "Container" },
      h(
        "strong",
        { class: "name" },
        ...breakable(c.name),
        c.kind === "service" &&
          h(
            "span",
            { class: "marker", title: "a Swarm service: Swarm's rolling update replaces its tasks" },
            "service",
          ),
        c.built_from &&
          h(
            "span",
            {
              class: "marker",
              title: `built here, from ${c.built_from.join(", ") || "no image"}: rebuilt when one of them moves (only reported where svc reads no compose build of it)`,
            },
            "built here",
          ),
      ),
      h("span", { class: "image" }, ...breakable(c.image)),
      state.peers.length > 0 &&
        h("span", { class: "where" }, peerDown ? `${c.host} (unreachable: last known)` : c.host),
    ),
    h(
      "td",
      { "data-label": "Running" },
      h("span", { class: "version", title: c.current_digest ?? "" }, shortDigest(c.version)),
    ),
    availableCell(c),
    h("td", { "data-label": "Policy" }, policyWords(c).join(" · "), ...policyNotes(c)),
    stateCell(c),
    h("td", { "data-label": "Actions" }, h("div", { class: "actions" }, ...rowActions(c))),
  );
}

function availableCell(c: Row): HTMLTableCellElement {
  const link = safeHref(c.link);
  const age = ageWords(c);
  return h(
    "td",
    { "data-label": "Available" },
    c.available_version
      ? h(
          "span",
          { class: `badge kind-${c.update_kind ?? "digest"}`, title: c.available_image ?? c.available_digest ?? "" },
          c.available_version,
          h("span", { class: "kind" }, ` ${c.update_kind ?? ""}`),
        )
      : h("span", { class: "muted" }, "up to date"),
    age &&
      h(
        "span",
        {
          class: "age",
          title: [
            c.created_at && `built ${localTime(c.created_at)}`,
            c.first_seen_at && `first seen ${localTime(c.first_seen_at)}`,
            c.eligible_at && `eligible ${localTime(c.eligible_at)}`,
          ]
            .filter(Boolean)
            .join("; "),
        },
        age,
      ),
    link && h("a", { href: link, target: "_blank", rel: "noopener noreferrer", class: "notes" }, "Release notes"),
    releaseNotesCell(c.release_notes),
    vulnerabilitiesCell(c.vulnerabilities),
    signatureNote(c),
  );
}

/** Who signed the newer image (docs/verification.md): its details on hover and in Details. */
function signatureNote(c: Row): Child {
  const s = c.signature;
  if (!s) return null;
  const text =
    s.status === "verified"
      ? `signed by ${s.signer ?? "?"}`
      : s.status === "unsigned"
        ? "unsigned"
        : s.status === "held"
          ? "held for its signature"
          : "signature not verified";
  const title = [
    s.reason,
    s.format && `${s.format === "simple" ? "legacy" : "bundle"} format`,
    s.found_in && `from the ${s.found_in}`,
  ]
    .filter(Boolean)
    .join("; ");
  return h("span", { class: `note signature signature-${s.status}`, title }, text);
}

function policyNotes(c: Row): Child[] {
  const notes: Child[] = [];
  if (c.snoozed_until)
    notes.push(
      h(
        "span",
        { class: "note", title: localTime(c.snoozed_until) },
        `snoozed until ${dayTime(c.snoozed_until)} (${fromNow(c.snoozed_until)})`,
      ),
    );
  if (c.skipped) notes.push(h("span", { class: "note", title: c.skipped }, `skipped: ${shortDigest(c.skipped)}`));
  return notes;
}

/** The state in words; the raw state and reason on hover and in Details. */
/** The address the state points at (a pull request), as a link only when it is http(s). */
function stateLink(words: StateWords): HTMLElement | null {
  if (!words.link) return null;
  const href = safeHref(words.link.href);
  return href
    ? h("a", { href, target: "_blank", rel: "noopener noreferrer", class: "notes" }, words.link.text)
    : h("span", { class: "reason" }, words.link.href);
}

function stateCell(c: Row): HTMLTableCellElement {
  const words = stateWords(c);
  const last =
    c.last_cycle && c.last_cycle.state !== "fresh"
      ? stateWords({ ...c.last_cycle, would_update: false, snoozed_until: null, eligible_at: null })
      : null;
  return h(
    "td",
    { "data-label": "State" },
    h("span", { class: `state state-${c.state} tone-${words.tone}`, title: c.reason ?? c.state }, words.text),
    words.detail && h("span", { class: "reason", title: c.reason ?? "" }, words.detail),
    stateLink(words),
    last &&
      h(
        "span",
        {
          class: "note",
          title: `${localTime(c.last_cycle!.at)}${c.last_cycle!.reason ? `: ${c.last_cycle!.reason}` : ""}`,
        },
        `last cycle ${fromNow(c.last_cycle!.at)}: ${last.text}${last.detail ? ` (${last.detail})` : ""}`,
      ),
    last && stateLink(last),
    c.last_update &&
      h(
        "span",
        { class: "note", title: localTime(c.last_update.at) },
        `updated ${fromNow(c.last_update.at)}: ${shortDigest(c.last_update.from_version)} → ${shortDigest(c.last_update.to_version ?? "?")}`,
      ),
  );
}
