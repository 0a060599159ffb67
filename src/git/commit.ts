/**
 * svc's commit of a compose change (docs/compose.md, "Git"): the changed files' new blobs, the
 * trees above them and a commit whose parent is the branch's commit, written as loose objects by
 * isomorphic-git (objects.ts).
 * On the current branch (`commit`, `push`) the branch moves under Git's lock and the files' index
 * entries are rewritten, so that `git status` finds them clean; for a pull request nothing of the
 * work tree moves. Before anything is written, every reason to leave the repository alone is
 * checked: a file svc did not only change, a file staged, a state Git is in the middle of.
 */
import {
  closeSync,
  constants,
  existsSync,
  fsyncSync,
  openSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  writeSync,
} from "node:fs";
import { isAbsolute, join } from "node:path";
import * as git from "isomorphic-git";
import { type EntryUpdate, parseIndex, writeIndex } from "./index-file.ts";
import { gitError, readUserFile, refuseLinks } from "./objects.ts";
import {
  findRepository,
  type Head,
  ownershipProblem,
  pathInTree,
  type Repository,
  readHead,
  unsupportedState,
  updateRef,
} from "./repo.ts";

export interface FileChange {
  /** the file, absolute or relative to the project's folder */
  path: string;
  /** its contents as svc read them, before its change */
  before: Uint8Array;
  /** its contents with svc's change; absent: what the file holds now (svc wrote it already) */
  after?: Uint8Array;
}

export interface Prepared {
  repo: Repository;
  head: Head & { oid: string };
  files: {
    path: string;
    absolute: string;
    after: Uint8Array /** the blob HEAD and the index hold */;
    committed: string;
  }[];
}

type TreeEntry = git.TreeEntry;

/** A compose file svc commits (compose's own files are a few KB; the compose room reads at most 1 MiB). */
const MAX_COMPOSE_FILE = 16 * 1024 * 1024;
/** Git's index: about 100 bytes an entry; a work tree of a million files stays under this. */
const MAX_INDEX_FILE = 512 * 1024 * 1024;

/** What a file's text is as bytes (the seam may hand either). */
export const bytesOf = (text: Uint8Array | string): Uint8Array =>
  typeof text === "string" ? new TextEncoder().encode(text) : text;

/**
 * The repository holding `folder` and the checks every mode shares, or why svc leaves it alone.
 * `written`: the files already hold `after` (commit, push); else they still hold `before`
 * (pull_request: svc writes nothing in the work tree).
 */
export async function prepare(
  folder: string,
  changes: readonly FileChange[],
  written: boolean,
  safeDirectories: readonly string[] = [],
): Promise<Prepared | { skip: string } | { refuse: string }> {
  let repo: Repository | undefined;
  try {
    repo = findRepository(realpathSync(folder));
  } catch (error) {
    return { refuse: `the Git repository cannot be read: ${(error as Error).message}` };
  }
  if (!repo) return { skip: `${folder} is not in a Git work tree` };
  repo = { ...repo, top: realpathSync(repo.top) };
  try {
    const owner = ownershipProblem(repo, safeDirectories);
    if (owner) return { refuse: `svc leaves the repository at ${repo.top} alone: ${owner}` };
    const state = unsupportedState(repo);
    if (state) return { refuse: `svc leaves the repository at ${repo.top} alone: ${state}` };
    const head = readHead(repo);
    if (head.oid === undefined) return { refuse: `the branch ${head.branch} has no commit yet` };
    const index = readIndex(repo);
    const files: Prepared["files"] = [];
    for (const change of changes) {
      const absolute = realpathSync(isAbsolute(change.path) ? change.path : join(folder, change.path));
      const path = pathInTree(repo, absolute);
      if (path === undefined) return { refuse: `${change.path} is not inside the work tree ${repo.top}` };
      const committed = await blobAt(repo, head.oid, path);
      if (!committed)
        return { refuse: `${path} is not tracked by Git on ${head.branch}: svc commits only files Git already tracks` };
      if (committed.mode !== "100644" && committed.mode !== "100755")
        return { refuse: `${path} is not a regular file in Git (mode ${committed.mode})` };
      const now = readUserFile(absolute, MAX_COMPOSE_FILE);
      // an earlier call committed this text already (a stack's services handed one by one)
      if (
        written &&
        (await blobId(now)) === committed.oid &&
        (change.after === undefined || sameBytes(change.after, now))
      )
        continue;
      if ((await blobId(change.before)) !== committed.oid)
        return {
          refuse: `${path} differs from what Git holds on ${head.branch} (changes not committed, or a Git filter or line-ending conversion svc does not apply): svc's commit would carry more than its change`,
        };
      const entries = index?.entries.filter((e) => e.path === path) ?? [];
      if (entries.length !== 1 || entries[0]!.stage !== 0)
        return { refuse: `${path} is ${entries.length === 0 ? "not in the index" : "in a conflict"}` };
      const entry = entries[0]!;
      if (entry.oid !== committed.oid) return { refuse: `${path} has changes staged in the index` };
      if (entry.skipWorktree || entry.assumeValid || entry.intentToAdd)
        return {
          refuse: `${path} is marked ${entry.skipWorktree ? "skip-worktree" : entry.assumeValid ? "assume-unchanged" : "intent-to-add"} in the index`,
        };
      const expected = written ? (change.after ?? now) : change.before;
      if (!sameBytes(now, expected)) return { refuse: `${path} changed on disk since svc read it` };
      // not written yet and no new text given: only a check (check()), nothing to commit
      files.push({
        path,
        absolute,
        after: written ? expected : (change.after ?? change.before),
        committed: committed.oid,
      });
    }
    if (files.length === 0 && changes.length > 0) return { skip: `the change is committed already on ${head.branch}` };
    return { repo, head: { ...head, oid: head.oid }, files };
  } catch (error) {
    return { refuse: (error as Error).message };
  }
}

