/**
 * The state room: decisions that must survive a restart (a digest that was rolled back, the
 * stale digests already announced, when a newer digest was first seen, digests skipped on request, the containers whose updates are snoozed, the image each container ran
 * before its last update, the images an update left while cleanup_delay runs), kept in one small JSON file under `state_dir` and written
 * atomically (a temporary file renamed over the old one) on every change. Without `state_dir`
 * they live in memory only, as before. A file that cannot be read or makes no sense is a warning
 * and a fresh start (the unreadable file is kept aside), never a crash; a folder that cannot be
 * written is a warning, and svc goes on remembering in memory.
 */
import { join } from "node:path";
import type { Logger } from "../log/index.ts";
import { atomicWriter, readOrSetAside, scopedFileName } from "./file.ts";

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
  const file = dir === undefined ? undefined : join(dir, scopedFileName("state", scope));
  const contents = file === undefined ? emptyContents() : readOrSetAside(file, parse, emptyContents, logger, "state");
  const write = atomicWriter(dir, file, logger, "state");
  const save = (): void => write(serialize(contents));

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
