/**
 * What an update fixes and brings in, against the sandbox's engine and registry and a loopback
 * OSV stand-in (tests/support/osv.ts): two images built from the busybox root file system plus a
 * real dpkg status file (the older and the newer versions of glibc and openssl) and Debian's
 * os-release; a stale container; the report and GET /v1/containers' overview show what is fixed
 * and what is brought in; hold_if_introduces holds, and an update asked for by name is applied;
 * on_lookup_failure; min_image_age_unless_fixes, through the svc command with a notification;
 * a monitor-only container (nothing pulled: the report says why there is no diff) and one waiting
 * for its window (pre_pull's pull ahead gives the diff); nothing is sent when vulnerabilities are
 * off; real package databases read through the engine from images (alpine:3.18.0's installed
 * file, a CBL-Mariner 2.0 rpmdb.sqlite, this machine's own dpkg status) and records from OSV's own
 * test data served by the stand-in (tests/unit/vulns/fixtures/README.md names where each came
 * from) (docs/vulnerabilities.md).
 */
import { afterAll, expect, test } from "bun:test";
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { gunzipSync } from "bun";
import { createInventoryReader } from "../../../src/vulns/image.ts";
import { docker, sandbox } from "../../harness.ts";
import type { RunOptions } from "../../support/fixture.ts";
import {
  DEBIAN_RECORDS,
  OSV_TEST_DATA,
  type OsvRecordFixture,
  osvTestDataRecord,
  startOsvStandIn,
} from "../../support/osv.ts";
import { baseFlags, receiver, reportsIn, runSvc, stopAll, stopReceivers } from "../e2e/support.ts";
import { entryOf, expectState, Fixture, inspect, makeUpdater, TEST_SCOPE } from "../updater/support.ts";
import { closedWindow, debianImage, distroImage, dpkgStatus, OPENSSL_CRITICAL, removeBuildDirs } from "./support.ts";

const fx = new Fixture();
/**
 * Records made for the tests, as OSV's Alpine and Rocky Linux ones name their packages: OSV's own
 * test data holds none for Alpine 3.18 or Rocky Linux (its records are served beside them).
 */
const OTHER_RECORDS: OsvRecordFixture[] = [
  {
    id: "CVE-2099-0003",
    modified: "2099-01-01T00:00:00Z",
    affected: [
      {
        package: { ecosystem: "Alpine:v3.18", name: "openssl" },
        ranges: [{ type: "ECOSYSTEM", events: [{ introduced: "0" }, { fixed: "3.1.1-r0" }] }],
      },
    ],
  },
  {
    id: "RLSA-2099:0004",
    modified: "2099-01-01T00:00:00Z",
    affected: [
      {
        package: { ecosystem: "Rocky Linux:9", name: "openssl-libs" },
        ranges: [{ type: "ECOSYSTEM", events: [{ introduced: "0" }, { fixed: "1:3.0.7-28.el9" }] }],
      },
    ],
  },
];
const osv = startOsvStandIn([
  ...DEBIAN_RECORDS,
  OPENSSL_CRITICAL,
  ...OTHER_RECORDS,
  osvTestDataRecord(OSV_TEST_DATA.dsa3029),
  osvTestDataRecord(OSV_TEST_DATA.alpineMariadb),
]);
afterAll(async () => {
  await stopAll();
  stopReceivers();
  osv.stop();
  fx.cleanup();
  removeBuildDirs();
}, 120_000);

function staleContainer(what: string, options: RunOptions = {}) {
  const ref = `${sandbox().registry}/${fx.name(what)}:latest`;
  const old = debianImage(ref, dpkgStatus("2.36-9+deb12u1", "3.0.20-1"));
  const app = fx.run(what, ref, options);
  const newer = debianImage(ref, dpkgStatus("2.36-9+deb12u4", "3.0.21-1"));
  return { app, old, newer };
}

const on = (more: Record<string, unknown> = {}) => ({
  vulnerabilities: { enabled: true, osv_url: osv.url, timeout: 10_000, ...more },
});

