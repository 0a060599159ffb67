/**
 * Scheduled cycles, as a user runs them: `--poll-interval 2s` or a 6-field cron, no API call.
 * A newer image is picked up by itself; we poll the engine (no timed assertion).
 */
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { docker, freePort, inspect, waitUntil } from "../../harness.ts";
import { baseFlags, containersByPrefix, Fixture, parseJsonLines, startSvc, stopAll, waitForPort } from "./support.ts";

const fx = new Fixture("e2e-sched");

afterAll(async () => {
  await stopAll();
  fx.cleanup();
}, 120_000);

async function picksUpNewImage(what: string, scheduleFlags: string[]): Promise<void> {
  const name = fx.name(what);
  const v1 = fx.image(what);
  fx.run(what, v1.ref, { env: { KEEP: "1" } });
  const oldId = inspect(name).Id;
  const svc = startSvc([...baseFlags(), ...scheduleFlags, name]);
  const v2 = fx.image(what);

  await waitUntil(
    () => {
      if (!svc.running) throw new Error(`svc exited (${svc.proc.exitCode})\n${svc.describe()}`);
      // mid-update the name is briefly absent (the old container is renamed first)
      const found = docker(["inspect", "--format", "{{.Image}} {{.State.Running}}", name], { allowFailure: true });
      return found.code === 0 && found.stdout === `${v2.id} true`;
    },
    60_000,
    `${name} to run the new image`,
  );
  const now = inspect(name);
  expect(now.Id).not.toBe(oldId);
  expect(now.Config.Env).toContain("KEEP=1");

  // The cycle that did it was a scheduled one, and svc said so.
  await waitUntil(
    () => svc.records().some((r) => r.message === "cycle finished" && r.fields?.updated === 1),
    10_000,
    "the cycle-finished log line",
  ).catch(() => {});
  const finished = svc.records().filter((r) => r.message === "cycle finished" && r.fields?.updated === 1);
  expect(finished.length, svc.describe()).toBeGreaterThan(0);
  expect(finished[0].fields.trigger).toBe("schedule");

  svc.signal("SIGTERM");
  expect(await svc.exit(30_000), svc.describe()).toBe(0);
}

