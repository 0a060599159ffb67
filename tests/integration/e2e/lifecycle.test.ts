/**
 * Stopping svc while it works, and starting it again, as happens on real hosts: a SIGTERM during
 * an update lets that update finish; a second signal exits at once and the next start repairs
 * what was left; and a start only ever repairs the containers that instance is in charge of.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { docker, freePort, inspect, waitUntil } from "../../harness.ts";
import {
  baseFlags,
  containersByPrefix,
  Fixture,
  parseJsonLines,
  portOpen,
  runSvc,
  startSvc,
  stopAll,
  waitForPort,
} from "./support.ts";

const fx = new Fixture("e2e-life");
const TOKEN = "e2e-life-token-93be";

afterAll(async () => {
  await stopAll();
  fx.cleanup();
}, 120_000);

const auditOf = (file: string) => (existsSync(file) ? parseJsonLines(readFileSync(file, "utf8")) : []);

/** The container named exactly `name`, or null while it is absent (e.g. mid-rename). */
function current(name: string): any | null {
  const found = docker(["inspect", name], { allowFailure: true });
  return found.code === 0 ? JSON.parse(found.stdout)[0] : null;
}

describe("signals while an update runs", () => {
  test("SIGTERM during an API-triggered update: the request still gets its report, the update completes, svc exits 0", async () => {
    const name = fx.name("term");
    const v1 = fx.image("term");
    fx.run("term", v1.ref);
    const v2 = fx.image("term");
    const audit = join(fx.tempDir("term"), "audit.log");
    const port = freePort();
    const svc = startSvc([
      ...baseFlags(),
      "--http-api-update",
      "--http-api-token",
      TOKEN,
      "--http-api-port",
      String(port),
      "--audit-log",
      audit,
    ]);
    await waitForPort(port, svc);

    const request = fetch(`http://127.0.0.1:${port}/v1/update?container=${name}`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    // the new container has been started: the update is in its watch phase
    await waitUntil(
      () => auditOf(audit).some((e) => e.fields?.container === name && e.fields?.action === "start"),
      30_000,
      "the new container to start",
    );
    svc.signal("SIGTERM");

    const response = await request;
    expect(response.status, svc.describe()).toBe(200);
    const report = (await response.json()) as any;
    expect(report.containers[0]).toMatchObject({ name, state: "updated" });
    expect(await svc.exit(30_000), svc.describe()).toBe(0);
    expect(await portOpen(port)).toBe(false);
    const now = inspect(name);
    expect(now.Image).toBe(v2.id);
    expect(now.State.Running).toBe(true);
    expect(Object.keys(containersByPrefix(name))).toEqual([name]);
  }, 90_000);

  test("a second SIGTERM exits at once; the next start repairs the half-done update", async () => {
    const name = fx.name("twice");
    const v1 = fx.image("twice");
    fx.run("twice", v1.ref, { env: { KEEP: "1" } });
    const v2 = fx.image("twice");
    const audit = join(fx.tempDir("twice"), "audit.log");
    const svc = startSvc([...baseFlags(), "--poll-interval", "1s", "--audit-log", audit, name]);

    await waitUntil(
      () => {
        if (!svc.running) throw new Error(`svc exited\n${svc.describe()}`);
        return auditOf(audit).some((e) => e.fields?.container === name && e.fields?.action === "start");
      },
      30_000,
      "the new container to start",
    );
    svc.signal("SIGTERM");
    // a second signal once svc has taken the first (two signals sent at once may merge into one)
    await waitUntil(
      () => svc.records().some((r) => /^stopping/.test(r.message ?? "")),
      10_000,
      "svc to take the first SIGTERM",
    );
    svc.signal("SIGTERM");
    const code = await svc.exit(10_000);
    expect(code, svc.describe()).toBe(143); // 128 + SIGTERM, as a shell reports a process killed by it
    // what a crash at this point leaves: the parked old container next to the new one
    const left = containersByPrefix(name);
    expect(Object.keys(left).length, JSON.stringify(left)).toBeGreaterThanOrEqual(1);

    const again = await runSvc([...baseFlags(), "--run-once", name]);
    expect(again.code, again.svc.describe()).toBe(0);
    expect(Object.keys(containersByPrefix(name)), again.svc.describe()).toEqual([name]);
    const now = current(name);
    expect(now?.State.Running).toBe(true);
    expect(now?.Image).toBe(v2.id);
    expect(now?.Config.Env).toContain("KEEP=1");
  }, 90_000);
});

describe("SIGTERM during a run-once update", () => {
  test("the update finishes, svc exits 0, one container left on the new image", async () => {
    const name = fx.name("once-term");
    fx.run("once-term", fx.image("once-term").ref, { env: { KEEP: "1" } });
    const v2 = fx.image("once-term");
    const audit = join(fx.tempDir("once-term"), "audit.log");
    const svc = startSvc([...baseFlags(), "--run-once", "--audit-log", audit, name]);
    await waitUntil(
      () => {
        if (!svc.running) throw new Error(`svc exited before the update started\n${svc.describe()}`);
        return auditOf(audit).some((e) => e.fields?.container === name && e.fields?.action === "start");
      },
      30_000,
      "the new container to start",
    );
    svc.signal("SIGTERM");
    expect(await svc.exit(30_000), svc.describe()).toBe(0);
    expect(Object.keys(containersByPrefix(name))).toEqual([name]);
    const now = inspect(name);
    expect(now.Image).toBe(v2.id);
    expect(now.State.Running).toBe(true);
    expect(now.Config.Env).toContain("KEEP=1");
  }, 60_000);
});

/**
 * What another svc instance leaves while it is between "create" and "start" of an update: the
 * old container parked under `<name>.svc-old-<id>-running` (stopped) and the new one created
 * under the original name. Returns both ids.
 */
function inFlightUpdateOf(
  what: string,
  labels: Record<string, string> = {},
): { name: string; parkedId: string; newId: string; parkedName: string } {
  const image = fx.image(what);
  const name = fx.name(what);
  fx.run(what, image.ref, { labels });
  const parkedId = inspect(name).Id as string;
  docker(["stop", "-t", "1", name]);
  const parkedName = `${name}.svc-old-${parkedId.slice(0, 12)}-running`;
  docker(["rename", name, parkedName]);
  const newId = docker([
    "create",
    "--name",
    name,
    "--network",
    "none",
    ...Object.entries(labels).flatMap(([key, value]) => ["-l", `${key}=${value}`]),
    image.ref,
  ]).stdout;
  return { name, parkedId, newId, parkedName };
}

describe("a start repairs only the containers this instance is in charge of", () => {
  const untouched = (flight: ReturnType<typeof inFlightUpdateOf>) => {
    const byName = current(flight.name);
    expect(byName?.Id, "the other instance's new container was removed or replaced").toBe(flight.newId);
    const parked = current(flight.parkedName);
    expect(parked?.Id, "the other instance's parked container was renamed back").toBe(flight.parkedId);
  };

  test("`svc --run-once mine` leaves another container's in-flight update alone", async () => {
    const flight = inFlightUpdateOf("others");
    const mine = fx.name("mine");
    fx.run("mine", fx.image("mine").ref);
    const run = await runSvc([...baseFlags(), "--run-once", mine]);
    expect(run.code, run.svc.describe()).toBe(0);
    untouched(flight);
  }, 60_000);

  test("`svc --scope b` leaves an in-flight update of a scope-a container alone", async () => {
    const flight = inFlightUpdateOf("scope-a", { "svc.scope": "a" });
    const mine = fx.name("scope-b");
    fx.run("scope-b", fx.image("scope-b").ref, { labels: { "svc.scope": "b" } });
    const run = await runSvc([...baseFlags(), "--run-once", "--scope", "b", mine]);
    expect(run.code, run.svc.describe()).toBe(0);
    untouched(flight);
  }, 60_000);
});

describe("started before its engine", () => {
  // A host boots svc before dockerd is up. The engine room negotiates lazily ("a service started
  // before its engine keeps running") and the updater retries recovery with the next cycle: the
  // service must stay up, answer health, and answer update requests with an error naming the engine.
  test("the API stays up: health 200, POST /v1/update answers a JSON error about the engine, SIGTERM exits 0", async () => {
    const port = freePort();
    const token = "engine-down-token-2c81";
    const missing = join(fx.tempDir("nosock"), "docker.sock");
    const svc = startSvc([
      "--docker-host",
      `unix://${missing}`,
      "--log-format",
      "json",
      "--http-api-update",
      "--http-api-token",
      token,
      "--http-api-port",
      String(port),
    ]);
    await waitForPort(port, svc);
    const health = await fetch(`http://127.0.0.1:${port}/v1/health`);
    expect(health.status).toBe(200);
    const update = await fetch(`http://127.0.0.1:${port}/v1/update`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}` },
    });
    expect(update.status, svc.describe()).toBeGreaterThanOrEqual(500);
    const body = (await update.json()) as any;
    expect(body.error).toMatch(/engine/i);
    expect(svc.running, `svc exited (${svc.proc.exitCode}) while its engine was away\n${svc.describe()}`).toBe(true);
    svc.signal("SIGTERM");
    expect(await svc.exit(30_000), svc.describe()).toBe(0);
    expect(svc.output).not.toContain(token);
  }, 60_000);
});
