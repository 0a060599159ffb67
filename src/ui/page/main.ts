/**
 * The svc dashboard (docs/dashboard.md): one more client of the HTTP API. It signs in with the
 * API token, lists what svc watches with what is newer, follows a running cycle, and acts
 * through the same endpoints a curl command would. Every value from svc (and so from an engine
 * or a registry) reaches the DOM as text (dom.ts).
 */
import { api, ApiError, apiOf, type ContainerOverview, type ContainersAnswer, type PeerView, peers as peersOf, type RunningCycle, type SessionSummary, signIn, type TimelineEntry, token, whenUnauthorized } from "./api.ts";
import { type Child, h, replace, safeHref } from "./dom.ts";
import { ageWords, type Filters, fromNow, localTime, matches, policyWords, progressWords } from "./format.ts";

type Row = ContainerOverview & { host: string; peer: string | null; key: string; canAct: boolean };

interface State {
  data: ContainersAnswer | null;
  peers: PeerView[];
  rows: Row[];
  running: RunningCycle | null;
  /** an action of this page is under way: one at a time */
  acting: boolean;
  /** a check was refused while a cycle ran: it is done again once none runs */
  checkWhenIdle: boolean;
  selected: Set<string>;
  filters: Filters;
}

const state: State = { data: null, peers: [], rows: [], running: null, acting: false, checkWhenIdle: false, selected: new Set(), filters: { search: "", state: "", host: "", onlyUpdates: false } };
const root = document.getElementById("app")!;
let pollTimer: ReturnType<typeof setTimeout> | undefined;
let signInNotice: string | null = null;

// ---- sign-in ----

function showSignIn(): void {
  stopPolling();
  const input = h("input", { id: "token", name: "token", type: "password", autocomplete: "off", required: true, spellcheck: "false", "aria-describedby": "token-help" });
  const error = h("p", { class: "error", role: "alert", id: "signin-error" }, signInNotice ?? "");
  const submit = h("button", { type: "submit" }, "Sign in");
  const form = h(
    "form",
    { class: "signin", "aria-labelledby": "signin-title" },
    h("h1", { id: "signin-title" }, "svc"),
    h("label", { for: "token" }, "API token"),
    input,
    h("p", { class: "help", id: "token-help" }, "The API token: what the file named by http_api.token holds (e.g. cat svc-token), or its value. Kept for this browser tab only."),
    submit,
    error,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const candidate = input.value.trim();
    submit.disabled = true;
    replace(error, "");
    try {
      await signIn(candidate);
      token.set(candidate);
      signInNotice = null;
      showDashboard();
    } catch (failure) {
      replace(error, failure instanceof ApiError && failure.status === 401 ? "Wrong token: svc refused it. Paste what the file named by http_api.token holds." : messageOf(failure));
      input.select();
    } finally {
      submit.disabled = false;
    }
  });
  replace(root, h("main", { class: "signin-page" }, form));
  input.focus();
}

whenUnauthorized(() => {
  token.clear();
  signInNotice = "svc refused the token (it may have changed): sign in again.";
  showSignIn();
});

// ---- the dashboard's frame ----

const els = {
  host: h("span", { class: "host" }),
  notice: h("div", { class: "notice", role: "status", "aria-live": "polite" }),
  progress: h("div", { class: "progress", role: "status", "aria-live": "polite", hidden: true }),
  peers: h("div", { class: "peers", role: "status", "aria-live": "polite", hidden: true }),
  readOnly: h("p", { class: "read-only", hidden: true }),
  checked: h("p", { class: "checked" }),
  body: h("tbody"),
  bulk: h("div", { class: "bulk", role: "group", "aria-label": "Update several containers" }),
  hostFilter: h("select", { id: "filter-host", name: "host" }),
  selectAll: h("input", { type: "checkbox", id: "select-all", "aria-label": "Select every container shown" }),
  history: h("ol", { class: "history" }),
  excluded: h("details", { class: "excluded", hidden: true }),
};

