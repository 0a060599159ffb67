#!/usr/bin/env bun
/** Writes docs/configuration.md from the configuration schema (`bun run docs`). */
import { renderDocs } from "../src/config/docs.ts";

const target = new URL("../docs/configuration.md", import.meta.url);
await Bun.write(target, renderDocs());
console.log(`wrote ${target.pathname}`);
