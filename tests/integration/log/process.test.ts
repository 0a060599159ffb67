/**
 * The logging of a real process: SIGHUP reopens the log files, and in JSON mode every line the
 * process prints on stdout and stderr is one JSON object (including what libraries print with
 * console.*), with no secret in it.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, renameSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "svc-logproc-"));
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

class Child {
  readonly proc: Subprocess<"pipe", "pipe", "pipe">;
  readonly stdout: string[] = [];
  readonly stderr: string[] = [];
  private acks = 0;

  constructor(config: object) {
    this.proc = Bun.spawn(["bun", join(import.meta.dir, "fixtures/child.ts"), JSON.stringify(config)], {
      stdin: "pipe",
      stdout: "pipe",
      stderr: "pipe",
      env: { ...process.env, NO_COLOR: "1" },
    });
    void collect(this.proc.stdout, this.stdout);
    void collect(this.proc.stderr, this.stderr);
  }

  /** Sends a command and waits for its acknowledgement. */
  async send(command: string): Promise<void> {
    const expected = ++this.acks;
    this.proc.stdin.write(`${command}\n`);
    this.proc.stdin.flush();
    await this.waitFor(() => this.stdout.filter((l) => l.includes('"ack"')).length >= expected, `ack of ${command}`);
  }

  async waitFor(predicate: () => boolean, what: string): Promise<void> {
    const deadline = Date.now() + 15_000;
    while (!predicate()) {
      if (Date.now() > deadline)
        throw new Error(
          `timed out waiting for ${what}; stdout: ${this.stdout.join("\n")}; stderr: ${this.stderr.join("\n")}`,
        );
      if (this.proc.exitCode !== null)
        throw new Error(`child exited (${this.proc.exitCode}) waiting for ${what}; stderr: ${this.stderr.join("\n")}`);
      await Bun.sleep(20);
    }
  }

  async exit(): Promise<number> {
    this.proc.stdin.write("exit\n");
    this.proc.stdin.flush();
    const timer = setTimeout(() => this.proc.kill(), 15_000);
    const code = await this.proc.exited;
    clearTimeout(timer);
    await Bun.sleep(50); // let the readers drain
    return code;
  }
}

async function collect(stream: ReadableStream<Uint8Array>, into: string[]): Promise<void> {
  const decoder = new TextDecoder();
  let buffer = "";
  for await (const chunk of stream) {
    buffer += decoder.decode(chunk, { stream: true });
    const parts = buffer.split("\n");
    buffer = parts.pop() ?? "";
    into.push(...parts);
  }
  if (buffer !== "") into.push(buffer);
}

const containersIn = (path: string) =>
  readFileSync(path, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line).fields.container);

describe("SIGHUP", () => {
  test("reopens the audit log at its path: the rotated file keeps the old entries, new ones go to the new file", async () => {
    const path = join(dir, "audit.log");
    const child = new Child({ log_format: "json", audit_log: path });
    try {
      await child.send("audit before");
      renameSync(path, `${path}.1`);

      child.proc.kill("SIGHUP");
      await child.waitFor(() => child.stdout.some((l) => l.includes("log files reopened")), "the reopen message");
      // Created by the reopen itself, before anything else was written.
      expect(existsSync(path)).toBe(true);
      expect(child.proc.exitCode).toBeNull();

      await child.send("audit after");
      expect(await child.exit()).toBe(0);
      expect(containersIn(`${path}.1`)).toEqual(["before"]);
      expect(containersIn(path)).toEqual(["after"]);
      const reopened = JSON.parse(child.stdout.find((l) => l.includes("log files reopened"))!);
      expect(reopened.fields.files).toEqual([path]);
    } finally {
      child.proc.kill();
    }
  });
});

describe("json output of a whole process", () => {
  test("every line on stdout and stderr is a JSON object with timestamp, level, target, message; no secret", async () => {
    const token = "very-secret-token-42";
    const child = new Child({
      log_format: "auto", // stdout is a pipe here, so auto means json
      log_level: "trace",
      log_audit_to_stdout: true,
      log_access_to_stdout: true,
      http_api: { token },
    });
    try {
      await child.send(`levels ${token}`);
      await child.send(`console ${token}`);
      await child.send("audit app");
      await child.send("access /v1/health");
      expect(await child.exit()).toBe(0);
    } finally {
      child.proc.kill();
    }

    const all = [...child.stdout, ...child.stderr];
    for (const line of all) {
      let parsed: any;
      expect(() => (parsed = JSON.parse(line))).not.toThrow();
      expect(typeof parsed).toBe("object");
      expect(parsed.timestamp).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
      expect(["trace", "debug", "info", "warn", "error"]).toContain(parsed.level);
      expect(typeof parsed.target).toBe("string");
      expect(typeof parsed.message).toBe("string");
    }
    expect(all.join("\n")).not.toContain(token);

    const parsed = all.map((l) => JSON.parse(l));
    const byTarget = (target: string) => parsed.filter((l) => l.target === target);
    expect(
      byTarget("svc::child")
        .map((l) => l.level)
        .sort(),
    ).toEqual(["debug", "error", "info", "trace", "warn"]);
    expect(byTarget("svc::console").length).toBeGreaterThanOrEqual(5);
    expect(byTarget("svc::audit")).toHaveLength(1);
    expect(byTarget("svc::access")).toHaveLength(1);
    expect(byTarget("svc::access")[0].fields.uri).toBe("/v1/health?token=json");
    // Warnings and errors on stderr, the rest on stdout.
    expect(child.stderr.map((l) => JSON.parse(l).level).every((level) => level === "warn" || level === "error")).toBe(
      true,
    );
  });

  test("an uncaught exception is logged as one JSON error line, and the process exits with status 1", async () => {
    const child = new Child({ log_format: "json", http_api: { token: "crash-secret-77" } });
    try {
      await child.send("levels x");
      child.proc.stdin.write("crash crash-secret-77\n");
      child.proc.stdin.flush();
      const timer = setTimeout(() => child.proc.kill(), 15_000);
      expect(await child.proc.exited).toBe(1);
      clearTimeout(timer);
      await Bun.sleep(50);
    } finally {
      child.proc.kill();
    }
    const lines = [...child.stdout, ...child.stderr].map((l) => JSON.parse(l));
    const crash = lines.find((l) => l.message === "uncaught exception");
    expect(crash).toMatchObject({ level: "error", target: "svc", fields: { error: "crash [redacted]" } });
    expect(JSON.stringify(lines)).not.toContain("crash-secret-77");
  });
});
