/**
 * Fault injection: svc runs as a real process against a real engine and registry (a
 * sandbox of this file's own, see support.ts) and is killed, or has its engine or registry fail,
 * at each step of an update. Whatever happens, the next start must leave the container running
 * under its name, on the old or the new image, configured as before, with nothing left over.
 *
 * The step x fault -> outcome matrix is printed at the end (and written to the file named by
 * SVC_SAFETY_MATRIX_OUT, which is how tests/integration/safety/MATRIX.md is made).
 */
import { afterAll, afterEach, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "../../harness.ts";
import {
  apiPath,
  endOfTest,
  type MatrixRow,
  matrix,
  PrivateSandbox,
  QUICK_CMD,
  type Receiver,
  recoveryActions,
  renderMatrix,
  type SvcOptions,
  type SvcProcess,
  startEngineProxy,
  startReceiver,
  startSvc,
  stopEverything,
  uniqueName,
  userConfig,
  waitUntil,
} from "./support.ts";

// each test runs svc two or three times, with watches of a few seconds
setDefaultTimeout(120_000);

const sb = new PrivateSandbox();
let receiver: Receiver;

beforeAll(() => {
  sb.up();
  receiver = startReceiver();
}, 240_000);

afterAll(async () => {
  await stopEverything();
  sb.down();
  const table = renderMatrix(matrix);
  console.log(`\nFault-injection matrix\n${table}\n`);
  const out = process.env.SVC_SAFETY_MATRIX_OUT;
  if (out) writeFileSync(out, matrixDocument(table));
}, 120_000);

const apps: App[] = [];
afterEach(async () => {
  await endOfTest();
  // a restarted engine or a killed registry must be back for the next test
  if (!sb.engineAlive()) await sb.startEngine();
  await sb.startRegistry();
  for (const app of apps.splice(0)) app.cleanup();
});

// ---------------------------------------------------------------------------------------------
// one application container with everything a user configures, and a newer image for it

const USER_LABELS = ["com.example.owner", "com.example.tier"];

interface AppOptions {
  /** image changes of the NEW image (default: the same command as the old one) */
  newImage?: string[];
  /** image changes of the OLD image */
  oldImage?: string[];
  restart?: string;
  /** also label it, e.g. svc.scope */
  extraArgs?: string[];
  /** run `:1.0.0` with svc.tag_policy=semver:minor, the newer image being `:1.1.0` (a tag move) */
  tagPolicy?: boolean;
}

class App {
  readonly name: string;
  readonly ref: string;
  /** where the newer image is pushed: the same tag, or the next version with a tag policy */
  readonly newRef: string;
  readonly network: string;
  readonly bind: string;
  readonly oldImageId: string;
  newImageId = "";
  readonly before: any;
  readonly images: string[] = [];

  constructor(what: string, options: AppOptions = {}) {
    this.name = uniqueName(`safe-${what}`);
    this.ref = `${sb.registry}/${this.name}:${options.tagPolicy ? "1.0.0" : "latest"}`;
    this.newRef = options.tagPolicy ? `${sb.registry}/${this.name}:1.1.0` : this.ref;
    this.network = `${this.name}-net`;
    this.bind = mkdtempSync(join(tmpdir(), "svc-safety-bind-"));
    writeFileSync(join(this.bind, "data.txt"), "user data\n");
    apps.push(this);
    this.oldImageId = sb.buildImage(this.ref, options.oldImage ?? [QUICK_CMD]);
    this.images.push(this.oldImageId);
    sb.docker(["network", "create", this.network]);
    sb.docker([
      "run",
      "-d",
      "--name",
      this.name,
      "--network",
      this.network,
      "--network-alias",
      `${this.name}-alias`,
      "-e",
      "FOO=bar",
      "-e",
      "MODE=safety",
      "-l",
      "com.example.owner=safety",
      "-l",
      "com.example.tier=test",
      "-v",
      `${this.bind}:/data`,
      "--restart",
      options.restart ?? "unless-stopped",
      ...(options.extraArgs ?? []),
      ...(options.tagPolicy ? ["-l", "svc.tag_policy=semver:minor"] : []),
      this.ref,
    ]);
    this.before = sb.inspect(this.name);
    this.publishNew(options.newImage ?? [QUICK_CMD]);
  }

  /** a newer image under the same tag, pushed */
  publishNew(changes: string[]): void {
    this.newImageId = sb.buildImage(this.newRef, changes);
    this.images.push(this.newImageId);
  }

  /** the flags of every svc run in these tests, scoped to this container */
  args(extra: string[] = [], host = sb.dockerHost, timeouts: { stop?: string; startup?: string } = {}): string[] {
    return [
      "--run-once",
      "--docker-host",
      host,
      "--stop-timeout",
      timeouts.stop ?? "1s",
      "--rollback-startup-timeout",
      timeouts.startup ?? "3s",
      "--notifications-webhook-url",
      receiver.url,
      "--notifications-notify-on-every-cycle",
      ...extra,
      this.name,
    ];
  }

  imageName(id: string): string {
    if (id === this.oldImageId) return "old";
    if (id === this.newImageId) return "new";
    return `other (${id.slice(7, 19)})`;
  }

  cleanup(): void {
    sb.removeAllContainers();
    sb.docker(["network", "rm", this.network], { allowFailure: true });
    if (this.images.length) sb.docker(["rmi", "-f", ...this.images], { allowFailure: true });
    rmSync(this.bind, { recursive: true, force: true });
  }
}

/** Every container of the engine other than the app's one running container. */
function leftovers(app: App): string[] {
  return Object.entries(sb.containers())
    .filter(([name]) => name !== app.name)
    .map(([name, state]) => `${name} (${state})`);
}

function describeState(): string {
  const all = sb.containers();
  const parts = Object.entries(all).map(
    ([name, state]) => `${name.replace(/^safe-[a-z-]+-[0-9a-f]{8}/, "app")}: ${state}`,
  );
  return parts.length ? parts.join(", ") : "no container";
}

/**
 * The invariant of the update protocol: one container, under its name, running, on the old or the new image,
 * with the user's configuration; returns which image it runs.
 */
function expectIntact(app: App): "old" | "new" {
  expect(leftovers(app)).toEqual([]);
  const now = sb.inspect(app.name);
  expect(now.State.Running).toBe(true);
  expect(now.State.Restarting).toBe(false);
  const image = app.imageName(now.Image);
  expect(["old", "new"]).toContain(image);
  // a tag policy's move: each image under its own reference
  expect(now.Config.Image).toBe(image === "new" ? app.newRef : app.ref);
  expect(userConfig(now, USER_LABELS)).toEqual(userConfig(app.before, USER_LABELS));
  return image as "old" | "new";
}

async function finished(run: SvcProcess, timeoutMs = 90_000): Promise<number> {
  const timer = setTimeout(() => run.proc.kill("SIGKILL"), timeoutMs);
  try {
    return await run.exited;
  } finally {
    clearTimeout(timer);
  }
}

/** The report a run-once process sent to the webhook (runs with notify_on_every_cycle). */
async function reportOf(app: App, sinceIndex: number): Promise<any | null> {
  const find = () =>
    receiver.reports.slice(sinceIndex).find((r) => r?.containers?.some((c: any) => c.name === app.name));
  await waitUntil(() => find() !== undefined, 5_000, "the webhook report").catch(() => {});
  return find() ?? null;
}

function entryOf(report: any, app: App): any {
  return report?.containers?.find((c: any) => c.name === app.name) ?? null;
}

/** A row of the matrix; `bug` says what a failure of this test means (it becomes the verdict unless the test passes). */
function row(partial: Partial<MatrixRow> & Pick<MatrixRow, "fault" | "step"> & { bug?: string }): MatrixRow {
  const { bug, ...rest } = partial;
  const r: MatrixRow = {
    observed: "",
    first_exit: "",
    recovery: "",
    image_after: "",
    leftovers: "",
    rerun_exit: "",
    ...rest,
    verdict: bug ? `FAIL: ${bug}` : "FAIL",
  };
  matrix.push(r);
  return r;
}

function shortRecovery(actions: string[]): string {
  return (
    actions.map((a) => a.replace(/^\S+\.svc-old-[0-9a-f]{12}-(running|stopped): /, "")).join("; ") ||
    "nothing to recover"
  );
}

// ---------------------------------------------------------------------------------------------
// 1. SIGKILL at each step of an update

type Killer = NonNullable<SvcOptions["killWhen"]>;

const RENAME_BEFORE_START =
  "the old container is renamed back before it is started: a kill in between leaves it stopped under its name, with no marker for recovery";

/** the first audit entry of `action` (a rollback entry always carries its reason in `error`) */
const first =
  (action: string): Killer =>
  (e, all) =>
    e.action === action && (!e.error || action === "rollback") && all.filter((a) => a.action === action).length === 1;

/**
 * Runs svc until `killWhen` fires, SIGKILLs it, then starts it again with the cycle in
 * monitor-only mode (so what is found afterwards is startup recovery's own doing), asserts the
 * invariant, and finally runs a normal cycle: the update goes through (or rolls back again when
 * the new image is bad).
 */
async function killScenario(
  step: string,
  killWhen: Killer | { gate: (request: Request, path: string, app: App) => boolean; what: string },
  options: AppOptions & { expectFinal?: "new" | "old"; expectFinalExit?: number; bug?: string } = {},
) {
  const r = row({ fault: "SIGKILL svc", step, bug: options.bug });
  const app = new App("kill", options);
  let run1: SvcProcess;
  if (typeof killWhen === "function") {
    run1 = startSvc(app.args(), { killWhen });
  } else {
    // exact: the next engine call is held by the proxy (never reaches the engine) and svc killed
    const gate = killWhen;
    const proxy = startEngineProxy(sb.socketPath);
    proxy.intercept = (request, url) => {
      if (!gate.gate(request, apiPath(url), app)) return undefined;
      run1.killedAfter = gate.what;
      run1.proc.kill("SIGKILL");
      return new Response(null, { status: 204 });
    };
    run1 = startSvc(app.args([], proxy.dockerHost));
  }
  const exit1 = await finished(run1);
  r.first_exit = run1.killedAfter ? `killed (${exit1})` : String(exit1);
  r.observed = `after ${run1.killedAfter ?? "(never reached)"}: ${describeState()}`;
  expect(run1.killedAfter).toBeDefined();
  const parked = Object.keys(sb.containers()).some((name) => name.includes(".svc-old-"));

  const run2 = startSvc(app.args(["--monitor-only"]));
  const exit2 = await finished(run2);
  r.recovery = shortRecovery(recoveryActions(run2));
  r.leftovers = leftovers(app).join(", ") || "none";
  r.image_after = sb.docker(["inspect", "-f", "{{.Image}}", app.name], { allowFailure: true }).stdout
    ? app.imageName(sb.inspect(app.name).Image)
    : "no container";
  r.rerun_exit = String(exit2);
  expect(exit2).toBe(0);
  const image = expectIntact(app);
  // a parked container is repaired, and the repair is in the audit log
  expect(run2.audit.some((e) => e.action === "recover")).toBe(parked);
  r.image_after = image;
  if (image === "old") expect(sb.inspect(app.name).Id).toBe(app.before.Id);

  const since = receiver.reports.length;
  const run3 = startSvc(app.args());
  const exit3 = await finished(run3);
  const report = await reportOf(app, since);
  r.rerun_exit += ` / next cycle ${exit3} (${entryOf(report, app)?.state ?? "no report"})`;
  expect(exit3).toBe(options.expectFinalExit ?? 0);
  expect(expectIntact(app)).toBe(options.expectFinal ?? "new");
  r.verdict = "ok";
}

describe("SIGKILL at each step of an update, then a restart repairs it", () => {
  test("after pull, exactly (nothing touched yet)", async () => {
    await killScenario("after pull", {
      what: "pull (the rename of the old container held)",
      gate: (request, path, app) => request.method === "POST" && path === `/containers/${app.before.Id}/rename`,
    });
  });

  test("after rename (the old container parked, its stop just sent)", async () => {
    await killScenario("after rename", first("rename"));
  });

  test("after stop", async () => {
    await killScenario("after stop", first("stop"));
  });

  test("after create (the new container exists, not started)", async () => {
    await killScenario("after create", first("create"));
  });

  test("after start", async () => {
    await killScenario("after start", first("start"));
  });

  test("during the watch (1 s into a 3 s watch)", async () => {
    await killScenario("during watch", (e, all) => (first("start")(e, all) ? 1000 : false));
  });

  // the same, on the way back: the new image exits, svc is rolling back when it is killed
  const failing = {
    newImage: [`CMD ["/bin/sh","-c","echo failing image >&2; exit 3"]`],
    restart: "no",
    expectFinal: "old" as const,
    expectFinalExit: 1,
  };

  test("rolling back: after the rollback decision", async () => {
    await killScenario("rollback: after decision", first("rollback"), failing);
  });

  test("rolling back: after the new container was removed", async () => {
    await killScenario(
      "rollback: after removing the new one",
      (e, all) => e.action === "remove" && all.some((a) => a.action === "rollback"),
      failing,
    );
  });

  test("rolling back: after the old container got its name back", async () => {
    await killScenario(
      "rollback: after renaming the old one back",
      (e, all) => e.action === "rename" && all.some((a) => a.action === "rollback"),
      { ...failing, bug: RENAME_BEFORE_START },
    );
  });
});

describe("SIGKILL during a tag policy's move to a newer tag, then a restart repairs it", () => {
  const tagged = { tagPolicy: true };
  test("tag move: after create", async () => {
    await killScenario("tag move: after create", first("create"), tagged);
  });

  test("tag move: during the watch", async () => {
    await killScenario("tag move: during watch", (e, all) => (first("start")(e, all) ? 1000 : false), tagged);
  });

  test("tag move: rolling back, after the rollback decision (the old reference comes back)", async () => {
    await killScenario("tag move: rollback after decision", first("rollback"), {
      ...tagged,
      newImage: [`CMD ["/bin/sh","-c","echo failing image >&2; exit 3"]`],
      restart: "no",
      expectFinal: "old",
      expectFinalExit: 1,
    });
  });
});

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
    const app = new App("term2");
    const run = startSvc(app.args(), {
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
    const run2 = startSvc(app.args(["--monitor-only"]));
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
    r.leftovers = leftovers(app).join(", ") || "none";
    const now = sb.inspect(app.name);
    r.image_after = `${app.imageName(now.Image)}${now.State.Running ? "" : `, NOT running (${now.State.Status})`}`;
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
    r.leftovers = leftovers(app).join(", ") || "none";
    const now = sb.inspect(app.name);
    r.image_after = `${app.imageName(now.Image)}${now.State.Running ? "" : `, NOT running (${now.State.Status})`}`;
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
    r.leftovers = leftovers(app).join(", ") || "none";
    const now = sb.inspect(app.name);
    r.image_after = `${app.imageName(now.Image)}${now.State.Running ? "" : `, NOT running (${now.State.Status})`}`;
    expect(expectIntact(app)).toBe("old");
    r.verdict = "ok";
  });
});

