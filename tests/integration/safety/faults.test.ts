/**
 * Faults other than a kill of svc: a new image that fails its rollback checks, an engine that
 * refuses a step, runs out of disk or stops during the watch, a second svc instance, a registry
 * that goes away; and the audit log after a crash (scenario.ts).
 */
import { describe, expect, test } from "bun:test";
import { freePort } from "../../harness.ts";
import type { RestartPolicy } from "../../support/fixture.ts";
import {
  App,
  describeState,
  entryOf,
  expectIntact,
  finished,
  first,
  leftovers,
  receiver,
  recordAfter,
  reportOf,
  row,
  sb,
  shortRecovery,
  useOwnSandbox,
} from "./scenario.ts";
import {
  apiPath,
  type MatrixRow,
  QUICK_CMD,
  recoveryActions,
  type SvcProcess,
  startEngineProxy,
  startSvc,
  waitUntil,
} from "./support.ts";

useOwnSandbox();

// ---------------------------------------------------------------------------------------------
// 2. faults of the engine and the registry, and bad new images

describe("the new image fails a rollback check: the old container comes back (process level)", () => {
  const cases: { step: string; image: string[]; restart?: RestartPolicy; reason: RegExp; logs?: string }[] = [
    {
      step: "non-zero exit",
      image: [`CMD ["/bin/sh","-c","echo exit-three >&2; exit 3"]`],
      restart: "no",
      reason: /exited with code 3/,
      logs: "exit-three",
    },
    {
      step: "restart loop",
      image: [`CMD ["/bin/sh","-c","echo looping >&2; exit 1"]`],
      restart: "always",
      reason: /restart loop/,
    },
    {
      step: "healthcheck unhealthy",
      image: [QUICK_CMD, "HEALTHCHECK --interval=1s --timeout=1s --retries=1 CMD false"],
      reason: /unhealthy/,
    },
    {
      step: "never healthy within startup_timeout",
      image: [QUICK_CMD, "HEALTHCHECK --interval=1h --start-period=1h CMD true"],
      reason: /not healthy within the startup timeout/,
    },
    {
      step: "not running within startup_timeout (exits 0)",
      image: [`CMD ["/bin/true"]`],
      restart: "no",
      reason: /not running within the startup timeout/,
    },
  ];
  for (const c of cases) {
    test(c.step, async () => {
      const r = row({ fault: "bad new image", step: c.step });
      const app = new App("bad", { newImage: c.image, restart: c.restart });
      const since = receiver.reports.length;
      const run = startSvc(app.args());
      const exit = await finished(run);
      const entry = entryOf(await reportOf(app, since), app);
      r.first_exit = String(exit);
      r.observed = `audit: ${run.audit.map((e) => e.action).join(" ")}`;
      r.recovery = entry ? `${entry.state}: ${String(entry.reason).split("\n")[0]}` : "no report";
      r.leftovers = leftovers(app).join(", ") || "none";
      r.image_after = sb.docker(["inspect", "-f", "{{.Image}}", app.name], { allowFailure: true }).stdout
        ? app.imageName(sb.inspect(app.name).Image)
        : "no container";
      r.rerun_exit = "-";
      expect(exit).toBe(1);
      expect(entry?.state).toBe("rolled_back");
      expect(entry?.reason).toMatch(c.reason);
      if (c.logs) expect(entry?.reason).toContain(c.logs);
      expect(expectIntact(app)).toBe("old");
      expect(sb.inspect(app.name).Id).toBe(app.before.Id);
      r.verdict = "ok";
    });
  }
});

