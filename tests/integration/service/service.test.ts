/**
 * The whole service as users run it: `bun src/main.ts` against the sandbox engine and registry.
 * Run-once (no listener, exit status), a taken port (exit 2), SIGTERM (exit 0, the running
 * update finishes first), a second signal (exit at once), `svc healthcheck`, and 50 concurrent
 * update requests against the real updater. Every container carries a unique scope label and
 * every cycle is scoped to it.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import {
  buildImage,
  docker,
  freePort,
  inspect,
  portOpen,
  removeContainersByPrefix,
  sandbox,
  uniqueName,
  waitUntil,
} from "../../harness.ts";
import { type RunOptions, runContainer } from "../../support/fixture.ts";
import { svcCommand } from "../../support/svc-command.ts";
import { tempDir } from "../../temp.ts";

const PREFIX = uniqueName("svc-service");
const TOKEN = "service-test-token";
const images: string[] = [];
const processes: Bun.Subprocess[] = [];

afterAll(() => {
  for (const proc of processes) if (proc.exitCode === null) proc.kill("SIGKILL");
  removeContainersByPrefix(PREFIX);
  if (images.length) docker(["rmi", "-f", ...new Set(images)], { allowFailure: true });
});

/** A container of our own from a fresh image; `newer` publishes a newer image under its tag. */
function makeContainer(label: string, options: { cmd?: string; healthcheck?: RunOptions["healthcheck"] } = {}) {
  const name = `${PREFIX}-${label}`;
  const reference = `${sandbox().registry}/${name}:latest`;
  const changes = options.cmd ? [`CMD ${options.cmd}`] : undefined;
  const first = buildImage(reference, { changes });
  images.push(reference, first.id);
  runContainer(
    name,
    reference,
    { network: "none", labels: { "svc.scope": name }, healthcheck: options.healthcheck },
    { socketPath: sandbox().socketPath },
  );
  const newer = (cmd?: string) => {
    const built = buildImage(reference, { changes: cmd ? [`CMD ${cmd}`] : changes });
    images.push(built.id);
    return built.id;
  };
  return { name, reference, oldImageId: first.id, newer };
}

interface Svc {
  proc: Bun.Subprocess<"ignore", "pipe", "pipe">;
  output: () => string;
  exited: Promise<number>;
}

function startSvc(args: string[]): Svc {
  const proc = Bun.spawn(
    [...svcCommand(), "--docker-host", sandbox().dockerHost, "--log-format", "json", "--stop-timeout", "1s", ...args],
    {
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
      env: { ...process.env, XDG_STATE_HOME: tempDir("svc-state-") },
    },
  );
  processes.push(proc);
  let text = "";
  const collect = async (stream: ReadableStream<Uint8Array>) => {
    for await (const chunk of stream) text += new TextDecoder().decode(chunk);
  };
  const drained = Promise.all([collect(proc.stdout), collect(proc.stderr)]);
  return { proc, output: () => text, exited: proc.exited.then(async (code) => (await drained, code)) };
}

async function healthy(port: number): Promise<boolean> {
  try {
    return (await fetch(`http://127.0.0.1:${port}/v1/health`)).status === 200;
  } catch {
    return false;
  }
}

/** Waits for /v1/health; fails at once, with svc's output, when svc exits instead. */
async function waitHealthy(svc: Svc, port: number): Promise<void> {
  await waitUntil(
    async () => {
      if (svc.proc.exitCode !== null) throw new Error(`svc exited with ${svc.proc.exitCode}:\n${svc.output()}`);
      return healthy(port);
    },
    30_000,
    "svc to answer /v1/health",
  );
}

const runningImage = (name: string): string => inspect(name).Image;

describe("run-once", () => {
  test("updates, exits 0, and never opens the API port even with API flags", async () => {
    const app = makeContainer("once-ok");
    const newId = app.newer();
    const port = freePort();
    const svc = startSvc([
      "--run-once",
      "--scope",
      app.name,
      "--http-api-update",
      "--http-api-metrics",
      "--http-api-token",
      TOKEN,
      "--http-api-port",
      String(port),
      app.name,
    ]);
    let everOpen = false;
    let done = false;
    void svc.exited.then(() => (done = true));
    while (!done) {
      if (await portOpen(port)) everOpen = true;
      await Bun.sleep(50);
    }
    expect(await svc.exited, svc.output()).toBe(0);
    expect(everOpen).toBe(false);
    expect(runningImage(app.name)).toBe(newId);
    expect(svc.output()).toContain(
      "run_once: the HTTP API is not started in run-once mode; ignoring --http-api-update",
    );
  }, 120_000);

  test("exits 1 when a container was rolled back", async () => {
    const app = makeContainer("once-rollback");
    app.newer('["/bin/sh","-c","exit 3"]');
    const svc = startSvc(["--run-once", "--scope", app.name, "--rollback-startup-timeout", "10s", app.name]);
    expect(await svc.exited, svc.output()).toBe(1);
    expect(runningImage(app.name)).toBe(app.oldImageId);
    expect(inspect(app.name).State.Running).toBe(true);
  }, 120_000);
});