function showDashboard(): void {
  const checkAll = h("button", { type: "button", onclick: () => void act(() => load()) }, "Check now");
  const signOut = h("button", { type: "button", class: "secondary", onclick: () => (token.clear(), showSignIn()) }, "Sign out");
  const search = h("input", { id: "filter-search", type: "search", name: "search", placeholder: "name", autocomplete: "off" });
  search.addEventListener("input", () => ((state.filters.search = search.value), renderRows()));
  const stateFilter = h(
    "select",
    { id: "filter-state", name: "state" },
    ...["", "stale", "fresh", "skipped", "updated", "failed", "rolled_back"].map((value) => h("option", { value }, value === "" ? "any" : value.replace("_", " "))),
  );
  stateFilter.addEventListener("change", () => ((state.filters.state = stateFilter.value), renderRows()));
  els.hostFilter.addEventListener("change", () => ((state.filters.host = els.hostFilter.value), renderRows()));
  const onlyUpdates = h("input", { id: "filter-updates", type: "checkbox", name: "updates" });
  onlyUpdates.addEventListener("change", () => ((state.filters.onlyUpdates = onlyUpdates.checked), renderRows()));
  els.selectAll.addEventListener("change", () => {
    for (const row of visibleRows()) if (row.canAct) (els.selectAll.checked ? state.selected.add(row.key) : state.selected.delete(row.key));
    renderRows();
  });

  replace(
    root,
    h("header", { class: "bar" }, h("h1", {}, "svc"), els.host, h("div", { class: "bar-actions" }, checkAll, signOut)),
    h(
      "main",
      { class: "dashboard" },
      els.notice,
      els.progress,
      els.peers,
      els.readOnly,
      h(
        "form",
        { class: "filters", role: "search", "aria-label": "Filter containers", onsubmit: (event: Event) => event.preventDefault() },
        field("Search", search),
        field("State", stateFilter),
        field("Host", els.hostFilter),
        h("div", { class: "check" }, onlyUpdates, h("label", { for: "filter-updates" }, "Only with updates")),
      ),
      els.bulk,
      h(
        "table",
        { class: "containers" },
        h("caption", {}, "Containers svc watches", els.checked),
        h(
          "thead",
          {},
          h(
            "tr",
            {},
            h("th", { scope: "col", class: "select" }, els.selectAll),
            ...["Container", "Running", "Available", "Policy", "State", "Actions"].map((title) => h("th", { scope: "col" }, title)),
          ),
        ),
        els.body,
      ),
      els.excluded,
      h("section", { class: "history-section", "aria-labelledby": "history-title" }, h("h2", { id: "history-title" }, "History"), els.history),
    ),
    confirmDialog.element,
    infoDialog.element,
  );
  void load();
  schedulePoll(0);
}

function field(label: string, control: HTMLInputElement | HTMLSelectElement): HTMLElement {
  return h("div", { class: "field" }, h("label", { for: control.id }, label), control);
}

// ---- data ----

/** A host the page shows: this svc (peer null) or a peer, with what it last said. */
interface HostData {
  peer: string | null;
  answer: ContainersAnswer | null;
  /** whether the page may act there: actions on here, and there, and the peer answers */
  canAct: boolean;
}

/** Where a row lives, as the page keys it: the same name on two hosts stays two rows. */
const keyOf = (peer: string | null, name: string): string => `${peer ?? ""}/${name}`;

function hostData(): HostData[] {
  const local = state.data;
  const localAct = local?.update === true;
  return [
    { peer: null, answer: local, canAct: localAct },
    ...state.peers.map((p) => ({ peer: p.name, answer: p.data, canAct: localAct && p.up && !p.busy && p.data?.update === true })),
  ];
}

/**
 * Loads what svc watches (a dry run on the host), or the named containers only, merged in; the
 * peers apart, so a slow one never holds the local list back. `quiet` after an action: its
 * outcome stays on screen.
 */