describe("scheduled updates without any API call", () => {
  test("--poll-interval 2s updates a container whose image got newer", async () => {
    await picksUpNewImage("poll", ["--poll-interval", "2s"]);
  }, 90_000);

  test("--schedule '*/1 * * * * *' (6-field cron) updates a container whose image got newer", async () => {
    await picksUpNewImage("cron", ["--schedule", "*/1 * * * * *"]);
  }, 90_000);

  test("a poll-interval service that finds nothing to do keeps running and leaves the container alone", async () => {
    const name = fx.name("idle");
    const image = fx.image("idle");
    fx.run("idle", image.ref);
    const oldId = inspect(name).Id;
    const svc = startSvc([...baseFlags(), "--poll-interval", "1s", name]);
    // two scheduled cycles have run
    await waitUntil(
      () => {
        if (!svc.running) throw new Error(`svc exited\n${svc.describe()}`);
        return parseJsonLines(svc.stdout).filter((r) => r.message === "cycle finished").length >= 2;
      },
      30_000,
      "two cycles",
    );
    const cycles = svc.records().filter((r) => r.message === "cycle finished");
    expect(cycles.every((r) => r.fields.fresh === 1 && r.fields.updated === 0)).toBe(true);
    expect(inspect(name).Id).toBe(oldId);
    svc.signal("SIGTERM");
    expect(await svc.exit(30_000), svc.describe()).toBe(0);
  }, 60_000);

  test("schedule and API together: a POST during a scheduled cycle is queued (202) and runs after it; skipped fires are counted", async () => {
    const name = fx.name("both");
    fx.run("both", fx.image("both").ref);
    const audit = join(fx.tempDir("both"), "audit.log");
    const port = freePort();
    const token = "sched-api-token-1e0c";
    const svc = startSvc([
      ...baseFlags(),
      "--schedule",
      "* * * * * *",
      "--http-api-update",
      "--http-api-metrics",
      "--http-api-token",
      token,
      "--http-api-port",
      String(port),
      "--audit-log",
      audit,
      name,
    ]);
    await waitForPort(port, svc);
    const v2 = fx.image("both");
    const started = () =>
      (existsSync(audit) ? parseJsonLines(readFileSync(audit, "utf8")) : []).some(
        (e) => e.fields?.action === "start" && e.fields?.container === name,
      );
    await waitUntil(started, 60_000, "the scheduled cycle to start the new container");
    const post = await fetch(`http://127.0.0.1:${port}/v1/update`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}` },
    });
    expect(post.status).toBe(202);
    expect(((await post.json()) as any).queued).toMatchObject({ trigger: "api", filter: { container: [], image: [] } });
    // the cycle is over once the old container is removed and svc said the cycle finished
    const removed = () =>
      parseJsonLines(readFileSync(audit, "utf8")).some(
        (e) => e.fields?.action === "remove" && e.fields?.container === name,
      );
    await waitUntil(
      () => removed() && svc.records().some((r) => r.message === "cycle finished" && r.fields?.updated === 1),
      60_000,
      "the update to finish",
    );
    expect(inspect(name).Image).toBe(v2.id);
    const metrics = (await (
      await fetch(`http://127.0.0.1:${port}/v1/metrics`, {
        headers: { authorization: `Bearer ${token}`, accept: "application/json" },
      })
    ).json()) as any;
    // the cron fires that came while the update was being watched (the API request was queued)
    expect(metrics.svc_scans_skipped).toBeGreaterThanOrEqual(1);
    expect(metrics.svc_scans_total).toBeGreaterThanOrEqual(1);
    const audited = parseJsonLines(readFileSync(audit, "utf8")).filter((e) => e.fields?.container === name);
    expect(audited.every((e) => e.fields.trigger === "schedule")).toBe(true);
    svc.signal("SIGTERM");
    expect(await svc.exit(30_000), svc.describe()).toBe(0);
  }, 90_000);

  test("--update-on-start with an hourly poll: the stale container is updated right after start, trigger startup", async () => {
    const name = fx.name("onstart");
    fx.run("onstart", fx.image("onstart").ref);
    const v2 = fx.image("onstart");
    const svc = startSvc([...baseFlags(), "--poll-interval", "1h", "--update-on-start", name]);
    await waitUntil(
      () => {
        if (!svc.running) throw new Error(`svc exited\n${svc.describe()}`);
        return svc.records().some((r) => r.message === "cycle finished");
      },
      60_000,
      "the startup cycle",
    );
    const finished = svc.records().find((r) => r.message === "cycle finished");
    expect(finished.fields.trigger).toBe("startup");
    expect(finished.fields.updated, svc.describe()).toBe(1);
    expect(inspect(name).Image).toBe(v2.id);
    svc.signal("SIGTERM");
    expect(await svc.exit(30_000), svc.describe()).toBe(0);
  }, 90_000);

  test("two svc daemons with different scopes on one engine each update only their own containers", async () => {
    const scopeA = fx.name("scope-a");
    const scopeB = fx.name("scope-b");
    const mine = { [scopeA]: [fx.name("a1"), fx.name("a2")], [scopeB]: [fx.name("b1")] };
    const images: Record<string, string> = {};
    for (const [scope, names] of Object.entries(mine)) {
      for (const name of names) {
        const what = name.slice(fx.prefix.length + 1);
        fx.run(what, fx.image(what).ref, { labels: { "svc.scope": scope } });
      }
    }
    const dir = fx.tempDir("scopes");
    const audits = { [scopeA]: join(dir, "a.log"), [scopeB]: join(dir, "b.log") };
    const daemons = Object.keys(mine).map((scope) =>
      startSvc([...baseFlags(), "--poll-interval", "1s", "--scope", scope, "--audit-log", audits[scope]!]),
    );
    for (const names of Object.values(mine))
      for (const name of names) images[name] = fx.image(name.slice(fx.prefix.length + 1)).id;

    await waitUntil(
      () => {
        for (const d of daemons) if (!d.running) throw new Error(`svc exited\n${d.describe()}`);
        return Object.entries(images).every(([name, id]) => {
          const family = containersByPrefix(name);
          const now = docker(["inspect", "--format", "{{.Image}} {{.State.Running}}", name], {
            allowFailure: true,
          }).stdout;
          return Object.keys(family).length === 1 && now === `${id} true`;
        });
      },
      90_000,
      "every container to run its new image",
    );
    for (const [scope, names] of Object.entries(mine)) {
      const touched = new Set(parseJsonLines(readFileSync(audits[scope]!, "utf8")).map((e) => e.fields?.container));
      expect([...touched].sort()).toEqual([...names].sort());
    }
    for (const d of daemons) d.signal("SIGTERM");
    for (const d of daemons) expect(await d.exit(30_000), d.describe()).toBe(0);
  }, 150_000);
});
