/**
 * What the page loads from svc, into the store: the session, the containers (of this svc and its
 * peers), and what to say when a request fails. It draws nothing: the views are told (store.ts).
 */
import { ApiError, api, apiOf, type ContainerOverview, peers as peersOf, session } from "./api.ts";
import { messageOf, progressWords } from "./format.ts";
import { dataChanged, notify, say, state } from "./store.ts";

/** Who the page is signed in as: a viewer is offered no action. */
export async function loadSession(): Promise<void> {
  try {
    state.session = await session(state.proxy);
  } catch (failure) {
    await sayFailure(failure);
  }
}

/**
 * Loads what svc watches (a dry run on the host), or the named containers only, merged in; the
 * peers apart, so a slow one never holds the local list back. `quiet` after an action: its
 * outcome stays on screen.
 */
export async function load(names?: string[], quiet = false, peer: string | null = null): Promise<void> {
  if (!quiet) say(names ? `Checking ${names.join(", ")}...` : "Checking for newer images...");
  if (!names) void loadPeers();
  try {
    const answer = await apiOf(peer).containers(names);
    if (peer !== null) mergePeer(peer, answer.containers);
    else if (names && state.data)
      state.data = { ...state.data, containers: merged(state.data.containers, answer.containers) };
    else state.data = answer;
    if (!quiet) say(names ? `Checked ${names.join(", ")}.` : null);
    dataChanged();
    if (!names) notify("checked");
  } catch (failure) {
    if (failure instanceof ApiError && failure.status === 409 && !names) {
      // another tab's check, or a scheduled cycle: the list comes once it has ended
      state.checkWhenIdle = true;
      notify("waiting");
      // after an action (an update queued behind it may start at once): its outcome stays said
      if (quiet) return;
    }
    await sayFailure(failure);
  }
}

function merged(old: ContainerOverview[], fresh: ContainerOverview[]): ContainerOverview[] {
  const byName = new Map(fresh.map((c) => [c.name, c]));
  return old.map((c) => byName.get(c.name) ?? c);
}

function mergePeer(name: string, fresh: ContainerOverview[]): void {
  state.peers = state.peers.map((p) =>
    p.name === name && p.data ? { ...p, data: { ...p.data, containers: merged(p.data.containers, fresh) } } : p,
  );
}

async function loadPeers(): Promise<void> {
  try {
    state.peers = (await peersOf()).peers;
  } catch (failure) {
    // an svc without the page's newer endpoints, or none configured: only the local host
    if (!(failure instanceof ApiError && failure.status === 404)) say(messageOf(failure), "error");
    return;
  }
  dataChanged();
}

/** A 409 says what is running, as GET /v1/progress tells it. */
export async function sayFailure(failure: unknown): Promise<void> {
  if (failure instanceof ApiError && failure.status === 401) return;
  if (failure instanceof ApiError && failure.status === 409) {
    const running = await api.progress().then(
      (p) => p.running,
      () => null,
    );
    state.running = running;
    notify("running");
    say(
      `Refused: ${running ? progressWords(running) : "another update cycle is running."} ${state.checkWhenIdle ? "The list comes when it ends." : "Try again when it ends."}`,
      "error",
    );
    return;
  }
  say(messageOf(failure), "error");
}