/**
 * Putting the old container back takes two engine calls: its start and its rename back. Whatever
 * their order, a kill between them must be repaired: this lets the first through and answers
 * the second itself (it never reaches the engine), returning what was held; undefined otherwise.
 */
function restoreGap(oldId: string, name: string): (request: Request, url: URL) => string | undefined {
  const done = new Set<string>();
  return (request, url) => {
    const path = apiPath(url);
    if (request.method !== "POST") return undefined;
    const step =
      path === `/containers/${oldId}/start`
        ? "start"
        : path === `/containers/${oldId}/rename` && url.searchParams.get("name") === name
          ? "rename back"
          : undefined;
    if (!step) return undefined;
    done.add(step);
    if (done.size < 2) return undefined;
    const other = step === "start" ? "rename back" : "start";
    return `${other} of the old container (${step} held)`;
  };
}

function dieEvents(id: string, sinceMs: number): number {
  const out = sb.docker([
    "events",
    "--since",
    String(Math.floor(sinceMs / 1000)),
    "--until",
    String(Math.ceil(Date.now() / 1000)),
    "--filter",
    `container=${id}`,
    "--filter",
    "event=die",
    "--format",
    "{{.Action}}",
  ]).stdout;
  return out.split("\n").filter(Boolean).length;
}

