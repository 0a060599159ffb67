/**
 * A tag move written into a unit's file (src/updater/containers/unitmove.ts; docs/podman.md, "A
 * tag move of a container systemd runs"): which files svc edits for the unit's manager, and the
 * crash recovery of a move journaled in the state (src/updater/recovery/units.ts), on real files
 * and the fake engine. svc is root here, so the manager's user is root for both scopes.
 */
import { afterAll, describe, expect, test } from "bun:test";
import {
  chmodSync,
  chownSync,
  lchownSync,
  linkSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { defaultConfig } from "../../../src/config/index.ts";
import { silentLogger } from "../../../src/log/index.ts";
import { Metrics } from "../../../src/metrics/index.ts";
import { inMemory } from "../../../src/state/index.ts";
import { safeUnitFile, type UnitMove } from "../../../src/updater/containers/unitmove.ts";
import { createUpdater } from "../../../src/updater/index.ts";
import { FakeEngine, FakeRegistry, FakeSystemd, MemoryAudit } from "./fakes.ts";

const root = mkdtempSync(join(tmpdir(), "svc-unit-moves-"));
chmodSync(root, 0o755);
afterAll(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const OTHER = 4242;

/** A folder of its own for one test, root's, 0755. */
function folder(): string {
  const dir = join(root, `t${++n}`);
  mkdirSync(dir, { mode: 0o755 });
  return dir;
}

describe.skipIf(process.geteuid?.() !== 0)("which unit files svc edits (as root: the system manager's user)", () => {
  test("root's own file in root's folder: edited, links resolved", () => {
    const dir = folder();
    const file = join(dir, "web.container");
    writeFileSync(file, "[Container]\nImage=app:1.0\n", { mode: 0o644 });
    expect(safeUnitFile(file, "system")).toBe(file);
    const link = join(dir, "link.container");
    symlinkSync(file, link);
    expect(safeUnitFile(link, "system")).toBe(file);
  });

  test.each([
    ["owned by another user", (file: string) => chownSync(file, OTHER, 0), `is owned by user ${OTHER}`],
    ["writable by every user", (file: string) => chmodSync(file, 0o666), "can be written by other users (mode 0666)"],
    ["with a second hard link", (file: string) => linkSync(file, `${file}.bak`), "has 2 hard links"],
    [
      "in a folder of another user's",
      (file: string) => chownSync(join(file, ".."), OTHER, 0),
      `owned by user ${OTHER}`,
    ],
    [
      "in a folder every user may write",
      (file: string) => chmodSync(join(file, ".."), 0o777),
      "which other users can write to",
    ],
  ])("a file %s: refused with why", (_, spoil, why) => {
    const file = join(folder(), "web.service");
    writeFileSync(file, "[Service]\n", { mode: 0o644 });
    spoil(file);
    expect(() => safeUnitFile(file, "system")).toThrow(why);
  });

  test("a link another user made, a folder, a file of another kind, a relative path: refused", () => {
    const dir = folder();
    const file = join(dir, "web.container");
    writeFileSync(file, "[Container]\n", { mode: 0o644 });
    const link = join(dir, "theirs.container");
    symlinkSync(file, link);
    lchownSync(link, OTHER, 0);
    expect(() => safeUnitFile(link, "system")).toThrow(`is a link made by user ${OTHER}`);
    mkdirSync(join(dir, "d.service"));
    expect(() => safeUnitFile(join(dir, "d.service"), "system")).toThrow("is not a regular file");
    writeFileSync(join(dir, "web.kube"), "", { mode: 0o644 });
    expect(() => safeUnitFile(join(dir, "web.kube"), "system")).toThrow(
      "neither a quadlet .container file nor a .service",
    );
    expect(() => safeUnitFile("web.container", "system")).toThrow("is not an absolute path");
    // a package's quadlet file (podman-systemd.unit(5): /usr/share/containers/systemd): an upgrade would undo the move
    expect(() => safeUnitFile("/usr/share/containers/systemd/web.container", "system")).toThrow("belongs to a package");
  });
});

/** The fake engine with a unit's manager: reloads and restarts counted. */
class UnitEngine extends FakeEngine {
  readonly systemd = new FakeSystemd();
}

function journaled(file: string): { move: UnitMove; journal: ReturnType<typeof inMemory> } {
  const before = "[Container]\n# pinned by hand\nImage=r.io/app:1\n";
  const move: UnitMove = {
    unit: "web.service",
    scope: "user",
    file,
    from: "r.io/app:1",
    to: "r.io/app:2",
    line: 3,
    before,
    after: before.replace("r.io/app:1", "r.io/app:2"),
  };
  const journal = inMemory();
  journal.set("web", JSON.stringify(move));
  return { move, journal };
}

function recoverWith(engine: UnitEngine, journal: ReturnType<typeof inMemory>) {
  const audit = new MemoryAudit();
  const updater = createUpdater({
    config: defaultConfig({ stop_timeout: 1000, rollback: { startup_timeout: 200 } }),
    engine,
    systemd: engine.systemd,
    registry: new FakeRegistry(engine),
    metrics: new Metrics(),
    log: silentLogger,
    audit,
    unitMoves: journal,
    timing: { pollMs: 5, stableMs: 20 },
  });
  return { audit, done: updater.recover() };
}

describe("crash recovery of a tag move written into a unit's file", () => {
  test("svc stopped before writing: the file as it was, the entry dropped, nothing restarted", async () => {
    const file = join(folder(), "web.container");
    const { move, journal } = journaled(file);
    writeFileSync(file, move.before);
    const engine = new UnitEngine();
    const { audit, done } = recoverWith(engine, journal);
    await done;
    expect(readFileSync(file, "utf8")).toBe(move.before);
    expect(journal.entries()).toEqual([]);
    expect([engine.systemd.reloads, engine.systemd.restarts]).toEqual([0, []]);
    expect(audit.entries.filter((e) => e.action === "recover").map((e) => e.container)).toEqual(["web"]);
  });

  test("the unit's container runs the new tag and passes the checks: the move stands", async () => {
    const file = join(folder(), "web.container");
    const { move, journal } = journaled(file);
    writeFileSync(file, move.after);
    const engine = new UnitEngine();
    engine.addImage("r.io/app:2");
    engine.addContainer("web", "r.io/app:2");
    await recoverWith(engine, journal).done;
    expect(readFileSync(file, "utf8")).toBe(move.after);
    expect(journal.entries()).toEqual([]);
    expect(engine.systemd.restarts).toEqual([]);
  });

  test.each([
    ["its container is gone (the unit never came up on the new tag)", (_: UnitEngine) => {}],
    [
      "its container still runs the old tag (svc stopped between the write and the restart)",
      (engine: UnitEngine) => {
        engine.addImage("r.io/app:1");
        engine.addContainer("web", "r.io/app:1");
      },
    ],
    [
      "its container exited on the new tag",
      (engine: UnitEngine) => {
        engine.addImage("r.io/app:2");
        engine.addContainer("web", "r.io/app:2", { state: "exited" });
      },
    ],
  ])("%s: the file's old bytes back, the manager reloaded, the unit restarted", async (_, arrange) => {
    const file = join(folder(), "web.container");
    const { move, journal } = journaled(file);
    writeFileSync(file, move.after);
    const engine = new UnitEngine();
    arrange(engine);
    const { audit, done } = recoverWith(engine, journal);
    await done;
    expect(readFileSync(file, "utf8")).toBe(move.before);
    expect(journal.entries()).toEqual([]);
    expect([engine.systemd.reloads, engine.systemd.restarts]).toEqual([1, ["web"]]);
    expect(audit.entries.find((e) => e.action === "unit_revert")).toMatchObject({
      container: "web",
      file,
      change: `${file} line 3: r.io/app:2 -> r.io/app:1`,
    });
  });

  test("a file someone changed since svc wrote it is theirs: left as it is", async () => {
    const file = join(folder(), "web.container");
    const { journal } = journaled(file);
    writeFileSync(file, "[Container]\nImage=r.io/app:3\n");
    const engine = new UnitEngine();
    await recoverWith(engine, journal).done;
    expect(readFileSync(file, "utf8")).toBe("[Container]\nImage=r.io/app:3\n");
    expect(journal.entries()).toEqual([]);
    expect(engine.systemd.reloads).toBe(0);
  });
});
