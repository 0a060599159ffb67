/**
 * What an update brings, against the sandbox engine and registry and the loopback stand-ins of the
 * source hosts (tests/support/release-hosts.ts): images built with OCI labels; the releases
 * between the running and the candidate version in the report and GET /v1/containers' overview;
 * hold_breaking; a host that is down never stops an update (docs/release-notes.md).
 */
import { afterAll, beforeEach, expect, test } from "bun:test";
import { type Config, type DeepPartial, defaultConfig } from "../../../src/config/index.ts";
import { silentLogger } from "../../../src/log/index.ts";
import { createReleaseNotes } from "../../../src/releases/index.ts";
import { ReleaseHosts } from "../../support/release-hosts.ts";
import { entryOf, expectState, Fixture, inspect, makeUpdater } from "./support.ts";

const fx = new Fixture();
const hosts = new ReleaseHosts();
afterAll(() => {
  hosts.stop();
  fx.cleanup();
}, 120_000);
beforeEach(() => {
  hosts.requests.length = 0;
});

/**
 * The GitHub stand-in is a GitHub Enterprise server on 127.0.0.1 (github_api_url): its repositories
 * are named on its own host, since github.com is read through api.github.com only (docs/release-notes.md).
 */
const SOURCE = "http://127.0.0.1/acme/app";
const HISTORY = [
  { tag: "v2.0.0", title: "2.0.0", body: "## Changes\n- the config moved" },
  { tag: "v1.2.0", title: "1.2.0", body: "- faster" },
  { tag: "v1.1.0", title: "1.1.0", body: "- a flag" },
  { tag: "v1.0.0", title: "1.0.0" },
];
hosts.set("github", "acme/app", HISTORY);

function labelled(version: string | null, source: string | null = SOURCE): string[] {
  return [
    'CMD ["/bin/sleep","3600"]',
    ...(source ? [`LABEL org.opencontainers.image.source=${source}`] : []),
    ...(version ? [`LABEL org.opencontainers.image.version=${version}`] : []),
  ];
}

async function harness(
  containers: string[],
  overrides: DeepPartial<Config> = {},
  apiUrl = hosts.apiUrls.github_api_url,
) {
  // a conditional request every cycle (the default cache_for would answer the next cycle from memory)
  const releases = createReleaseNotes(
    defaultConfig({ release_notes: { github_api_url: apiUrl, timeout: 2000, cache_for: 0 } }),
    silentLogger,
  );
  overrides.release_notes = { github_api_url: apiUrl, ...overrides.release_notes };
  return makeUpdater({ containers, ...overrides }, { releases });
}

test("a tag policy from 1.0.0 to 2.0.0: exactly the releases after 1.0.0 up to 2.0.0, the new major flagged breaking; updated; one request", async () => {
  const [old] = ["1.0.0", "2.0.0"].map((tag) => fx.image("tagged", { tag, changes: labelled(tag) }));
  const app = fx.run("tagged", old!.ref, { labels: { "svc.tag_policy": "semver:major" } });
  const h = await harness([app]);

  const overview = await h.updater.overview();
  const seen = overview!.containers.find((c) => c.name === app)!;
  expect(seen.release_notes).toMatchObject({
    source: SOURCE,
    from_version: "1.0.0",
    to_version: "2.0.0",
    breaking: 1,
    more: 0,
    problem: null,
  });
  expect(seen.release_notes!.releases.map((r) => [r.version, r.breaking])).toEqual([
    ["2.0.0", true],
    ["1.2.0", false],
    ["1.1.0", false],
  ]);
  expect(hosts.count()).toBe(1);

  const report = await h.updater.run("api");
  expect(expectState(report, app, "updated").releases).toEqual({
    source: SOURCE,
    from_version: "1.0.0",
    to_version: "2.0.0",
    count: 3,
    breaking: 1,
    // the link as the stand-in writes it (tests/support/release-hosts.ts)
    newest_url: "https://github.com/acme/app/releases/tag/v2.0.0",
    problem: null,
  });
  expect(hosts.requests.map((r) => r.status)).toEqual([200, 304]);

  // nothing stale: no request at all
  hosts.requests.length = 0;
  expectState(await h.updater.run("api"), app, "fresh");
  expect(hosts.count()).toBe(0);
}, 120_000);

test("a :latest digest change is told by the images' version labels", async () => {
  const first = fx.image("latest", { changes: labelled("1.1.0") });
  const app = fx.run("latest", first.ref);
  fx.image("latest", { changes: labelled("1.2.0") });
  const h = await harness([app]);
  const report = await h.updater.run("api", undefined, { dryRun: true });
  expect(entryOf(report, app).releases).toMatchObject({
    from_version: "1.1.0",
    to_version: "1.2.0",
    count: 1,
    breaking: 0,
  });
}, 120_000);

test("hold_breaking holds a breaking update in a run-once cycle; asked for by name, it is applied", async () => {
  const first = fx.image("held", { changes: labelled("1.2.0") });
  const app = fx.run("held", first.ref, { labels: { "svc.hold_breaking": "true" } });
  const newer = fx.image("held", { changes: labelled("2.0.0") });
  const h = await harness([app]);
  const held = expectState(await h.updater.run("run_once"), app, "held");
  expect(held.reason).toContain("release 2.0.0 (2.0.0) breaks: held by hold_breaking");
  expect(inspect(app).Image).toBe(first.id);

  const asked = await h.updater.run("api", { container: [app] });
  expectState(asked, app, "updated");
  expect(inspect(app).Image).toBe(newer.id);
}, 120_000);

test("an image without labels: the overview says no source is known; release_notes.sources names one", async () => {
  const first = fx.image("bare", { changes: labelled(null, null) });
  const app = fx.run("bare", first.ref);
  fx.image("bare", { changes: labelled(null, null) });
  const h = await harness([app]);
  const notes = (await h.updater.overview())!.containers.find((c) => c.name === app)!.release_notes;
  expect(notes?.problem).toBe("no source known: set the svc.release_notes label (docs/release-notes.md)");
  expect(hosts.count()).toBe(0);

  const image = first.ref.replace(/:latest$/, "");
  const mapped = await harness([app], { release_notes: { sources: [{ image, source: SOURCE }] } });
  const found = (await mapped.updater.overview())!.containers.find((c) => c.name === app)!.release_notes;
  expect(found).toMatchObject({
    source: SOURCE,
    source_from: "release_notes.sources",
    problem: "a new image of the same version (a digest change): no version to look up",
  });
}, 120_000);

test("the source host down: the update still happens, and the report says why there are no notes", async () => {
  const first = fx.image("down", { changes: labelled("1.0.0") });
  const app = fx.run("down", first.ref, { labels: { "svc.hold_breaking": "true" } });
  const newer = fx.image("down", { changes: labelled("2.0.0") });
  const h = await harness([app], {}, "http://127.0.0.1:9");
  const entry = expectState(await h.updater.run("api"), app, "updated");
  expect(entry.releases?.problem).toContain("cannot be reached");
  expect(inspect(app).Image).toBe(newer.id);
}, 120_000);
