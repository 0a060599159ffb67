/** The script the data guard's helper runs to read extended attributes (xattrs.ts), kept apart so that the helper's image (helper.ts) can carry it. */

/** The most the attributes of one copy may take (values, base64 in the answer). */
export const MAX_ATTRIBUTE_BYTES = 64 * 1024 * 1024;

/**
 * What runs in the helper: `bun xattrs.js OUT ROOT...` writes, for each ROOT, the attributes of
 * every path under it (relative, "" the root itself) as base64, to OUT. llistxattr/lgetxattr
 * through libc (no follow: a symlink's own); `security.capability` is left to the engine's
 * archive, `security.selinux` to the host's policy; `trusted.*` is invisible without
 * CAP_SYS_ADMIN. Plain JavaScript on Bun's built-ins alone: it runs outside svc's bundle.
 */
export const READER_SCRIPT = String.raw`
const { dlopen, FFIType, ptr } = require("bun:ffi");
const { readdirSync, statSync, writeFileSync } = require("node:fs");
const [out, ...roots] = process.argv.slice(2);
const MAX = ${MAX_ATTRIBUTE_BYTES};
const libc = dlopen("libc.so.6", {
  llistxattr: { args: [FFIType.ptr, FFIType.ptr, FFIType.u64], returns: FFIType.i64 },
  lgetxattr: { args: [FFIType.ptr, FFIType.ptr, FFIType.ptr, FFIType.u64], returns: FFIType.i64 },
}).symbols;
const list = new Uint8Array(65536);
const value = new Uint8Array(65536);
const SKIP = /^(security\.capability|security\.selinux|trusted\..*)$/;
let total = 0;
function attributes(path) {
  const p = Buffer.from(path + "\0");
  const n = Number(libc.llistxattr(ptr(p), ptr(list), list.length));
  if (n <= 0) return null;
  const found = {};
  let any = false;
  for (const name of Buffer.from(list.subarray(0, n)).toString("utf8").split("\0")) {
    if (!name || SKIP.test(name)) continue;
    const m = Number(libc.lgetxattr(ptr(p), ptr(Buffer.from(name + "\0")), ptr(value), value.length));
    if (m < 0) continue;
    total += m;
    if (total > MAX) { console.error("the extended attributes take more than " + MAX + " bytes"); process.exit(3); }
    found[name] = Buffer.from(value.subarray(0, m)).toString("base64");
    any = true;
  }
  return any ? found : null;
}
function walk(path, rel, into) {
  const found = attributes(path);
  if (found) into[rel] = found;
  for (const entry of readdirSync(path, { withFileTypes: true })) {
    const child = path + "/" + entry.name;
    const childRel = rel ? rel + "/" + entry.name : entry.name;
    if (entry.isDirectory()) walk(child, childRel, into);
    else {
      const f = attributes(child);
      if (f) into[childRel] = f;
    }
  }
}
const result = roots.map((root) => {
  const into = {};
  if (statSync(root).isDirectory()) walk(root, "", into);
  return into;
});
writeFileSync(out, JSON.stringify(result));
`;
