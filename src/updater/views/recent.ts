/**
 * Readers are answered from a recent overview (docs/api.md): a dry run younger than
 * `OVERVIEW_FRESH_MS` is reused (unless the reader asks for a check now: the page, whose fetches
 * say `Cache-Control: no-cache`), and readers that ask while one is under way wait for that one,
 * so a dashboard left open, a `/v1/summary` widget or a peer's reads cost one dry run per period
 * at most, and never hold the lock a scheduled cycle needs for long. While a real cycle runs (or
 * waits to), what the overviews say is changing: readers are answered null (409, "a cycle runs"),
 * as before, without a dry run. While another dry run runs (the API's `POST /v1/check`), the last
 * overview of the filter is answered, its `checked_at` telling its age; a reader with another
 * filter and none kept waits for the other readers' dry run, then has its own. Anything that
 * changes what an overview says (a real cycle, a skip, a snooze, a rollback) forgets them.
 */
import type { UpdateFilter } from "../types.ts";
import type { Overview, OverviewOptions } from "./overview.ts";

/** How long a dry run's overview answers readers. */
export const OVERVIEW_FRESH_MS = 15_000;
/** Distinct filters remembered (the API's filters are the readers' own): the oldest goes first. */
const MAX_KEPT = 32;
/** How many other readers' dry runs a reader waits behind before it is answered 409 (a busy page). */
const MAX_TURNS = 4;

export interface RecentOverviews {
  overview(filter?: UpdateFilter, options?: OverviewOptions): Promise<Overview | null>;
  /** what the overviews say may have changed: the next reader gets a new dry run */
  forget(): void;
}

export function recentOverviews(
  dryRun: (filter?: UpdateFilter) => Promise<Overview | null>,
  changing: () => boolean,
  freshMs = OVERVIEW_FRESH_MS,
  now: () => number = Date.now,
): RecentOverviews {
  const kept = new Map<string, { at: number; overview: Overview }>();
  const underWay = new Map<string, Promise<Overview | null>>();
  let generation = 0;

  const read = async (key: string, filter: UpdateFilter | undefined): Promise<Overview | null> => {
    const asked = generation;
    let overview = await dryRun(filter);
    // another reader's dry run holds the runner: this filter's turn comes after it, a few times at most
    for (let turn = 0; overview === null && turn < MAX_TURNS; turn++) {
      const recent = kept.get(key)?.overview;
      const others = [...underWay].filter(([other]) => other !== key).map(([, pending]) => pending);
      if (recent || changing() || others.length === 0) return recent ?? null;
      await Promise.race(others).catch(() => {});
      overview = await dryRun(filter);
    }
    if (overview === null) return kept.get(key)?.overview ?? null;
    if (asked === generation) {
      kept.delete(key);
      kept.set(key, { at: now(), overview });
      if (kept.size > MAX_KEPT) kept.delete(kept.keys().next().value!);
    }
    return overview;
  };

  return {
    overview(filter, options = {}) {
      if (changing()) return Promise.resolve(null);
      const key = keyOf(filter);
      const recent = kept.get(key);
      if (!options.fresh && recent && now() - recent.at < freshMs) return Promise.resolve(recent.overview);
      let pending = underWay.get(key);
      if (!pending) {
        pending = read(key, filter).finally(() => underWay.delete(key));
        underWay.set(key, pending);
      }
      return pending;
    },
    forget() {
      generation++;
      kept.clear();
    },
  };
}

/** One key per filter, whatever the order its lists were given in. */
function keyOf(filter: UpdateFilter | undefined): string {
  const sorted = (list: readonly string[] | undefined) => [...(list ?? [])].sort();
  return JSON.stringify([sorted(filter?.container), sorted(filter?.image), sorted(filter?.stack)]);
}
