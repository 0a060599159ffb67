/** Decisions that survive a restart: one JSON file, written atomically, never a crash. */
import { describe, expect, test } from "bun:test";
import {
  chmodSync,
  chownSync,
  existsSync,
  lchownSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { inMemory, openState, usableStateDir } from "../../../src/state/index.ts";
import { recordingLogger } from "../../support/logger.ts";
import { tempDir } from "../../temp.ts";

describe("openState", () => {
  test("what one svc remembers, the next one started on the same folder knows", () => {
    const dir = join(tempDir("state"), "svc");
    const first = openState(dir, recordingLogger());
    first.section("rolled_back").set("web", "sha256:bad");
    first.section("announced_stale").set("db", "sha256:new");
    first.section("announced_stale").set("cache", "sha256:x");
    first.section("announced_stale").delete("cache");
    const second = openState(dir, recordingLogger());
    expect(second.section("rolled_back").get("web")).toBe("sha256:bad");
    expect(second.section("announced_stale").get("db")).toBe("sha256:new");
    expect(second.section("announced_stale").get("cache")).toBeUndefined();
    // written by rename: no temporary file is left
    expect(readdirSync(dir)).toEqual(["state.json"]);
    expect(JSON.parse(readFileSync(join(dir, "state.json"), "utf8"))).toMatchObject({
      version: 1,
      rolled_back: { web: "sha256:bad" },
      announced_stale: { db: "sha256:new" },
      first_seen: {},
    });
  });

  test("a file that makes no sense is a warning and a fresh start; the file is kept aside", () => {
    for (const text of [
      "{not json",
      JSON.stringify({ version: 2 }),
      JSON.stringify({ version: 1, rolled_back: { web: 7 } }),
    ]) {
      const dir = tempDir("state");
      writeFileSync(join(dir, "state.json"), text);
      const log = recordingLogger();
      const state = openState(dir, log);
      expect(state.section("rolled_back").get("web")).toBeUndefined();
      expect(log.lines.filter((l) => l.level === "warn").map((l) => l.message)).toEqual([
        "the state file cannot be used: starting fresh (the file is kept aside)",
      ]);
      const aside = readdirSync(dir).filter((f) => f.startsWith("state.json.unreadable-"));
      expect(aside).toHaveLength(1);
      expect(readFileSync(join(dir, aside[0]!), "utf8")).toBe(text);
      state.section("rolled_back").set("web", "sha256:a");
      expect(openState(dir, recordingLogger()).section("rolled_back").get("web")).toBe("sha256:a");
    }
  });

  test("a folder that cannot be written: one warning, and svc goes on remembering in memory", () => {
    if (process.getuid?.() === 0) {
      // root writes anywhere: a path under a regular file cannot be a folder for anyone
      const parent = tempDir("state");
      writeFileSync(join(parent, "file"), "");
      const log = recordingLogger();
      const state = openState(join(parent, "file", "svc"), log);
      state.section("rolled_back").set("web", "sha256:a");
      state.section("rolled_back").set("api", "sha256:b");
      expect(state.section("rolled_back").get("web")).toBe("sha256:a");
      expect(log.lines.filter((l) => l.level === "warn")).toHaveLength(1);
      return;
    }
    const dir = tempDir("state");
    mkdirSync(join(dir, "ro"));
    chmodSync(join(dir, "ro"), 0o500);
    const log = recordingLogger();
    const state = openState(join(dir, "ro"), log);
    state.section("rolled_back").set("web", "sha256:a");
    expect(state.section("rolled_back").get("web")).toBe("sha256:a");
    expect(log.lines.filter((l) => l.level === "warn")).toHaveLength(1);
  });

  test("instances under different scopes keep a file each in a shared folder", () => {
    const dir = tempDir("state");
    openState(dir, recordingLogger(), "prod").section("rolled_back").set("web", "sha256:p");
    openState(dir, recordingLogger(), "lab/1").section("rolled_back").set("web", "sha256:l");
    openState(dir, recordingLogger()).section("rolled_back").set("web", "sha256:u");
    expect(readdirSync(dir).sort()).toEqual(["state-lab_1.json", "state-prod.json", "state.json"]);
    expect(openState(dir, recordingLogger(), "prod").section("rolled_back").get("web")).toBe("sha256:p");
    expect(openState(dir, recordingLogger(), "lab/1").section("rolled_back").get("web")).toBe("sha256:l");
  });

  test("two processes on one file: each sees the other's writes, and neither clobbers the other's", () => {
    const dir = tempDir("state");
    const service = openState(dir, recordingLogger());
    const cli = openState(dir, recordingLogger());
    service.section("previous").set("web", "sha256:old");
    expect(cli.section("previous").get("web")).toBe("sha256:old");
    cli.section("skipped").set("web", "sha256:left");
    service.section("first_seen").set("db", "sha256:n 2026-01-01T00:00:00.000Z");
    expect(service.section("skipped").get("web")).toBe("sha256:left");
    cli.section("previous").delete("web");
    expect(service.section("previous").entries()).toEqual([]);
    expect(JSON.parse(readFileSync(join(dir, "state.json"), "utf8"))).toMatchObject({
      skipped: { web: "sha256:left" },
      first_seen: { db: "sha256:n 2026-01-01T00:00:00.000Z" },
      previous: {},
    });
    // the lock is gone once a write is done
    expect(readdirSync(dir)).toEqual(["state.json"]);
  });

  test("without state_dir nothing is written", () => {
    const state = openState(undefined, recordingLogger());
    state.section("rolled_back").set("web", "sha256:a");
    expect(state.section("rolled_back").get("web")).toBe("sha256:a");
    expect(state.file).toBeUndefined();
    const memory = inMemory();
    memory.set("a", "1");
    memory.delete("a");
    expect(memory.get("a")).toBeUndefined();
    expect(existsSync("state.json")).toBe(false);
  });
});

describe("the state file is written safely (docs/security.md)", () => {
  test("no name is predictable: symlinks planted where a temporary file could be, and at the file itself, are never written through", () => {
    const dir = tempDir("state");
    const victim = join(tempDir("victim"), "victim");
    writeFileSync(victim, "untouched");
    for (const name of [`state.json.${process.pid}.tmp`, "state.json.tmp", ".state.json.tmp"])
      symlinkSync(victim, join(dir, name));
    const state = openState(dir, recordingLogger());
    state.section("skipped").set("web", "sha256:x");
    expect(readFileSync(victim, "utf8")).toBe("untouched");
    expect(statSync(join(dir, "state.json")).mode & 0o777).toBe(0o600);
    expect(
      readdirSync(dir)
        .filter((name) => name.endsWith(".tmp"))
        .sort(),
    ).toEqual([".state.json.tmp", `state.json.${process.pid}.tmp`, "state.json.tmp"].sort());
  });

  test("a state.json that is a symlink is replaced, not written through", () => {
    const dir = tempDir("state");
    const victim = join(tempDir("victim"), "victim");
    writeFileSync(victim, "untouched");
    symlinkSync(victim, join(dir, "state.json"));
    openState(dir, recordingLogger()).section("skipped").set("web", "sha256:x");
    expect(readFileSync(victim, "utf8")).toBe("untouched");
    expect(lstatSync(join(dir, "state.json")).isSymbolicLink()).toBe(false);
  });

  test("a folder other users can write to is refused with a clear error; one that does not exist yet is created for svc's user only", () => {
    for (const mode of [0o777, 0o1777, 0o775]) {
      const dir = tempDir("state");
      chmodSync(dir, mode);
      expect(() => openState(dir, recordingLogger())).toThrow(
        `state_dir ${dir} can be written by other users (mode ${mode.toString(8).padStart(4, "0")})`,
      );
    }
    const fresh = join(tempDir("state"), "new");
    openState(fresh, recordingLogger()).section("skipped").set("web", "sha256:x");
    expect(statSync(fresh).mode & 0o777).toBe(0o700);
  });
});

describe("state_dir at start", () => {
  test("the default folder is made at start, svc's user's only, with the folders above it", () => {
    const dir = join(tempDir("svc-state-default-"), ".local", "state", "svc");
    const log = recordingLogger();
    expect(usableStateDir(dir, log)).toBe(dir);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(log.lines).toEqual([]);
  });

  test("a folder that cannot be made is said once at start, naming what will not survive a restart; svc goes on in memory", () => {
    const blocker = join(tempDir("svc-state-blocked-"), "file");
    writeFileSync(blocker, "");
    const log = recordingLogger();
    expect(usableStateDir(join(blocker, "svc"), log)).toBeUndefined();
    expect(log.lines.map((l) => l.level)).toEqual(["warn"]);
    expect(log.lines[0]!.message).toContain(`state_dir ${join(blocker, "svc")} cannot be used`);
    expect(log.lines[0]!.message).toContain("digests rolled back or skipped");
    expect(log.lines[0]!.message).toContain("set state_dir (SVC_STATE_DIR)");
  });

  test("a default folder svc may not use (other users may write it) is the same warning; one the operator chose is refused", () => {
    const dir = tempDir("svc-state-open-");
    chmodSync(dir, 0o777);
    const log = recordingLogger();
    expect(usableStateDir(dir, log, false)).toBeUndefined();
    expect(log.lines[0]!.message).toContain("can be written by other users");
    expect(() => usableStateDir(dir, recordingLogger(), true)).toThrow("can be written by other users");
  });
});

describe("state_dir is looked at itself, and the folders above it (as sshd's StrictModes)", () => {
  const root = process.getuid?.() === 0;
  const OTHER = 65534;

  test("a link planted in a folder others can write is refused, naming the folder; svc writes nothing through it", () => {
    const shared = tempDir("svc-shared-");
    chmodSync(shared, 0o777);
    const target = tempDir("svc-target-");
    const link = join(shared, "state");
    symlinkSync(target, link);
    expect(() => openState(link, recordingLogger())).toThrow(
      `state_dir ${link}: ${shared} (a folder above it) can be written by other users and is not sticky (mode 0777)`,
    );
    expect(() => usableStateDir(link, recordingLogger())).toThrow(shared);
    expect(readdirSync(target)).toEqual([]);
  });

  test.skipIf(!root)("a link another user planted in a sticky folder is refused, naming the link", () => {
    const sticky = tempDir("svc-sticky-");
    chmodSync(sticky, 0o1777);
    const target = tempDir("svc-target-");
    const link = join(sticky, "state");
    symlinkSync(target, link);
    lchownSync(link, OTHER, OTHER);
    expect(() => openState(link, recordingLogger())).toThrow(
      `state_dir ${link} is a link made by another user (uid ${OTHER})`,
    );
    expect(readdirSync(target)).toEqual([]);
  });

  test("a folder under a parent others can write (not sticky) is refused, naming the parent; a sticky parent is fine", () => {
    const open = tempDir("svc-open-");
    chmodSync(open, 0o757);
    const dir = join(open, "svc");
    mkdirSync(dir, { mode: 0o700 });
    expect(() => openState(dir, recordingLogger())).toThrow(
      `state_dir ${dir}: ${open} (a folder above it) can be written by other users and is not sticky (mode 0757)`,
    );
    const notYet = join(open, "later", "svc");
    expect(() => openState(notYet, recordingLogger())).toThrow(
      `${open} (a folder above it) can be written by other users`,
    );
    chmodSync(open, 0o1777);
    expect(() => openState(dir, recordingLogger())).not.toThrow();
  });

  test.skipIf(!root)("a folder, or a folder above it, owned by another user is refused, naming it", () => {
    const dir = join(tempDir("svc-owned-"), "svc");
    mkdirSync(dir, { mode: 0o700 });
    chownSync(dir, OTHER, OTHER);
    expect(() => openState(dir, recordingLogger())).toThrow(`state_dir ${dir} belongs to another user (uid ${OTHER})`);
    const theirs = tempDir("svc-theirs-");
    chownSync(theirs, OTHER, OTHER);
    const mine = join(theirs, "svc");
    mkdirSync(mine, { mode: 0o700 });
    expect(() => openState(mine, recordingLogger())).toThrow(
      `state_dir ${mine}: ${theirs} belongs to another user (uid ${OTHER})`,
    );
  });

  test("a link svc's user made in its own folder to its own folder (systemd's DynamicUser state folder) is used", () => {
    const base = tempDir("svc-systemd-");
    const real = join(base, "private", "svc");
    mkdirSync(real, { recursive: true, mode: 0o700 });
    const link = join(base, "svc");
    symlinkSync("private/svc", link);
    openState(link, recordingLogger()).section("skipped").set("web", "sha256:x");
    expect(readdirSync(real)).toEqual(["state.json"]);
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
  });
});