test("the report and the overview say what the update fixes and brings in, from one OSV lookup", async () => {
  const { app } = staleContainer("diff");
  const h = await makeUpdater({ containers: [app], ...on() });
  osv.requests.length = 0;
  const report = await h.updater.run("api", undefined, { dryRun: true });
  const diff = entryOf(report, app).vulnerabilities!;
  expect(diff.problem).toBeNull();
  expect(diff.fixed.map((e) => [e.id, e.severity, e.package, e.version, e.fixed_version])).toEqual([
    ["DSA-5514-1", "high", "glibc", "2.36-9+deb12u1", "2.36-9+deb12u3"],
  ]);
  expect(diff.introduced.map((e) => [e.id, e.severity, e.score, e.package, e.version, e.fixed_version])).toEqual([
    ["DEBIAN-CVE-2099-0002", "critical", 9.8, "openssl", "3.0.21-1", "3.0.22-1"],
  ]);
  expect(diff.counts).toEqual({ fixed: 1, introduced: 1, still_open: 0 });
  // one batch for both images' packages, one record per vulnerability
  expect(osv.requests.filter((r) => r.startsWith("POST"))).toEqual(["POST /v1/querybatch"]);
  expect(osv.batchSizes.at(-1)).toBe(4);

  // the overview (GET /v1/containers) answers the diff kept for the pair: no new lookup
  osv.requests.length = 0;
  const seen = (await h.updater.overview())!.containers.find((c) => c.name === app)!;
  expect(seen.vulnerabilities?.fixed.map((e) => e.id)).toEqual(["DSA-5514-1"]);
  expect(seen.vulnerabilities?.introduced.map((e) => e.id)).toEqual(["DEBIAN-CVE-2099-0002"]);
  expect(osv.requests).toEqual([]);
  // the reading containers are gone
  const readers = docker(["ps", "-aq", "--filter", "label=svc.vulnerabilities.reader"]).stdout.trim();
  expect(readers).toBe("");
}, 240_000);

test("hold_if_introduces holds the update with the list; asked for by name, it is applied", async () => {
  const { app, old, newer } = staleContainer("hold");
  const h = await makeUpdater({ containers: [app], ...on({ hold_if_introduces: "high" }) });
  const held = expectState(await h.updater.run("run_once"), app, "held");
  expect(held.reason).toContain("the update brings in DEBIAN-CVE-2099-0002 (critical, openssl)");
  expect(held.reason).toContain('held by hold_if_introduces = "high"');
  expect(inspect(app).Image).toBe(old);

  const asked = await h.updater.run("api", { container: [app] });
  const updated = expectState(asked, app, "updated");
  expect(updated.vulnerabilities?.fixed.map((e) => e.id)).toEqual(["DSA-5514-1"]);
  expect(inspect(app).Image).toBe(newer);
}, 240_000);

test("the held update in a notification, through the svc command", async () => {
  const { app, old } = staleContainer("told");
  const { bodies, url } = receiver();
  const run = await runSvc([
    ...baseFlags(),
    "--run-once",
    "--scope",
    TEST_SCOPE,
    "--vulnerabilities-enabled",
    "--vulnerabilities-osv-url",
    osv.url,
    "--vulnerabilities-hold-if-introduces",
    "high",
    "--notifications-urls",
    `generic+${url}?disabletls=yes`,
    app,
  ]);
  expect(run.code, run.svc.describe()).toBe(0);
  expect(inspect(app).Image).toBe(old);
  const told = bodies.join("\n");
  expect(told, run.svc.describe()).toContain(`held ${app}: `);
  expect(told).toContain("; vulnerabilities: fixes 1, 1 high; brings in 1, 1 critical");
}, 240_000);

