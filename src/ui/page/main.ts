/**
 * The svc dashboard (docs/dashboard.md): one more client of the HTTP API. It signs in with the
 * API token, lists what svc watches with what is newer, follows a running cycle, and acts
 * through the same endpoints a curl command would. Every value from svc (and so from an engine
 * or a registry) reaches the DOM as text (dom.ts).
 */
import { type Bucket, countRows, UPDATE_KINDS } from "../summary.ts";
import { api, ApiError, apiOf, type ContainerOverview, type ContainersAnswer, type PeerView, peers as peersOf, type RunningCycle, type Session, session, type SessionSummary, signIn, type TimelineEntry, token, whenUnauthorized } from "./api.ts";
import { type Child, h, replace, safeHref } from "./dom.ts";
import { releaseNotesCell } from "./release-notes.ts";
import { ageWords, dayTime, rateLimitWords, type Filters, fromNow, localTime, matches, plainText, policyWords, progressWords, shortDigest, stateWords } from "./format.ts";

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
  /** who the page is signed in as; null until svc said (nothing is offered to act meanwhile) */
  session: Session | null;
  /** signed in by an identity proxy in front of svc, without a token */
  proxy: boolean;
  /** the groups (compose projects, Swarm stacks) folded away, by key */
  collapsed: Set<string>;
}

const state: State = {
  data: null,
  peers: [],
  rows: [],
  running: null,
  acting: false,
  checkWhenIdle: false,
  selected: new Set(),
  filters: { search: "", state: "", host: "", onlyUpdates: false, bucket: "" },
  session: null,
  proxy: false,
  collapsed: new Set(),
};

/** The page is signed in: with a token, or by the proxy in front. */
const signedIn = (): boolean => token.get() !== null || state.proxy;
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
  state.proxy = false;
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
  summary: h("section", { class: "summary", "aria-label": "At a glance" }),
  table: h("table", { class: "containers" }),
  bulk: h("div", { class: "bulk", role: "group", "aria-label": "Update several containers" }),
  hostFilter: h("select", { id: "filter-host", name: "host" }),
  selectAll: h("input", { type: "checkbox", id: "select-all", "aria-label": "Select every container shown" }),
  history: h("ol", { class: "history" }),
  excluded: h("details", { class: "excluded", hidden: true }),
};

function showDashboard(): void {
  const checkAll = h("button", { type: "button", onclick: () => void act(() => load()) }, "Check now");
  // signed in by a proxy: signing out is the proxy's
  const signOut = !state.proxy && h("button", { type: "button", class: "secondary", onclick: () => (token.clear(), showSignIn()) }, "Sign out");
  const search = h("input", { id: "filter-search", type: "search", name: "search", placeholder: "name", autocomplete: "off" });
  search.addEventListener("input", () => ((state.filters.search = search.value), renderRows()));
  const stateFilter = h(
    "select",
    { id: "filter-state", name: "state" },
    ...STATE_CHOICES.map(([value, words]) => h("option", { value }, words)),
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
      els.summary,
      h(
        "form",
        { class: "filters", role: "search", "aria-label": "Filter containers", onsubmit: (event: Event) => event.preventDefault() },
        field("Search", search),
        field("State", stateFilter),
        field("Host", els.hostFilter),
        h("div", { class: "check" }, onlyUpdates, h("label", { for: "filter-updates" }, "Only with updates")),
      ),
      els.bulk,
      els.table,
      els.excluded,
      h("section", { class: "history-section", "aria-labelledby": "history-title" }, h("h2", { id: "history-title" }, "History"), els.history),
    ),
    confirmDialog.element,
    infoDialog.element,
  );
  replace(
    els.table,
    h("caption", {}, "Containers svc watches", els.checked),
    h("thead", {}, h("tr", {}, h("th", { scope: "col", class: "select" }, els.selectAll), ...COLUMNS.map((title) => h("th", { scope: "col" }, title)))),
  );
  void loadSession().then(() => load());
  schedulePoll(0);
}

