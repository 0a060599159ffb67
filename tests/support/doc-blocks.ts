/**
 * The command blocks of README.md and docs/*.md a user would copy: each fenced sh/bash/yaml block
 * of commands is preceded by `<!-- command: NAME -->` (run by a test, found here by NAME) or
 * `<!-- command: NAME (not run: why) -->`. A test runs a block as written; the only changes it may
 * make are the sandbox's (its socket, a free port, a unique name), each listed where it is made.
 */
import { chmodSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";

export const REPO_ROOT = resolve(import.meta.dir, "../..");

export interface CommandBlock {
  name: string;
  /** why a block is not run, when it is not */
  notRun?: string;
  language: string;
  text: string;
  file: string;
  line: number;
}

/** README.md and every docs/*.md, as paths relative to the repository. */
export function docFiles(): string[] {
  return [
    "README.md",
    ...readdirSync(join(REPO_ROOT, "docs"))
      .filter((f) => f.endsWith(".md"))
      .sort()
      .map((f) => `docs/${f}`),
  ];
}

const MARKER = /^\s*<!-- command: ([a-z0-9-]+)(?: \(not run: ([^)]+)\))? -->\s*$/;
const FENCE = /^(\s*)```(\S*)\s*$/;

/** Every fenced block of a file, with the marker on the line before it (if any). */
export function fencedBlocks(
  file: string,
): { language: string; text: string; line: number; marker?: { name: string; notRun?: string } }[] {
  const lines = readFileSync(join(REPO_ROOT, file), "utf8").split("\n");
  const blocks = [];
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i]!);
    if (!open) continue;
    const indent = open[1]!.length;
    const end = lines.findIndex((l, j) => j > i && /^\s*```\s*$/.test(l));
    const text = lines
      .slice(i + 1, end)
      .map((l) => l.slice(indent))
      .join("\n");
    const previous = MARKER.exec(lines[i - 1] ?? "");
    blocks.push({
      language: open[2]!,
      text,
      line: i + 1,
      ...(previous ? { marker: { name: previous[1]!, ...(previous[2] ? { notRun: previous[2] } : {}) } } : {}),
    });
    i = end;
  }
  return blocks;
}

/** Every marked block of README.md and docs/. */
export function commandBlocks(): CommandBlock[] {
  return docFiles().flatMap((file) =>
    fencedBlocks(file).flatMap((b) =>
      b.marker
        ? [
            {
              name: b.marker.name,
              ...(b.marker.notRun ? { notRun: b.marker.notRun } : {}),
              language: b.language,
              text: b.text,
              file,
              line: b.line,
            },
          ]
        : [],
    ),
  );
}

/** The configuration block of the docs marked `<!-- config: NAME -->` (a file a user writes), as written. */
export function configBlock(name: string): CommandBlock {
  for (const file of docFiles()) {
    const lines = readFileSync(join(REPO_ROOT, file), "utf8").split("\n");
    const at = lines.findIndex((line) => line.trim() === `<!-- config: ${name} -->`);
    if (at < 0) continue;
    const block = fencedBlocks(file).find((b) => b.line === at + 2);
    if (block) return { name, language: block.language, text: block.text, file, line: block.line };
  }
  throw new Error(`no block marked <!-- config: ${name} --> in README.md or docs/`);
}

/** The block marked NAME, as written; throws when there is none (a renamed or removed block fails its test). */
export function commandBlock(name: string): CommandBlock {
  const found = commandBlocks().find((b) => b.name === name);
  if (!found) throw new Error(`no block marked <!-- command: ${name} --> in README.md or docs/`);
  return found;
}

/** A folder with `svc` (this checkout's src/main.ts, as `bun run build` would make it) to put first on PATH. */
export function svcOnPath(dir: string): string {
  const bin = join(dir, "bin");
  mkdirSync(bin, { recursive: true });
  writeFileSync(join(bin, "svc"), `#!/bin/sh\nexec bun ${join(REPO_ROOT, "src/main.ts")} "$@"\n`);
  chmodSync(join(bin, "svc"), 0o755);
  return bin;
}

/** A block run by bash -e in its own process group, until `until(output)` or its end; stop() ends it. */
export interface RunningBlock {
  output: () => string;
  exitCode: () => number | null;
  stop: () => Promise<void>;
}

export async function runBlockUntil(
  script: string,
  options: { cwd: string; env: Record<string, string> },
  until: (output: string) => boolean,
  timeoutMs = 120_000,
): Promise<RunningBlock> {
  const proc = Bun.spawn(["setsid", "bash", "-e", "-c", script], {
    cwd: options.cwd,
    env: options.env,
    stdout: "pipe",
    stderr: "pipe",
  });
  let output = "";
  let code: number | null = null;
  const collect = async (stream: ReadableStream<Uint8Array>) => {
    for await (const chunk of stream) output += new TextDecoder().decode(chunk);
  };
  void collect(proc.stdout);
  void collect(proc.stderr);
  void proc.exited.then((c) => (code = c));
  const running: RunningBlock = {
    output: () => output,
    exitCode: () => code,
    stop: async () => {
      if (code === null) {
        process.kill(-proc.pid, "SIGTERM");
        await proc.exited;
      }
    },
  };
  const deadline = Date.now() + timeoutMs;
  while (!until(output)) {
    if (code !== null) throw new Error(`the block stopped with ${code} first:\n${output}`);
    if (Date.now() > deadline) {
      await running.stop();
      throw new Error(`the block did not get there in ${timeoutMs} ms:\n${output}`);
    }
    await Bun.sleep(100);
  }
  return running;
}