test('a failed lookup is reported and never blocks, unless on_lookup_failure = "hold"', async () => {
  const { app, old } = staleContainer("failure");
  const holding = await makeUpdater({ containers: [app], ...on({ on_lookup_failure: "hold" }) });
  osv.failNext.push(503);
  const held = expectState(await holding.updater.run("run_once"), app, "held");
  expect(held.reason).toContain("OSV answered 503");
  expect(held.reason).toContain('on_lookup_failure = "hold"');
  expect(inspect(app).Image).toBe(old);

  const ignoring = await makeUpdater({ containers: [app], ...on() });
  osv.failNext.push(503);
  const updated = expectState(await ignoring.updater.run("run_once"), app, "updated");
  expect(updated.vulnerabilities?.problem).toBe("OSV lookup failed: OSV answered 503 to POST /v1/querybatch");
}, 240_000);

test("off by default: nothing is read, and nothing is sent", async () => {
  const { app } = staleContainer("off");
  const h = await makeUpdater({ containers: [app] });
  osv.requests.length = 0;
  const report = await h.updater.run("api", undefined, { dryRun: true });
  expect(entryOf(report, app).vulnerabilities).toBeUndefined();
  expect(osv.requests).toEqual([]);
}, 240_000);

test("min_image_age_unless_fixes: svc applies an update that fixes a high one at once, and says so", async () => {
  const { app, old, newer } = staleContainer("aged");
  const flags = (threshold: string, more: string[] = []) => [
    ...baseFlags(),
    "--run-once",
    "--scope",
    TEST_SCOPE,
    "--min-image-age",
    "24h",
    "--vulnerabilities-enabled",
    "--vulnerabilities-osv-url",
    osv.url,
    "--vulnerabilities-min-image-age-unless-fixes",
    threshold,
    ...more,
    app,
  ];
  const entryIn = (output: string) =>
    reportsIn(output)
      .at(-1)
      ?.containers.find((c: any) => c.name === app);

  // the fix is high, not critical: min_image_age waits, and the report says what the update would fix
  const waiting = await runSvc(flags("critical"));
  expect(waiting.code, waiting.svc.describe()).toBe(0);
  const held = entryIn(waiting.svc.output);
  expect(held?.state, waiting.svc.describe()).toBe("stale");
  expect(held.reason).toEndWith("(min_image_age)");
  expect(held.vulnerabilities.fixed.map((e: any) => e.id)).toEqual(["DSA-5514-1"]);
  expect(held.vulnerabilities.passed_min_age).toBeUndefined();
  expect(inspect(app).Image).toBe(old);

  const { bodies, url } = receiver();
  // a shoutrrr generic URL: the message's text, as a chat service gets it
  const generic = `generic+${url}?disabletls=yes`;
  const passing = await runSvc(flags("high", ["--notifications-urls", generic]));
  expect(passing.code, passing.svc.describe()).toBe(0);
  const updated = entryIn(passing.svc.output);
  expect(updated?.state, passing.svc.describe()).toBe("updated");
  expect(updated.vulnerabilities.passed_min_age).toBe(true);
  expect(inspect(app).Image).toBe(newer);
  expect(passing.svc.output).toContain("min_image_age passed over: the update fixes a known vulnerability");
  expect(bodies.join("\n"), passing.svc.describe()).toContain(
    "vulnerabilities: fixes 1, 1 high; brings in 1, 1 critical; min_image_age passed over",
  );
}, 240_000);

/** A stale container whose newer image is in the registry only, as a user's is. */
function newerNotHere(what: string, options: RunOptions = {}) {
  const stale = staleContainer(what, options);
  docker(["rmi", stale.newer]);
  return stale;
}
const here = (image: string) => docker(["image", "inspect", image], { allowFailure: true }).code === 0;

