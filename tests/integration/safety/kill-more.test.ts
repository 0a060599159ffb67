/**
 * SIGTERM during the watch, kills between two engine calls
 * made exact by an engine proxy, and a kill of the recovery itself (scenario.ts).
 */
import { describe, expect, test } from "bun:test";
import {
  App,
  describeState,
  dieEvents,
  expectIntact,
  finished,
  first,
  leftovers,
  RENAME_BEFORE_START,
  recordAfter,
  restoreGap,
  row,
  sb,
  shortRecovery,
  useOwnSandbox,
} from "./scenario.ts";
import { apiPath, recoveryActions, type SvcProcess, startEngineProxy, startSvc, waitUntil } from "./support.ts";

useOwnSandbox();

describe("SIGTERM during the watch (graceful stop)", () => {
  test("one SIGTERM: the update in progress finishes, svc exits 0, nothing left over", async () => {
    const r = row({ fault: "SIGTERM svc", step: "during watch" });
    const app = new App("term");
    const run = startSvc(app.args(), {
      killWhen: (e, all) => {
        if (first("start")(e, all)) setTimeout(() => run.proc.kill("SIGTERM"), 500);
        return false;
      },
    });
    const exit = await finished(run);
    r.first_exit = String(exit);
    r.observed = `audit: ${run.audit.map((e) => e.action).join(" ")}`;
    r.recovery = "-";
    r.leftovers = leftovers(app).join(", ") || "none";
    r.rerun_exit = "-";
    expect(exit).toBe(0);
    expect(run.audit.map((e) => e.action)).toContain("remove");
    r.image_after = expectIntact(app);
    expect(r.image_after).toBe("new");
    r.verdict = "ok";
  });

  test("two SIGTERMs: svc exits at once, the next start repairs", async () => {
    const r = row({ fault: "SIGTERM svc twice", step: "during watch" });
    // a watch that lasts: the new version is healthy only 8 s after its start (probes failing
    // before are in its start period), so the signals, 0.5 and 0.8 s after svc's start is read,
    // land in it however late its output is read at load (a 3 s watch had ended by then)
    const app = new App("term2", {
      newImage: [
        `CMD ["/bin/sh","-c","trap 'exit 0' TERM; (sleep 8; touch /tmp/ready) & sleep 3600 & wait"]`,
        "HEALTHCHECK --interval=1s --start-period=60s CMD test -e /tmp/ready",
      ],
    });
    const run = startSvc(app.args([], undefined, { startup: "40s" }), {
      killWhen: (e, all) => {
        if (first("start")(e, all)) {
          setTimeout(() => run.proc.kill("SIGTERM"), 500);
          setTimeout(() => run.proc.kill("SIGTERM"), 800);
        }
        return false;
      },
    });
    const exit = await finished(run);
    r.first_exit = String(exit);
    r.observed = `after start + 2 signals: ${describeState()}`;
    expect(exit).toBe(143);
    const run2 = startSvc(app.args(["--monitor-only"], undefined, { startup: "40s" }));
    const exit2 = await finished(run2);
    r.recovery = shortRecovery(recoveryActions(run2));
    r.leftovers = leftovers(app).join(", ") || "none";
    r.rerun_exit = String(exit2);
    expect(exit2).toBe(0);
    r.image_after = expectIntact(app);
    r.verdict = "ok";
  });
});

// ---------------------------------------------------------------------------------------------
// kills between two engine calls, made exact by holding the second call in an engine proxy

