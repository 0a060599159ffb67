/**
 * A user's file that is not a regular one (a FIFO, a folder) where svc reads a project's `.env`,
 * an `extends` or `include` file, or a repository's HEAD: svc refuses it without opening it for a
 * blocking read. A synchronous open of a FIFO never returns, and the API, health and schedule stop
 * with it: each read runs in a process of its own here, so a hang is seen (and ended) by the test
 * rather than freezing it.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { makeRepo } from "../../support/git-repo.ts";
import { tempDir } from "../../temp.ts";

const ROOT = resolve(import.meta.dir, "../../..");
/** How long a read may take on a loaded machine before it counts as hung. */
const HANG_LIMIT_MS = 60_000;
const scripts = tempDir("svc-fifo-scripts-");
afterAll(() => rmSync(scripts, { recursive: true, force: true }));

function mkfifo(path: string): void {
  const run = Bun.spawnSync(["mkfifo", path]);
  if (run.exitCode !== 0) throw new Error(run.stderr.toString());
}

/** Runs `body` (TypeScript, printing its answer) in a process of its own: its output, or "hung". */
async function runAlone(name: string, body: string): Promise<string> {
  const file = join(scripts, `${name}.ts`);
  writeFileSync(file, body);
  const proc = Bun.spawn(["bun", file], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
  const limit = setTimeout(() => proc.kill("SIGKILL"), HANG_LIMIT_MS);
  const [out, err, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  clearTimeout(limit);
  if (proc.signalCode === "SIGKILL") return "hung";
  if (code !== 0) throw new Error(err);
  return out;
}

const COMPOSE = "services:\n  web:\n    image: nginx:${TAG:-1.25.3}\n";

describe("the compose room reads regular files only", () => {
  const cases: [string, (dir: string) => void][] = [
    ["the project's .env", (dir) => (writeFileSync(join(dir, "compose.yaml"), COMPOSE), mkfifo(join(dir, ".env")))],
    [
      "an extends file",
      (dir) => (
        writeFileSync(
          join(dir, "compose.yaml"),
          "services:\n  web:\n    extends:\n      file: base.yaml\n      service: web\n",
        ),
        mkfifo(join(dir, "base.yaml"))
      ),
    ],
    [
      "an include file",
      (dir) => (
        writeFileSync(
          join(dir, "compose.yaml"),
          "include:\n  - other.yaml\nservices:\n  db:\n    image: postgres:16\n",
        ),
        mkfifo(join(dir, "other.yaml"))
      ),
    ],
    [
      "a folder as the project's .env",
      (dir) => (writeFileSync(join(dir, "compose.yaml"), COMPOSE), mkdirSync(join(dir, ".env"))),
    ],
  ];
  test.each(cases)(
    "%s: refused, not waited on",
    async (name, arrange) => {
      const dir = tempDir("svc-fifo-compose-");
      arrange(dir);
      const project = {
        name: "p",
        service: "web",
        workingDir: dir,
        configFiles: [join(dir, "compose.yaml")],
        envFiles: [],
      };
      const out = await runAlone(
        name.replace(/\W+/g, "-"),
        `import { locate } from "${ROOT}/src/compose/index.ts";\nconsole.log(JSON.stringify(locate(${JSON.stringify(project)}, "nginx:1.25.3")));\n`,
      );
      expect(out).not.toBe("hung");
      expect(out).toContain("is not a regular file");
    },
    120_000,
  );
});

describe("the Git room reads regular files only", () => {
  test("HEAD as a FIFO: the step says why, not waited on", async () => {
    const { top, project } = makeRepo();
    rmSync(join(top, ".git", "HEAD"));
    mkfifo(join(top, ".git", "HEAD"));
    const compose = join(project, "compose.yaml");
    const out = await runAlone(
      "git-head",
      [
        `import { readFileSync } from "node:fs";`,
        `import { defaultConfig } from "${ROOT}/src/config/index.ts";`,
        `import { createGitStep } from "${ROOT}/src/git/index.ts";`,
        `import { silentLogger } from "${ROOT}/src/log/index.ts";`,
        `const step = createGitStep(defaultConfig({ compose: { git: "commit" } }), silentLogger);`,
        `const before = readFileSync(${JSON.stringify(compose)});`,
        `const change = { project: ${JSON.stringify(project)}, moves: [], files: [{ path: "compose.yaml", before }] };`,
        "console.log(JSON.stringify(await step.check(change)));",
      ].join("\n"),
    );
    expect(out).not.toBe("hung");
    expect(out).toContain("is not a regular file");
  }, 120_000);
});
