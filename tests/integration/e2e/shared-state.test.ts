/**
 * `svc rollback NAME` while a service runs on the same state_dir: the rollback is never undone by
 * the service. With the update API the command hands the rollback to the service; without it the
 * command waits for the service's cycle to end, acts alone, and the service reads what it decided.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { docker, freePort, inspect, waitUntil } from "../../harness.ts";
import {
  baseFlags,
  Fixture,
  portOpen,
  REPO_ROOT,
  runSvc,
  startServiceOnState,
  startSvc,
  stopAll,
  track,
} from "./support.ts";

const fx = new Fixture("e2e-shared");
const TOKEN = "e2e-shared-token-5b1e";

afterAll(async () => {
  await stopAll();
  fx.cleanup();
}, 120_000);

describe("svc rollback beside a running service on the same state_dir", () => {
  test("with the update API: the service does the rollback, reports the container skipped, and its next cycle leaves it", async () => {
    const name = fx.name("api");
    const v1 = fx.image("api");
    fx.run("api", v1.ref);
    const v2 = fx.image("api");
    const stateDir = fx.tempDir("api-state");
    const { service, port } = await startServiceOnState(stateDir, TOKEN, [name]);
    const call = async (method: string, path: string) => {
      const response = await fetch(`http://127.0.0.1:${port}${path}`, {
        method,
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      return (await response.json()) as any;
    };
    expect((await call("POST", "/v1/update")).containers[0].state, service.describe()).toBe("updated");
    expect(inspect(name).Image).toBe(v2.id);

    // no token needed: the handover proves itself with the state folder's secret
    const back = await runSvc(["rollback", name, ...baseFlags(), "--state-dir", stateDir]);
    expect(back.code, back.svc.describe()).toBe(0);
    expect(back.svc.output).toContain(`handed to svc (pid ${service.proc.pid})`);
    expect(inspect(name).Image).toBe(v1.id);

    const listed = (await call("GET", "/v1/containers")).containers[0];
    expect(listed, service.describe()).toMatchObject({ name, state: "skipped", would_update: false });
    // the command line asked: said so, and the history counts a rollback, not "1 updated"
    expect(listed.reason).toMatch(
      /^sha256:[0-9a-f]{64} was left by a rollback \(svc rollback\); waiting for a newer image$/,
    );
    const newest = (await call("GET", "/v1/history")).reports[0];
    expect(newest.trigger, JSON.stringify(newest)).toBe("run_once");
    expect(newest.counts).toMatchObject({ updated: 0, rolled_back: 1 });
    expect(newest.containers[0]).toMatchObject({
      name,
      state: "rolled_back",
      reason: "rolled back on request (svc rollback)",
    });
    const startedAt = inspect(name).State.StartedAt;
    expect((await call("POST", "/v1/update")).containers[0].state).toBe("skipped");
    expect(inspect(name).Image).toBe(v1.id);
    expect(inspect(name).State.StartedAt).toBe(startedAt);

    // a request that only claims the proof is refused, as one without a token
    const forged = await fetch(`http://127.0.0.1:${port}/v1/rollback?container=${name}`, {
      method: "POST",
      headers: { "x-svc-owner-request": `v1 ${Math.floor(Date.now() / 1000)} ${"a".repeat(64)} ${"b".repeat(64)}` },
    });
    expect(forged.status).toBe(401);
  }, 120_000);

  test("without the update API: the command acts between the service's cycles, and the cycles after it leave the container", async () => {
    const name = fx.name("poll");
    const v1 = fx.image("poll");
    fx.run("poll", v1.ref);
    const v2 = fx.image("poll");
    const stateDir = fx.tempDir("poll-state");
    const service = startSvc([...baseFlags(), "--state-dir", stateDir, "--poll-interval", "1s", name]);
    // the name is missing for a moment during the update
    const runs = (image: string) => {
      const found = docker(["inspect", name], { allowFailure: true });
      return (
        found.code === 0 &&
        JSON.parse(found.stdout)[0].Image === image &&
        JSON.parse(found.stdout)[0].State.Running === true
      );
    };
    await waitUntil(() => runs(v2.id), 60_000, "the service's update");

    const back = await runSvc(["rollback", name, ...baseFlags(), "--state-dir", stateDir]);
    expect(back.code, `${back.svc.describe()}\n${service.describe()}`).toBe(0);
    expect(inspect(name).Image).toBe(v1.id);
    const startedAt = inspect(name).State.StartedAt;

    const cycles = () => service.records().filter((r) => r.message === "cycle finished").length;
    const seen = cycles();
    await waitUntil(() => cycles() >= seen + 2, 60_000, "two more cycles of the service");
    expect(service.running).toBe(true);
    expect(inspect(name).Image, service.describe()).toBe(v1.id);
    expect(inspect(name).State.StartedAt).toBe(startedAt);
    // the service's own cycles say why they leave it
    const told = service.records().filter((r) => r.fields?.container === name && r.fields?.state === "skipped");
    expect(told.at(-1)?.fields?.reason, service.describe()).toMatch(
      /^sha256:[0-9a-f]{64} was left by a rollback \(svc rollback\); waiting for a newer image$/,
    );
  }, 120_000);

  test("the handover goes only to the owner that proves it is one: an owner file naming another host, or a live process here, with something else on its address, gets nothing", async () => {
    const name = fx.name("proof");
    fx.run("proof", fx.image("proof").ref);
    const stateDir = fx.tempDir("proof-state");
    // whatever listens on the port the owner file names, answering as svc would
    const seen: { path: string; authorization: string | null }[] = [];
    const impostor = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch(request) {
        seen.push({ path: new URL(request.url).pathname, authorization: request.headers.get("authorization") });
        if (request.method === "GET") return Response.json({ status: "ok" });
        return Response.json({
          container: name,
          from_image_id: "sha256:1",
          to_image_id: "sha256:2",
          state: "updated",
          reason: null,
        });
      },
    });
    try {
      for (const claim of [
        { pid: 1, host: "another-host-since-long-gone" },
        { pid: process.pid, host: hostname() },
      ]) {
        const before = inspect(name).Image;
        fx.image("proof");
        const updated = await runSvc([...baseFlags(), "--state-dir", stateDir, "--run-once", name]);
        expect(updated.code, updated.svc.describe()).toBe(0);
        expect(inspect(name).Image).not.toBe(before);
        writeFileSync(
          join(stateDir, "state.json.owner"),
          JSON.stringify({
            ...claim,
            api_port: impostor.port,
            api_address: "127.0.0.1",
            started_at: new Date().toISOString(),
            nonce: "a".repeat(64),
          }),
        );

        const back = await runSvc([
          "rollback",
          name,
          ...baseFlags(),
          "--state-dir",
          stateDir,
          "--http-api-token",
          TOKEN,
        ]);
        expect(
          seen.filter((request) => request.authorization !== null || request.path !== "/v1/health"),
          JSON.stringify(claim),
        ).toEqual([]);
        expect(back.svc.output).toContain(
          `claims this state_dir with its API on 127.0.0.1:${impostor.port}, but what answers there does not prove to be it: nothing is handed to it`,
        );
        // the command rolled back itself, between the cycles of whoever owns the folder
        expect(back.code, back.svc.describe()).toBe(0);
        expect(inspect(name).Image).toBe(before);
      }
    } finally {
      impostor.stop(true);
    }
  }, 180_000);

  test("a relay on 127.0.0.1:PORT while svc listens on another address (127.0.0.2:PORT) receives no token: the handover goes to the address svc listens on, signed with the state folder's secret", async () => {
    const name = fx.name("relay");
    const v1 = fx.image("relay");
    fx.run("relay", v1.ref);
    const v2 = fx.image("relay");
    const stateDir = fx.tempDir("relay-state");
    const port = freePort();
    const service = startSvc([
      ...baseFlags(),
      "--state-dir",
      stateDir,
      "--http-api-update",
      "--http-api-token",
      TOKEN,
      "--http-api-address",
      "127.0.0.2",
      "--http-api-port",
      String(port),
      name,
    ]);
    await waitUntil(
      async () => {
        if (!service.running) throw new Error(service.describe());
        return await portOpen(port, "127.0.0.2");
      },
      30_000,
      `svc on 127.0.0.2:${port}`,
    );
    const seenLog = join(fx.tempDir("relay-log"), "seen.ndjson");
    const relay = track(
      Bun.spawn(
        [
          "bun",
          join(REPO_ROOT, "tests/support/relay.ts"),
          "127.0.0.1",
          String(port),
          "127.0.0.2",
          String(port),
          seenLog,
        ],
        { stdout: "pipe", stderr: "pipe" },
      ),
    );
    await waitUntil(() => portOpen(port), 30_000, "the relay");
    const seen = () =>
      existsSync(seenLog)
        ? readFileSync(seenLog, "utf8")
            .trim()
            .split("\n")
            .filter(Boolean)
            .map((line) => JSON.parse(line))
        : [];
    try {
      const updated = await fetch(`http://127.0.0.2:${port}/v1/update`, {
        method: "POST",
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      expect(((await updated.json()) as any).containers[0].state, service.describe()).toBe("updated");
      expect(inspect(name).Image).toBe(v2.id);

      const back = await runSvc(["rollback", name, ...baseFlags(), "--state-dir", stateDir, "--http-api-token", TOKEN]);
      expect(back.code, `${back.svc.describe()}\n${service.describe()}`).toBe(0);
      expect(back.svc.output).toContain(`handed to svc (pid ${service.proc.pid})`);
      expect(inspect(name).Image).toBe(v1.id);
      expect(JSON.stringify(seen())).not.toContain(TOKEN);
      expect(seen().filter((request) => request.headers.authorization !== undefined)).toEqual([]);

      // an owner file that names the relay's address: what reaches it carries no token, and
      // what it passes on is a request the service takes once
      const owner = JSON.parse(readFileSync(join(stateDir, "state.json.owner"), "utf8"));
      writeFileSync(join(stateDir, "state.json.owner"), JSON.stringify({ ...owner, api_address: "127.0.0.1" }));
      fx.image("relay");
      const again = await fetch(`http://127.0.0.2:${port}/v1/update?container=${name}`, {
        method: "POST",
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      expect(((await again.json()) as any).containers[0].state, service.describe()).toBe("updated");
      const relayed = await runSvc([
        "rollback",
        name,
        ...baseFlags(),
        "--state-dir",
        stateDir,
        "--http-api-token",
        TOKEN,
      ]);
      expect(relayed.code, relayed.svc.describe()).toBe(0);
      expect(seen().length).toBeGreaterThan(0);
      expect(JSON.stringify(seen())).not.toContain(TOKEN);
      expect(seen().filter((request) => request.headers.authorization !== undefined)).toEqual([]);
      // the signed request, sent again by whoever saw it, is refused: it was for one rollback only
      const signed = seen().find((request) => request.method === "POST")!;
      const replay = await fetch(`http://127.0.0.2:${port}${signed.path}`, {
        method: "POST",
        headers: Object.fromEntries(
          Object.entries(signed.headers as Record<string, string>).filter(([key]) => key !== "host"),
        ),
      });
      expect(replay.status).toBe(401);
    } finally {
      relay.kill();
      await relay.exited;
    }
  }, 180_000);
});
