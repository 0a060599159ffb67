/**
 * The docs agree with the code and with themselves: every command block a user would copy is
 * marked and, unless it says why not, run by a test; every reference to a section names one that
 * exists; every SVC_* variable named is one svc reads; every default written beside an option is
 * the schema's; the README stays short; every endpoint has its section in docs/api.md; every
 * Markdown file the code names is in the repository.
 */
import { describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { OPTIONS } from "../../src/config/index.ts";
import { commandBlocks, docFiles, fencedBlocks, REPO_ROOT } from "../support/doc-blocks.ts";
import { makeApp } from "./api/fakes.ts";

const read = (file: string) => readFileSync(join(REPO_ROOT, file), "utf8");
const COMMAND_LANGUAGES = new Set(["sh", "bash", "shell", "console"]);

/** Every test source, to find which blocks are run. */
function testSources(dir = join(REPO_ROOT, "tests")): string {
  return readdirSync(dir, { withFileTypes: true })
    .map((entry) =>
      entry.isDirectory()
        ? testSources(join(dir, entry.name))
        : entry.name.endsWith(".ts")
          ? readFileSync(join(dir, entry.name), "utf8")
          : "",
    )
    .join("\n");
}

describe("command blocks", () => {
  test("every shell block of README.md and docs/ is marked <!-- command: NAME --> (or says why it is not run)", () => {
    const unmarked = docFiles().flatMap((file) =>
      fencedBlocks(file)
        .filter((b) => COMMAND_LANGUAGES.has(b.language) && !b.marker)
        .map((b) => `${file}:${b.line}`),
    );
    expect(unmarked).toEqual([]);
  });

  test("each name is used once, and each block not marked 'not run' is run by a test", () => {
    const blocks = commandBlocks();
    const names = blocks.map((b) => b.name);
    expect(names.filter((name, i) => names.indexOf(name) !== i)).toEqual([]);
    const sources = testSources();
    const unrun = blocks
      .filter((b) => !b.notRun && !sources.includes(`commandBlock("${b.name}")`))
      .map((b) => `${b.file}:${b.line} ${b.name}`);
    expect(unrun).toEqual([]);
  });
});

describe("README.md", () => {
  // a newcomer's first hour: what svc is, the quick start, where to read on; the rest is in docs/
  test("holds at most 2,500 words", () => {
    expect(read("README.md").split(/\s+/).filter(Boolean).length).toBeLessThanOrEqual(2500);
  });

  test("holds the two commands a fresh machine needs, the main job and the test command, and the way to docs/contributing.md", () => {
    const develop = commandBlocks().find((b) => b.name === "develop");
    expect(develop?.file).toBe("README.md");
    expect(develop?.text).toContain("bash scripts/demo.sh");
    expect(develop?.text).toContain("bash scripts/test.sh");
    expect(read(".ci/run")).toContain("scripts/test.sh");
    expect(read("README.md")).toContain("](docs/contributing.md)");
  });
});

/** The headings of a Markdown file, as written. */
function headings(file: string): string[] {
  return read(file)
    .split("\n")
    .filter((line) => /^#{1,6} /.test(line))
    .map((line) => line.replace(/^#+ /, "").trim());
}

const anchor = (heading: string) =>
  heading
    .toLowerCase()
    .replace(/[^a-z0-9 -]/g, "")
    .replace(/ /g, "-");

describe("references", () => {
  test('every `README.md, "Section"` and `docs/x.md, "Section"` names a section that exists', () => {
    const files = [
      ...docFiles(),
      "docs/compose.yaml",
      "docs/svc-stack.yml",
      "systemd/svc.service",
      "Dockerfile",
      "install.sh",
    ];
    const broken: string[] = [];
    for (const file of files) {
      for (const match of read(file).matchAll(/((?:docs\/)?[a-z-]+\.md|README(?:\.md)?|README's), "([^"]+)"/g)) {
        const target = match[1]!.startsWith("README")
          ? "README.md"
          : match[1]!.startsWith("docs/")
            ? match[1]!
            : `docs/${match[1]}`;
        if (!headings(target).includes(match[2]!.replace(/\s+/g, " "))) broken.push(`${file}: ${match[0]}`);
      }
      for (const match of read(file).matchAll(/\]\(((?:docs\/)?[a-z-]+\.md)#([a-z0-9-]+)\)/g)) {
        const target = file.startsWith("docs/") ? `docs/${match[1]!.replace(/^docs\//, "")}` : match[1]!;
        if (!headings(target).map(anchor).includes(match[2]!)) broken.push(`${file}: ${match[0]}`);
      }
    }
    expect(broken).toEqual([]);
  });

  test("every SVC_* variable named in the docs, the Dockerfile and compose.yaml is one svc reads (or one of its scripts)", () => {
    const known = new Set([
      ...OPTIONS.map((o) => o.env),
      "SVC_CONFIG",
      "SVC_IMAGE",
      "SVC_INSTALL_BASE_URL",
      "SVC_INSTALL_REQUIRE_SIGNATURE",
      "SVC_BUILD_COMMIT",
    ]);
    const script = /^SVC_(TEST|SANDBOX|BENCH|FUZZ|SAFETY|RELEASE|IMAGE)_/;
    const unknown = [...docFiles(), "docs/compose.yaml", "docs/svc-stack.yml", "Dockerfile"].flatMap((file) =>
      [...read(file).matchAll(/\bSVC_[A-Z0-9_]*[A-Z0-9]\b/g)]
        .map((m) => m[0])
        .filter((name) => !known.has(name) && !script.test(name))
        .map((name) => `${file}: ${name}`),
    );
    expect([...new Set(unknown)]).toEqual([]);
  });

  test("a default written beside an option, `hook_timeout` (60s), is the schema's", () => {
    const wrong: string[] = [];
    for (const file of docFiles().filter((f) => f !== "docs/configuration.md")) {
      for (const match of read(file).matchAll(/`([a-z_.]+)` \((\d+(?:ms|s|m|h))\)/g)) {
        const option = OPTIONS.find((o) => o.key === match[1] || o.key.endsWith(`.${match[1]}`));
        if (option?.meta.kind === "duration" && option.meta.default !== match[2])
          wrong.push(`${file}: ${match[0]} (schema: ${String(option.meta.default)})`);
      }
    }
    expect(wrong).toEqual([]);
  });

  test("where the docs say when the API listens, they name every switch that opens it (update, metrics, ui)", () => {
    const said = [...docFiles(), "Dockerfile"].flatMap((file) =>
      [...read(file).matchAll(/(?:API|port)[^.]{0,40}(?:listens only|used only) when[\s\S]{0,80}/g)].map(
        (m) => `${file}: ${m[0]}`,
      ),
    );
    expect(said.length).toBeGreaterThan(0);
    expect(said.filter((s) => !(s.includes("update") && s.includes("metrics") && s.includes("ui")))).toEqual([]);
  });
});

/** Every file of these folders (node_modules aside) whose name ends as one of `endings`. */
function filesUnder(dir: string, endings: readonly string[]): string[] {
  return readdirSync(join(REPO_ROOT, dir)).flatMap((name) => {
    const path = `${dir}/${name}`;
    if (statSync(join(REPO_ROOT, path)).isDirectory()) return name === "node_modules" ? [] : filesUnder(path, endings);
    return endings.some((ending) => name.endsWith(ending)) ? [path] : [];
  });
}

describe("the API's endpoints", () => {
  // the routes of the API with every feature on (src/api/app.ts, src/api/dashboard.ts): each
  // method of a path without parameters, but the routes that answer 405 (ALL) and 404 (*)
  const { app } = makeApp({ http_api: { ui: true } });
  const endpoints = app.routes
    .filter((route) => route.path.startsWith("/v1/") && !route.path.includes(":") && route.method !== "ALL")
    .map((route) => `${route.method} ${route.path}`);

  test("each one has its section in docs/api.md", () => {
    expect(endpoints).toContain("POST /v1/update");
    expect(endpoints).toContain("GET /v1/containers");
    const documented = headings("docs/api.md").flatMap((heading) => heading.split(", "));
    expect(endpoints.filter((endpoint) => !documented.includes(endpoint))).toEqual([]);
  });
});

describe("citations", () => {
  // rows that cite another project's documents, each with its repository and version (the oracle)
  const CITING_OTHER_PROJECTS = new Set(["tests/unit/shoutrrr/oracle.test.ts", "tests/unit/docs.test.ts"]);

  test("every Markdown file the code, the tests and the scripts name is in the repository", () => {
    const files = [
      ...["src", "tests", "scripts", "bench"].flatMap((dir) => filesUnder(dir, [".ts", ".sh", ".html"])),
      "build.ts",
      "Dockerfile",
      "install.sh",
    ];
    const missing = files
      .filter((file) => !CITING_OTHER_PROJECTS.has(file))
      .flatMap((file) =>
        [...read(file).matchAll(/(?<![\w./-])((?:[\w.-]+\/)*[\w-]+\.md)\b/g)]
          .map((m) => m[1]!)
          .filter(
            (cited) =>
              ![REPO_ROOT, join(REPO_ROOT, "docs"), join(REPO_ROOT, dirname(file))].some((base) =>
                existsSync(join(base, cited)),
              ),
          )
          .map((cited) => `${file}: ${cited}`),
      );
    expect([...new Set(missing)]).toEqual([]);
  });
});
