/** Names and image prefixes that select no container are told, with the reason or a close name. */
import { expect, test } from "bun:test";
import { defaultConfig } from "../../../src/config/index.ts";
import type { ContainerSummary } from "../../../src/engine/port.ts";
import { unmatchedFilters } from "../../../src/updater/selection/unmatched.ts";

const container = (name: string, more: Partial<ContainerSummary> = {}): ContainerSummary => ({
  id: name,
  name,
  image: `r.io/${name}:1`,
  imageId: "sha256:a",
  state: "running",
  labels: {},
  ...more,
});
const all = [
  container("web"),
  container("db", { state: "exited" }),
  container("lab", { labels: { "svc.scope": "lab" } }),
  container("web.svc-old-0123456789ab-running"),
];

test("a typo gets a close name, a container left out gets the rule, a matched name nothing", () => {
  const config = defaultConfig({ containers: ["wbe", "/web", "db", "lab", "nothing-like-it"] });
  expect(unmatchedFilters(all, config)).toEqual([
    "no container or compose project is named wbe (did you mean web?)",
    "db is not updated: it is not running (revive_stopped, include_restarting)",
    "lab is not updated: it belongs to a scope (svc.scope label) and this svc has none",
    "no container or compose project is named nothing-like-it",
  ]);
});

test("a compose project's name, or project/service, is a name; a typo of one is offered the nearest containers and projects", () => {
  const project = (name: string, service: string) =>
    container(name, { labels: { "com.docker.compose.project": "notes", "com.docker.compose.service": service } });
  const stack = [...all, project("notes-app-1", "app"), project("notes-db-1", "db"), container("note")];
  // selected: no problem (the cycle answered its containers)
  const answered = [{ name: "notes-app-1", image: "r.io/notes-app-1:1" }];
  expect(unmatchedFilters(stack, defaultConfig({ containers: ["notes"] }), {}, answered)).toEqual([]);
  expect(unmatchedFilters(stack, defaultConfig(), { container: ["notes/app"] }, answered)).toEqual([]);
  expect(unmatchedFilters(stack, defaultConfig({ containers: ["notse"] }))).toEqual([
    "no container or compose project is named notse (did you mean note or notes?)",
  ]);
  expect(unmatchedFilters(stack, defaultConfig({ containers: ["notes/ap"] }))).toEqual([
    "no container or compose project is named notes/ap (did you mean notes/app or notes/db?)",
  ]);
  // a name far longer than any container's is compared with nothing
  expect(unmatchedFilters(stack, defaultConfig({ containers: ["n".repeat(5000)] }))).toEqual([
    `no container or compose project is named ${"n".repeat(5000)}`,
  ]);
});

test("the API's filters too: a container name and an image prefix", () => {
  expect(unmatchedFilters(all, defaultConfig(), { container: ["web"], image: ["r.io/wbe", "r.io/web"] })).toEqual([
    "no container runs an image starting with r.io/wbe (did you mean r.io/web?)",
  ]);
  expect(unmatchedFilters(all, defaultConfig())).toEqual([]);
});

test("a name or image prefix another kind of target answered (a Swarm service) is no typo", () => {
  const service = { name: "shop_api", image: "r.io/shop/api:3" };
  const filter = { container: ["shop_api", "shop_apx"], image: ["r.io/shop"] };
  expect(unmatchedFilters(all, defaultConfig(), filter, [service])).toEqual([
    "no container or compose project is named shop_apx",
  ]);
  expect(unmatchedFilters(all, defaultConfig(), filter)).toEqual([
    "no container or compose project is named shop_api",
    "no container or compose project is named shop_apx",
    "no container runs an image starting with r.io/shop",
  ]);
});