test("monitor-only without an SBOM: svc pulls nothing, and the report says why there is no diff", async () => {
  const { app, newer } = newerNotHere("watched");
  osv.requests.length = 0;
  const run = await runSvc([
    ...baseFlags(),
    "--run-once",
    "--scope",
    TEST_SCOPE,
    "--monitor-only",
    "--vulnerabilities-enabled",
    "--vulnerabilities-osv-url",
    osv.url,
    app,
  ]);
  expect(run.code, run.svc.describe()).toBe(0);
  const entry = reportsIn(run.svc.output)
    .at(-1)
    ?.containers.find((c: any) => c.name === app);
  expect(entry?.state, run.svc.describe()).toBe("stale");
  expect(entry.vulnerabilities.problem).toBe(
    "no SBOM for the new image; svc pulls nothing for a monitor-only container",
  );
  expect(entry.vulnerabilities.counts).toEqual({ fixed: 0, introduced: 0, still_open: 0 });
  // said plainly, not warned about at each cycle
  expect(run.svc.output).not.toContain("vulnerabilities not read");
  expect(here(newer)).toBe(false);
  expect(osv.requests).toEqual([]);
}, 240_000);

test("waiting for its window: pre_pull's pull ahead gives the diff; without pre_pull, the report says why", async () => {
  const window = { labels: { "svc.update_window": closedWindow() } };
  const ahead = newerNotHere("ahead", window);
  const h = await makeUpdater({ containers: [ahead.app], ...on() });
  const report = await h.updater.run("schedule");
  const pending = expectState(report, ahead.app, "pending");
  expect(pending.vulnerabilities?.problem).toBeNull();
  expect(pending.vulnerabilities?.read_from).toBe("package database");
  expect(pending.vulnerabilities?.fixed.map((e) => e.id)).toEqual(["DSA-5514-1"]);
  expect(pending.vulnerabilities?.introduced.map((e) => e.id)).toEqual(["DEBIAN-CVE-2099-0002"]);
  // pulled once, ahead of its window (the window's update pulls nothing more), and not applied
  const actions = h.audit.entries.filter((e) => e.container === ahead.app).map((e) => e.action);
  expect(actions).toEqual(["pull"]);
  expect(here(ahead.newer)).toBe(true);
  expect(inspect(ahead.app).Image).toBe(ahead.old);
  // GET /v1/containers answers the diff kept for the pair
  const seen = (await h.updater.overview())!.containers.find((c) => c.name === ahead.app)!;
  expect(seen.vulnerabilities?.introduced.map((e) => e.id)).toEqual(["DEBIAN-CVE-2099-0002"]);

  const idle = newerNotHere("idle", window);
  const without = await makeUpdater({ containers: [idle.app], pre_pull: false, ...on() });
  const waiting = expectState(await without.updater.run("schedule"), idle.app, "pending");
  expect(waiting.vulnerabilities?.problem).toBe(
    "no SBOM for the new image; nothing is pulled ahead of its window for it: read when its window opens",
  );
  expect(without.audit.entries.filter((e) => e.container === idle.app)).toEqual([]);
  expect(here(idle.newer)).toBe(false);
}, 240_000);

/** The real package databases and OSV records of tests/unit/vulns/fixtures (its README names each one's repository, path and commit). */
const unitFixture = (name: string) => readFileSync(join(import.meta.dir, "../../unit/vulns/fixtures", name));