describe("startup", () => {
  test("the start says when the first check comes; with no engine it says what is wrong, and no error about a crash", async () => {
    const svc = startSvc([
      "--poll-interval",
      "6h",
      "--scope",
      `${PREFIX}-nothing`,
      "--docker-host",
      "unix:///nonexistent/docker.sock",
    ]);
    try {
      await waitUntil(() => svc.output().includes("next check at"), 30_000, "the next-check line");
      const records = svc
        .output()
        .trim()
        .split("\n")
        .filter((l) => l.startsWith("{"))
        .map((l) => JSON.parse(l));
      expect(records.find((r) => r.message.startsWith("next check at"))?.message).toMatch(
        /^next check at \d\d:\d\d \(in 6 h\)$/,
      );
      expect(records.filter((r) => r.level === "error")).toEqual([]);
      expect(records.find((r) => r.level === "warn")?.message).toBe("the Docker engine is not reachable yet");
      expect(svc.output()).not.toContain("crash recovery");
    } finally {
      svc.proc.kill("SIGTERM");
      await svc.exited;
    }
  }, 60_000);

  test("a port in use is a clear startup error, exit 2", async () => {
    const port = freePort();
    const blocker = Bun.listen({ hostname: "0.0.0.0", port, socket: { data() {} } });
    try {
      const svc = startSvc([
        "--http-api-update",
        "--http-api-token",
        TOKEN,
        "--http-api-port",
        String(port),
        "--scope",
        `${PREFIX}-nothing`,
      ]);
      expect(await svc.exited).toBe(2);
      expect(svc.output()).toContain(`${port}`);
      expect(svc.output()).toContain("already in use");
    } finally {
      blocker.stop(true);
    }
  }, 60_000);
});

describe("signals", () => {
  test("SIGTERM: exit 0 and the port closes; `svc healthcheck` says 0 while it runs and 1 after", async () => {
    const port = freePort();
    const apiArgs = [
      "--http-api-update",
      "--http-api-metrics",
      "--http-api-token",
      TOKEN,
      "--http-api-port",
      String(port),
    ];
    const svc = startSvc([...apiArgs, "--scope", `${PREFIX}-nothing`]);
    await waitHealthy(svc, port);
    const check = () =>
      Bun.spawn([...svcCommand(), "healthcheck", ...apiArgs], { stdout: "ignore", stderr: "ignore" }).exited;
    expect(await check()).toBe(0);
    svc.proc.kill("SIGTERM");
    expect(await svc.exited).toBe(0);
    expect(await portOpen(port)).toBe(false);
    expect(await check()).toBe(1);
  }, 60_000);

  test("SIGTERM during an API-triggered update: the update finishes, the caller gets its report, exit 0", async () => {
    // The new container becomes healthy only after ~3 s: the cycle is still running when the signal comes.
    const slow = '["/bin/sh","-c","sleep 3; echo ok > /ok; exec sleep 3600"]';
    const app = makeContainer("term", {
      cmd: slow,
      healthcheck: { cmd: "test -f /ok", intervalMs: 1000, retries: 30 },
    });
    await waitUntil(
      () => inspect(app.name).State.Health?.Status === "healthy",
      30_000,
      "the first container to be healthy",
    );
    const newId = app.newer();
    const port = freePort();
    const svc = startSvc([
      "--http-api-update",
      "--http-api-token",
      TOKEN,
      "--http-api-port",
      String(port),
      "--scope",
      app.name,
      app.name,
    ]);
    await waitHealthy(svc, port);
    const answer = fetch(`http://127.0.0.1:${port}/v1/update`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}` },
    }).then(async (r) => ({
      status: r.status,
      body: (await r.json()) as { containers: { name: string; state: string }[] },
    }));
    await waitUntil(
      () =>
        docker(["ps", "-a", "-q", "--filter", `name=^/${app.name}`])
          .stdout.split("\n")
          .filter(Boolean).length > 1,
      30_000,
      "the replacement to be created",
    );
    svc.proc.kill("SIGTERM");
    const response = await answer;
    expect(response.status).toBe(200);
    expect(response.body.containers.find((c) => c.name === app.name)?.state).toBe("updated");
    expect(await svc.exited).toBe(0);
    expect(runningImage(app.name)).toBe(newId);
    expect(inspect(app.name).State.Running).toBe(true);
  }, 120_000);

  test("a second signal exits at once (143 for SIGTERM), even while an update waits for its checks", async () => {
    // The new container removes the shell its healthcheck needs, so it stays "starting" (1000
    // retries): without the second signal svc would wait the whole 5-minute startup timeout.
    const app = makeContainer("twice", {
      healthcheck: { cmd: "test -f /bin/sh", intervalMs: 1000, retries: 1000 },
    });
    await waitUntil(
      () => inspect(app.name).State.Health?.Status === "healthy",
      30_000,
      "the first container to be healthy",
    );
    app.newer('["/bin/sh","-c","rm -f /bin/sh; exec sleep 3600"]');
    const port = freePort();
    const svc = startSvc([
      "--http-api-update",
      "--http-api-token",
      TOKEN,
      "--http-api-port",
      String(port),
      "--rollback-startup-timeout",
      "5m",
      "--scope",
      app.name,
      app.name,
    ]);
    await waitHealthy(svc, port);
    void fetch(`http://127.0.0.1:${port}/v1/update`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}` },
    }).catch(() => {});
    await waitUntil(
      () =>
        docker(["ps", "-a", "-q", "--filter", `name=^/${app.name}`])
          .stdout.split("\n")
          .filter(Boolean).length > 1,
      30_000,
      "the replacement to be created",
    );
    svc.proc.kill("SIGTERM");
    await Bun.sleep(500);
    expect(svc.proc.exitCode).toBeNull(); // still draining: the update waits for its checks
    svc.proc.kill("SIGTERM");
    expect(await svc.exited).toBe(143);
  }, 120_000);
});

