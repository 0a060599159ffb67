/** Lazy loading: the rooms the API does not need are loaded once it listens, and what the updater remembers. */
import type { StateStore } from "../state/index.ts";

/**
 * The rooms behind the API, loaded once it listens (literal paths: bundled by `bun build
 * --compile`). The engine client alone takes tens of milliseconds to load on a small host.
 */
export async function loadRooms() {
  // One at a time, through the event loop between them: a module's evaluation holds the thread,
  // and requests that reach the just-opened port are answered in the gaps.
  const engine = await afterPendingRequests(() => import("../engine/index.ts"));
  const registry = await afterPendingRequests(() => import("../registry/index.ts"));
  const notify = await afterPendingRequests(() => import("../notify/index.ts"));
  const updater = await afterPendingRequests(() => import("../updater/index.ts"));
  const scheduler = await afterPendingRequests(() => import("../scheduler/index.ts"));
  const state = await afterPendingRequests(() => import("../state/index.ts"));
  const releases = await afterPendingRequests(() => import("../releases/index.ts"));
  const compose = await afterPendingRequests(() => import("../compose/index.ts"));
  return {
    ComposeFiles: compose.ComposeFiles,
    surveyProjects: compose.surveyProjects,
    createReleaseNotes: releases.createReleaseNotes,
    createDockerEngine: engine.createDockerEngine,
    createRegistry: registry.createRegistry,
    createNotifications: notify.createNotifications,
    createUpdater: updater.createUpdater,
    createScheduler: scheduler.createScheduler,
    ownContainerId: engine.ownContainerId,
    openState: state.openState,
    usableStateDir: state.usableStateDir,
    openHistory: state.openHistory,
  };
}

function afterPendingRequests<T>(load: () => Promise<T>): Promise<T> {
  return new Promise((resolve, reject) => setTimeout(() => load().then(resolve, reject), 0));
}

/** The updater's decisions, kept by the state room (across restarts with state_dir). */
export function rememberedBy(state: StateStore) {
  return {
    rolledBack: state.section("rolled_back"),
    firstSeen: state.section("first_seen"),
    skipped: state.section("skipped"),
    previous: state.section("previous"),
    leftImages: state.section("left_images"),
    snoozed: state.section("snoozed"),
    prePulled: state.section("pre_pulled"),
    unitMoves: state.section("unit_moves"),
    signers: state.section("signers"),
    signersPending: state.section("signers_pending"),
    buildBases: state.section("build_bases"),
  };
}
