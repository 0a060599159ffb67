/**
 * What the page says of where it stands, above and around the table: the host's name and when it
 * was checked, the notice line (an action's outcome, or what went wrong), the running cycle, the
 * peers that do not answer or run a cycle, and why nothing can be done here (read-only).
 */
import { h, replace } from "./dom.ts";
import { fromNow, localTime, progressWords, queuedWords } from "./format.ts";
import { isAdmin, state, subscribe } from "./store.ts";

export const hostName = h("span", { class: "host" });
export const notice = h("div", { class: "notice", role: "status", "aria-live": "polite" });
export const progress = h("div", { class: "progress", role: "status", "aria-live": "polite", hidden: true });
export const peerNotes = h("div", { class: "peers", role: "status", "aria-live": "polite", hidden: true });
export const readOnly = h("p", { class: "read-only", hidden: true });
/** when the list was checked: in the table's caption */
export const checked = h("p", { class: "checked" });

subscribe(["notice"], () => {
  notice.className = `notice ${state.notice.kind}`;
  replace(notice, state.notice.text ?? "");
});

subscribe(["data"], () => {
  const data = state.data!;
  replace(hostName, data.host);
  replace(checked, ` checked ${fromNow(data.checked_at)}`);
  checked.title = localTime(data.checked_at);
  const viewer = state.session !== null && !isAdmin();
  readOnly.hidden = data.update && !viewer;
  replace(
    readOnly,
    viewer
      ? `Read-only: you are signed in as ${state.session!.name}, a viewer: you see everything and change nothing.`
      : "Read-only: http_api.update is off on this svc, so nothing here can update, skip, snooze or roll back. Turn it on (--http-api-update, SVC_HTTP_API_UPDATE) to act from this page.",
  );
  renderPeers();
});

subscribe(["running"], () => {
  const running = state.running;
  const queued = state.queued;
  progress.hidden = running === null && queued.length === 0;
  if (progress.hidden) return void replace(progress);
  replace(
    progress,
    running && h("p", { class: "current" }, progressWords(running)),
    ...queued.map((q) => h("p", { class: "queued" }, queuedWords(q))),
    running &&
      running.containers.length > 0 &&
      h(
        "ul",
        { class: "steps", "aria-label": "Steps of the running cycle" },
        ...running.containers.map((s) => h("li", {}, h("span", { class: "name" }, s.container), `: ${s.step}`)),
      ),
  );
});

/**
 * A peer that does not answer, or runs a cycle: said once above the table, its rows kept as last
 * known. Entries of its answer this svc left out (not what svc answers) are named.
 */
function renderPeers(): void {
  const notes = state.peers.filter((p) => !p.up || p.busy);
  const dropped = state.peers.filter((p) => p.dropped?.length);
  peerNotes.hidden = notes.length + dropped.length === 0;
  replace(
    peerNotes,
    ...dropped.map((p) =>
      h(
        "p",
        { class: "peer-dropped", "data-peer": p.name },
        `${p.name}: left out of its answer (not what svc answers): ${p.dropped.join("; ")}.`,
      ),
    ),
    ...notes.map((p) =>
      h(
        "p",
        { class: p.up ? "peer-busy" : "peer-down", "data-peer": p.name },
        p.up
          ? `${p.name}: a cycle is running there; its containers as they were ${p.answered_at ? fromNow(p.answered_at) : "last seen"}.`
          : `${p.name} is unreachable${p.unreachable_since ? ` since ${localTime(p.unreachable_since)}` : ""} (${p.error ?? "no answer"}); ${p.answered_at ? `its containers as last known ${fromNow(p.answered_at)}` : "nothing known of it yet"}.`,
      ),
    ),
  );
}
