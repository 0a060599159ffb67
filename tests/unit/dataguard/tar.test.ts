/**
 * The extended attributes the copy adds to the engine's archive as it streams by (tar.ts,
 * `XattrMerger`), read back by an independent tar reader (Python's tarfile, which exposes each
 * member's PAX records as the engine's Go reader does): every entry asked for carries its
 * attributes, a PAX header already there keeps its records, and every content and other header
 * passes unchanged, whatever the chunks' boundaries.
 */
import { describe, expect, test } from "bun:test";
import { rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { paxRecord, paxRecords, XattrMerger, type XattrsByPath } from "../../../src/dataguard/tar.ts";

/** An archive as Go's writer (the engine's) makes one: ustar, with a PAX header for a name too long and for security.capability. */
const MAKE = String.raw`
import io, sys, tarfile
out = io.BytesIO()
with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as t:
    def add(name, kind=tarfile.REGTYPE, data=b"", pax=None, link=""):
        info = tarfile.TarInfo(name)
        info.type = kind
        info.size = len(data) if kind == tarfile.REGTYPE else 0
        info.linkname = link
        info.mtime = 1600000000
        if pax: info.pax_headers = pax
        t.addfile(info, io.BytesIO(data) if kind == tarfile.REGTYPE else None)
    add("data/", tarfile.DIRTYPE)
    add("data/a", data=b"x" * 700)
    add("data/hard", tarfile.LNKTYPE, link="data/a")
    add("data/" + "p" * 60 + "/" + "q" * 60, data=b"split")
    add("data/" + "n" * 120, data=b"long" * 300)
    add("data/cap", data=b"c", pax={"SCHILY.xattr.security.capability": "\x01\x02"})
    add("data/plain", data=b"p" * 1024)
sys.stdout.buffer.write(out.getvalue())
`;

const READ = `
import json, sys, tarfile
with tarfile.open(sys.argv[1]) as t:
    rows = []
    for m in t.getmembers():
        data = t.extractfile(m).read().decode() if m.isfile() else None
        rows.append({"name": m.name, "type": m.type.decode(), "size": m.size, "link": m.linkname,
            "xattrs": {k[len("SCHILY.xattr."):]: v for k, v in sorted(m.pax_headers.items()) if k.startswith("SCHILY.xattr.")},
            "data": None if data is None else len(data), "mtime": m.mtime})
print(json.dumps(rows))
`;

function python(script: string, args: string[] = []): Buffer {
  const ran = Bun.spawnSync(["python3", "-c", script, ...args], { stdout: "pipe", stderr: "pipe" });
  if (ran.exitCode !== 0) throw new Error(ran.stderr.toString());
  return ran.stdout;
}

function merged(archive: Uint8Array, wanted: XattrsByPath, chunkSizes: number[]): Uint8Array {
  const merger = new XattrMerger(wanted);
  const out: Uint8Array[] = [];
  for (let at = 0, i = 0; at < archive.length; i++) {
    const size = chunkSizes[i % chunkSizes.length]!;
    out.push(...merger.push(archive.subarray(at, at + size)));
    at += size;
  }
  out.push(...merger.end());
  return Buffer.concat(out);
}

function read(archive: Uint8Array): Record<string, unknown>[] {
  const path = `${tmpdir()}/svc-merger-${process.pid}-${Math.random()}.tar`;
  writeFileSync(path, archive);
  try {
    return JSON.parse(python(READ, [path]).toString());
  } finally {
    rmSync(path, { force: true });
  }
}

const value = (text: string) => new TextEncoder().encode(text);

describe("XattrMerger", () => {
  const archive = new Uint8Array(python(MAKE));
  const wanted: XattrsByPath = new Map([
    ["data", [["user.volume", value("data")]]],
    [
      "data/a",
      [
        ["user.checksum", value("v1-sum")],
        ["user.note", value("\u00e9t\u00e9 = 2")],
      ],
    ],
    [
      "data/hard",
      [
        ["user.checksum", value("v1-sum")],
        ["user.note", value("\u00e9t\u00e9 = 2")],
      ],
    ],
    [`data/${"p".repeat(60)}/${"q".repeat(60)}`, [["user.split", value("yes")]]],
    [`data/${"n".repeat(120)}`, [["user.long", value("yes")]]],
    [
      "data/cap",
      [
        ["security.capability", value("other")],
        ["user.cap", value("1")],
      ],
    ],
  ]);
  const original = read(archive);

  for (const chunks of [[archive.length], [1], [7, 511, 513], [512], [100_000, 3]]) {
    test(`chunks of ${chunks.join(", ")} bytes: the attributes added, everything else as it was`, () => {
      const rows = read(merged(archive, wanted, chunks));
      expect(rows.map((r) => ({ ...r, xattrs: undefined }))).toEqual(
        original.map((r) => ({ ...r, xattrs: undefined })),
      );
      expect(Object.fromEntries(rows.map((r) => [r.name, r.xattrs]))).toEqual({
        data: { "user.volume": "data" },
        "data/a": { "user.checksum": "v1-sum", "user.note": "\u00e9t\u00e9 = 2" },
        "data/hard": { "user.checksum": "v1-sum", "user.note": "\u00e9t\u00e9 = 2" },
        [`data/${"p".repeat(60)}/${"q".repeat(60)}`]: { "user.split": "yes" },
        [`data/${"n".repeat(120)}`]: { "user.long": "yes" },
        // the engine's own record is kept, the new one joins it in the same PAX header
        "data/cap": { "security.capability": "\u0001\u0002", "user.cap": "1" },
        "data/plain": {},
      });
    });
  }

  test("nothing asked: the chunks pass through as they are", () => {
    const merger = new XattrMerger(new Map());
    const chunk = archive.subarray(0, 1000);
    expect(merger.push(chunk)[0]).toBe(chunk);
    expect(merger.end()).toEqual([]);
  });
});

describe("PAX records", () => {
  test("the length counts itself, across a change in its digits", () => {
    for (const size of [0, 1, 80, 88, 89, 90, 985, 986, 995, 996, 9990]) {
      const record = paxRecord("SCHILY.xattr.user.x", new Uint8Array(size).fill(0x61));
      expect(Number(new TextDecoder().decode(record).split(" ")[0])).toBe(record.length);
      expect(paxRecords(record).map(([k, v]) => [k, v.length])).toEqual([["SCHILY.xattr.user.x", size]]);
    }
  });
});