describe("the engine refuses one step (error injected by the engine proxy), then the next start", () => {
  const failing = [`CMD ["/bin/sh","-c","exit 3"]`];
  const cases: {
    step: string;
    gate: (request: Request, path: string, url: URL, app: App) => boolean;
    newImage?: string[];
    state: string;
    exit: number;
    final: "old" | "new";
  }[] = [
    {
      step: "stop of the old container",
      gate: (q, p, _u, app) => q.method === "POST" && p === `/containers/${app.before.Id}/stop`,
      state: "failed",
      exit: 1,
      final: "old",
    },
    {
      step: "start of the new container",
      gate: (q, p, _u, app) =>
        q.method === "POST" && /^\/containers\/[0-9a-f]{64}\/start$/.test(p) && !p.includes(app.before.Id),
      state: "failed",
      exit: 1,
      final: "old",
    },
    {
      step: "rename back during a rollback",
      newImage: failing,
      gate: (q, p, u, app) =>
        q.method === "POST" && p === `/containers/${app.before.Id}/rename` && u.searchParams.get("name") === app.name,
      state: "rolled_back",
      exit: 1,
      final: "old",
    },
    {
      step: "removing the old container after a good update",
      gate: (q, p, _u, app) => q.method === "DELETE" && p === `/containers/${app.before.Id}`,
      state: "updated",
      exit: 0,
      final: "new",
    },
  ];
  for (const c of cases) {
    test(c.step, async () => {
      const r = row({ fault: "engine error (500)", step: c.step });
      const app = new App("refuse", { newImage: c.newImage, restart: c.newImage ? "no" : undefined });
      const proxy = startEngineProxy(sb.socketPath);
      let injected = false;
      proxy.intercept = (request, url) => {
        if (injected || !c.gate(request, apiPath(url), url, app)) return undefined;
        injected = true;
        return Response.json({ message: `injected failure: ${c.step}` }, { status: 500 });
      };
      const since = receiver.reports.length;
      const run1 = startSvc(app.args([], proxy.dockerHost));
      const exit1 = await finished(run1);
      const entry = entryOf(await reportOf(app, since), app);
      r.first_exit = String(exit1);
      r.observed = `audit: ${run1.audit.map((e) => e.action + (e.error && e.action !== "rollback" ? "(failed)" : "")).join(" ")}; then: ${describeState()}`;
      expect(injected).toBe(true);
      expect(entry?.state).toBe(c.state);
      expect(exit1).toBe(c.exit);

      const run2 = startSvc(app.args(["--monitor-only"]));
      const exit2 = await finished(run2);
      r.recovery = `report: ${
        entry
          ? `${entry.state}: ${String(entry.reason ?? "")
              .split("\n")[0]!
              .slice(0, 120)}`
          : "none"
      }; next start: ${shortRecovery(recoveryActions(run2))}`;
      r.leftovers = leftovers(app).join(", ") || "none";
      r.rerun_exit = String(exit2);
      expect(exit2).toBe(0);
      r.image_after = expectIntact(app);
      expect(r.image_after).toBe(c.final);
      if (c.final === "old") expect(sb.inspect(app.name).Id).toBe(app.before.Id);
      r.verdict = "ok";
    });
  }
});