const COLUMNS = ["Container", "Running", "Available", "Policy", "State", "Actions"];

/** The state filter, in the words the rows use. */
const STATE_CHOICES: [string, string][] = [
  ["", "any"],
  ["stale", "update available or held"],
  ["pending", "waiting for its update window"],
  ["fresh", "up to date"],
  ["skipped", "skipped or not checked"],
  ["updated", "updated"],
  ["failed", "update failed"],
  ["rolled_back", "rolled back"],
];

/** Who the page is signed in as: a viewer is offered no action. */
async function loadSession(): Promise<void> {
  try {
    state.session = await session(state.proxy);
  } catch (failure) {
    await sayFailure(failure);
  }
}

const isAdmin = (): boolean => state.session?.role === "admin";

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
  const localAct = local?.update === true && isAdmin();
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
    (host.answer?.containers ?? []).flatMap((c) => attempt(() => [{ ...withDefaults(c), host: host.peer ?? data.host, peer: host.peer, key: keyOf(host.peer, c.name), canAct: host.canAct }], [])),
  );
  replace(els.host, data.host);
  replace(els.checked, ` checked ${fromNow(data.checked_at)}`);
  els.checked.title = localTime(data.checked_at);
  const viewer = state.session !== null && !isAdmin();
  els.readOnly.hidden = data.update && !viewer;
  replace(
    els.readOnly,
    viewer
      ? `Read-only: you are signed in as ${state.session!.name}, a viewer: you see everything and change nothing.`
      : "Read-only: http_api.update is off on this svc, so nothing here can update, skip, snooze or roll back. Turn it on (--http-api-update, SVC_HTTP_API_UPDATE) to act from this page.",
  );
  renderPeers();
  renderSummary();
  renderExcluded(data.host);
  const hosts = [data.host, ...state.peers.map((p) => p.name)];
  replace(els.hostFilter, h("option", { value: "" }, "all"), ...hosts.map((host) => h("option", { value: host, selected: host === state.filters.host }, host)));
  renderRows();
}

