/**
 * data_guard_dir is svc's own only as far as svc can show it (store.ts, docs/security.md): the
 * folder passes the state folder's checks, the sweep removes only the folders svc made and
 * marked, never through a link, and a copy is one only when its manifest carries svc's seal.
 */
import { afterAll, describe, expect, test } from "bun:test";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { defaultConfig } from "../../../src/config/index.ts";
import { CopyStore, DataGuard, dataGuardOptions, type Manifest } from "../../../src/dataguard/index.ts";
import { SECRET_FILE } from "../../../src/state/index.ts";

const root = mkdtempSync(join(tmpdir(), "svc-dg-trust-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const fresh = (what: string) => {
  const dir = join(root, `${what}-${++n}`);
  mkdirSync(dir, { mode: 0o700 });
  return dir;
};

const ID = "20260301T040000Z-0123456789ab";

/** A manifest as svc writes one, naming a public image, for a copy planted by someone else. */
function manifestOf(container: string, extra: Partial<Manifest> = {}): Manifest {
  return {
    format: 2,
    container,
    container_id: "0123456789ab",
    image: "postgres:16",
    image_id: `sha256:${"a".repeat(64)}`,
    version: "16",
    created_at: "2026-03-01T04:00:00.000Z",
    duration_ms: 1,
    bytes: 1,
    superseded_at: null,
    mounts: [{ destination: "/data", type: "bind", source: "/", file: "mount-0.tar", bytes: 1, xxh64: "0".repeat(16) }],
    ...extra,
  };
}

describe("the sweep at start touches only what svc made", () => {
  test("another program's folders and files, even named as a container and a copy, stay", () => {
    const dir = fresh("shared");
    // a backup disk: folders shaped as container names, one with a copy-id-shaped folder in it
    mkdirSync(join(dir, "photos", "2019"), { recursive: true });
    writeFileSync(join(dir, "photos", "2019", "beach.jpg"), "jpeg");
    mkdirSync(join(dir, "web", ID), { recursive: true });
    writeFileSync(join(dir, "web", ID, "notes.txt"), "mine");
    writeFileSync(join(dir, "readme"), "the backup disk");
    const store = new CopyStore(dir);
    expect(store.sweep()).toEqual([]);
    expect(readFileSync(join(dir, "photos", "2019", "beach.jpg"), "utf8")).toBe("jpeg");
    expect(readFileSync(join(dir, "web", ID, "notes.txt"), "utf8")).toBe("mine");
  });

  test("a copy svc began and a crash interrupted (its mark, no manifest) is removed", () => {
    const store = new CopyStore(fresh("crash"));
    const begun = store.begin("web", "0123456789ab0000", new Date("2026-03-01T04:00:00Z"));
    writeFileSync(join(begun.dir, "mount-0.tar"), "partial");
    expect(store.sweep()).toEqual([`web/${begun.id}`]);
    expect(existsSync(begun.dir)).toBe(false);
  });

  test("a link named as a container or a copy is never followed", () => {
    const dir = fresh("links");
    const target = fresh("target");
    // what the link points to looks exactly like an interrupted copy of svc's
    mkdirSync(join(target, ID));
    writeFileSync(join(target, ID, ".svc-copy"), "svc data guard copy\n");
    writeFileSync(join(target, ID, "precious"), "x");
    symlinkSync(target, join(dir, "web"));
    mkdirSync(join(dir, "db"));
    symlinkSync(join(target, ID), join(dir, "db", ID));
    const store = new CopyStore(dir);
    expect(store.sweep()).toEqual([]);
    expect(store.remove("web", ID)).toBe(false);
    expect(store.remove("db", ID)).toBe(false);
    expect(readFileSync(join(target, ID, "precious"), "utf8")).toBe("x");
  });

  test("a data_guard_dir other users may write is refused: nothing swept, no copy made", () => {
    const dir = fresh("open");
    const store = new CopyStore(dir);
    const begun = store.begin("web", "0123456789ab0000", new Date("2026-03-01T04:00:00Z"));
    chmodSync(dir, 0o777);
    expect(() => store.sweep()).toThrow(/data_guard_dir .* can be written by other users/);
    expect(existsSync(begun.dir)).toBe(true);
    expect(() => store.begin("db", "0123456789ab0000", new Date())).toThrow(/data_guard_dir/);
    expect(() => store.room()).toThrow(/data_guard_dir/);
  });

  test("a data_guard_dir under a folder other users may write (not sticky) is refused", () => {
    const open = fresh("open-parent");
    chmodSync(open, 0o777);
    const store = new CopyStore(join(open, "copies"));
    expect(() => store.room()).toThrow(/data_guard_dir .*a folder above it/);
  });
});

describe("a copy is one svc sealed", () => {
  test("a planted copy with a well-formed manifest naming a public image is not listed, nor restored", () => {
    const now = new Date("2026-03-01T05:00:00Z");
    const dir = fresh("planted");
    const config = defaultConfig({ data_guard: "all", data_guard_dir: dir });
    const guard = new DataGuard(null as never, dataGuardOptions(config), () => now);
    mkdirSync(join(dir, "db", ID), { recursive: true });
    writeFileSync(join(dir, "db", ID, "mount-0.tar"), "x");
    writeFileSync(join(dir, "db", ID, "manifest.json"), JSON.stringify(manifestOf("db")));
    expect(guard.store!.list()).toEqual([]);
    expect(guard.copyOf("0123456789ab")).toBeNull();
    // a seal that is not svc's is refused too
    writeFileSync(join(dir, "db", ID, "manifest.json"), JSON.stringify({ ...manifestOf("db"), seal: "f".repeat(64) }));
    expect(guard.copyOf("0123456789ab")).toBeNull();
    // and it is not svc's to remove either: no mark
    expect(guard.tidy()).toEqual([]);
    expect(existsSync(join(dir, "db", ID, "manifest.json"))).toBe(true);
  });

  test("svc's own copy is sealed under the state folder's secret, made 0600 once", () => {
    const state = fresh("state");
    const copies = fresh("copies");
    const config = defaultConfig({ data_guard: "all", state_dir: state, data_guard_dir: copies });
    const guard = new DataGuard(null as never, dataGuardOptions(config));
    const store = guard.store!;
    const begun = store.begin("db", "0123456789ab0000", new Date("2026-03-01T04:00:00Z"));
    writeFileSync(join(begun.dir, "mount-0.tar"), "x");
    store.complete(begun.dir, manifestOf("db"));
    expect(guard.copyOf("0123456789ab")?.id).toBe(begun.id);
    const secret = statSync(join(state, SECRET_FILE));
    expect(secret.mode & 0o777).toBe(0o600);
    expect(existsSync(join(copies, SECRET_FILE))).toBe(false);
    // the manifest changed by hand (another source to restore into) no longer passes
    const file = join(begun.dir, "manifest.json");
    writeFileSync(file, readFileSync(file, "utf8").replace('"source": "/"', '"source": "/etc"'));
    expect(guard.copyOf("0123456789ab")).toBeNull();
    // another state folder's secret does not seal it either
    const other = new CopyStore(copies, fresh("other-state"));
    store.complete(begun.dir, manifestOf("db"));
    expect(other.list()).toEqual([]);
    expect(store.list().map((c) => c.id)).toEqual([begun.id]);
  });

  test("a secret file others may read, or a link, is refused", () => {
    const state = fresh("state-open");
    writeFileSync(join(state, SECRET_FILE), `${"a".repeat(64)}\n`, { mode: 0o644 });
    chmodSync(join(state, SECRET_FILE), 0o644);
    const store = new CopyStore(fresh("copies-open"), state);
    const begun = store.begin("db", "0123456789ab0000", new Date());
    expect(() => store.complete(begun.dir, manifestOf("db"))).toThrow(/can be read by other users/);
    const linked = fresh("state-link");
    symlinkSync(join(state, SECRET_FILE), join(linked, SECRET_FILE));
    const through = new CopyStore(fresh("copies-link"), linked);
    const other = through.begin("db", "0123456789ab0000", new Date());
    expect(() => through.complete(other.dir, manifestOf("db"))).toThrow(/link/);
  });
});
