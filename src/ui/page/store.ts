/**
 * The page's state, and the one way a view learns that it changed: a view subscribes to the
 * topics it draws from, and whoever changes the state notifies them (synchronously, in the order
 * the views subscribed). So a module that loads or acts never calls a view, and no view calls
 * another: nothing imports back up (README.md of this folder).
 */
import {
  type ContainerOverview,
  type ContainersAnswer,
  type PeerView,
  type QueuedRequest,
  type RunningCycle,
  type Session,
  token,
} from "./api.ts";
import { type Filters, matches } from "./format.ts";

export type Row = ContainerOverview & { host: string; peer: string | null; key: string; canAct: boolean };

export interface State {
  data: ContainersAnswer | null;
  peers: PeerView[];
  rows: Row[];
  running: RunningCycle | null;
  /** the updates queued behind the running cycle (GET /v1/progress) */
  queued: QueuedRequest[];
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
  /** the line above the table: an action's outcome, or what went wrong */
  notice: { text: string | null; kind: "info" | "error" };
}

export const state: State = {
  data: null,
  peers: [],
  rows: [],
  running: null,
  queued: [],
  acting: false,
  checkWhenIdle: false,
  selected: new Set(),
  filters: { search: "", state: "", host: "", onlyUpdates: false, bucket: "" },
  session: null,
  proxy: false,
  collapsed: new Set(),
  notice: { text: null, kind: "info" },
};

/**
 * What changed: `data` svc's answers (containers, peers; the rows are drawn anew); `filters` the
 * filter form; `glance` a count of the summary bar pressed (the bucket, or a host); `selection` a
 * row's checkbox; `acting` an action started or ended; `running` the running cycle and the
 * updates queued behind it as GET /v1/progress told them; `notice` the line above the table; `checked` a full check answered
 * (the history has news); `waiting` a check was refused while a cycle ran (it is asked for again
 * once none runs); `copies` a data guard copy was deleted (the copies are listed anew).
 */
export type Topic =
  | "data"
  | "filters"
  | "glance"
  | "selection"
  | "acting"
  | "running"
  | "notice"
  | "checked"
  | "waiting"
  | "copies";

const listeners = new Map<Topic, (() => void)[]>();

export function subscribe(topics: Topic[], listener: () => void): void {
  for (const topic of topics) listeners.set(topic, [...(listeners.get(topic) ?? []), listener]);
}

/** Tells each listener of the topics once, even when it listens to several of them. */
export function notify(...topics: Topic[]): void {
  const called = new Set<() => void>();
  for (const topic of topics) {
    for (const listener of listeners.get(topic) ?? []) {
      if (called.has(listener)) continue;
      called.add(listener);
      listener();
    }
  }
}

/** The page is signed in: with a token, or by the proxy in front. */
export const signedIn = (): boolean => token.get() !== null || state.proxy;

export const isAdmin = (): boolean => state.session?.role === "admin";

export function say(text: string | null, kind: "info" | "error" = "info"): void {
  state.notice = { text, kind };
  notify("notice");
}

// ---- the rows: what svc and its peers answered, as the page shows it ----

/** A host the page shows: this svc (peer null) or a peer, with what it last said. */
export interface HostData {
  peer: string | null;
  answer: ContainersAnswer | null;
  /** whether the page may act there: actions on here, and there, and the peer answers */
  canAct: boolean;
}

/** Where a row lives, as the page keys it: the same name on two hosts stays two rows. */
const keyOf = (peer: string | null, name: string): string => `${peer ?? ""}/${name}`;

export function hostData(): HostData[] {
  const local = state.data;
  const localAct = local?.update === true && isAdmin();
  return [
    { peer: null, answer: local, canAct: localAct },
    ...state.peers.map((p) => ({
      peer: p.name,
      answer: p.data,
      canAct: localAct && p.up && !p.busy && p.data?.update === true,
    })),
  ];
}

/** svc or a peer answered: the rows are made anew, and every view drawing from them is told. */
export function dataChanged(): void {
  const data = state.data;
  if (!data) return;
  state.rows = hostData().flatMap((host) =>
    (host.answer?.containers ?? []).flatMap((c) =>
      attempt(
        () => [
          {
            ...withDefaults(c),
            host: host.peer ?? data.host,
            peer: host.peer,
            key: keyOf(host.peer, c.name),
            canAct: host.canAct,
          },
        ],
        [],
      ),
    ),
  );
  // a row that left, or may no longer be acted on, is no longer selected
  for (const key of state.selected)
    if (!state.rows.some((row) => row.key === key && row.canAct)) state.selected.delete(key);
  notify("data");
}

/** A peer's container from an older svc may lack what the page shows: nothing then, not an error. */
function withDefaults(c: ContainerOverview): ContainerOverview {
  const given: Partial<ContainerOverview["policy"]> | undefined = c.policy;
  const policy = {
    monitor_only: false,
    no_pull: false,
    tag_policy: null,
    min_image_age: null,
    hooks: [],
    ignored_hooks: [],
    update_window: null,
    ...given,
  };
  return {
    ...c,
    applies: c.applies ?? null,
    applies_at: c.applies_at ?? null,
    kind: c.kind ?? "container",
    group: c.group ?? null,
    version: c.version ?? "",
    available_version: c.available_version ?? null,
    update_kind: c.update_kind ?? null,
    policy,
    last_cycle: c.last_cycle ?? null,
    last_update: c.last_update ?? null,
  };
}

export function visibleRows(): Row[] {
  // a row the filters cannot read is shown: it says itself what is wrong with it (row.ts)
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

/**
 * Whether an Update of this row applies something now (the row's Update, Update stack, Update
 * all): the page may act there, and a cycle would apply the newer image. Held back (monitor
 * only, min_image_age, a snooze), an update now would leave it as it is.
 */
export const updatableNow = (c: Row): boolean => c.canAct && c.would_update;

/** "web", or "web on nas" for a peer's: what a button's label names. */
export const labelOf = (c: Row): string => (c.peer === null ? c.name : `${c.name} on ${c.peer}`);