describe("SIGKILL between two engine calls (the second held by an engine proxy)", () => {
  test("rolling back: killed between the old container's start and its rename back (the second held)", async () => {
    const r = row({
      fault: "SIGKILL svc",
      step: "rollback: between the old container's start and its rename back",
      bug: RENAME_BEFORE_START,
    });
    const app = new App("gap", { newImage: [`CMD ["/bin/sh","-c","exit 3"]`], restart: "no" });
    const proxy = startEngineProxy(sb.socketPath);
    let run1: SvcProcess | undefined;
    const oldId: string = app.before.Id;
    const gap = restoreGap(oldId, app.name);
    proxy.intercept = (request, url) => {
      const held = gap(request, url);
      if (!held) return undefined;
      run1!.killedAfter = held;
      run1!.proc.kill("SIGKILL");
      return new Response(null, { status: 204 }); // svc is dead: nobody reads this, the engine never saw the call
    };
    run1 = startSvc(app.args([], proxy.dockerHost));
    const exit1 = await finished(run1);
    r.first_exit = `killed (${exit1})`;
    r.observed = `after ${run1.killedAfter ?? "(never reached)"}: ${describeState()}`;
    expect(run1.killedAfter).toBeDefined();

    const run2 = startSvc(app.args(["--monitor-only"]));
    r.rerun_exit = String(await finished(run2));
    r.recovery = shortRecovery(recoveryActions(run2));
    recordAfter(r, app);
    expect(expectIntact(app)).toBe("old");
    r.verdict = "ok";
  });

  test("a stop still in progress when svc starts again (container ignores SIGTERM, stop_timeout 6 s)", async () => {
    const r = row({
      fault: "SIGKILL svc",
      step: "after rename, engine still stopping the old one",
      bug: "recovery sees the parked container still running and does not start it; the engine's pending stop then stops it for good",
    });
    // PID 1 without a TERM handler: the engine's stop waits the whole stop timeout, then kills
    const app = new App("stopping", {
      oldImage: [`CMD ["/bin/sleep","3600"]`],
      newImage: [`CMD ["/bin/sleep","3600"]`],
    });
    const proxy = startEngineProxy(sb.socketPath);
    let run1: SvcProcess | undefined;
    proxy.intercept = (request, url) => {
      if (request.method === "POST" && apiPath(url) === `/containers/${app.before.Id}/stop`) {
        // let the stop reach the engine, then kill svc while the engine is still waiting
        setTimeout(() => {
          run1!.killedAfter = "stop sent to the engine";
          run1!.proc.kill("SIGKILL");
        }, 300);
      }
      return undefined;
    };
    const since = Date.now();
    run1 = startSvc(app.args([], proxy.dockerHost, { stop: "6s" }));
    const exit1 = await finished(run1);
    r.first_exit = `killed (${exit1})`;
    r.observed = `after ${run1.killedAfter ?? "(never reached)"}: ${describeState()}`;
    expect(run1.killedAfter).toBeDefined();

    const run2 = startSvc(app.args(["--monitor-only"]));
    r.rerun_exit = String(await finished(run2));
    r.recovery = shortRecovery(recoveryActions(run2));
    // wait until the engine has carried out the stop svc sent before it died
    await waitUntil(() => dieEvents(app.before.Id, since) > 0, 20_000, "the old container's stop to complete").catch(
      () => {},
    );
    await Bun.sleep(500);
    recordAfter(r, app);
    expect(expectIntact(app)).toBe("old");
    r.verdict = "ok";
  });
});

describe("SIGKILL of the recovery itself", () => {
  test("recovery killed between starting the old container and renaming it back (the second held)", async () => {
    const r = row({
      fault: "SIGKILL svc, then SIGKILL its recovery",
      step: "recovery: between the old container's start and its rename back",
      bug: `recovery's undo: ${RENAME_BEFORE_START}`,
    });
    const app = new App("recovery");
    const proxy = startEngineProxy(sb.socketPath);
    const oldId: string = app.before.Id;
    // first svc: killed after create, exactly (the start of the new container is held, never sent)
    let run1: SvcProcess | undefined;
    proxy.intercept = (request, url) => {
      const path = apiPath(url);
      if (request.method === "POST" && /^\/containers\/[0-9a-f]{64}\/start$/.test(path) && !path.includes(oldId)) {
        run1!.killedAfter = "create (start of the new container held)";
        run1!.proc.kill("SIGKILL");
        return new Response(null, { status: 204 });
      }
      return undefined;
    };
    run1 = startSvc(app.args([], proxy.dockerHost));
    await finished(run1);
    expect(run1.killedAfter).toBeDefined();
    // the next start undoes the half-made update: remove the new one, start the old one, give it its name back
    let run2: SvcProcess | undefined;
    const gap = restoreGap(oldId, app.name);
    proxy.intercept = (request, url) => {
      const held = gap(request, url);
      if (!held) return undefined;
      run2!.killedAfter = `recovery's ${held}`;
      run2!.proc.kill("SIGKILL");
      return new Response(null, { status: 204 });
    };
    run2 = startSvc(app.args(["--monitor-only"], proxy.dockerHost));
    const exit2 = await finished(run2);
    r.first_exit = `killed after create; recovery killed (${exit2})`;
    r.observed = `after ${run2.killedAfter ?? "(never reached)"}: ${describeState()}`;
    expect(run2.killedAfter).toBeDefined();

    const run3 = startSvc(app.args(["--monitor-only"]));
    r.rerun_exit = String(await finished(run3));
    r.recovery = shortRecovery(recoveryActions(run3));
    recordAfter(r, app);
    expect(expectIntact(app)).toBe("old");
    r.verdict = "ok";
  });
});