async function load(names?: string[], quiet = false, peer: string | null = null): Promise<void> {
  if (!quiet) say(names ? `Checking ${names.join(", ")}...` : "Checking for newer images...");
  if (!names) void loadPeers();
  try {
    const answer = await apiOf(peer).containers(names);
    if (peer !== null) mergePeer(peer, answer.containers);
    else if (names && state.data) state.data = { ...state.data, containers: merged(state.data.containers, answer.containers) };
    else state.data = answer;
    if (!quiet) say(names ? `Checked ${names.join(", ")}.` : null);
    render();
    if (!names) void loadHistory();
  } catch (failure) {
    if (failure instanceof ApiError && failure.status === 409 && !names) {
      // another tab's check, or a scheduled cycle: the list comes once it has ended
      state.checkWhenIdle = true;
      schedulePoll(1000);
    }
    await sayFailure(failure);
  }
}

function merged(old: ContainerOverview[], fresh: ContainerOverview[]): ContainerOverview[] {
  const byName = new Map(fresh.map((c) => [c.name, c]));
  return old.map((c) => byName.get(c.name) ?? c);
}

function mergePeer(name: string, fresh: ContainerOverview[]): void {
  state.peers = state.peers.map((p) => (p.name === name && p.data ? { ...p, data: { ...p.data, containers: merged(p.data.containers, fresh) } } : p));
}

async function loadPeers(): Promise<void> {
  try {
    state.peers = (await peersOf()).peers;
  } catch (failure) {
    // an svc without the page's newer endpoints, or none configured: only the local host
    if (!(failure instanceof ApiError && failure.status === 404)) say(messageOf(failure), "error");
    return;
  }
  render();
}

function render(): void {
  const data = state.data;
  if (!data) return;
  state.rows = hostData().flatMap((host) =>
    (host.answer?.containers ?? []).map((c) => ({ ...withDefaults(c), host: host.peer ?? data.host, peer: host.peer, key: keyOf(host.peer, c.name), canAct: host.canAct })),
  );
  replace(els.host, data.host);
  replace(els.checked, ` checked ${fromNow(data.checked_at)}`);
  els.checked.title = localTime(data.checked_at);
  els.readOnly.hidden = data.update;
  replace(
    els.readOnly,
    "Read-only: http_api.update is off on this svc, so nothing here can update, skip, snooze or roll back. Turn it on (--http-api-update, SVC_HTTP_API_UPDATE) to act from this page.",
  );
  renderPeers();
  renderExcluded(data.host);
  const hosts = [data.host, ...state.peers.map((p) => p.name)];
  replace(els.hostFilter, h("option", { value: "" }, "all"), ...hosts.map((host) => h("option", { value: host, selected: host === state.filters.host }, host)));
  renderRows();
}

/** A peer's container from an older svc may lack what the page shows: nothing then, not an error. */
function withDefaults(c: ContainerOverview): ContainerOverview {
  const given: Partial<ContainerOverview["policy"]> | undefined = c.policy;
  const policy = { monitor_only: false, no_pull: false, tag_policy: null, min_image_age: null, hooks: [], ignored_hooks: [], ...given };
  return { ...c, kind: c.kind ?? "container", version: c.version ?? "", available_version: c.available_version ?? null, update_kind: c.update_kind ?? null, policy, last_cycle: c.last_cycle ?? null, last_update: c.last_update ?? null };
}

/** The containers svc leaves alone, and why: folded away under the table. */
function renderExcluded(localHost: string): void {
  const excluded = hostData().flatMap((host) => (host.answer?.excluded ?? []).map((c) => ({ ...c, host: host.peer ?? localHost, peer: host.peer })));
  els.excluded.hidden = excluded.length === 0;
  replace(
    els.excluded,
    h("summary", {}, `Left alone (${excluded.length})`),
    h("ul", {}, ...excluded.map((c) => h("li", { "data-container": c.name }, h("span", { class: "name" }, c.peer === null ? c.name : `${c.name} on ${c.peer}`, c.kind === "service" && h("span", { class: "marker" }, "service")), ` (${c.image}, ${c.state}): ${c.reason}`))),
  );
}

