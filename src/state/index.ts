/**
 * The state room: decisions that must survive a restart (a digest that was rolled back, the
 * stale digests already announced, when a newer digest was first seen, digests skipped on request, the containers whose updates are snoozed, the image each container ran
 * before its last update, the images an update left while cleanup_delay runs), kept in one small JSON file under `state_dir` and written
 * atomically (a temporary file renamed over the old one) on every change. Without `state_dir`
 * they live in memory only, as before. A file that cannot be read or makes no sense is a warning
 * and a fresh start (the unreadable file is kept aside), never a crash; a folder that cannot be
 * written is a warning, and svc goes on remembering in memory.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Logger } from "../log/index.ts";

/** One kind of decision: a string per container name. */
export interface Remembered {
  get(name: string): string | undefined;
  set(name: string, value: string): void;
  delete(name: string): void;
  /** every (name, value) pair, in no particular order */
  entries(): [string, string][];
}

/** The kinds svc keeps (the file's sections). */
export type Section = "rolled_back" | "announced_stale" | "first_seen" | "skipped" | "previous" | "left_images" | "snoozed";

const SECTIONS: readonly Section[] = ["rolled_back", "announced_stale", "first_seen", "skipped", "previous", "left_images", "snoozed"];
/** `state.json`, or `state-<scope>.json` for a scoped instance (characters unsafe in a file name as `_`). */
function fileName(scope: string | undefined): string {
  return scope === undefined ? "state.json" : `state-${scope.replace(/[^A-Za-z0-9._-]/g, "_")}.json`;
}
const VERSION = 1;

export interface StateStore {
  section(name: Section): Remembered;
  /** the file, or undefined when svc remembers in memory only */
  readonly file: string | undefined;
}

type Contents = Record<Section, Map<string, string>>;

/**
 * The store of one svc instance. Instances that share an engine under different scopes may share
 * a folder too: each keeps its own file (`state-<scope>.json`), so none overwrites another's.
 */
export function openState(dir: string | undefined, log: Logger, scope?: string): StateStore {
  const logger = log.child("state");
  const file = dir === undefined ? undefined : join(dir, fileName(scope));
  const contents = file === undefined ? emptyContents() : load(file, logger);
  let writable = file !== undefined;

  const save = (): void => {
    if (!writable || file === undefined || dir === undefined) return;
    try {
      mkdirSync(dir, { recursive: true });
      const temporary = `${file}.${process.pid}.tmp`;
      writeFileSync(temporary, serialize(contents), { mode: 0o600 });
      renameSync(temporary, file);
    } catch (error) {
      writable = false;
      logger.warn("cannot write the state file: decisions are kept in memory until svc restarts", { file, error: (error as Error).message });
    }
  };

  return {
    file,
    section(name) {
      const entries = contents[name];
      return {
        get: (key) => entries.get(key),
        set(key, value) {
          if (entries.get(key) === value) return;
          entries.set(key, value);
          save();
        },
        delete(key) {
          if (entries.delete(key)) save();
        },
        entries: () => [...entries],
      };
    },
  };
}

/** A Remembered that lives as long as the process (no `state_dir`, tests). */
export function inMemory(): Remembered {
  const entries = new Map<string, string>();
  return { get: (key) => entries.get(key), set: (key, value) => void entries.set(key, value), delete: (key) => void entries.delete(key), entries: () => [...entries] };
}

function emptyContents(): Contents {
  return Object.fromEntries(SECTIONS.map((name) => [name, new Map<string, string>()])) as Contents;
}

function load(file: string, log: Logger): Contents {
  if (!existsSync(file)) {
    log.info("no state file yet: starting fresh", { file });
    return emptyContents();
  }
  try {
    return parse(readFileSync(file, "utf8"));
  } catch (error) {
    const aside = `${file}.unreadable-${Date.now()}`;
    try {
      renameSync(file, aside);
    } catch {
      // kept where it is; the next save replaces it
    }
    log.warn("the state file cannot be used: starting fresh (the file is kept aside)", { file, kept_as: aside, error: (error as Error).message });
    return emptyContents();
  }
}

/** The file's contents; throws on anything that is not exactly what svc writes. */
export function parse(text: string): Contents {
  const data = JSON.parse(text) as unknown;
  if (typeof data !== "object" || data === null || (data as { version?: unknown }).version !== VERSION) throw new Error(`not a version ${VERSION} state file`);
  const contents = emptyContents();
  for (const name of SECTIONS) {
    const section = (data as Record<string, unknown>)[name] ?? {};
    if (typeof section !== "object" || section === null || Array.isArray(section)) throw new Error(`${name} is not an object`);
    for (const [key, value] of Object.entries(section)) {
      if (typeof value !== "string") throw new Error(`${name}.${key} is not a string`);
      contents[name].set(key, value);
    }
  }
  return contents;
}

function serialize(contents: Contents): string {
  const data: Record<string, unknown> = { version: VERSION };
  for (const name of SECTIONS) data[name] = Object.fromEntries(contents[name]);
  return `${JSON.stringify(data, null, 2)}\n`;
}
export { type History, openHistory } from "./history.ts";
