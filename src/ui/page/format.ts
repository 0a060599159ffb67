/** How the page words times, versions and policies. Pure: everything here returns text. */
import type { ContainerOverview, RunningCycle } from "./api.ts";

const relative = new Intl.RelativeTimeFormat(undefined, { numeric: "auto" });
const UNITS: [Intl.RelativeTimeFormatUnit, number][] = [
  ["day", 86_400_000],
  ["hour", 3_600_000],
  ["minute", 60_000],
  ["second", 1_000],
];

/** "3 hours ago", "in 2 days". */
export function fromNow(iso: string, now = Date.now()): string {
  const delta = Date.parse(iso) - now;
  for (const [unit, size] of UNITS) {
    if (Math.abs(delta) >= size || unit === "second") return relative.format(Math.round(delta / size), unit);
  }
  return iso;
}

export function localTime(iso: string): string {
  return new Date(iso).toLocaleString();
}

/** The policy as a few short phrases. */
export function policyWords(c: ContainerOverview): string[] {
  const words = [c.policy.monitor_only ? "monitor only" : "automatic"];
  if (c.policy.tag_policy) words.push(`tags: ${c.policy.tag_policy}`);
  if (c.policy.min_image_age) words.push(`min age ${c.policy.min_image_age}`);
  if (c.policy.no_pull) words.push("no pull");
  if (c.policy.update_window) words.push(`window: ${c.policy.update_window}`);
  if (c.policy.hooks.length) words.push(`hooks: ${c.policy.hooks.join(", ")}`);
  // a service's hook labels: Swarm runs its tasks, svc runs no hook in them
  if (c.policy.ignored_hooks?.length) words.push(`hooks not applied to a service: ${c.policy.ignored_hooks.join(", ")}`);
  return words;
}

/** When the newer image was seen and when it may be applied. */
export function ageWords(c: ContainerOverview, now = Date.now()): string | null {
  const parts: string[] = [];
  if (c.created_at) parts.push(`built ${fromNow(c.created_at, now)}`);
  else if (c.first_seen_at) parts.push(`seen ${fromNow(c.first_seen_at, now)}`);
  if (c.eligible_at) parts.push(Date.parse(c.eligible_at) > now ? `eligible ${fromNow(c.eligible_at, now)}` : "eligible now");
  return parts.length ? parts.join(", ") : null;
}

/** "An update cycle is running (api): web: pull, since 3 seconds ago." for the step under way. */
export function progressWords(running: RunningCycle, now = Date.now()): string {
  const trigger = running.trigger ? ` (${running.trigger})` : "";
  if (!running.current) return `svc is listing containers for a cycle or a check${trigger}.`;
  // a check (a dry run, or a cycle before it updates anything) only ever checks
  const what = running.containers.every((step) => step.step === "check") ? "svc is checking for newer images" : "An update cycle is running";
  return `${what}${trigger}: ${running.current.container}: ${running.current.step}, since ${fromNow(running.current.at, now)}.`;
}

/** Whether a container matches the search and the filters. */
export interface Filters {
  search: string;
  state: string;
  host: string;
  onlyUpdates: boolean;
}

export function matches(c: ContainerOverview & { host: string }, filters: Filters): boolean {
  if (filters.search && !c.name.toLowerCase().includes(filters.search.toLowerCase())) return false;
  if (filters.state && c.state !== filters.state) return false;
  if (filters.host && c.host !== filters.host) return false;
  if (filters.onlyUpdates && c.available_version === null) return false;
  return true;
}
