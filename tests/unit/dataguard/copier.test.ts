/**
 * The helper's copier (copier.ts) on this machine's own file system: a folder written as a tar and
 * extracted again is the same tree (tests/support/tree-manifest.ts: owners, modes, times, links,
 * hard links, FIFOs, devices, extended attributes, contents); GNU tar is the oracle both ways (it
 * extracts svc's archive to the same tree, and svc extracts GNU tar's POSIX archive to it); a
 * damaged archive, a copy over its limit, a folder the engine does not share and an archive that
 * writes out of its folder are refused, each with its exit code.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { closeSync, lstatSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BlockChecksum } from "../../../src/dataguard/checksum.ts";
import {
  archiveFolder,
  EXIT,
  emptyFolder,
  extractArchive,
  helperMain,
  ownerInside,
} from "../../../src/dataguard/copier.ts";
import { setXattr, treeManifest } from "../../support/tree-manifest.ts";

const work = mkdtempSync(join(tmpdir(), "svc-copier-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** A tree with every kind of entry a volume holds (as root: owners and a device too). */
function makeTree(at: string): void {
  const script = String.raw`
import os, sys
r = sys.argv[1]
os.makedirs(r + "/d/e")
open(r + "/a", "w").write("v1-data\n")
open(r + "/empty", "w").close()
open(r + "/big", "wb").write(os.urandom(9 * 1024 * 1024 + 7))
os.link(r + "/a", r + "/hard")
os.symlink("a", r + "/sym")
os.symlink("/nowhere/" + "x" * 150, r + "/dangling-long")
os.mkfifo(r + "/fifo")
open(r + "/d/e/f", "w").write("x\n")
os.makedirs(r + "/" + "p" * 60)
open(r + "/" + "p" * 60 + "/" + "q" * 60, "w").write("split\n")
open(r + "/" + "n" * 120, "w").write("long\n")
deep = r + "/" + "/".join(["z" * 90] * 4)
os.makedirs(deep)
open(deep + "/leaf", "w").write("deep\n")
open(os.fsencode(r) + b"/latin-\xe9t\xe9", "w").write("not utf-8\n")
open(r + "/.hidden", "w").write("secret\n")
os.chmod(r + "/.hidden", 0o4755)
os.chmod(r + "/d", 0o1777)
os.chmod(r + "/a", 0o640)
if os.getuid() == 0:
    os.chown(r + "/a", 1000, 1001)
    os.chown(r + "/d/e", 33, 33)
    os.lchown(r + "/sym", 7, 8)
    os.chown(r + "/" + "n" * 120, 3000000, 3000001)
    os.mknod(r + "/null", 0o20644, os.makedev(1, 3))
os.utime(r + "/a", ns=(1577934245123456789, 1577934245123456789))
os.utime(r + "/d/e/f", ns=(1577934245000000001, 1577934245000000001))
os.utime(r + "/d/e", ns=(1500000000987654321, 1500000000987654321))
`;
  const ran = Bun.spawnSync(["python3", "-c", script, at], { stderr: "pipe" });
  if (ran.exitCode !== 0) throw new Error(ran.stderr.toString());
  setXattr(`${at}/a`, "user.checksum", "v1-sum");
  setXattr(`${at}/a`, "user.note", "\u00e9t\u00e9 = 2");
  setXattr(`${at}/d`, "user.owner", "app");
  setXattr(at, "user.volume", "data");
  setXattr(`${at}/${"n".repeat(120)}`, "user.long", "yes");
}

/** Modification times to the nanosecond, by path (the tree manifest keeps seconds). */
function nanos(at: string): Record<string, string> {
  const script = `import os,sys,json; r=sys.argv[1]; print(json.dumps({p: str(os.lstat(r+"/"+p).st_mtime_ns) for p in sys.argv[2:]}))`;
  return JSON.parse(Bun.spawnSync(["python3", "-c", script, at, "a", "d/e/f", "d/e", "sym"]).stdout.toString());
}

function archive(from: string, base: string, limit = 2 ** 40): { file: string; bytes: number; checksum: string } {
  const file = join(work, `${base}-${Math.random().toString(16).slice(2)}.tar`);
  const fd = openSync(file, "wx", 0o600);
  try {
    return { file, ...archiveFolder(from, base, fd, limit) };
  } finally {
    closeSync(fd);
  }
}

function tar(...args: string[]): void {
  const ran = Bun.spawnSync(["tar", ...args], { stderr: "pipe" });
  if (ran.exitCode !== 0) throw new Error(`tar ${args.join(" ")}: ${ran.stderr.toString()}`);
}