// ---------------------------------------------------------------------------------------------
// 2. faults of the engine and the registry, and bad new images

describe("the new image fails a rollback check: the old container comes back (process level)", () => {
  const cases: { step: string; image: string[]; restart?: string; reason: RegExp; logs?: string }[] = [
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
    r.leftovers = leftovers(app).join(", ") || "none";
    const now = sb.docker(["inspect", app.name], { allowFailure: true }).code === 0 ? sb.inspect(app.name) : null;
    r.image_after = now
      ? `${app.imageName(now.Image)}${now.State.Running ? "" : `, NOT running (${now.State.Status})`}`
      : "no container";
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
    // healthy only after 4 s: the scoped instance (startup_timeout 10 s) is still watching it
    const app = new App("scope", {
      extraArgs: ["-l", "svc.scope=blue"],
      newImage: [
        `CMD ["/bin/sh","-c","trap 'exit 0' TERM; (sleep 4; touch /tmp/ready) & sleep 3600 & wait"]`,
        "HEALTHCHECK --interval=1s --timeout=1s --retries=30 CMD test -f /tmp/ready",
      ],
    });
    let other: SvcProcess | undefined;
    const since = receiver.reports.length;
    const scoped = startSvc(app.args(["--scope", "blue"], sb.dockerHost, { startup: "10s" }), {
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
    r.leftovers = leftovers(app).join(", ") || "none";
    const now = sb.docker(["inspect", app.name], { allowFailure: true }).code === 0 ? sb.inspect(app.name) : null;
    r.image_after = now
      ? `${app.imageName(now.Image)}${now.State.Running ? "" : `, NOT running (${now.State.Status})`}`
      : "no container";
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

function matrixDocument(table: string): string {
  return `# Fault-injection matrix

Made by \`tests/integration/safety/faults.test.ts\` (\`SVC_SAFETY_MATRIX_OUT=tests/integration/safety/MATRIX.md bun test tests/integration/safety\`).
svc runs as a real process against a real engine and registry of the test's own. Each row: the
fault, where in the update it hit, what was on the engine right after, the exit code of the run
that took the fault, what the next start's recovery did (or what the report said), which image
the container runs afterwards, leftovers, and the exit codes of the next runs (a monitor-only run,
whose recovery is all that changes anything, then a normal cycle).

"app" stands for the test's container name; \`app.svc-old-<id>-running\` is the parked old container.
A verdict "FAIL: ..." is an open bug, kept as a failing test until it is fixed; the text says what goes wrong.
Rows marked "(held)" are exact: the engine proxy held the next engine call, so it never reached the engine.

${table}
`;
}
