/**
 * A manifest of a folder tree as a user would compare two states of a volume: every path with its
 * type, owner, mode, modification time (seconds), size, content hash, link target, extended
 * attributes, and which paths share an inode (hard links). Read on the engine's host through the
 * volume's mount point (the sandbox's engines are local), with Python's os module, which reads
 * extended attributes (Bun's node:fs does not).
 */
const SCRIPT = String.raw`
import hashlib, json, os, stat, sys
root = sys.argv[1]
entries = {}
inodes = {}
def describe(path, rel):
    st = os.lstat(path)
    kind = stat.S_IFMT(st.st_mode)
    entry = {"uid": st.st_uid, "gid": st.st_gid, "mode": oct(stat.S_IMODE(st.st_mode)), "type": oct(kind)}
    if not stat.S_ISDIR(st.st_mode):
        entry["mtime"] = int(st.st_mtime)
    if stat.S_ISREG(st.st_mode):
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        entry["size"] = st.st_size
        entry["sha256"] = h.hexdigest()
        key = (st.st_dev, st.st_ino)
        if st.st_nlink > 1:
            entry["inode_group"] = inodes.setdefault(key, rel)
    if stat.S_ISLNK(st.st_mode):
        entry["target"] = os.readlink(path)
    else:
        entry["xattrs"] = {name: os.getxattr(path, name, follow_symlinks=False).hex() for name in sorted(os.listxattr(path, follow_symlinks=False)) if name.startswith("user.")}
    entries[rel] = entry
for dirpath, dirnames, filenames in os.walk(root):
    dirnames.sort()
    rel_dir = os.path.relpath(dirpath, root)
    describe(dirpath, rel_dir)
    for name in sorted(filenames) + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
        describe(os.path.join(dirpath, name), os.path.normpath(os.path.join(rel_dir, name)))
print(json.dumps(entries, sort_keys=True))
`;

export type TreeManifest = Record<string, Record<string, unknown>>;

export function treeManifest(root: string): TreeManifest {
  const ran = Bun.spawnSync(["python3", "-c", SCRIPT, root], { stdout: "pipe", stderr: "pipe" });
  if (ran.exitCode !== 0) throw new Error(`tree manifest of ${root}: ${ran.stderr.toString()}`);
  return JSON.parse(ran.stdout.toString()) as TreeManifest;
}

/** Sets an extended attribute on the engine's host (busybox has no setfattr). */
export function setXattr(path: string, name: string, value: string): void {
  const ran = Bun.spawnSync(
    [
      "python3",
      "-c",
      "import os,sys; os.setxattr(sys.argv[1], sys.argv[2], sys.argv[3].encode(), follow_symlinks=False)",
      path,
      name,
      value,
    ],
    { stderr: "pipe" },
  );
  if (ran.exitCode !== 0) throw new Error(`setxattr ${path}: ${ran.stderr.toString()}`);
}