describe("a folder through the copier's tar and back", () => {
  const source = join(work, "source", "data");
  mkdirSync(source, { recursive: true });
  makeTree(source);
  const before = treeManifest(source);

  test("extracted into an empty folder: the same tree, times to the nanosecond", () => {
    const written = archive(source, "data");
    expect(written.bytes).toBe(lstatSync(written.file).size);
    const into = join(work, "restored");
    mkdirSync(into);
    extractArchive(written.file, "data", into);
    expect(treeManifest(into)).toEqual(before);
    expect(nanos(into)).toEqual(nanos(source));
  });

  // the oracle: GNU tar (--xattrs, POSIX format) reads what svc writes, and writes what svc reads
  test("GNU tar extracts svc's archive to the same tree", () => {
    const written = archive(source, "data");
    const into = join(work, "by-gnu-tar");
    mkdirSync(into);
    tar("--xattrs", "--xattrs-include=*", "--numeric-owner", "-xpf", written.file, "-C", into);
    expect(treeManifest(join(into, "data"))).toEqual(before);
  });

  test("svc extracts GNU tar's POSIX archive to the same tree", () => {
    const file = join(work, "gnu.tar");
    tar("--format=posix", "--xattrs", "--xattrs-include=*", "-C", join(work, "source"), "-cf", file, "data");
    const into = join(work, "from-gnu-tar");
    mkdirSync(into);
    extractArchive(file, "data", into);
    expect(treeManifest(into)).toEqual(before);
  });

  test("emptying a mount removes everything in it, not the folder itself", () => {
    const into = join(work, "emptied");
    mkdirSync(into);
    extractArchive(archive(source, "data").file, "data", into);
    emptyFolder(into);
    expect(Object.keys(treeManifest(into))).toEqual(["."]);
  });
});

describe("the helper's commands and their exit codes", () => {
  const out = join(work, "copy");
  const volume = join(work, "volume");
  mkdirSync(out);
  mkdirSync(volume);
  writeFileSync(join(volume, "file"), "x".repeat(10_000));
  writeFileSync(join(out, ".probe"), "token");
  const spec = (limit: number, token = "token") =>
    JSON.stringify({
      out,
      limit,
      owner: null,
      probe: { file: ".probe", token },
      mounts: [{ root: volume, base: "volume" }],
    });

  test("a folder the helper does not see as svc does: nothing written, exit code 4", () => {
    expect(helperMain(["copy", spec(1 << 30, "another")])).toBe(EXIT.elsewhere);
    expect(() => lstatSync(join(out, "result.json"))).toThrow();
  });

  test("over the limit: exit code 3", () => {
    expect(helperMain(["copy", spec(4096)])).toBe(EXIT.over);
    rmSync(join(out, "mount-0.tar"), { force: true });
  });

  test("a copy, then a restore; a damaged archive is not restored and the mount is left as it was", () => {
    expect(helperMain(["copy", spec(1 << 30)])).toBe(0);
    const result = JSON.parse(readFileSync(join(out, "result.json"), "utf8"));
    expect(result.mounts).toEqual([{ file: "mount-0.tar", bytes: expect.any(Number), xxh64: expect.any(String) }]);
    writeFileSync(join(volume, "file"), "changed since");
    writeFileSync(join(volume, "new"), "made by v2");
    const restore = (xxh64: string) =>
      helperMain([
        "restore",
        JSON.stringify({
          from: out,
          probe: { file: ".probe", token: "token" },
          mounts: [{ ...result.mounts[0], xxh64, root: volume, base: "volume", what: "/v" }],
        }),
      ]);
    expect(restore("0".repeat(16))).toBe(EXIT.damaged);
    expect(readFileSync(join(volume, "new"), "utf8")).toBe("made by v2");
    expect(restore(result.mounts[0].xxh64)).toBe(0);
    expect(readFileSync(join(volume, "file"), "utf8")).toBe("x".repeat(10_000));
    expect(() => lstatSync(join(volume, "new"))).toThrow();
  });

  test("a restorer started ahead checks the archives before it waits for its go", () => {
    rmSync(join(out, "mount-0.tar"), { force: true });
    expect(helperMain(["copy", spec(1 << 30)])).toBe(0);
    const result = JSON.parse(readFileSync(join(out, "result.json"), "utf8"));
    writeFileSync(join(volume, "new"), "made by v2");
    const ahead = (xxh64: string) =>
      helperMain([
        "restore",
        JSON.stringify({
          go: { file: ".go", waitMs: 300 },
          from: out,
          probe: { file: ".probe", token: "token" },
          mounts: [{ ...result.mounts[0], xxh64, root: volume, base: "volume", what: "/v" }],
        }),
      ]);
    // no go written: a damaged archive is said at once (after the wait it would be "not asked")
    expect(ahead("0".repeat(16))).toBe(EXIT.damaged);
    expect(ahead(result.mounts[0].xxh64)).toBe(EXIT.notAsked);
    expect(readFileSync(join(volume, "new"), "utf8")).toBe("made by v2");
    writeFileSync(join(out, ".go"), "token");
    expect(ahead(result.mounts[0].xxh64)).toBe(0);
    expect(() => lstatSync(join(volume, "new"))).toThrow();
  });
});

