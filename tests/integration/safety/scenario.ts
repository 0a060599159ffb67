/**
 * The fault-injection scenarios' common ground: each test file of this folder runs svc as a real
 * process against an engine and registry of the file's own (support.ts) and kills it, or has its
 * engine or registry fail, at each step of an update. Whatever happens, the next start must leave
 * the container running under its name, on the old or the new image, configured as before, with
 * nothing left over. The files run side by side, each with its own sandbox.
 *
 * Each file prints its rows of the step x fault -> outcome matrix at the end, and merges them into
 * the file SVC_SAFETY_MATRIX_OUT names (which is how tests/integration/safety/MATRIX.md is made).
 */
import { afterAll, afterEach, beforeAll, expect, setDefaultTimeout } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { RestartPolicy } from "../../support/fixture.ts";
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

/** this file's sandbox and webhook receiver: set by useOwnSandbox */
export let sb: PrivateSandbox;
export let receiver: Receiver;

/** A sandbox of the calling test file's own, up for its tests, down after them; its matrix rows printed. */
export function useOwnSandbox(): void {
  // each test runs svc two or three times (each run capped at 90 s), with watches of a few seconds
  setDefaultTimeout(240_000);
  sb = new PrivateSandbox();
  beforeAll(() => {
    sb.up();
    receiver = startReceiver();
  }, 240_000);

  afterAll(async () => {
    await stopEverything();
    sb.down();
    console.log(`\nFault-injection matrix\n${renderMatrix(matrix)}\n`);
    const out = process.env.SVC_SAFETY_MATRIX_OUT;
    if (out) writeFileSync(out, matrixDocument(mergedTable(out, matrix)));
  }, 120_000);

  afterEach(async () => {
    await endOfTest();
    // a restarted engine or a killed registry must be back for the next test
    if (!sb.engineAlive()) await sb.startEngine();
    await sb.startRegistry();
    for (const app of apps.splice(0)) app.cleanup();
  });
}

const apps: App[] = [];
// ---------------------------------------------------------------------------------------------
// one application container with everything a user configures, and a newer image for it

export const USER_LABELS = ["com.example.owner", "com.example.tier"];

export interface AppOptions {
  /** image changes of the NEW image (default: the same command as the old one) */
  newImage?: string[];
  /** image changes of the OLD image */
  oldImage?: string[];
  restart?: RestartPolicy;
  /** more labels, e.g. svc.scope */
  labels?: Record<string, string>;
  /** run `:1.0.0` with svc.tag_policy=semver:minor, the newer image being `:1.1.0` (a tag move) */
  tagPolicy?: boolean;
}

export class App {
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
    sb.run(this.name, this.ref, {
      network: this.network,
      aliases: [`${this.name}-alias`],
      env: { FOO: "bar", MODE: "safety" },
      labels: {
        "com.example.owner": "safety",
        "com.example.tier": "test",
        ...options.labels,
        ...(options.tagPolicy ? { "svc.tag_policy": "semver:minor" } : {}),
      },
      binds: [`${this.bind}:/data`],
      restart: options.restart ?? "unless-stopped",
    });
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
export function leftovers(app: App): string[] {
  return Object.entries(sb.containers())
    .filter(([name]) => name !== app.name)
    .map(([name, state]) => `${name} (${state})`);
}

/** What the matrix says after a scenario: the containers left beside the app's, and the image it runs. */
export function recordAfter(r: MatrixRow, app: App): void {
  r.leftovers = leftovers(app).join(", ") || "none";
  const now = sb.docker(["inspect", app.name], { allowFailure: true }).code === 0 ? sb.inspect(app.name) : null;
  r.image_after = now
    ? `${app.imageName(now.Image)}${now.State.Running ? "" : `, NOT running (${now.State.Status})`}`
    : "no container";
}

export function describeState(): string {
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
export function expectIntact(app: App): "old" | "new" {
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

export async function finished(run: SvcProcess, timeoutMs = 90_000): Promise<number> {
  const timer = setTimeout(() => run.proc.kill("SIGKILL"), timeoutMs);
  try {
    return await run.exited;
  } finally {
    clearTimeout(timer);
  }
}

/** The report a run-once process sent to the webhook (runs with notify_on_every_cycle). */
export async function reportOf(app: App, sinceIndex: number): Promise<any | null> {
  const find = () =>
    receiver.reports.slice(sinceIndex).find((r) => r?.containers?.some((c: any) => c.name === app.name));
  await waitUntil(() => find() !== undefined, 5_000, "the webhook report").catch(() => {});
  return find() ?? null;
}

export function entryOf(report: any, app: App): any {
  return report?.containers?.find((c: any) => c.name === app.name) ?? null;
}

/** A row of the matrix; `bug` says what a failure of this test means (it becomes the verdict unless the test passes). */
export function row(partial: Partial<MatrixRow> & Pick<MatrixRow, "fault" | "step"> & { bug?: string }): MatrixRow {
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

export function shortRecovery(actions: string[]): string {
  return (
    actions.map((a) => a.replace(/^\S+\.svc-old-[0-9a-f]{12}-(running|stopped): /, "")).join("; ") ||
    "nothing to recover"
  );
}

// ---------------------------------------------------------------------------------------------
// 1. SIGKILL at each step of an update

export type Killer = NonNullable<SvcOptions["killWhen"]>;

export const RENAME_BEFORE_START =
  "the old container is renamed back before it is started: a kill in between leaves it stopped under its name, with no marker for recovery";

/** the first audit entry of `action` (a rollback entry always carries its reason in `error`) */
export const first =
  (action: string): Killer =>
  (e, all) =>
    e.action === action && (!e.error || action === "rollback") && all.filter((a) => a.action === action).length === 1;

/**
 * Runs svc until `killWhen` fires, SIGKILLs it, then starts it again with the cycle in
 * monitor-only mode (so what is found afterwards is startup recovery's own doing), asserts the
 * invariant, and finally runs a normal cycle: the update goes through (or rolls back again when
 * the new image is bad).
 */
export async function killScenario(
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

/**
 * Putting the old container back takes two engine calls: its start and its rename back. Whatever
 * their order, a kill between them must be repaired: this lets the first through and answers
 * the second itself (it never reaches the engine), returning what was held; undefined otherwise.
 */
export function restoreGap(oldId: string, name: string): (request: Request, url: URL) => string | undefined {
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

export function dieEvents(id: string, sinceMs: number): number {
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

/**
 * The table of the document at `path` with this file's rows put in: a row of the same fault and
 * step is replaced, a new one appended, the other files' rows kept.
 */
export function mergedTable(path: string, rows: MatrixRow[]): string {
  const ours = renderMatrix(rows).split("\n");
  const [head, rule, ...mine] = ours;
  const key = (line: string) => line.split(" | ").slice(0, 2).join(" | ");
  const kept = existsSync(path)
    ? readFileSync(path, "utf8")
        .split("\n")
        .filter((line) => line.startsWith("| ") && line !== head)
    : [];
  const merged = kept.map((line) => mine.find((m) => key(m) === key(line)) ?? line);
  for (const line of mine) if (!merged.includes(line)) merged.push(line);
  return [head, rule, ...merged].join("\n");
}

export function matrixDocument(table: string): string {
  return `# Fault-injection matrix

Made by the fault-injection files of \`tests/integration/safety/\` (\`kill-steps\`, \`kill-rollback\`, \`kill-more\`, \`faults\`: \`SVC_SAFETY_MATRIX_OUT=tests/integration/safety/MATRIX.md bun test tests/integration/safety\`), each merging its rows in.
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
