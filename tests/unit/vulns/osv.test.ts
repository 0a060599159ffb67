/**
 * The OSV client against a loopback stand-in answering as OSV does (tests/support/osv.ts): one
 * batch for every package, OSV's limit of 1,000 queries a request, its pages, records kept by id
 * and `modified`, and every way an answer can fail: a status, a slow answer, 32 MiB.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { diffPairs, diffSummary, type ImagePair } from "../../../src/vulns/diff.ts";
import { parseApkInstalled, parseDpkgStatus, parseOsRelease } from "../../../src/vulns/inventory.ts";
import { createOsvClient } from "../../../src/vulns/osv.ts";
import { cvss3BaseScore, severityOf } from "../../../src/vulns/severity.ts";
import {
  DEBIAN_RECORDS,
  OSV_TEST_DATA,
  type OsvRecordFixture,
  type OsvStandIn,
  osvTestDataRecord,
  startOsvStandIn,
} from "../../support/osv.ts";

let standIn: OsvStandIn | undefined;
afterEach(() => standIn?.stop());

const debian = parseOsRelease('ID=debian\nVERSION_ID="12"');
const status = (packages: [string, string, string?][]) =>
  parseDpkgStatus(
    packages
      .map(([name, version, source]) =>
        [
          `Package: ${name}`,
          "Status: install ok installed",
          ...(source ? [`Source: ${source}`] : []),
          `Version: ${version}`,
        ].join("\n"),
      )
      .join("\n\n"),
    debian,
  );

const OPENSSL: OsvRecordFixture = {
  id: "DEBIAN-CVE-2099-0001",
  modified: "2099-01-01T00:00:00Z",
  summary: "openssl: a flaw made for the tests",
  aliases: ["CVE-2099-0001"],
  affected: [
    {
      package: { ecosystem: "Debian:12", name: "openssl" },
      ranges: [{ type: "ECOSYSTEM", events: [{ introduced: "3.0.20-1" }] }],
    },
  ],
  database_specific: { severity: "HIGH" },
};

describe("the diff of two images, from one lookup", () => {
  test("fixed, introduced and still open, with severity, package and fixed version", async () => {
    standIn = startOsvStandIn([...DEBIAN_RECORDS, OPENSSL]);
    const client = createOsvClient({ url: standIn.url, timeoutMs: 10_000 });
    const running = status([
      ["libc6", "2.36-9+deb12u1", "glibc"],
      ["libssl3", "3.0.20-1", "openssl"],
    ]);
    const newer = status([
      ["libc6", "2.36-9+deb12u4", "glibc"],
      ["libssl3", "3.0.21-1", "openssl"],
    ]);
    const pairs = new Map<string, ImagePair>([
      ["app", { running: { inventory: running }, candidate: { inventory: newer } }],
    ]);
    const diff = (await diffPairs(client, pairs)).get("app")!;
    expect(diff.problem).toBeNull();
    expect(diff.fixed).toEqual([
      {
        id: "DSA-5514-1",
        aliases: ["CVE-2023-4911"],
        summary: "glibc - security update",
        severity: "high",
        score: 7.8,
        package: "glibc",
        version: "2.36-9+deb12u1",
        fixed_version: "2.36-9+deb12u3",
      },
    ]);
    expect(diff.introduced).toEqual([]);
    expect(diff.still_open.map((e) => [e.id, e.severity, e.fixed_version])).toEqual([
      ["DEBIAN-CVE-2099-0001", "high", null],
    ]);
    expect(diffSummary(diff)).toBe("fixes 1, 1 high");
    // one batch for both images (the two libc6 and two libssl3 versions), then one record each
    expect(standIn.requests.filter((r) => r.startsWith("POST"))).toHaveLength(1);
    expect(standIn.batchSizes).toEqual([4]);
    expect(standIn.requests.filter((r) => r.startsWith("GET")).sort()).toEqual([
      "GET /v1/vulns/DEBIAN-CVE-2099-0001",
      "GET /v1/vulns/DSA-5514-1",
    ]);
  });

  test("an image going back brings the vulnerability in", async () => {
    standIn = startOsvStandIn(DEBIAN_RECORDS);
    const client = createOsvClient({ url: standIn.url, timeoutMs: 10_000 });
    const pairs = new Map<string, ImagePair>([
      [
        "app",
        {
          running: { inventory: status([["libc6", "2.36-9+deb12u4", "glibc"]]) },
          candidate: { inventory: status([["libc6", "2.36-9+deb12u1", "glibc"]]) },
        },
      ],
    ]);
    const diff = (await diffPairs(client, pairs)).get("app")!;
    expect(diff.introduced.map((e) => e.id)).toEqual(["DSA-5514-1"]);
    expect(diffSummary(diff)).toBe("brings in 1, 1 high");
  });

  test("records are asked once, and again only when OSV says they were modified", async () => {
    standIn = startOsvStandIn(DEBIAN_RECORDS);
    const client = createOsvClient({ url: standIn.url, timeoutMs: 10_000 });
    const pairs = new Map<string, ImagePair>([
      [
        "a",
        {
          running: { inventory: status([["libc6", "2.36-9+deb12u1", "glibc"]]) },
          candidate: { inventory: status([]) },
        },
      ],
    ]);
    await diffPairs(client, pairs);
    await diffPairs(client, pairs);
    expect(standIn.requests.filter((r) => r.startsWith("GET"))).toHaveLength(1);
    standIn.records.set("DSA-5514-1", { ...DEBIAN_RECORDS[0]!, modified: "2024-01-01T00:00:00Z", summary: "changed" });
    const diff = (await diffPairs(client, pairs)).get("a")!;
    expect(standIn.requests.filter((r) => r.startsWith("GET"))).toHaveLength(2);
    expect(diff.fixed[0]!.summary).toBe("changed");
  });

  test("an image without a known ecosystem is a problem, and nothing is sent", async () => {
    standIn = startOsvStandIn(DEBIAN_RECORDS);
    const client = createOsvClient({ url: standIn.url, timeoutMs: 10_000 });
    const pairs = new Map<string, ImagePair>([
      ["a", { running: { inventory: null, problem: "no package database" }, candidate: { inventory: status([]) } }],
    ]);
    expect((await diffPairs(client, pairs)).get("a")!.problem).toBe(
      "the running image's packages are unknown: no package database",
    );
    expect(standIn.requests).toEqual([]);
  });
});

describe("records from OSV's own test data, served whole", () => {
  const dsa = osvTestDataRecord(OSV_TEST_DATA.dsa3029);
  const mariadb = osvTestDataRecord(OSV_TEST_DATA.alpineMariadb);
  const wheezy = parseOsRelease('ID=debian\nVERSION_ID="7"');
  const nginx = (version: string) =>
    parseDpkgStatus(`Package: nginx-light\nStatus: install ok installed\nSource: nginx\nVersion: ${version}\n`, wheezy);
  const alpine316 = parseOsRelease("ID=alpine\nVERSION_ID=3.16.2");
  const mariadbApk = (version: string) =>
    parseApkInstalled(`P:mariadb-common\nV:${version}\no:mariadb\n\nP:mariadb\nV:${version}\no:mariadb\n`, alpine316);

  test("Debian's DSA-3029-1 and an Alpine record: fixed, with each ecosystem's own fixed version", async () => {
    standIn = startOsvStandIn([dsa, mariadb, ...DEBIAN_RECORDS]);
    const client = createOsvClient({ url: standIn.url, timeoutMs: 10_000 });
    const pairs = new Map<string, ImagePair>([
      [
        "web",
        { running: { inventory: nginx("1.2.1-2.2+wheezy2") }, candidate: { inventory: nginx("1.2.1-2.2+wheezy3") } },
      ],
      ["db", { running: { inventory: mariadbApk("10.6.7-r0") }, candidate: { inventory: mariadbApk("10.6.8-r0") } }],
    ]);
    const diffs = await diffPairs(client, pairs);
    expect(diffs.get("web")).toMatchObject({
      problem: null,
      fixed: [
        {
          id: "DSA-3029-1",
          aliases: ["CVE-2014-3616"],
          summary: "nginx - security update",
          // the record has neither a vector nor a database's word
          severity: "unknown",
          score: null,
          package: "nginx",
          version: "1.2.1-2.2+wheezy2",
          fixed_version: "1.2.1-2.2+wheezy3",
        },
      ],
      introduced: [],
      still_open: [],
    });
    // the record names five Alpine releases: v3.16's fix is 10.6.8-r0, not v3.12's 10.4.25-r0
    expect(diffs.get("db")!.fixed.map((e) => [e.id, e.package, e.version, e.fixed_version])).toEqual([
      ["CVE-2022-27449", "mariadb", "10.6.7-r0", "10.6.8-r0"],
    ]);
    expect(diffSummary(diffs.get("db")!)).toBe("fixes 1");
    // both binary packages of one origin: one query per origin and version, one record each
    expect(standIn.batchSizes).toEqual([4]);
    expect(standIn.requests.filter((r) => r.startsWith("GET")).sort()).toEqual([
      "GET /v1/vulns/CVE-2022-27449",
      "GET /v1/vulns/DSA-3029-1",
    ]);
  });

  test("a release the record does not name is not affected", async () => {
    standIn = startOsvStandIn([mariadb]);
    const client = createOsvClient({ url: standIn.url, timeoutMs: 10_000 });
    const [hits] = await client.query([{ ecosystem: "Alpine:v3.18", name: "mariadb", version: "10.6.7-r0" }]);
    expect(hits).toEqual([]);
    const [v312] = await client.query([{ ecosystem: "Alpine:v3.12", name: "mariadb", version: "10.4.24-r0" }]);
    expect(v312).toEqual([{ id: "CVE-2022-27449", modified: "2022-10-07T18:59:00Z" }]);
  });
});

describe("OSV's limits", () => {
  const many = (count: number) =>
    Array.from({ length: count }, (_, i) => ({ ecosystem: "Debian:12", name: `p${i}`, version: "1.0-1" }));

  test("the stand-in refuses more than 1,000 queries, as OSV does; the client never sends more", async () => {
    standIn = startOsvStandIn();
    const refused = await fetch(`${standIn.url}/v1/querybatch`, {
      method: "POST",
      body: JSON.stringify({
        queries: many(1001).map((q) => ({ package: { ecosystem: q.ecosystem, name: q.name }, version: q.version })),
      }),
    });
    expect(refused.status).toBe(400);
    const client = createOsvClient({ url: standIn.url, timeoutMs: 10_000 });
    const hits = await client.query(many(2500));
    expect(hits).toHaveLength(2500);
    expect(standIn.batchSizes.slice(1)).toEqual([1000, 1000, 500]);
  });

  test("page_token is followed until a query has every page", async () => {
    const records = Array.from({ length: 5 }, (_, i) => ({
      ...OPENSSL,
      id: `DEBIAN-CVE-2099-000${i}`,
    }));
    standIn = startOsvStandIn(records, 2);
    const client = createOsvClient({ url: standIn.url, timeoutMs: 10_000 });
    const [hits] = await client.query([{ ecosystem: "Debian:12", name: "openssl", version: "3.0.20-1" }]);
    expect(hits!.map((h) => h.id)).toEqual(records.map((r) => r.id));
    expect(standIn.batchSizes).toEqual([1, 1, 1]);
  });

  test("an error status fails the lookup, said in the diff", async () => {
    standIn = startOsvStandIn(DEBIAN_RECORDS);
    standIn.failNext.push(503);
    const client = createOsvClient({ url: standIn.url, timeoutMs: 10_000 });
    const pairs = new Map<string, ImagePair>([
      [
        "a",
        {
          running: { inventory: status([["libc6", "2.36-9+deb12u1", "glibc"]]) },
          candidate: { inventory: status([]) },
        },
      ],
    ]);
    expect((await diffPairs(client, pairs)).get("a")!.problem).toBe(
      "OSV lookup failed: OSV answered 503 to POST /v1/querybatch",
    );
  });

  test("a slow answer is given up at the timeout", async () => {
    standIn = startOsvStandIn();
    standIn.delayMs = 5000;
    const client = createOsvClient({ url: standIn.url, timeoutMs: 300 });
    await expect(client.query(many(1))).rejects.toThrow("OSV did not answer within 0.3 s");
  });

  test("a 32 MiB answer is refused by the bound, unread", async () => {
    standIn = startOsvStandIn();
    standIn.hugeBytes = 32 * 1024 * 1024;
    const client = createOsvClient({ url: standIn.url, timeoutMs: 30_000 });
    await expect(client.query(many(1))).rejects.toThrow("OSV's answer is larger than 8 MiB: not read");
  });

  test("an answer not of OSV's shape is refused", async () => {
    standIn = startOsvStandIn();
    const client = createOsvClient({
      url: standIn.url,
      timeoutMs: 10_000,
      fetch: (async () => Response.json({ results: [{ vulns: [{ id: 5 }] }] })) as unknown as typeof fetch,
    });
    await expect(client.query(many(1))).rejects.toThrow("not of OSV's shape");
  });
});

describe("severity", () => {
  test("CVSS v3 base scores, as FIRST's calculator gives them", () => {
    expect(cvss3BaseScore("CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H")).toBe(9.8);
    expect(cvss3BaseScore("CVSS:3.1/AV:L/AC:L/PR:L/UI:N/S:U/C:H/I:H/A:H")).toBe(7.8);
    expect(cvss3BaseScore("CVSS:3.0/AV:N/AC:L/PR:N/UI:R/S:C/C:L/I:L/A:N")).toBe(6.1);
    expect(cvss3BaseScore("CVSS:3.1/AV:N/AC:H/PR:N/UI:N/S:U/C:N/I:N/A:N")).toBe(0);
    expect(cvss3BaseScore("CVSS:4.0/AV:N/AC:L/AT:N/PR:N/UI:N/VC:H/VI:H/VA:H/SC:N/SI:N/SA:N")).toBeNull();
    expect(cvss3BaseScore("CVSS:3.1/AV:X")).toBeNull();
  });
  test("without a vector, the database's own word", () => {
    expect(severityOf({ id: "x", modified: "", database_specific: { severity: "MODERATE" } }).severity).toBe("medium");
    expect(severityOf({ id: "x", modified: "", severity: [{ type: "Ubuntu", score: "high" }] }).severity).toBe("high");
    expect(severityOf({ id: "x", modified: "" })).toEqual({ severity: "unknown", score: null });
  });
});