/** A peer's container from an older svc may lack what the page shows: nothing then, not an error. */
function withDefaults(c: ContainerOverview): ContainerOverview {
  const given: Partial<ContainerOverview["policy"]> | undefined = c.policy;
  const policy = { monitor_only: false, no_pull: false, tag_policy: null, min_image_age: null, hooks: [], ignored_hooks: [], update_window: null, ...given };
  return { ...c, applies: c.applies ?? null, applies_at: c.applies_at ?? null, kind: c.kind ?? "container", group: c.group ?? null, version: c.version ?? "", available_version: c.available_version ?? null, update_kind: c.update_kind ?? null, policy, last_cycle: c.last_cycle ?? null, last_update: c.last_update ?? null };
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

/**
 * A peer that does not answer, or runs a cycle: said once above the table, its rows kept as last
 * known. Entries of its answer this svc left out (not what svc answers) are named.
 */
function renderPeers(): void {
  const notes = state.peers.filter((p) => !p.up || p.busy);
  const dropped = state.peers.filter((p) => p.dropped?.length);
  els.peers.hidden = notes.length + dropped.length === 0;
  replace(
    els.peers,
    ...dropped.map((p) => h("p", { class: "peer-dropped", "data-peer": p.name }, `${p.name}: left out of its answer (not what svc answers): ${p.dropped.join("; ")}.`)),
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
  // a row the filters cannot read is shown: it says itself what is wrong with it (shownRow)
  return state.rows.filter((row) => attempt(() => matches(row, state.filters), true));
}

/** What `work` gives, or `otherwise` when it throws: one entry of another shape must not stop the page. */
function attempt<T>(work: () => T, otherwise: T): T {
  try {
    return work();
  } catch {
    return otherwise;
  }
}

// ---- at a glance: the summary bar ----

const BUCKET_WORDS: Record<Bucket, string> = { major: "major", minor: "minor", patch: "patch", digest: "digest", tag: "tag", held: "held or pending", failed: "failed or rolled back" };

/** Counts of every row (whatever the filters), each a toggle that filters the table to what it counted. */
function renderSummary(): void {
  const counts = countRows(state.rows);
  const toggle = (bucket: Bucket, count: number) =>
    h(
      "button",
      {
        type: "button",
        class: `count count-${bucket}`,
        "data-bucket": bucket,
        "aria-pressed": String(state.filters.bucket === bucket),
        disabled: count === 0 && state.filters.bucket !== bucket,
        onclick: () => ((state.filters.bucket = state.filters.bucket === bucket ? "" : bucket), renderSummary(), renderRows()),
      },
      h("strong", {}, String(count)),
      ` ${BUCKET_WORDS[bucket]}`,
    );
  const kinds = UPDATE_KINDS.filter((kind) => kind !== "tag" || counts.by_kind.tag > 0);
  const limits = (state.data?.rate_limits ?? []).map((limit) => ({ limit, ...rateLimitWords(limit) }));
  const hosts = state.peers.length ? [...new Set(state.rows.map((row) => row.host))] : [];
  replace(
    els.summary,
    h("p", { class: "total" }, counts.updates === 0 ? "Everything is up to date." : `${counts.updates} ${counts.updates === 1 ? "update" : "updates"} available`),
    h("div", { class: "counts", role: "group", "aria-label": "Show only" }, ...kinds.map((kind) => toggle(kind, counts.by_kind[kind])), toggle("held", counts.held), toggle("failed", counts.failed)),
    hosts.length > 1 &&
      h(
        "div",
        { class: "counts hosts", role: "group", "aria-label": "Updates per host" },
        ...hosts.map((host) => {
          const pressed = state.filters.host === host;
          const choose = () => ((state.filters.host = pressed ? "" : host), (els.hostFilter.value = state.filters.host), renderSummary(), renderRows());
          return h("button", { type: "button", class: "count", "data-host": host, "aria-pressed": String(pressed), onclick: choose }, h("strong", {}, String(countRows(state.rows.filter((row) => row.host === host)).updates)), ` on ${host}`);
        }),
      ),
    limits.length > 0 &&
      h(
        "p",
        { class: "limits" },
        ...limits.map(({ limit, text, low }) => h("span", { class: low ? "limit low" : "limit", role: low ? "alert" : null, title: `${limit.remaining} left at ${localTime(limit.at)}` }, text)),
      ),
  );
}

// ---- the table: rows grouped by compose project and Swarm stack ----

interface Group {
  key: string;
  /** the project's or stack's name; "standalone" for the rest */
  name: string;
  kind: "compose" | "stack" | "standalone";
  peer: string | null;
  host: string;
  rows: Row[];
}

const GROUP_WORDS: Record<Group["kind"], string> = { compose: "compose project", stack: "Swarm stack", standalone: "" };

/** Rows by host and group; within a host the named groups by name, the standalone rows last. */
function groupsOf(rows: Row[]): Group[] {
  const groups = new Map<string, Group>();
  for (const row of rows) {
    const kind = row.group?.kind ?? "standalone";
    const name = row.group?.name ?? "standalone";
    const key = `${row.peer ?? ""}/${kind}/${name}`;
    let group = groups.get(key);
    if (!group) groups.set(key, (group = { key, name, kind, peer: row.peer, host: row.host, rows: [] }));
    group.rows.push(row);
  }
  const order = (g: Group) => `${g.peer ?? ""}\u0000${g.kind === "standalone" ? "\u0001" : ""}${g.name}`;
  return [...groups.values()].sort((a, b) => order(a).localeCompare(order(b)));
}

function renderRows(): void {
  const rows = visibleRows();
  const anyAct = state.rows.some((row) => row.canAct);
  for (const key of state.selected) if (!state.rows.some((row) => row.key === key && row.canAct)) state.selected.delete(key);
  els.selectAll.disabled = !anyAct;
  els.selectAll.checked = rows.length > 0 && rows.every((row) => state.selected.has(row.key));
  for (const body of [...els.table.tBodies]) body.remove();
  if (!rows.length) {
    els.table.append(h("tbody", {}, h("tr", {}, h("td", { colspan: 7, class: "empty" }, state.rows.length ? "No container matches the filters." : "svc watches no container."))));
  } else {
    const groups = groupsOf(rows);
    // only standalone containers: one plain list, no heading
    const headed = groups.some((group) => group.kind !== "standalone");
    els.table.append(...groups.map((group) => renderGroup(group, headed)));
  }
  renderBulk(anyAct);
}

/** A group's rows under a heading that folds them away, with its counts and "Update stack". */
function renderGroup(group: Group, headed: boolean): HTMLTableSectionElement {
  const collapsed = headed && state.collapsed.has(group.key);
  const body = h("tbody", { class: "group", "data-group": group.name, "data-group-kind": group.kind });
  if (headed) body.append(groupHeading(group, collapsed));
  if (!collapsed) body.append(...group.rows.map(shownRow));
  return body;
}

function groupHeading(group: Group, collapsed: boolean): HTMLTableRowElement {
  const counts = countRows(group.rows);
  const where = group.peer === null ? "" : ` on ${group.peer}`;
  const parts = [`${counts.containers} ${counts.containers === 1 ? "container" : "containers"}`];
  if (counts.updates) parts.push(`${counts.updates} ${counts.updates === 1 ? "update" : "updates"}`);
  if (counts.held) parts.push(`${counts.held} held`);
  if (counts.failed) parts.push(`${counts.failed} failed`);
  const toggle = h(
    "button",
    { type: "button", class: "group-toggle", "data-key": group.key, "aria-expanded": String(!collapsed), onclick: () => (collapsed ? state.collapsed.delete(group.key) : state.collapsed.add(group.key), renderRows(), focusToggle(group.key)) },
    h("span", { class: "chevron", "aria-hidden": "true" }, collapsed ? "▸" : "▾"),
    h("strong", {}, group.name + where),
    group.kind !== "standalone" && h("span", { class: "marker" }, GROUP_WORDS[group.kind]),
    h("span", { class: "group-counts" }, parts.join(" · ")),
  );
  const stale = group.rows.filter(updatableNow);
  const label = `${GROUP_WORDS[group.kind]} ${group.name}${where}`.trim();
  const updateStack =
    group.kind !== "standalone" &&
    stale.length > 0 &&
    h(
      "button",
      { type: "button", class: "primary", disabled: state.acting, "aria-label": `Update stack ${group.name}${where}`, onclick: () => void updateContainers(stale, `the ${stale.length} containers of ${label} with an update (${stale.map((row) => row.name).join(", ")}), in their dependency order`) },
      `Update stack (${stale.length})`,
    );
  return h("tr", { class: "group-heading" }, h("th", { colspan: 7, scope: "rowgroup" }, h("div", { class: "group-bar" }, toggle, updateStack)));
}

/** The keyboard stays on a group's heading as it folds and unfolds (the table is drawn anew). */
function focusToggle(key: string): void {
  for (const toggle of els.table.querySelectorAll<HTMLButtonElement>(".group-toggle")) if (toggle.dataset.key === key) toggle.focus();
}

/**
 * Whether an Update of this row applies something now (the row's Update, Update stack, Update
 * all): the page may act there, and a cycle would apply the newer image. Held back (monitor
 * only, min_image_age, a snooze), an update now would leave it as it is.
 */
const updatableNow = (c: Row): boolean => c.canAct && c.would_update;

/** "web", or "web on nas" for a peer's: what a button's label names. */
const labelOf = (c: Row): string => (c.peer === null ? c.name : `${c.name} on ${c.peer}`);

/** A row, or in its place what keeps it from being shown: the other rows are shown whatever one holds. */
function shownRow(c: Row): HTMLTableRowElement {
  try {
    return renderRow(c);
  } catch (failure) {
    return h("tr", { "data-container": String(c.name), "data-host": String(c.host), class: "broken" }, h("td", { colspan: 7, class: "error" }, `${labelOf(c)} cannot be shown: ${messageOf(failure)}`));
  }
}

/**
 * One row, from one entry of GET /v1/containers: everything it shows comes from the entry (and
 * whether its host is reachable), so what a row says is added here and nowhere else.
 */
function renderRow(c: Row): HTMLTableRowElement {
  const select = h("input", { type: "checkbox", "aria-label": `Select ${labelOf(c)}`, checked: state.selected.has(c.key), disabled: !c.canAct });
  select.addEventListener("change", () => (select.checked ? state.selected.add(c.key) : state.selected.delete(c.key), renderBulk(true)));
  const peerDown = c.peer !== null && state.peers.some((p) => p.name === c.peer && !p.up);
  return h(
    "tr",
    { "data-container": c.name, "data-host": c.host, class: [c.available_version ? "has-update" : "", peerDown ? "unreachable" : ""].join(" ").trim() },
    h("td", { class: "select" }, select),
    h("td", { "data-label": "Container" }, h("strong", { class: "name" }, c.name, c.kind === "service" && h("span", { class: "marker", title: "a Swarm service: Swarm's rolling update replaces its tasks" }, "service")), h("span", { class: "image" }, c.image), state.peers.length > 0 && h("span", { class: "where" }, peerDown ? `${c.host} (unreachable: last known)` : c.host)),
    h("td", { "data-label": "Running" }, h("span", { class: "version", title: c.current_digest ?? "" }, shortDigest(c.version))),
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
      ? h("span", { class: `badge kind-${c.update_kind ?? "digest"}`, title: c.available_image ?? c.available_digest ?? "" }, c.available_version, h("span", { class: "kind" }, ` ${c.update_kind ?? ""}`))
      : h("span", { class: "muted" }, "up to date"),
    age && h("span", { class: "age", title: [c.created_at && `built ${localTime(c.created_at)}`, c.first_seen_at && `first seen ${localTime(c.first_seen_at)}`, c.eligible_at && `eligible ${localTime(c.eligible_at)}`].filter(Boolean).join("; ") }, age),
    link && h("a", { href: link, target: "_blank", rel: "noopener noreferrer", class: "notes" }, "Release notes"),
    releaseNotesCell(c.release_notes),
  );
}

function policyNotes(c: Row): Child[] {
  const notes: Child[] = [];
  if (c.snoozed_until) notes.push(h("span", { class: "note", title: localTime(c.snoozed_until) }, `snoozed until ${dayTime(c.snoozed_until)} (${fromNow(c.snoozed_until)})`));
  if (c.skipped) notes.push(h("span", { class: "note", title: c.skipped }, `skipped: ${shortDigest(c.skipped)}`));
  return notes;
}

/** The state in words; the raw state and reason on hover and in Details. */
function stateCell(c: Row): HTMLTableCellElement {
  const words = stateWords(c);
  const last = c.last_cycle && c.last_cycle.state !== "fresh" ? stateWords({ ...c.last_cycle, would_update: false, snoozed_until: null, eligible_at: null }) : null;
  return h(
    "td",
    { "data-label": "State" },
    h("span", { class: `state state-${c.state} tone-${words.tone}`, title: c.reason ?? c.state }, words.text),
    words.detail && h("span", { class: "reason", title: c.reason ?? "" }, words.detail),
    last && h("span", { class: "note", title: `${localTime(c.last_cycle!.at)}${c.last_cycle!.reason ? `: ${c.last_cycle!.reason}` : ""}` }, `last cycle ${fromNow(c.last_cycle!.at)}: ${last.text}${last.detail ? ` (${last.detail})` : ""}`),
    c.last_update && h("span", { class: "note", title: localTime(c.last_update.at) }, `updated ${fromNow(c.last_update.at)}: ${shortDigest(c.last_update.from_version)} → ${shortDigest(c.last_update.to_version ?? "?")}`),
  );
}

/** The row's primary action (Update where a cycle would apply it now, else Check) and a menu of the others. */
function rowActions(c: Row): Child[] {
  const reachable = c.peer === null || state.peers.some((p) => p.name === c.peer && p.up);
  if (!reachable) return [];
  const menu = h("details", { class: "menu" });
  const button = (text: string, label: string, action: () => void, className = "") =>
    h("button", { type: "button", "aria-label": `${label} ${labelOf(c)}`, class: className, disabled: state.acting, onclick: () => ((menu.open = false), action()) }, text);
  const check = () => button("Check", "Check", () => void act(() => load([c.name], false, c.peer)));
  // held by hold_breaking, or pending for its update window: the row's Update asks for it by name,
  // which applies it (docs/release-notes.md, docs/windows.md); Update stack and Update all leave them
  const canUpdate = updatableNow(c) || (c.canAct && (c.state === "held" || c.state === "pending"));
  const primary = canUpdate ? button("Update", "Update", () => void updateContainers([c]), "primary") : check();
  const more: Child[] = [canUpdate && check(), button("Details", "Details of", () => void showDetails(c)), button("History", "History of", () => void showTimeline(c))];
  if (c.canAct) {
    if (c.available_version) more.push(button("Skip this version", "Skip this version of", () => void act(async () => (await apiOf(c.peer).skip(c.name), say(`${labelOf(c)}: this version is skipped.`), await load([c.name], true, c.peer)))));
    more.push(button(c.snoozed_until ? "Snoozed: change" : "Snooze", "Snooze updates of", () => void snoozeContainer(c)));
    if (c.previous_image_id) more.push(button("Roll back", "Roll back", () => void rollBack(c), "danger"));
  }
  menu.append(h("summary", { "aria-label": `More actions for ${labelOf(c)}` }, "More"), h("div", { class: "menu-items" }, ...more.filter((item): item is HTMLButtonElement => item instanceof HTMLElement)));
  menu.addEventListener("toggle", () => menu.open && closeMenus(menu));
  menu.addEventListener("keydown", (event) => {
    if (event.key !== "Escape" || !menu.open) return;
    menu.open = false;
    menu.querySelector("summary")?.focus();
  });
  return [primary, menu];
}

/** One row menu open at a time. */
function closeMenus(except?: HTMLDetailsElement): void {
  for (const open of document.querySelectorAll<HTMLDetailsElement>("details.menu[open]")) if (open !== except) open.open = false;
}

/** Everything exact: digests, times, the raw state and reason, as the API gives them. */
async function showDetails(c: Row): Promise<void> {
  const facts: [string, string | null][] = [
    ["Image", c.image],
    ["Running digest", c.current_digest],
    ["Available image", c.available_image],
    ["Available digest", c.available_digest],
    ["Compose file change", c.compose_change?.length ? c.compose_change.join("; ") : null],
    ["State", c.state],
    ["Reason", c.reason],
    ["New image first seen", c.first_seen_at && `${localTime(c.first_seen_at)} (${c.first_seen_at})`],
    ["New image built", c.created_at && `${localTime(c.created_at)} (${c.created_at})`],
    ["Eligible", c.eligible_at && `${localTime(c.eligible_at)} (${c.eligible_at})`],
    ["Snoozed until", c.snoozed_until && `${localTime(c.snoozed_until)} (${c.snoozed_until})`],
    ["Skipped", c.skipped],
    ["Rollback goes back to", c.previous_image_id],
    ["Group", c.group ? `${GROUP_WORDS[c.group.kind]} ${c.group.name}` : null],
  ];
  const shown = facts.filter((fact): fact is [string, string] => Boolean(fact[1]));
  await infoDialog.show(`Details of ${labelOf(c)}`, h("dl", { class: "details" }, ...shown.flatMap(([term, value]) => [h("dt", {}, term), h("dd", {}, value)])));
}

function renderBulk(anyAct: boolean): void {
  if (!anyAct) return void replace(els.bulk);
  // what the filters show: with the host filter, everything stale on that host
  const stale = visibleRows().filter(updatableNow);
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
      for (const c of report.containers) lines.push(`${peer === null ? c.name : `${c.name} on ${peer}`}: ${outcomeWords(c)}`);
    }
    say(lines.length ? lines.join("; ") : "Nothing was updated.");
    await load(undefined, true);
  });
}

