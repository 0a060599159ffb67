/**
 * The dashboard's frame: the bar (the host, Check now, Sign out) and each view's element in its
 * place. It starts the first loads and the polling; the views draw themselves as the store tells
 * them (store.ts).
 */
import { act } from "./actions.ts";
import { token } from "./api.ts";
import { bulk } from "./bulk.ts";
import { copies } from "./copies.ts";
import { load, loadSession } from "./data.ts";
import { openLinkedRow } from "./deep-link.ts";
import { confirmDialog, infoDialog } from "./dialogs.ts";
import { h, replace } from "./dom.ts";
import { excluded } from "./excluded.ts";
import { filtersForm } from "./filters.ts";
import { summary } from "./glance.ts";
import { history } from "./history.ts";
import { schedulePoll } from "./polling.ts";
import { checked, hostName, notice, peerNotes, progress, readOnly } from "./status.ts";
import { state } from "./store.ts";
import { table, tableHead } from "./table.ts";

/** Shows the dashboard in `root`; `onSignOut` once the person signed out (the token is gone then). */
export function showDashboard(root: HTMLElement, onSignOut: () => void): void {
  const checkAll = h("button", { type: "button", onclick: () => void act(() => load()) }, "Check now");
  // signed in by a proxy: signing out is the proxy's
  const signOut =
    !state.proxy &&
    h("button", { type: "button", class: "secondary", onclick: () => (token.clear(), onSignOut()) }, "Sign out");
  replace(
    root,
    h("header", { class: "bar" }, h("h1", {}, "svc"), hostName, h("div", { class: "bar-actions" }, checkAll, signOut)),
    h(
      "main",
      { class: "dashboard" },
      notice,
      progress,
      peerNotes,
      readOnly,
      summary,
      filtersForm(),
      bulk,
      table,
      excluded,
      copies,
      h(
        "section",
        { class: "history-section", "aria-labelledby": "history-title" },
        h("h2", { id: "history-title" }, "History"),
        history,
      ),
    ),
    confirmDialog.element,
    infoDialog.element,
  );
  tableHead(checked);
  void loadSession()
    .then(() => load())
    .then(() => openLinkedRow());
  schedulePoll(0);
}
