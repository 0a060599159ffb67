/**
 * The audit and access log files on a real filesystem: append mode, mode 0600, and rotation
 * (moved away, deleted, or reopened on request) without losing or misplacing a line.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import {
  chmodSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AccessFields } from "../../../src/log/index.ts";
import { testLogging } from "../../unit/log/helpers.ts";

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "svc-log-"));
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

let counter = 0;
const freshPath = (name: string) => join(dir, `${++counter}-${name}`);

/** The audit file's entries, parsed (every line must be JSON). */
const entries = (path: string) =>
  readFileSync(path, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line));

const containersIn = (path: string) => entries(path).map((e) => e.fields.container);

const request = (path: string): AccessFields => ({
  remote_addr: "127.0.0.1:40000",
  host: "127.0.0.1:8080",
  uri: path,
  path,
  method: "GET",
  protocol: "HTTP/1.1",
  scheme: "http",
  user_agent: "test",
  authorization: "",
  status: 200,
  duration_ms: 1,
});

describe("log files", () => {
  test("a new audit log is created with mode 0600 and holds one JSON entry per line", async () => {
    const path = freshPath("audit.log");
    const logging = testLogging({ audit_log: path });
    expect(statSync(path).mode & 0o777).toBe(0o600);
    logging.audit.record({ action: "pull", image: "app:1", trigger: "schedule", session_id: "s1" });
    logging.audit.record({
      action: "stop",
      container: "app",
      container_id: "c1",
      trigger: "schedule",
      session_id: "s1",
    });
    await logging.close();
    expect(entries(path).map((e) => [e.target, e.fields.action])).toEqual([
      ["svc::audit", "pull"],
      ["svc::audit", "stop"],
    ]);
  });

  test("an existing file is appended to, never truncated, and keeps its own mode", async () => {
    const path = freshPath("audit.log");
    writeFileSync(path, '{"old":true}\n');
    chmodSync(path, 0o640);
    const logging = testLogging({ audit_log: path });
    logging.audit.record({ action: "start", container: "app", trigger: "api" });
    await logging.close();
    const lines = readFileSync(path, "utf8").split("\n").filter(Boolean);
    expect(lines[0]).toBe('{"old":true}');
    expect(JSON.parse(lines[1]!).fields.container).toBe("app");
    expect(statSync(path).mode & 0o777).toBe(0o640);
  });

  test("the access log file gets access-log entries, and nothing goes to stdout unless asked", async () => {
    const path = freshPath("access.log");
    const logging = testLogging({ http_api: { access_log: path } });
    expect(logging.access.enabled).toBe(true);
    logging.access.write(request("/v1/health"));
    await logging.close();
    const [entry] = entries(path);
    expect(entry).toMatchObject({ level: "info", target: "svc::access", fields: request("/v1/health") });
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(logging.stdout.lines).toEqual([]);
  });

  test("a thousand writes in one tick all arrive, in order", async () => {
    const path = freshPath("access.log");
    const logging = testLogging({ http_api: { access_log: path } });
    for (let i = 0; i < 1000; i++) logging.access.write(request(`/r/${i}`));
    await logging.close();
    expect(entries(path).map((e) => e.fields.path)).toEqual(Array.from({ length: 1000 }, (_, i) => `/r/${i}`));
  });
});

describe("rotation", () => {
  test("moved away (logrotate without copytruncate): old lines stay in the moved file, new ones in a new file at the path", async () => {
    const path = freshPath("audit.log");
    const logging = testLogging({ audit_log: path });
    logging.audit.record({ action: "stop", container: "before-1", trigger: "schedule" });
    logging.audit.record({ action: "stop", container: "before-2", trigger: "schedule" });
    await logging.flush();

    renameSync(path, `${path}.1`);
    logging.audit.record({ action: "start", container: "after-1", trigger: "schedule" });
    await logging.flush();
    logging.audit.record({ action: "start", container: "after-2", trigger: "schedule" });
    await logging.close();

    expect(containersIn(`${path}.1`)).toEqual(["before-1", "before-2"]);
    expect(containersIn(path)).toEqual(["after-1", "after-2"]);
    expect(statSync(path).mode & 0o777).toBe(0o600);
  });

  test("deleted: a new file is created at the path", async () => {
    const path = freshPath("access.log");
    const logging = testLogging({ http_api: { access_log: path } });
    logging.access.write(request("/before"));
    await logging.flush();
    unlinkSync(path);
    logging.access.write(request("/after"));
    await logging.close();
    expect(entries(path).map((e) => e.fields.path)).toEqual(["/after"]);
  });

  test("moved and replaced by an empty file (logrotate `create`): writing continues in the new file", async () => {
    const path = freshPath("audit.log");
    const logging = testLogging({ audit_log: path });
    logging.audit.record({ action: "stop", container: "before", trigger: "api" });
    await logging.flush();
    renameSync(path, `${path}.1`);
    writeFileSync(path, "", { mode: 0o600 });
    logging.audit.record({ action: "stop", container: "after", trigger: "api" });
    await logging.close();
    expect(containersIn(`${path}.1`)).toEqual(["before"]);
    expect(containersIn(path)).toEqual(["after"]);
  });

  test("reopen() (what SIGHUP calls) creates the file again even with nothing queued", async () => {
    const path = freshPath("audit.log");
    const logging = testLogging({ audit_log: path });
    logging.audit.record({ action: "stop", container: "before", trigger: "api" });
    await logging.flush();
    renameSync(path, `${path}.1`);
    await logging.reopen();
    expect(existsSync(path)).toBe(true);
    logging.audit.record({ action: "stop", container: "after", trigger: "api" });
    await logging.close();
    expect(containersIn(`${path}.1`)).toEqual(["before"]);
    expect(containersIn(path)).toEqual(["after"]);
  });

  test("audit and access files rotate independently", async () => {
    const audit = freshPath("audit.log");
    const access = freshPath("access.log");
    const logging = testLogging({ audit_log: audit, http_api: { access_log: access } });
    logging.audit.record({ action: "stop", container: "a1", trigger: "api" });
    logging.access.write(request("/1"));
    await logging.flush();
    renameSync(access, `${access}.1`);
    logging.audit.record({ action: "stop", container: "a2", trigger: "api" });
    logging.access.write(request("/2"));
    await logging.close();
    expect(containersIn(audit)).toEqual(["a1", "a2"]);
    expect(entries(`${access}.1`).map((e) => e.fields.path)).toEqual(["/1"]);
    expect(entries(access).map((e) => e.fields.path)).toEqual(["/2"]);
  });
});