/** A peer that does not answer, or runs a cycle: said once above the table, its rows kept as last known. */
function renderPeers(): void {
  const notes = state.peers.filter((p) => !p.up || p.busy);
  els.peers.hidden = notes.length === 0;
  replace(
    els.peers,
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

function visibleRows(): Row[] {
  return state.rows.filter((row) => matches(row, state.filters));
}

function renderRows(): void {
  const rows = visibleRows();
  const anyAct = state.rows.some((row) => row.canAct);
  for (const key of state.selected) if (!state.rows.some((row) => row.key === key && row.canAct)) state.selected.delete(key);
  els.selectAll.disabled = !anyAct;
  els.selectAll.checked = rows.length > 0 && rows.every((row) => state.selected.has(row.key));
  replace(els.body, ...(rows.length ? rows.map(renderRow) : [h("tr", {}, h("td", { colspan: 7, class: "empty" }, state.rows.length ? "No container matches the filters." : "svc watches no container."))]));
  renderBulk(anyAct);
}

/** "web", or "web on nas" for a peer's: what a button's label names. */
const labelOf = (c: Row): string => (c.peer === null ? c.name : `${c.name} on ${c.peer}`);

function renderRow(c: Row): HTMLTableRowElement {
  const select = h("input", { type: "checkbox", "aria-label": `Select ${labelOf(c)}`, checked: state.selected.has(c.key), disabled: !c.canAct });
  select.addEventListener("change", () => (select.checked ? state.selected.add(c.key) : state.selected.delete(c.key), renderBulk(true)));
  const link = safeHref(c.link);
  const age = ageWords(c);
  const notes: Child[] = [];
  if (c.snoozed_until) notes.push(h("span", { class: "note" }, `snoozed until ${localTime(c.snoozed_until)}`));
  if (c.skipped) notes.push(h("span", { class: "note" }, `skipped: ${c.skipped}`));
  const peerDown = c.peer !== null && state.peers.some((p) => p.name === c.peer && !p.up);
  return h(
    "tr",
    { "data-container": c.name, "data-host": c.host, class: [c.available_version ? "has-update" : "", peerDown ? "unreachable" : ""].join(" ").trim() },
    h("td", { class: "select" }, select),
    h("td", { "data-label": "Container" }, h("strong", { class: "name" }, c.name, c.kind === "service" && h("span", { class: "marker", title: "a Swarm service: Swarm's rolling update replaces its tasks" }, "service")), h("span", { class: "image" }, c.image), state.peers.length > 0 && h("span", { class: "where" }, peerDown ? `${c.host} (unreachable: last known)` : c.host)),
    h("td", { "data-label": "Running" }, h("span", { class: "version" }, c.version)),
    h(
      "td",
      { "data-label": "Available" },
      c.available_version
        ? h("span", { class: `badge kind-${c.update_kind ?? "digest"}`, title: c.available_image ?? c.available_digest ?? "" }, c.available_version, h("span", { class: "kind" }, ` ${c.update_kind ?? ""}`))
        : h("span", { class: "muted" }, "up to date"),
      age && h("span", { class: "age" }, age),
      link && h("a", { href: link, target: "_blank", rel: "noopener noreferrer", class: "notes" }, "Release notes"),
    ),
    h("td", { "data-label": "Policy" }, policyWords(c).join(" · "), ...notes),
    h(
      "td",
      { "data-label": "State" },
      h("span", { class: `state state-${c.state}` }, c.state.replace("_", " ")),
      c.reason && h("span", { class: "reason" }, c.reason),
      c.last_cycle && c.last_cycle.state !== "fresh" && h("span", { class: "note", title: localTime(c.last_cycle.at) }, `last cycle: ${c.last_cycle.state.replace("_", " ")}${c.last_cycle.reason ? ` (${c.last_cycle.reason})` : ""}`),
      c.last_update && h("span", { class: "note", title: localTime(c.last_update.at) }, `updated ${fromNow(c.last_update.at)}: ${c.last_update.from_version} → ${c.last_update.to_version ?? "?"}`),
    ),
    h("td", { "data-label": "Actions" }, h("div", { class: "actions" }, ...rowActions(c))),
  );
}

function rowActions(c: Row): Child[] {
  const button = (text: string, label: string, action: () => void, className = "") => h("button", { type: "button", "aria-label": `${label} ${labelOf(c)}`, class: className, onclick: action, disabled: state.acting }, text);
  const reachable = c.peer === null || state.peers.some((p) => p.name === c.peer && p.up);
  if (!reachable) return [];
  const check = button("Check", "Check", () => void act(() => load([c.name], false, c.peer)));
  const history = button("History", "History of", () => void showTimeline(c), "secondary");
  if (!c.canAct) return [check, history];
  const actions: Child[] = [check, history];
  // held back (monitor only, min_image_age, a snooze): an update now would leave it as it is
  if (c.would_update) actions.push(button("Update", "Update", () => void updateContainers([c]), "primary"));
  if (c.available_version) {
    actions.push(button("Skip", "Skip this version of", () => void act(async () => (await apiOf(c.peer).skip(c.name), say(`${labelOf(c)}: this version is skipped.`), await load([c.name], true, c.peer)))));
  }
  actions.push(button(c.snoozed_until ? "Snoozed" : "Snooze", "Snooze updates of", () => void snoozeContainer(c)));
  if (c.previous_image_id) actions.push(button("Roll back", "Roll back", () => void rollBack(c), "danger"));
  return actions;
}

function renderBulk(anyAct: boolean): void {
  if (!anyAct) return void replace(els.bulk);
  // what the filters show: with the host filter, everything stale on that host
  const stale = visibleRows().filter((row) => row.canAct && row.would_update);
  const chosen = state.rows.filter((row) => state.selected.has(row.key));
  const where = state.filters.host ? ` on ${state.filters.host}` : "";
  replace(
    els.bulk,
    h("button", { type: "button", disabled: chosen.length === 0 || state.acting, onclick: () => void updateContainers(chosen) }, `Update selected (${chosen.length})`),
    h("button", { type: "button", disabled: stale.length === 0 || state.acting, onclick: () => void updateContainers(stale, `every container shown with an update${where}`) }, `Update all stale${where} (${stale.length})`),
  );
}

// ---- actions ----

/** Runs one action at a time; progress is followed while it runs, failures are said. */
async function act(action: () => Promise<unknown>): Promise<void> {
  if (state.acting) return;
  state.acting = true;
  renderRows();
  schedulePoll(500);
  try {
    await action();
  } catch (failure) {
    await sayFailure(failure);
  } finally {
    state.acting = false;
    // a cycle seen meanwhile was this action's own (cycles exclude each other), and the action
    // loaded what it changed: the next poll must not take its end for another's and check
    // again, which would refuse (409) the next click
    state.running = null;
    renderRows();
  }
}

/** One update per host (this one, each peer), one after the other. */
async function updateContainers(rows: Row[], what = rows.map(labelOf).join(", ")): Promise<void> {
  const services = rows.some((row) => row.kind === "service") ? " (a Swarm service: Swarm replaces its tasks with the service's own update settings)" : "";
  const ok = await confirmDialog.ask("Update and restart?", `svc pulls the newer image and replaces ${what}: each container is stopped and started again${services}.`, "Update");
  if (!ok) return;
  await act(async () => {
    say(`Updating ${what}...`);
    const lines: string[] = [];
    for (const peer of [...new Set(rows.map((row) => row.peer))]) {
      const report = await apiOf(peer).update(rows.filter((row) => row.peer === peer).map((row) => row.name));
      for (const c of report.containers) lines.push(`${peer === null ? c.name : `${c.name} on ${peer}`}: ${c.state.replace("_", " ")}${c.reason ? ` (${c.reason})` : ""}`);
    }
    say(lines.length ? lines.join("; ") : "Nothing was updated.");
    await load(undefined, true);
  });
}

async function rollBack(c: Row): Promise<void> {
  const what =
    c.kind === "service"
      ? `Swarm rolls the service ${labelOf(c)} back to its previous spec (${c.previous_image_id}); its tasks are replaced with the service's own update settings.`
      : `svc puts ${labelOf(c)} back on the image it ran before its last update (${c.previous_image_id}); the container is stopped and started again.`;
  const ok = await confirmDialog.ask("Roll back and restart?", what, "Roll back");
  if (!ok) return;
  await act(async () => {
    say(`Rolling back ${labelOf(c)}...`);
    const result = await apiOf(c.peer).rollback(c.name);
    say(`${labelOf(c)}: ${result.state === "updated" ? "back on its earlier image" : `${result.state.replace("_", " ")}${result.reason ? ` (${result.reason})` : ""}`}.`);
    await load(undefined, true);
  });
}

const SNOOZE_CHOICES: [string, string][] = [
  ["1d", "one day"],
  ["7d", "a week"],
  ["30d", "a month"],
  ["0s", "no snooze (lift it)"],
];

async function snoozeContainer(c: Row): Promise<void> {
  const choice = await confirmDialog.choose(`Snooze ${labelOf(c)}`, "Newer images are still shown, but none is applied until the snooze ends.", "Snooze for", SNOOZE_CHOICES);
  if (choice === null) return;
  await act(async () => {
    const result = await apiOf(c.peer).snooze(c.name, choice);
    say(result.until ? `${labelOf(c)}: updates snoozed until ${localTime(result.until)}.` : `${labelOf(c)}: snooze lifted.`);
    await load([c.name], true, c.peer);
  });
}

// ---- history ----

async function loadHistory(): Promise<void> {
  try {
    const { reports } = await api.history();
    replace(els.history, ...(reports.length ? reports.map(sessionItem) : [h("li", { class: "muted" }, "No cycle has run since svc started (or since the history was kept).")]));
  } catch (failure) {
    if (!(failure instanceof ApiError && failure.status === 401)) replace(els.history, h("li", { class: "error" }, messageOf(failure)));
  }
}

const COUNTED = ["updated", "failed", "rolled_back", "stale", "skipped"] as const;

function sessionItem(report: SessionSummary): HTMLLIElement {
  const counted = COUNTED.filter((key) => report.counts[key] > 0).map((key) => `${report.counts[key]} ${key.replace("_", " ")}`);
  const outcome = counted.length ? counted.join(", ") : `${report.counts.scanned} checked, nothing newer`;
  return h(
    "li",
    {},
    h("span", { class: "when", title: localTime(report.finished_at) }, fromNow(report.finished_at)),
    ` · ${report.trigger} · ${outcome}`,
    report.containers.length > 0 && h("ul", {}, ...report.containers.map((c) => h("li", {}, h("span", { class: "name" }, c.name), `: ${c.state.replace("_", " ")}${c.reason ? ` (${c.reason})` : ""}`))),
  );
}

async function showTimeline(c: Row): Promise<void> {
  try {
    const { timeline } = await apiOf(c.peer).timeline(c.name);
    await infoDialog.show(`History of ${labelOf(c)}`, timeline.length ? h("ol", { class: "timeline" }, ...timeline.map(timelineItem)) : h("p", {}, "Nothing happened to it in the kept history (only fresh checks)."));
  } catch (failure) {
    await sayFailure(failure);
  }
}

function timelineItem(entry: TimelineEntry): HTMLLIElement {
  const move = entry.to_version ? `${entry.from_version} → ${entry.to_version}` : entry.from_version;
  return h("li", {}, h("span", { class: "when", title: localTime(entry.at) }, localTime(entry.at)), ` · ${entry.state.replace("_", " ")} · ${move}`, entry.reason && h("span", { class: "reason" }, entry.reason));
}

// ---- the running cycle ----

function schedulePoll(delayMs: number): void {
  stopPolling();
  pollTimer = setTimeout(() => void poll(), delayMs);
}

function stopPolling(): void {
  if (pollTimer !== undefined) clearTimeout(pollTimer);
  pollTimer = undefined;
}

/** Every second while a cycle runs or this page acts, every 10 s otherwise (a scheduled cycle). */
async function poll(): Promise<void> {
  // a cycle that changed something (not a check: a dry run, this page's own among them)
  const wasUpdating = state.running?.containers.some((step) => step.step !== "check") === true;
  try {
    state.running = (await api.progress()).running;
  } catch (failure) {
    if (failure instanceof ApiError && failure.status === 401) return;
    state.running = null;
  }
  renderProgress();
  // a cycle this page did not start ended: what it changed is worth seeing (a check ending is
  // not: reloading after it would be a check again, and again)
  const idle = !state.running && !state.acting;
  if (idle && state.checkWhenIdle) {
    state.checkWhenIdle = false;
    void load();
  } else if (idle && wasUpdating) {
    void load(undefined, true);
  }
  if (token.get()) schedulePoll(state.running || state.acting ? 1000 : 10_000);
}

function renderProgress(): void {
  const running = state.running;
  els.progress.hidden = running === null;
  if (!running) return void replace(els.progress);
  replace(
    els.progress,
    h("p", { class: "current" }, progressWords(running)),
    running.containers.length > 0 && h("ul", { class: "steps", "aria-label": "Steps of the running cycle" }, ...running.containers.map((s) => h("li", {}, h("span", { class: "name" }, s.container), `: ${s.step}`))),
  );
}

// ---- messages ----

function say(text: string | null, kind: "info" | "error" = "info"): void {
  els.notice.className = `notice ${kind}`;
  replace(els.notice, text ?? "");
}

function messageOf(failure: unknown): string {
  return failure instanceof Error ? failure.message : String(failure);
}

/** A 409 says what is running, as GET /v1/progress tells it. */
async function sayFailure(failure: unknown): Promise<void> {
  if (failure instanceof ApiError && failure.status === 401) return;
  if (failure instanceof ApiError && failure.status === 409) {
    const running = await api.progress().then((p) => p.running, () => null);
    state.running = running;
    renderProgress();
    say(`Refused: ${running ? progressWords(running) : "another update cycle is running."} ${state.checkWhenIdle ? "The list comes when it ends." : "Try again when it ends."}`, "error");
    return;
  }
  say(messageOf(failure), "error");
}

// ---- the confirmation dialog ----

const confirmDialog = (() => {
  const title = h("h2", { id: "dialog-title" });
  const text = h("p", { id: "dialog-text" });
  const extra = h("div");
  const cancel = h("button", { type: "button", class: "secondary", value: "cancel" }, "Cancel");
  const confirm = h("button", { type: "submit", class: "primary", value: "confirm" });
  const element = h("dialog", { "aria-labelledby": "dialog-title", "aria-describedby": "dialog-text" }, h("form", { method: "dialog" }, title, text, extra, h("div", { class: "dialog-actions" }, cancel, confirm)));
  cancel.addEventListener("click", () => element.close("cancel"));
  const open = (heading: string, message: string, content: Child, action: string): Promise<string> => {
    replace(title, heading);
    replace(text, message);
    replace(extra, content);
    replace(confirm, action);
    element.returnValue = "";
    element.showModal();
    cancel.focus();
    return new Promise((resolve) => element.addEventListener("close", () => resolve(element.returnValue), { once: true }));
  };
  return {
    element,
    /** resolves true when the person confirms (Escape and Cancel say no) */
    ask: async (heading: string, message: string, action: string) => (await open(heading, message, null, action)) === "confirm",
    /** resolves with the chosen value, or null */
    choose: async (heading: string, message: string, label: string, choices: [string, string][]) => {
      const select = h("select", { id: "dialog-choice" }, ...choices.map(([value, words]) => h("option", { value }, words)));
      const chosen = (await open(heading, message, h("div", { class: "field" }, h("label", { for: "dialog-choice" }, label), select), "Snooze")) === "confirm";
      return chosen ? select.value : null;
    },
  };
})();

/** A dialog that only shows something, closed with its button or Escape. */
const infoDialog = (() => {
  const title = h("h2", { id: "info-title" });
  const content = h("div", { class: "info-content" });
  const close = h("button", { type: "submit", class: "secondary" }, "Close");
  const element = h("dialog", { "aria-labelledby": "info-title", class: "info" }, h("form", { method: "dialog" }, title, content, h("div", { class: "dialog-actions" }, close)));
  return {
    element,
    show(heading: string, body: Child): Promise<void> {
      replace(title, heading);
      replace(content, body);
      element.showModal();
      close.focus();
      return new Promise((resolve) => element.addEventListener("close", () => resolve(), { once: true }));
    },
  };
})();

// ---- start ----

if (token.get()) showDashboard();
else showSignIn();