test("alpine:3.18.0's installed file (osv-scalibr's test data) through the engine: every package, origin and version", async () => {
  const ref = `${sandbox().registry}/${fx.name("alpine")}:latest`;
  const files = {
    // osv-scanner's test data: an Alpine 3.18 image's os-release
    "etc/os-release": unitFixture("alpine-3.18-os-release"),
    // osv-scalibr's test data: the alpine:3.18.0 image's apk database
    "lib/apk/db/installed": unitFixture("alpine-3.18-installed"),
  };
  const old = distroImage(ref, files);
  const app = fx.run("alpine", ref);
  distroImage(ref, files);

  const h = await makeUpdater({ containers: [app], ...on() });
  const read = await createInventoryReader(h.engine).read(old);
  expect(read.inventory?.ecosystem).toBe("Alpine:v3.18");
  const packages = read.inventory?.packages ?? [];
  // as osv-scalibr's apk extractor test expects from the same file
  expect(packages).toHaveLength(15);
  expect(packages.filter((p) => p.queryName === "openssl").map((p) => [p.name, p.version])).toEqual([
    ["libcrypto3", "3.1.0-r4"],
    ["libssl3", "3.1.0-r4"],
  ]);
  expect(packages.find((p) => p.name === "libc-utils")).toMatchObject({ queryName: "libc-dev", version: "0.7.2-r5" });
  expect(packages.find((p) => p.name === "busybox-binsh")).toMatchObject({
    queryName: "busybox",
    version: "1.36.0-r9",
  });

  osv.requests.length = 0;
  const diff = entryOf(await h.updater.run("api", undefined, { dryRun: true }), app).vulnerabilities!;
  expect(diff.problem).toBeNull();
  expect(diff.read_from).toBe("package database");
  // each origin and version asked once: 10 origins for 15 packages, the same in both images
  expect(osv.batchSizes.at(-1)).toBe(10);
  // OSV's record for Alpine's mariadb names v3.12 to v3.16 only: nothing here is affected by it
  expect(diff.still_open.map((e) => [e.id, e.package, e.version, e.fixed_version])).toEqual([
    ["CVE-2099-0003", "openssl", "3.1.0-r4", "3.1.1-r0"],
  ]);
  expect(diff.counts).toEqual({ fixed: 0, introduced: 0, still_open: 1 });
}, 240_000);

test("Debian's DSA-3029-1 as OSV's test data has it: the update that fixes nginx says so", async () => {
  const ref = `${sandbox().registry}/${fx.name("wheezy")}:latest`;
  const wheezy = (nginx: string) => ({
    "etc/os-release": 'PRETTY_NAME="Debian GNU/Linux 7 (wheezy)"\nID=debian\nVERSION_ID="7"\n',
    "var/lib/dpkg/status": [
      "Package: nginx-light",
      "Status: install ok installed",
      "Architecture: amd64",
      "Source: nginx",
      `Version: ${nginx}`,
      "Description: nginx web/proxy server (basic version), a status paragraph made for the test",
      "",
    ].join("\n"),
  });
  distroImage(ref, wheezy("1.2.1-2.2+wheezy2"));
  const app = fx.run("wheezy", ref);
  distroImage(ref, wheezy("1.2.1-2.2+wheezy3"));
  const h = await makeUpdater({ containers: [app], ...on() });
  const diff = entryOf(await h.updater.run("api", undefined, { dryRun: true }), app).vulnerabilities!;
  expect(diff.problem).toBeNull();
  expect(diff.fixed.map((e) => [e.id, e.aliases, e.severity, e.package, e.version, e.fixed_version])).toEqual([
    ["DSA-3029-1", ["CVE-2014-3616"], "unknown", "nginx", "1.2.1-2.2+wheezy2", "1.2.1-2.2+wheezy3"],
  ]);
  expect(diff.counts).toEqual({ fixed: 1, introduced: 0, still_open: 0 });
}, 240_000);