describe("one cycle at a time, with the real updater", () => {
  test("50 concurrent POSTs while a real update runs: one 200, 49 queued (202) as one request that runs after it", async () => {
    const slow = '["/bin/sh","-c","sleep 3; echo ok > /ok; exec sleep 3600"]';
    const app = makeContainer("fifty", {
      cmd: slow,
      healthcheck: { cmd: "test -f /ok", intervalMs: 1000, retries: 30 },
    });
    app.newer();
    const port = freePort();
    const svc = startSvc([
      "--http-api-update",
      "--http-api-metrics",
      "--http-api-token",
      TOKEN,
      "--http-api-port",
      String(port),
      "--scope",
      app.name,
      app.name,
    ]);
    await waitHealthy(svc, port);
    const post = () =>
      fetch(`http://127.0.0.1:${port}/v1/update?container=${app.name}`, {
        method: "POST",
        headers: { authorization: `Bearer ${TOKEN}` },
      }).then(async (r) => ({
        status: r.status,
        body: await r.text(),
      }));
    const all = await Promise.all(Array.from({ length: 50 }, post));
    expect(all.filter((r) => r.status === 200)).toHaveLength(1);
    const queued = all.filter((r) => r.status === 202).map((r) => JSON.parse(r.body).queued);
    expect(queued).toHaveLength(49);
    // the same request, asked 49 times while the first ran: queued once, each told the same
    expect(new Set(queued.map((q) => JSON.stringify(q))).size).toBe(1);
    expect(queued[0]).toMatchObject({ trigger: "api", filter: { container: [app.name], image: [] } });
    const report = JSON.parse(all.find((r) => r.status === 200)!.body);
    expect(report.trigger).toBe("api");
    expect(report.filter.container).toEqual([app.name]);
    const metrics = async () =>
      (await (
        await fetch(`http://127.0.0.1:${port}/v1/metrics`, {
          headers: { authorization: `Bearer ${TOKEN}`, accept: "application/json" },
        })
      ).json()) as Record<string, number>;
    await waitUntil(async () => (await metrics()).svc_scans_total === 2, 30_000, "the queued request to run");
    // it ran after the first, found nothing newer, and nothing was skipped
    expect(await metrics()).toMatchObject({ svc_scans_total: 2, svc_scans_skipped: 0, svc_containers_updated: 0 });
    const history = (await (
      await fetch(`http://127.0.0.1:${port}/v1/history`, { headers: { authorization: `Bearer ${TOKEN}` } })
    ).json()) as { reports: { trigger: string; counts: { updated: number } }[] };
    expect(history.reports.map((r) => [r.trigger, r.counts.updated])).toEqual([
      ["api", 0],
      ["api", 1],
    ]);
    svc.proc.kill("SIGTERM");
    expect(await svc.exited).toBe(0);
  }, 120_000);
});

