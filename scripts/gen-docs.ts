#!/usr/bin/env bun
/** Writes the generated docs (`bun run docs`): the configuration reference and the migration guide. */
import { renderDocs, renderMigrationGuide } from "../src/config/docs.ts";
import { WATCHTOWER_ALIASES, WATCHTOWER_UNMAPPED } from "../src/config/watchtower.ts";

export function migrationGuide(): string {
  return renderMigrationGuide(WATCHTOWER_ALIASES, WATCHTOWER_UNMAPPED);
}

if (import.meta.main) {
  for (const [file, text] of [
    ["configuration.md", renderDocs()],
    ["migrating-from-watchtower.md", migrationGuide()],
  ] as const) {
    const target = new URL(`../docs/${file}`, import.meta.url);
    await Bun.write(target, text);
    console.log(`wrote ${target.pathname}`);
  }
}