async function rollBack(c: Row): Promise<void> {
  const what =
    c.kind === "service"
      ? `Swarm rolls the service ${labelOf(c)} back to its previous spec (${shortDigest(c.previous_image_id ?? "")}); its tasks are replaced with the service's own update settings.`
      : `svc puts ${labelOf(c)} back on the image it ran before its last update (${shortDigest(c.previous_image_id ?? "")}); the container is stopped and started again.`;
  const ok = await confirmDialog.ask("Roll back and restart?", what, "Roll back");
  if (!ok) return;
  await act(async () => {
    say(`Rolling back ${labelOf(c)}...`);
    const result = await apiOf(c.peer).rollback(c.name);
    say(`${labelOf(c)}: ${result.state === "updated" ? "back on its earlier image" : outcomeWords(result)}.`);
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
    say(result.until ? `${labelOf(c)}: updates snoozed until ${dayTime(result.until)} (${fromNow(result.until)}).` : `${labelOf(c)}: snooze lifted.`);
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

const COUNTED = ["updated", "failed", "rolled_back", "stale", "held", "skipped"] as const;

function sessionItem(report: SessionSummary): HTMLLIElement {
  const counted = COUNTED.filter((key) => report.counts[key] > 0).map((key) => `${report.counts[key]} ${key.replace("_", " ")}`);
  const outcome = counted.length ? counted.join(", ") : `${report.counts.scanned} checked, nothing newer`;
  return h(
    "li",
    {},
    h("span", { class: "when", title: localTime(report.finished_at) }, fromNow(report.finished_at)),
    ` · ${report.trigger} · ${outcome}`,
    report.containers.length > 0 && h("ul", {}, ...report.containers.map((c) => h("li", { title: c.reason ?? "" }, h("span", { class: "name" }, c.name), `: ${outcomeWords(c)}`))),
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
  return h("li", {}, h("span", { class: "when", title: localTime(entry.at) }, localTime(entry.at)), ` · ${outcomeWords({ state: entry.state, reason: null })} · ${shortDigest(move)}`, entry.reason && h("span", { class: "reason", title: entry.reason }, plainText(entry.reason)));
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
  if (signedIn()) schedulePoll(state.running || state.acting ? 1000 : 10_000);
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

/** A cycle's outcome for one container, in words ("updated", "update failed (pull of ... failed)"). */
function outcomeWords(c: { state: string; reason: string | null }): string {
  const words = stateWords({ state: c.state as ContainerOverview["state"], reason: c.reason, would_update: false, snoozed_until: null, eligible_at: null });
  return words.detail ? `${words.text} (${words.detail})` : words.text;
}

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

/** With a token kept for this tab, the dashboard; without, an identity proxy in front may have signed the person in. */
async function start(): Promise<void> {
  if (token.get()) return showDashboard();
  try {
    state.session = await session(true);
    state.proxy = true;
    showDashboard();
  } catch {
    showSignIn();
  }
}

void start();
