/**
 * A row named by the page's address (docs/dashboard.md, "Links to a row"): `#container=NAME` or
 * `#service=NAME`, as the notifications link each stale, held or failed target. Once the
 * dashboard has loaded (after sign-in, as always: the link carries no token), that row's Details
 * open. The fragment never reaches svc; it is read once and removed from the address.
 */
import { showDetails } from "./details.ts";
import { state } from "./store.ts";

export interface LinkedRow {
  kind: "container" | "service";
  name: string;
}

/** The row the fragment names, if it names one. */
export function linkedRow(hash: string): LinkedRow | null {
  const params = new URLSearchParams(hash.replace(/^#/, ""));
  for (const kind of ["container", "service"] as const) {
    const name = params.get(kind);
    if (name) return { kind, name };
  }
  return null;
}

let pending: LinkedRow | null = linkedRow(location.hash);

/** Opens the linked row's Details once its row is loaded; false while it is not (yet). */
export function openLinkedRow(): boolean {
  if (!pending) return false;
  const wanted = pending;
  const row = state.rows.find((r) => r.peer === null && r.kind === wanted.kind && r.name === wanted.name);
  if (!row) return false;
  pending = null;
  history.replaceState(null, "", location.pathname + location.search);
  void showDetails(row);
  return true;
}