function readIndex(repo: Repository) {
  const file = join(repo.gitDir, "index");
  return existsSync(file) ? parseIndex(readUserFile(file, MAX_INDEX_FILE)) : undefined;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.byteLength === b.byteLength && Buffer.from(a).equals(Buffer.from(b));
}

const blobId = async (bytes: Uint8Array) => (await git.hashBlob({ object: bytes })).oid;

/** The blob at `path` in a commit's tree, with its mode. */
async function blobAt(repo: Repository, commit: string, path: string): Promise<TreeEntry | undefined> {
  const folder = path.includes("/") ? path.slice(0, path.lastIndexOf("/")) : undefined;
  try {
    const { tree } = await git.readTree({ ...repo.objects, oid: commit, filepath: folder });
    const entry = tree.find((e) => e.path === path.slice(path.lastIndexOf("/") + 1));
    return entry?.type === "blob" ? entry : undefined;
  } catch (error) {
    // a folder on the path missing, or a file where a folder should be: the path is not tracked
    if (["NotFoundError", "ObjectTypeError"].includes((error as { code?: string }).code ?? "")) return undefined;
    throw error;
  }
}

/** Writes the new blobs and the trees above them; answers the new root tree. */
async function writeTrees(repo: Repository, commit: string, files: Prepared["files"]): Promise<string> {
  const blobs = new Map<string, string>();
  for (const file of files) blobs.set(file.path, await git.writeBlob({ ...repo.objects, blob: file.after }));
  const rewrite = async (tree: string, prefix: string): Promise<string> => {
    const entries: TreeEntry[] = [];
    for (const entry of (await git.readTree({ ...repo.objects, oid: tree })).tree) {
      const path = prefix === "" ? entry.path : `${prefix}/${entry.path}`;
      if (entry.type === "tree" && [...blobs.keys()].some((p) => p.startsWith(`${path}/`)))
        entries.push({ ...entry, oid: await rewrite(entry.oid, path) });
      else entries.push({ ...entry, oid: blobs.get(path) ?? entry.oid });
    }
    return git.writeTree({ ...repo.objects, tree: entries });
  };
  return rewrite((await git.readCommit({ ...repo.objects, oid: commit })).commit.tree, "");
}

export interface Author {
  /** Name <email> */
  ident: string;
  /** seconds since the epoch */
  when: number;
}

/**
 * The commit object of the change, written; answers its id and its tree. `reuse`: an existing
 * commit that already holds this tree (svc's pull-request branch, pushed before), used instead.
 */
export async function writeCommit(
  prepared: Prepared,
  author: Author,
  message: string,
  reuse?: (tree: string) => Promise<string | undefined>,
): Promise<{ commit: string; tree: string }> {
  const { repo, head } = prepared;
  const tree = await writeTrees(repo, head.oid, prepared.files);
  const existing = await reuse?.(tree);
  if (existing !== undefined) return { commit: existing, tree };
  const [, name, email] = /^(.*?)\s*<([^<>]*)>$/.exec(author.ident) ?? [author.ident, author.ident, ""];
  const who = { name: name!, email: email!, timestamp: author.when, timezoneOffset: 0 };
  const commit = { tree, parent: [head.oid], author: who, committer: who, message };
  return { commit: await git.writeCommit({ ...repo.objects, commit }), tree };
}

/**
 * The commit onto the current branch: index.lock taken first (as Git's commands do), the index
 * read again under it and checked unchanged, the branch moved under its own lock, then the index
 * with the files' entries at the new blobs and their stat data.
 */
export async function commitOnBranch(prepared: Prepared, author: Author, message: string): Promise<string> {
  const { repo, head } = prepared;
  const indexFile = join(repo.gitDir, "index");
  const lock = `${indexFile}.lock`;
  refuseLinks(repo.gitDir, indexFile);
  let fd: number;
  try {
    fd = openSync(lock, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY, 0o644);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST")
      throw gitError("another Git command is running (index.lock exists)");
    throw error;
  }
  try {
    const index = parseIndex(readUserFile(indexFile, MAX_INDEX_FILE));
    const { commit } = await writeCommit(prepared, author, message);
    const updates: EntryUpdate[] = [];
    for (const file of prepared.files) {
      const oid = await blobId(file.after);
      const entry = index.entries.find((e) => e.path === file.path && e.stage === 0);
      if (!entry || entry.oid !== file.committed)
        throw gitError(`the index entry of ${file.path} changed while svc was committing`);
      // the stat Git compares goes with these bytes: taken around a last read of the file
      const stat = statSync(file.absolute, { bigint: true });
      const unchanged =
        sameBytes(readUserFile(file.absolute, MAX_COMPOSE_FILE), file.after) &&
        statSync(file.absolute, { bigint: true }).mtimeNs === stat.mtimeNs;
      if (!unchanged) throw gitError(`${file.path} changed on disk while svc was committing`);
      updates.push({ path: file.path, oid, stat: stat as never });
    }
    const bytes = writeIndex(index, updates);
    try {
      for (let at = 0; at < bytes.length; ) at += writeSync(fd, bytes, at);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
      fd = -1;
    }
    updateRef(repo, head.ref, head.oid, commit, {
      who: author.ident,
      message: `commit: ${message.split("\n")[0]}`,
      viaHead: true,
    });
    renameSync(lock, indexFile);
    return commit;
  } catch (error) {
    if (fd >= 0) closeSync(fd);
    rmSync(lock, { force: true });
    throw error;
  }
}
