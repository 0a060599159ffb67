/**
 * A loopback stand-in for OSV's API (docs/vulnerabilities.md), answering as api.osv.dev does and
 * never more kindly: POST /v1/querybatch refuses more than 1,000 queries with 400, answers each
 * query's ids and `modified` only, at most `pageSize` of them, with a `next_page_token` for the
 * rest; GET /v1/vulns/{id} answers the whole record, 404 for an unknown id. A test can make it
 * fail, answer slowly, or answer too much.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { compareVersions, type VersionFormat } from "../../src/vulns/versions.ts";

export interface OsvStandIn {
  url: string;
  /** every request, "METHOD path" */
  requests: string[];
  /** each querybatch request's query count */
  batchSizes: number[];
  /** the records it knows (a test may add and change them) */
  records: Map<string, OsvRecordFixture>;
  /** the next answers: a status to fail with, a delay before answering, or a body of that many bytes */
  failNext: number[];
  delayMs: number;
  hugeBytes: number;
  stop(): void;
}

export interface OsvRecordFixture {
  id: string;
  modified: string;
  summary?: string;
  aliases?: string[];
  severity?: { type: string; score: string }[];
  affected: {
    package: { ecosystem: string; name: string };
    ranges: { type: "ECOSYSTEM"; events: { introduced?: string; fixed?: string }[] }[];
  }[];
  database_specific?: Record<string, unknown>;
}

const FORMATS: Record<string, VersionFormat> = { Debian: "dpkg", Ubuntu: "dpkg", Alpine: "apk" };

function affects(record: OsvRecordFixture, ecosystem: string, name: string, version: string): boolean {
  const format = FORMATS[ecosystem.split(":")[0]!] ?? "rpm";
  return record.affected.some(
    (a) =>
      a.package.ecosystem === ecosystem &&
      a.package.name === name &&
      a.ranges.some((range) => {
        // OSV's ranges: affected from an `introduced` up to the next `fixed`
        let affected = false;
        for (const event of range.events) {
          if (
            event.introduced !== undefined &&
            (event.introduced === "0" || compareVersions(format, version, event.introduced) >= 0)
          )
            affected = true;
          if (event.fixed !== undefined && compareVersions(format, version, event.fixed) >= 0) affected = false;
        }
        return affected;
      }),
  );
}

export function startOsvStandIn(records: OsvRecordFixture[] = [], pageSize = 1000): OsvStandIn {
  const standIn: OsvStandIn = {
    url: "",
    requests: [],
    batchSizes: [],
    records: new Map(records.map((r) => [r.id, r])),
    failNext: [],
    delayMs: 0,
    hugeBytes: 0,
    stop: () => server.stop(true),
  };
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    async fetch(request) {
      const url = new URL(request.url);
      standIn.requests.push(`${request.method} ${url.pathname}`);
      if (standIn.delayMs > 0) await Bun.sleep(standIn.delayMs);
      const status = standIn.failNext.shift();
      if (status !== undefined) return new Response(JSON.stringify({ code: 13, message: "internal" }), { status });
      if (standIn.hugeBytes > 0) {
        const size = standIn.hugeBytes;
        return new Response(
          new ReadableStream({
            start(controller) {
              const chunk = new Uint8Array(1024 * 1024).fill(0x20);
              for (let sent = 0; sent < size; sent += chunk.byteLength) controller.enqueue(chunk);
              controller.close();
            },
          }),
          { headers: { "content-type": "application/json" } },
        );
      }
      if (request.method === "POST" && url.pathname === "/v1/querybatch")
        return batch(standIn, (await request.json()) as BatchBody, pageSize);
      const vuln = /^\/v1\/vulns\/([^/]+)$/.exec(url.pathname);
      if (request.method === "GET" && vuln) {
        const record = standIn.records.get(decodeURIComponent(vuln[1]!));
        return record ? Response.json(record) : Response.json({ code: 5, message: "Bug not found." }, { status: 404 });
      }
      return Response.json({ code: 5, message: "Not Found" }, { status: 404 });
    },
  });
  standIn.url = `http://127.0.0.1:${server.port}`;
  return standIn;
}

interface BatchBody {
  queries?: { package?: { ecosystem?: string; name?: string }; version?: string; page_token?: string }[];
}

function batch(standIn: OsvStandIn, body: BatchBody, pageSize: number): Response {
  const queries = body.queries ?? [];
  standIn.batchSizes.push(queries.length);
  if (queries.length > 1000)
    return Response.json({ code: 3, message: "Too many queries in batch (max 1000)." }, { status: 400 });
  const results = queries.map((query) => {
    const { ecosystem = "", name = "" } = query.package ?? {};
    const hits = [...standIn.records.values()]
      .filter((record) => affects(record, ecosystem, name, query.version ?? ""))
      .sort((a, b) => a.id.localeCompare(b.id))
      .map((record) => ({ id: record.id, modified: record.modified }));
    const start = query.page_token ? Number(query.page_token) : 0;
    const page = hits.slice(start, start + pageSize);
    const more = start + pageSize < hits.length;
    return {
      ...(page.length > 0 ? { vulns: page } : {}),
      ...(more ? { next_page_token: String(start + pageSize) } : {}),
    };
  });
  return Response.json({ results });
}

/** Records shaped as OSV's Debian advisories are (DSA-5514-1's glibc fix, an openssl one made for the tests). */
export const DEBIAN_RECORDS: OsvRecordFixture[] = [
  {
    id: "DSA-5514-1",
    modified: "2023-10-03T15:00:00Z",
    summary: "glibc - security update",
    aliases: ["CVE-2023-4911"],
    severity: [{ type: "CVSS_V3", score: "CVSS:3.1/AV:L/AC:L/PR:L/UI:N/S:U/C:H/I:H/A:H" }],
    affected: [
      {
        package: { ecosystem: "Debian:12", name: "glibc" },
        ranges: [{ type: "ECOSYSTEM", events: [{ introduced: "0" }, { fixed: "2.36-9+deb12u3" }] }],
      },
    ],
  },
];

/**
 * Records copied whole from OSV's own test data (tests/unit/vulns/fixtures/README.md names the
 * repository, path and commit): served as OSV serves them, every field of OSV's schema kept.
 */
export const OSV_TEST_DATA = {
  /** Debian 7's nginx, fixed in 1.2.1-2.2+wheezy3; no severity */
  dsa3029: "DSA-3029-1",
  /** Alpine v3.12 to v3.16's mariadb, each release its own fixed version */
  alpineMariadb: "CVE-2022-27449",
} as const;

export function osvTestDataRecord(id: (typeof OSV_TEST_DATA)[keyof typeof OSV_TEST_DATA]): OsvRecordFixture {
  const path = join(import.meta.dir, "../unit/vulns/fixtures", `osv-${id}.json`);
  return JSON.parse(readFileSync(path, "utf8")) as OsvRecordFixture;
}
