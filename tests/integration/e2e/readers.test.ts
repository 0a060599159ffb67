/**
 * Readers never cost svc its schedule (docs/api.md, docs/security.md): viewers hammering
 * `GET /v1/containers` back to back while `--poll-interval 1s` cycles come due. Every scheduled
 * cycle runs (after the dry run under way, never skipped), as the log a user reads says, and the
 * readers are answered (from a recent overview; 409 while a cycle acts).
 */
import { afterAll, expect, test } from "bun:test";
import { join } from "node:path";
import { freePort, waitUntil } from "../../harness.ts";
import { baseFlags, Fixture, startSvc, stopAll, waitForPort } from "./support.ts";

const fx = new Fixture("e2e-readers");

afterAll(async () => {
  await stopAll();
  fx.cleanup();
}, 120_000);

test("viewers reading GET /v1/containers back to back: every scheduled cycle runs, every reader is answered", async () => {
  const names = ["a", "b", "c"].map((what) => {
    fx.run(what, fx.image(what).ref);
    return fx.name(what);
  });
  const port = freePort();
  const token = "readers-token-5c1f";
  const svc = startSvc([
    ...baseFlags(),
    "--poll-interval",
    "1s",
    "--http-api-update",
    "--http-api-token",
    token,
    "--http-api-port",
    String(port),
    "--state-dir",
    join(fx.tempDir("readers"), "state"),
    ...names,
  ]);
  await waitForPort(port, svc);
  const statuses: number[] = [];
  let reading = true;
  const reader = async () => {
    while (reading) {
      const answer = await fetch(`http://127.0.0.1:${port}/v1/containers`, {
        headers: { authorization: `Bearer ${token}` },
      });
      statuses.push(answer.status);
      await answer.arrayBuffer();
    }
  };
  const readers = Array.from({ length: 4 }, reader);
  const scheduled = (message: string) =>
    svc.records().filter((r) => r.message === message && r.fields?.trigger === "schedule").length;
  try {
    // the review saw 14 of 14 scheduled cycles skipped: stop at 6 run, or at 3 skipped
    await waitUntil(
      () => {
        if (!svc.running) throw new Error(`svc exited\n${svc.describe()}`);
        return scheduled("cycle finished") >= 6 || scheduled("cycle skipped: another cycle is running") >= 3;
      },
      90_000,
      "six scheduled cycles, or three skipped",
    );
  } finally {
    reading = false;
    await Promise.all(readers);
  }
  expect(scheduled("cycle skipped: another cycle is running"), svc.describe()).toBe(0);
  expect(scheduled("cycle finished")).toBeGreaterThanOrEqual(6);
  // readers are answered: an overview, or 409 while a scheduled cycle acts
  expect(
    statuses.every((status) => status === 200 || status === 409),
    JSON.stringify(statuses.slice(0, 200)),
  ).toBe(true);
  expect(statuses.filter((status) => status === 200).length).toBeGreaterThan(0);
  svc.signal("SIGTERM");
  expect(await svc.exit(30_000), svc.describe()).toBe(0);
}, 150_000);
