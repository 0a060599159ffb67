/**
 * The smallest change: only the version's characters, the rest of the file byte for byte (a BOM,
 * CRLF, comments, quotes), the file's mode kept, written atomically and never over a file that
 * changed since svc read it; and what svc says of the projects it can write.
 */
import { describe, expect, test } from "bun:test";
import { chmodSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  applyEdits,
  ComposeFiles,
  changesOf,
  locate,
  replaceFile,
  reverseEdits,
  surveyProjects,
} from "../../../src/compose/index.ts";
import { tempDir } from "../../temp.ts";

const BEFORE = '\uFEFF# app\r\nservices:\r\n  web:\r\n    image: "app:1.2.3" # keep\r\n';

describe("edits", () => {
  test("only the version's characters change; reversed, the text comes back", () => {
    const offset = BEFORE.indexOf("1.2.3");
    const edits = [{ file: "f", offset, old: "1.2.3", new: "1.10.0" }];
    const after = applyEdits(BEFORE, edits);
    expect(after).toBe(BEFORE.replace("1.2.3", "1.10.0"));
    expect(applyEdits(after, reverseEdits(edits))).toBe(BEFORE);
  });

  test("an edit whose old text is not where svc read it is refused", () => {
    expect(() => applyEdits(BEFORE, [{ file: "f", offset: 3, old: "1.2.3", new: "2" }])).toThrow(
      'f does not hold "1.2.3" where svc read it',
    );
  });

  test("two edits in one line (tag and digest) apply from the end, and reverse", () => {
    const text = `image: app:1.0@sha256:${"a".repeat(64)}\n`;
    const edits = [
      { file: "f", offset: text.indexOf("1.0"), old: "1.0", new: "1.10" },
      { file: "f", offset: text.indexOf("sha256"), old: `sha256:${"a".repeat(64)}`, new: `sha256:${"b".repeat(64)}` },
    ];
    const after = applyEdits(text, edits);
    expect(after).toBe(`image: app:1.10@sha256:${"b".repeat(64)}\n`);
    expect(applyEdits(after, reverseEdits(edits))).toBe(text);
  });
});

describe("the write", () => {
  test("keeps the bytes around the version and the mode, leaves no temporary file", () => {
    const dir = tempDir("svc-compose-write-");
    const file = join(dir, "compose.yaml");
    writeFileSync(file, BEFORE);
    chmodSync(file, 0o640);
    replaceFile(file, BEFORE, BEFORE.replace("1.2.3", "1.3.0"));
    expect(readFileSync(file)).toEqual(Buffer.from(BEFORE.replace("1.2.3", "1.3.0"), "utf8"));
    expect(statSync(file).mode & 0o777).toBe(0o640);
    expect(readdirSync(dir)).toEqual(["compose.yaml"]);
  });

  test("never over a file that changed since svc read it", () => {
    const dir = tempDir("svc-compose-write-");
    const file = join(dir, "compose.yaml");
    writeFileSync(file, `${BEFORE}# edited\n`);
    expect(() => replaceFile(file, BEFORE, "x")).toThrow(`${file} changed since svc read it`);
    expect(readFileSync(file, "utf8")).toBe(`${BEFORE}# edited\n`);
  });

  test("a symlinked compose file: its target is written, the link stays", () => {
    const dir = tempDir("svc-compose-write-");
    writeFileSync(join(dir, "real.yaml"), BEFORE);
    symlinkSync("real.yaml", join(dir, "compose.yaml"));
    replaceFile(join(dir, "compose.yaml"), BEFORE, "after");
    expect(readFileSync(join(dir, "real.yaml"), "utf8")).toBe("after");
    expect(statSync(join(dir, "compose.yaml")).isFile()).toBe(true);
  });

  test("a stack: each file once with every edit; keepOnly writes back the edits of the moves that did not stand", () => {
    const dir = tempDir("svc-compose-write-");
    const text = "services:\n  a:\n    image: a:1.0\n  b:\n    image: b:1.0\n";
    writeFileSync(join(dir, "compose.yaml"), text);
    const files = new ComposeFiles({ write: true, stateDir: null, cli: null });
    const project = (service: string) => ({
      name: "p",
      service,
      workingDir: dir,
      configFiles: [join(dir, "compose.yaml")],
      envFiles: [],
    });
    const moves = ["a", "b"].map((s) => {
      const located = locate(project(s), `${s}:1.0`);
      if (!located.ok) throw new Error(located.reason);
      return files.plan(s, located.site, `${s}:1.1`, null, undefined);
    });
    if (moves.some((m) => typeof m === "string")) throw new Error(String(moves));
    const changes = changesOf(moves as never);
    expect(changes).toHaveLength(1);
    expect(changes[0]!.after).toBe(text.replaceAll(":1.0", ":1.1"));
    replaceFile(changes[0]!.file, changes[0]!.before, changes[0]!.after);
    files.keepOnly({ files: changes, hashes: new Map(), recreates: new Map() }, [moves[0] as never]);
    expect(readFileSync(join(dir, "compose.yaml"), "utf8")).toBe(text.replace("a:1.0", "a:1.1"));
  });
});

describe("the owner is kept", () => {
  // only root may give a file away: svc as another user holds rather than take the file over
  const canDrop = process.getuid?.() === 0 && Bun.which("setpriv") !== null;
  test.skipIf(!canDrop)("svc as another user than the file's owner holds, naming both", () => {
    const dir = tempDir("svc-compose-owner-");
    chmodSync(dir, 0o777);
    const file = join(dir, "compose.yaml");
    writeFileSync(file, BEFORE);
    chmodSync(file, 0o666);
    const script = `import { writable } from ${JSON.stringify(join(import.meta.dir, "../../../src/compose/write.ts"))}; console.log(writable(${JSON.stringify(file)}))`;
    const run = Bun.spawnSync([
      "setpriv",
      "--reuid=65532",
      "--regid=65532",
      "--clear-groups",
      process.execPath,
      "-e",
      script,
    ]);
    expect(run.stdout.toString().trim()).toBe(
      `svc runs as user 65532 and cannot keep the owner of ${file} (user 0): run svc as that user, or as root (docs/compose.md)`,
    );
    expect(readFileSync(file, "utf8")).toBe(BEFORE);
  });
});

describe("the start-up line", () => {
  const labels = (project: string, dir: string, file = join(dir, "compose.yaml")) => ({
    labels: {
      "com.docker.compose.project": project,
      "com.docker.compose.service": "web",
      "com.docker.compose.project.working_dir": dir,
      "com.docker.compose.project.config_files": file,
    },
  });

  test("names the projects svc can write and those it cannot, with the reason", () => {
    const dir = tempDir("svc-compose-survey-");
    writeFileSync(join(dir, "compose.yaml"), "services: {}\n");
    const line = surveyProjects(
      [labels("media", dir), labels("media", dir), labels("nas", "/srv/nas"), { labels: {} }],
      true,
    );
    expect(line).toBe(
      "compose: svc can write media; not nas (svc cannot see /srv/nas/compose.yaml: mount the project folder at the same path, docs/compose.md)",
    );
  });

  test("says when writing is off, and nothing without compose containers", () => {
    expect(surveyProjects([labels("media", "/x")], false)).toBe(
      "compose: [compose] write is off: tag moves of 1 compose project stay reported only",
    );
    expect(surveyProjects([{ labels: {} }], true)).toBeNull();
  });
});
