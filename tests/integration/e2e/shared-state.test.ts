/**
 * `svc rollback NAME` while a service runs on the same state_dir: the rollback is never undone by
 * the service. With the update API the command hands the rollback to the service; without it the
 * command waits for the service's cycle to end, acts alone, and the service reads what it decided.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import { docker, freePort, inspect, waitUntil } from "../../harness.ts";
import { Fixture, baseFlags, runSvc, startSvc, stopAll, waitForPort } from "./support.ts";

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
    const port = freePort();
    const service = startSvc([...baseFlags(), "--state-dir", stateDir, "--http-api-update", "--http-api-token", TOKEN, "--http-api-port", String(port), name]);
    await waitForPort(port, service);
    const call = async (method: string, path: string) => {
      const response = await fetch(`http://127.0.0.1:${port}${path}`, { method, headers: { authorization: `Bearer ${TOKEN}` } });
      return (await response.json()) as any;
    };
    expect((await call("POST", "/v1/update")).containers[0].state, service.describe()).toBe("updated");
    expect(inspect(name).Image).toBe(v2.id);

    const back = await runSvc(["rollback", name, ...baseFlags(), "--state-dir", stateDir, "--http-api-token", TOKEN]);
    expect(back.code, back.svc.describe()).toBe(0);
    expect(back.svc.output).toContain(`handed to svc (pid ${service.proc.pid})`);
    expect(inspect(name).Image).toBe(v1.id);

    const listed = (await call("GET", "/v1/containers")).containers[0];
    expect(listed, service.describe()).toMatchObject({ name, state: "skipped", would_update: false });
    expect(listed.reason).toMatch(/^sha256:[0-9a-f]{64} was left by a rollback \(POST \/v1\/rollback\); waiting for a newer image$/);
    const startedAt = inspect(name).State.StartedAt;
    expect((await call("POST", "/v1/update")).containers[0].state).toBe("skipped");
    expect(inspect(name).Image).toBe(v1.id);
    expect(inspect(name).State.StartedAt).toBe(startedAt);

    // a token the service does not know: the command says which one to give, and touches nothing
    const refused = await runSvc(["rollback", name, ...baseFlags(), "--state-dir", stateDir, "--http-api-token", "wrong-token-123456"]);
    expect(refused.code).toBe(1);
    expect(refused.svc.output).toContain("http_api.token");
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
      return found.code === 0 && JSON.parse(found.stdout)[0].Image === image && JSON.parse(found.stdout)[0].State.Running === true;
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
    expect(told.at(-1)?.fields?.reason, service.describe()).toMatch(/^sha256:[0-9a-f]{64} was left by a rollback \(svc rollback\); waiting for a newer image$/);
  }, 120_000);

  test("the token goes only to the owner that proves it is one: an owner file naming another host, or a live process here, with something else on its port, gets nothing", async () => {
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
        return Response.json({ container: name, from_image_id: "sha256:1", to_image_id: "sha256:2", state: "updated", reason: null });
      },
    });
    try {
      for (const claim of [{ pid: 1, host: "another-host-since-long-gone" }, { pid: process.pid, host: hostname() }]) {
        const before = inspect(name).Image;
        fx.image("proof");
        const updated = await runSvc([...baseFlags(), "--state-dir", stateDir, "--run-once", name]);
        expect(updated.code, updated.svc.describe()).toBe(0);
        expect(inspect(name).Image).not.toBe(before);
        writeFileSync(join(stateDir, "state.json.owner"), JSON.stringify({ ...claim, api_port: impostor.port, started_at: new Date().toISOString(), nonce: "a".repeat(64) }));

        const back = await runSvc(["rollback", name, ...baseFlags(), "--state-dir", stateDir, "--http-api-token", TOKEN]);
        expect(seen.filter((request) => request.authorization !== null), JSON.stringify(claim)).toEqual([]);
        expect(back.svc.output).toContain(`claims this state_dir with its API on port ${impostor.port}, but what answers there does not prove to be it (127.0.0.1): the API token is not sent`);
        // the command rolled back itself, between the cycles of whoever owns the folder
        expect(back.code, back.svc.describe()).toBe(0);
        expect(inspect(name).Image).toBe(before);
      }
    } finally {
      impostor.stop(true);
    }
  }, 180_000);
});