describe("engine faults", () => {
  test("disk full: the engine answers create with 500 no space left on device", async () => {
    const r = row({ fault: "engine error on create", step: "create" });
    const app = new App("diskfull");
    const proxy = startEngineProxy(sb.socketPath);
    proxy.intercept = (request, url) =>
      request.method === "POST" && apiPath(url) === "/containers/create"
        ? Response.json({ message: "no space left on device" }, { status: 500 })
        : undefined;
    const since = receiver.reports.length;
    const run = startSvc(app.args([], proxy.dockerHost));
    const exit = await finished(run);
    const entry = entryOf(await reportOf(app, since), app);
    r.first_exit = String(exit);
    r.observed = `audit: ${run.audit.map((e) => e.action + (e.error ? "(failed)" : "")).join(" ")}`;
    r.recovery = entry ? `${entry.state}: ${entry.reason}` : "no report";
    r.leftovers = leftovers(app).join(", ") || "none";
    r.rerun_exit = "-";
    expect(proxy.seen.some((s) => /containers\/create/.test(s))).toBe(true);
    expect(exit).toBe(1);
    expect(entry?.state).toBe("failed");
    expect(entry?.reason).toContain("no space left on device");
    expect(run.audit.find((e) => e.action === "create")?.error).toContain("no space left on device");
    r.image_after = expectIntact(app);
    expect(r.image_after).toBe("old");
    expect(sb.inspect(app.name).Id).toBe(app.before.Id);
    r.verdict = "ok";
  });

  test.each([
    ["SIGTERM" as const, "engine restart (SIGTERM)"],
    ["SIGKILL" as const, "engine crash (SIGKILL)"],
  ])(
    "engine stopped by %s and started again during the watch: run-once, then the next start",
    async (signal, fault) => {
      const r = row({ fault, step: "during watch" });
      const app = new App("engine");
      let restart: Promise<void> | undefined;
      const since = receiver.reports.length;
      const run1 = startSvc(app.args(), {
        killWhen: (e, all) => {
          if (first("start")(e, all))
            restart = Bun.sleep(500).then(async () => {
              await sb.stopEngine(signal);
              await sb.startEngine();
            });
          return false;
        },
      });
      const exit1 = await finished(run1);
      await restart;
      expect(restart).toBeDefined();
      const entry = entryOf(await reportOf(app, since), app);
      r.first_exit = String(exit1);
      r.observed = `report: ${entry ? `${entry.state}: ${String(entry.reason).split("\n")[0]}` : "none"}; engine back: ${describeState()}`;

      const run2 = startSvc(app.args(["--monitor-only"]));
      const exit2 = await finished(run2);
      r.recovery = shortRecovery(recoveryActions(run2));
      r.leftovers = leftovers(app).join(", ") || "none";
      r.rerun_exit = String(exit2);
      r.image_after = expectIntact(app);
      expect(exit2).toBe(0);

      const run3 = startSvc(app.args());
      const exit3 = await finished(run3);
      r.rerun_exit += ` / next cycle ${exit3}`;
      expect(exit3).toBe(0);
      expect(expectIntact(app)).toBe("new");
      r.verdict = "ok";
    },
  );

  /**
   * A long-running svc (update API); the engine goes away 0.5 s into the watch and stays away
   * until the cycle has given up, so the rollback cannot happen then and must happen later.
   */
  async function engineDownInServe(r: MatrixRow) {
    const app = new App("engine-serve", { restart: "no" });
    const port = freePort();
    const token = "safety-token";
    let stopped: Promise<void> | undefined;
    const args = app
      .args(["--http-api-update", "--http-api-token", token, "--http-api-port", String(port)])
      .filter((a) => a !== "--run-once");
    const serve = startSvc(args, {
      killWhen: (e, all) => {
        if (first("start")(e, all)) stopped = Bun.sleep(500).then(() => sb.stopEngine("SIGTERM"));
        return false;
      },
    });
    const update = async () => {
      const response = await fetch(`http://127.0.0.1:${port}/v1/update`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}` },
      });
      return response.status === 200 ? await response.json() : { status: response.status, body: await response.text() };
    };
    const describeEntry = (entry: any) =>
      entry
        ? `${entry.state}${entry.reason ? `: ${String(entry.reason).split("\n")[0]!.slice(0, 160)}` : ""}`
        : "container not in the report";
    await waitUntil(
      async () => (await fetch(`http://127.0.0.1:${port}/v1/health`).catch(() => null))?.status === 200,
      30_000,
      "svc's API",
    );
    const firstReport: any = await update();
    expect(stopped).toBeDefined();
    await stopped;
    await sb.startEngine();
    r.first_exit = "(serving)";
    r.observed = `1st cycle: ${describeEntry(entryOf(firstReport, app))}; engine back: ${describeState()}`;
    const secondEntry = entryOf(await update(), app);
    r.recovery = `2nd cycle: ${describeEntry(secondEntry)}`;
    recordAfter(r, app);
    return {
      app,
      secondEntry,
      update,
      describeEntry,
      stop: async () => {
        serve.proc.kill("SIGTERM");
        r.rerun_exit = `svc exit ${await finished(serve, 30_000)}`;
      },
    };
  }

  test("engine down from the watch until the cycle ended, in a long-running svc: the next cycle repairs it without a restart of svc", async () => {
    const r = row({
      fault: "engine down",
      step: "from the watch to the end of the cycle, long-running svc (restart policy no)",
    });
    const run = await engineDownInServe(r);
    await run.stop();
    expect(expectIntact(run.app)).toBeDefined();
    r.verdict = "ok";
  });

  test("engine down during the watch is not blamed on the image: a later cycle updates to it", async () => {
    const r = row({
      fault: "engine down",
      step: "as above, then one more cycle",
      bug: "an engine outage during the watch is recorded as a rollback of the image: its digest is never retried (until svc restarts)",
    });
    const run = await engineDownInServe(r);
    // the repair may be done by the second cycle; the update itself by the second or the third
    const thirdEntry = run.secondEntry?.state === "updated" ? run.secondEntry : entryOf(await run.update(), run.app);
    r.recovery += `; 3rd cycle: ${run.describeEntry(thirdEntry)}`;
    r.image_after = run.app.imageName(sb.inspect(run.app.name).Image);
    await run.stop();
    expect(thirdEntry?.state).toBe("updated");
    expect(expectIntact(run.app)).toBe("new");
    r.verdict = "ok";
  });
});

describe("the audit log after a crash", () => {
  test("every entry names the container it touched by id, the new container's create included", async () => {
    const r = row({
      fault: "none (audit check)",
      step: "create entry",
      bug: "the create entry has no container_id: after a crash the audit log cannot tell which container svc made",
    });
    const app = new App("audit");
    const run = startSvc(app.args());
    const exit = await finished(run);
    r.first_exit = String(exit);
    r.observed = run.audit.map((e) => `${e.action}:${e.container_id ? "id" : "NO id"}`).join(" ");
    r.image_after = expectIntact(app);
    r.recovery = r.leftovers = r.rerun_exit = "-";
    expect(exit).toBe(0);
    const created = run.audit.find((e) => e.action === "create");
    expect(created?.container_id).toBe(sb.inspect(app.name).Id);
    for (const entry of run.audit.filter((e) => e.action !== "pull")) expect(entry.container_id ?? null).not.toBeNull();
    r.verdict = "ok";
  });
});