describe("wiring of the logs, the schedule and the configuration checks", () => {
  test("the access log file gets one line per request, written out before exit; the token never appears", async () => {
    const { mkdtempSync, readFileSync, rmSync } = await import("node:fs");
    const { tmpdir } = await import("node:os");
    const dir = mkdtempSync(join(tmpdir(), "svc-service-access-"));
    try {
      const path = join(dir, "access.log");
      const port = freePort();
      const svc = startSvc([
        "--http-api-update",
        "--http-api-metrics",
        "--http-api-token",
        TOKEN,
        "--http-api-port",
        String(port),
        "--http-api-access-log",
        path,
        "--scope",
        `${PREFIX}-nothing`,
      ]);
      await waitHealthy(svc, port);
      await (
        await fetch(`http://127.0.0.1:${port}/v1/metrics?x=1`, {
          headers: { authorization: `Bearer ${TOKEN}`, "user-agent": "scraper/2" },
        })
      ).text();
      await (await fetch(`http://127.0.0.1:${port}/v1/metrics`)).text();
      svc.proc.kill("SIGTERM");
      expect(await svc.exited).toBe(0);
      const text = readFileSync(path, "utf8");
      expect(text).not.toContain(TOKEN);
      const entries = text
        .split("\n")
        .filter(Boolean)
        .map((line) => JSON.parse(line));
      const metricsEntries = entries.filter((entry) => entry.fields.path === "/v1/metrics");
      expect(
        metricsEntries.map((entry) => [
          entry.target,
          entry.fields.status,
          entry.fields.uri,
          entry.fields.authorization,
        ]),
      ).toEqual([
        ["svc::access", 200, "/v1/metrics?x=1", "Bearer [redacted]"],
        ["svc::access", 401, "/v1/metrics", ""],
      ]);
      expect(metricsEntries[0].fields.user_agent).toBe("scraper/2");
      expect(metricsEntries[0].fields.host).toBe(`127.0.0.1:${port}`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  test("log_access_to_stdout without an access log file: access entries are JSON lines on stdout", async () => {
    const port = freePort();
    const svc = startSvc([
      "--http-api-update",
      "--http-api-token",
      TOKEN,
      "--http-api-port",
      String(port),
      "--log-access-to-stdout",
      "--scope",
      `${PREFIX}-nothing`,
    ]);
    await waitHealthy(svc, port);
    await (await fetch(`http://127.0.0.1:${port}/v1/health?from=stdout-test`)).text();
    svc.proc.kill("SIGTERM");
    expect(await svc.exited).toBe(0);
    const entries = svc
      .output()
      .split("\n")
      .filter((line) => line.startsWith("{"))
      .map((line) => JSON.parse(line))
      .filter((entry) => entry.target === "svc::access" && entry.fields?.uri === "/v1/health?from=stdout-test");
    expect(entries).toHaveLength(1);
    expect(entries[0].fields.status).toBe(200);
  }, 60_000);

  test("a 1-second cron keeps firing while the update API is on; an API request meanwhile is served", async () => {
    const app = makeContainer("cron");
    const port = freePort();
    const svc = startSvc([
      "--schedule",
      "* * * * * *",
      "--http-api-update",
      "--http-api-metrics",
      "--http-api-token",
      TOKEN,
      "--http-api-port",
      String(port),
      "--scope",
      app.name,
      app.name,
    ]);
    await waitHealthy(svc, port);
    const scans = async () =>
      (
        (await (
          await fetch(`http://127.0.0.1:${port}/v1/metrics`, {
            headers: { authorization: `Bearer ${TOKEN}`, accept: "application/json" },
          })
        ).json()) as { svc_scans_total: number }
      ).svc_scans_total;
    await waitUntil(async () => (await scans()) >= 2, 30_000, "two scheduled cycles");
    const before = await scans();
    // a request landing while a scheduled cycle runs is queued behind it (202), else it runs (200)
    const status = (
      await fetch(`http://127.0.0.1:${port}/v1/update`, {
        method: "POST",
        headers: { authorization: `Bearer ${TOKEN}` },
      })
    ).status;
    expect([200, 202]).toContain(status);
    await waitUntil(async () => (await scans()) >= before + 3, 30_000, "the schedule to go on after the API cycle");
    expect(inspect(app.name).State.Running).toBe(true);
    svc.proc.kill("SIGTERM");
    expect(await svc.exited).toBe(0);
  }, 90_000);

  test("an authenticated endpoint without a token is a startup error (exit 2) before anything listens", async () => {
    const port = freePort();
    const svc = startSvc(["--http-api-update", "--http-api-port", String(port), "--scope", `${PREFIX}-nothing`]);
    expect(await svc.exited).toBe(2);
    expect(svc.output()).toContain("token");
    expect(await portOpen(port)).toBe(false);
  }, 60_000);
});