test("rpm databases through the engine: a CBL-Mariner 2.0 image's (go-rpmdb's test data), and Rocky Linux's epoch", async () => {
  // go-rpmdb's test data: left in WAL mode, as rpm leaves it; the image has no os-release
  const mariner = `${sandbox().registry}/${fx.name("mariner")}:latest`;
  const marinerFiles = { "var/lib/rpm/rpmdb.sqlite": gunzipSync(unitFixture("mariner-2.0-rpmdb.sqlite.gz")) };
  const marinerImage = distroImage(mariner, marinerFiles);
  const marinerApp = fx.run("mariner", mariner);
  distroImage(mariner, marinerFiles);

  // made with Debian's rpm (rpmbuild, then --justdb), named as Rocky Linux 9's packages: the
  // same database in both images (a newer image of other files), so what it has is still open
  const rocky = `${sandbox().registry}/${fx.name("rocky")}:latest`;
  const rockyFiles = {
    "etc/os-release": unitFixture("rocky-os-release"),
    "var/lib/rpm/rpmdb.sqlite": unitFixture("rpmdb.sqlite"),
  };
  distroImage(rocky, rockyFiles);
  const rockyApp = fx.run("rocky", rocky);
  distroImage(rocky, rockyFiles);

  const h = await makeUpdater({ containers: [marinerApp, rockyApp], ...on() });
  const read = await createInventoryReader(h.engine).read(marinerImage);
  const packages = read.inventory?.packages ?? [];
  expect(packages).toHaveLength(129);
  const versionOf = (name: string) => packages.find((p) => p.name === name)?.version;
  // go-rpmdb's own test reads curl 7.76.0-6.cm2 from the same file
  expect(versionOf("curl")).toBe("7.76.0-6.cm2");
  expect(versionOf("openssl")).toBe("1.1.1k-7.cm2");
  expect(versionOf("ca-certificates-base")).toBe("1:2.0.0-1.cm2");

  const report = await h.updater.run("api", undefined, { dryRun: true });
  expect(entryOf(report, marinerApp).vulnerabilities!.problem).toBe(
    "the running image's distribution (no /etc/os-release) has no OSV ecosystem svc knows",
  );
  const rockyDiff = entryOf(report, rockyApp).vulnerabilities!;
  expect(rockyDiff.problem).toBeNull();
  // rpm's order, the epoch first
  expect(rockyDiff.still_open.map((e) => [e.id, e.package, e.version, e.fixed_version])).toEqual([
    ["RLSA-2099:0004", "openssl-libs", "1:3.0.7-27.el9", "1:3.0.7-28.el9"],
  ]);
  expect(rockyDiff.counts).toEqual({ fixed: 0, introduced: 0, still_open: 1 });
}, 240_000);

/** This machine's installed packages as dpkg itself names them for OSV: each source package and its version, once. */
function dpkgQuerySources(): { sources: Set<string>; glibc: string } {
  const lines = execFileSync("dpkg-query", ["-W", "-f", "${db:Status-Status} ${source:Package} ${source:Version}\\n"], {
    encoding: "utf8",
  }).split("\n");
  const sources = new Set(
    lines.filter((line) => line.startsWith("installed ")).map((line) => line.slice("installed ".length)),
  );
  const glibc = [...sources].find((source) => source.startsWith("glibc "))!.split(" ")[1]!;
  return { sources, glibc };
}

test.skipIf(!existsSync("/var/lib/dpkg/status") || Bun.which("dpkg-query") === null)(
  "this machine's own dpkg status in an image: every installed package asked about as dpkg-query names it",
  async () => {
    const { sources, glibc } = dpkgQuerySources();
    const status = readFileSync("/var/lib/dpkg/status", "utf8");
    const ref = `${sandbox().registry}/${fx.name("machine")}:latest`;
    debianImage(ref, status);
    const app = fx.run("machine", ref);
    debianImage(ref, status);
    const affectsThisGlibc: OsvRecordFixture = {
      id: "DEBIAN-CVE-2099-0005",
      modified: "2099-01-01T00:00:00Z",
      affected: [
        {
          package: { ecosystem: "Debian:12", name: "glibc" },
          ranges: [{ type: "ECOSYSTEM", events: [{ introduced: glibc }] }],
        },
      ],
    };
    osv.records.set(affectsThisGlibc.id, affectsThisGlibc);
    try {
      const h = await makeUpdater({ containers: [app], ...on() });
      const diff = entryOf(await h.updater.run("api", undefined, { dryRun: true }), app).vulnerabilities!;
      expect(diff.problem).toBeNull();
      // both images hold the same packages: one query per source package and version
      expect(osv.batchSizes.at(-1)).toBe(sources.size);
      expect(diff.still_open.find((e) => e.id === affectsThisGlibc.id)).toMatchObject({
        package: "glibc",
        version: glibc,
      });
    } finally {
      osv.records.delete(affectsThisGlibc.id);
    }
  },
  240_000,
);