describe("a second svc instance on the same engine", () => {
  test("an unscoped instance starting up leaves another scope's update in progress alone", async () => {
    const r = row({ fault: "another svc instance starts", step: "during watch (other scope)" });
    // healthy only after 4 s: the scoped instance is still watching it (startup_timeout 60 s, and
    // probes given 10 s each: an exec can take seconds at load)
    const app = new App("scope", {
      labels: { "svc.scope": "blue" },
      newImage: [
        `CMD ["/bin/sh","-c","trap 'exit 0' TERM; (sleep 4; touch /tmp/ready) & sleep 3600 & wait"]`,
        "HEALTHCHECK --interval=1s --timeout=10s --retries=30 CMD test -f /tmp/ready",
      ],
    });
    let other: SvcProcess | undefined;
    const since = receiver.reports.length;
    const scoped = startSvc(app.args(["--scope", "blue"], sb.dockerHost, { startup: "60s" }), {
      killWhen: (e, all) => {
        if (first("start")(e, all)) {
          // an unscoped instance starts (no container names: scope is all that sets them apart)
          other = startSvc([
            "--run-once",
            "--docker-host",
            sb.dockerHost,
            "--rollback-startup-timeout",
            "1s",
            "--monitor-only",
          ]);
        }
        return false;
      },
    });
    const exit = await finished(scoped);
    expect(other).toBeDefined();
    const otherExit = await finished(other!);
    const entry = entryOf(await reportOf(app, since), app);
    const touched = other!.audit.filter((e) => e.container === app.name);
    r.first_exit = `scoped ${exit}, unscoped ${otherExit}`;
    r.observed = `unscoped instance's actions on it: ${touched.map((e) => e.action).join(" ") || "none"}`;
    r.recovery = `scoped report: ${entry ? `${entry.state}${entry.reason ? `: ${String(entry.reason).split("\n")[0]}` : ""}` : "none"}`;
    recordAfter(r, app);
    r.rerun_exit = "-";
    expect(touched).toEqual([]);
    expect(entry?.state).toBe("updated");
    expect(exit).toBe(0);
    expect(expectIntact(app)).toBe("new");
    r.verdict = "ok";
  });
});

describe("registry faults", () => {
  test("registry killed between the check and the pull", async () => {
    const r = row({ fault: "registry down", step: "between check and pull" });
    const app = new App("registry");
    const proxy = startEngineProxy(sb.socketPath);
    // svc asks the engine to pull only after its own registry check said "newer": kill the registry then
    proxy.intercept = async (request, url) => {
      if (request.method === "POST" && apiPath(url) === "/images/create") await sb.stopRegistry();
      return undefined;
    };
    const since = receiver.reports.length;
    const run = startSvc(app.args([], proxy.dockerHost));
    const exit = await finished(run);
    const entry = entryOf(await reportOf(app, since), app);
    r.first_exit = String(exit);
    r.observed = `audit: ${run.audit.map((e) => e.action + (e.error ? "(failed)" : "")).join(" ")}`;
    r.recovery = entry ? `${entry.state}: ${entry.reason}` : "no report";
    r.leftovers = leftovers(app).join(", ") || "none";
    r.rerun_exit = "-";
    expect(exit).toBe(1);
    expect(entry?.state).toBe("failed");
    expect(entry?.reason).toMatch(/pull/);
    r.image_after = expectIntact(app);
    expect(r.image_after).toBe("old");
    const now = sb.inspect(app.name);
    expect(now.Id).toBe(app.before.Id);
    // never stopped: the update stopped before touching the container
    expect(now.State.StartedAt).toBe(app.before.State.StartedAt);
    r.verdict = "ok";
  });

  test("registry down before the cycle (the newer image already in the local store)", async () => {
    const r = row({ fault: "registry down", step: "before the check" });
    const app = new App("registry-down");
    await sb.stopRegistry();
    const since = receiver.reports.length;
    const run = startSvc(app.args(["--registry-timeout", "3s"]));
    const exit = await finished(run);
    const entry = entryOf(await reportOf(app, since), app);
    r.first_exit = String(exit);
    r.observed = `audit: ${run.audit.map((e) => e.action).join(" ") || "(no engine action)"}`;
    r.recovery = entry ? `${entry.state}: ${entry.reason}` : "no report";
    r.leftovers = leftovers(app).join(", ") || "none";
    r.rerun_exit = "-";
    expect(entry?.state).toBe("skipped");
    expect(run.audit).toEqual([]);
    expect(exit).toBe(0);
    r.image_after = expectIntact(app);
    const now = sb.inspect(app.name);
    expect(now.Id).toBe(app.before.Id);
    expect(now.State.StartedAt).toBe(app.before.State.StartedAt);
    r.verdict = "ok";
  });
});