// the maps' format: user_namespaces(7), "inside outside count" a line
describe("svc's user as the helper names it (ownerInside)", () => {
  const maps = (uid: string, gid = uid) => ((file: string) => (file.endsWith("uid_map") ? uid : gid)) as never;
  test("no user namespace (the whole range mapped to itself): the host's ids", () => {
    expect(ownerInside([1001, 1002], maps("         0          0 4294967295\n"))).toEqual([1001, 1002]);
  });
  test("a rootless engine's helper: its root is the engine's user, the rest its subordinate ids", () => {
    const rootless = maps("0 1001 1\n1 100000 65536\n");
    expect(ownerInside([1001, 1001], rootless)).toEqual([0, 0]);
    expect(ownerInside([100005, 100005], rootless)).toEqual([6, 6]);
    // an id the namespace does not map: left as written
    expect(ownerInside([0, 0], rootless)).toBeNull();
  });
  test("no maps to read (no user namespaces at all): the host's ids; no owner asked: none", () => {
    const none = (() => {
      throw new Error("ENOENT");
    }) as never;
    expect(ownerInside([7, 8], none)).toEqual([7, 8]);
    expect(ownerInside(null, none)).toBeNull();
  });
});

describe("archives that would write out of their folder", () => {
  const craft = (script: string) => {
    const file = join(work, `crafted-${Math.random().toString(16).slice(2)}.tar`);
    const ran = Bun.spawnSync(
      [
        "python3",
        "-c",
        `import tarfile,io,sys\nt=tarfile.open(sys.argv[1],"w",format=tarfile.PAX_FORMAT)\n${script}\nt.close()`,
        file,
      ],
      { stderr: "pipe" },
    );
    if (ran.exitCode !== 0) throw new Error(ran.stderr.toString());
    return file;
  };
  const entry = (name: string, kind = "REGTYPE", link = "") =>
    `i=tarfile.TarInfo(${JSON.stringify(name)}); i.type=tarfile.${kind}; i.linkname=${JSON.stringify(link)}; t.addfile(i, io.BytesIO(b""))`;

  test("a name with .. is refused", () => {
    const into = mkdtempSync(join(work, "dots-"));
    const file = craft([entry("data", "DIRTYPE"), entry("data/../escaped")].join("\n"));
    expect(() => extractArchive(file, "data", into)).toThrow(/leaves its folder/);
  });

  test("a file written through a link the archive made is refused", () => {
    const outside = mkdtempSync(join(work, "outside-"));
    const into = mkdtempSync(join(work, "through-"));
    const file = craft([entry("data", "DIRTYPE"), entry("data/l", "SYMTYPE", outside), entry("data/l/x")].join("\n"));
    expect(() => extractArchive(file, "data", into)).toThrow(/through a link/);
    expect(treeManifest(outside)).toEqual(treeManifest(mkdtempSync(join(work, "nothing-"))));
  });
});

describe("the checksum (checksum.ts)", () => {
  // xxHash64's reference values (Cyan4973/xxHash, the empty input and "abc", seed 0)
  test("one block is xxHash64 of it", () => {
    const sum = new BlockChecksum();
    sum.update(new TextEncoder().encode("abc"));
    expect(sum.digest()).toBe("44bc2cf5ad770999");
    expect(new BlockChecksum().digest()).toBe("0000000000000000");
  });

  test("the same bytes give the same checksum, however they are cut", () => {
    const bytes = new Uint8Array(3 * 1024 * 1024 + 5).map((_, i) => (i * 7919) & 0xff);
    const whole = new BlockChecksum();
    whole.update(bytes);
    const pieces = new BlockChecksum();
    for (let at = 0; at < bytes.length; at += 700_001) pieces.update(bytes.subarray(at, at + 700_001));
    expect(pieces.digest()).toBe(whole.digest());
    const changed = new BlockChecksum();
    bytes[2 * 1024 * 1024 + 1]! ^= 1;
    changed.update(bytes);
    expect(changed.digest()).not.toBe(whole.digest());
  });
});
