/**
 * svc's container labels are declared once (src/config/labels.ts and the options of schema.ts):
 * each name is declared by one key, no other source file writes a label's name, and the docs'
 * tables list every one.
 */
import { expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { DECLARED_LABELS, labelName, labelOf } from "../../../src/config/index.ts";
import { REPO_ROOT } from "../../support/doc-blocks.ts";

const DECLARING = new Set(["src/config/labels.ts", "src/config/schema.ts"]);

function sources(dir = join(REPO_ROOT, "src")): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? sources(join(dir, entry.name))
      : entry.name.endsWith(".ts")
        ? [relative(REPO_ROOT, join(dir, entry.name))]
        : [],
  );
}

test("each label and each Watchtower label is declared once, by one key", () => {
  const names = DECLARED_LABELS.flatMap((l) => (l.watchtower ? [l.name, l.watchtower] : [l.name]));
  expect(names.filter((name, i) => names.indexOf(name) !== i)).toEqual([]);
  const keys = DECLARED_LABELS.map((l) => l.key);
  expect(keys.filter((key, i) => keys.indexOf(key) !== i)).toEqual([]);
  expect(labelName("stop_timeout")).toBe("svc.stop_timeout");
  expect(labelOf("monitor_only").watchtower).toBe("com.centurylinklabs.watchtower.monitor-only");
  expect(labelName("depends_on")).toBe("svc.depends_on");
});

test("no source file but the declaring ones writes a declared label's name as a string", () => {
  // in quotes: a comment may name a label in backticks
  const quoted = DECLARED_LABELS.flatMap((l) => [l.name, ...(l.watchtower ? [l.watchtower] : [])]).flatMap((name) => [
    `"${name}"`,
    `'${name}'`,
  ]);
  const found = sources()
    .filter((file) => !DECLARING.has(file))
    .flatMap((file) => {
      const text = readFileSync(join(REPO_ROOT, file), "utf8");
      return quoted.filter((q) => text.includes(q)).map((q) => `${file}: ${q}`);
    });
  expect(found).toEqual([]);
});

test("docs/configuration.md lists every label, and the migration guide every one a container is given", () => {
  const reference = readFileSync(join(REPO_ROOT, "docs/configuration.md"), "utf8");
  const guide = readFileSync(join(REPO_ROOT, "docs/migrating-from-watchtower.md"), "utf8");
  expect(DECLARED_LABELS.filter((l) => !reference.includes(`| \`${l.name}\` |`)).map((l) => l.name)).toEqual([]);
  expect(DECLARED_LABELS.filter((l) => !l.written && !guide.includes(`| \`${l.name}\` |`)).map((l) => l.name)).toEqual(
    [],
  );
});
