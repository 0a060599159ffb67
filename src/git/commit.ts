/**
 * svc's commit of a compose change (docs/compose.md, "Git"): the changed files' new blobs, the
 * trees above them and a commit whose parent is the branch's commit, written as loose objects.
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
import { type EntryUpdate, parseIndex, writeIndex } from "./index-file.ts";
import {
  gitError,
  hashObject,
  parseCommit,
  parseTree,
  readUserFile,
  refuseLinks,
  serializeTree,
  type TreeEntry,
} from "./objects.ts";
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

/** What a file's text is as bytes (the seam may hand either). */
/** A compose file svc commits (compose's own files are a few KB; the compose room reads at most 1 MiB). */
const MAX_COMPOSE_FILE = 16 * 1024 * 1024;
/** Git's index: about 100 bytes an entry; a work tree of a million files stays under this. */
const MAX_INDEX_FILE = 512 * 1024 * 1024;

export const bytesOf = (text: Uint8Array | string): Uint8Array =>
  typeof text === "string" ? new TextEncoder().encode(text) : text;

/**
 * The repository holding `folder` and the checks every mode shares, or why svc leaves it alone.
 * `written`: the files already hold `after` (commit, push); else they still hold `before`
 * (pull_request: svc writes nothing in the work tree).
 */
export function prepare(
  folder: string,
  changes: readonly FileChange[],
  written: boolean,
  safeDirectories: readonly string[] = [],
): Prepared | { skip: string } | { refuse: string } {
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
      const committed = blobAt(repo, head.oid, path);
      if (!committed)
        return { refuse: `${path} is not tracked by Git on ${head.branch}: svc commits only files Git already tracks` };
      if (committed.mode !== "100644" && committed.mode !== "100755")
        return { refuse: `${path} is not a regular file in Git (mode ${committed.mode})` };
      const now = readUserFile(absolute, MAX_COMPOSE_FILE);
      // an earlier call committed this text already (a stack's services handed one by one)
      if (
        written &&
        hashObject("blob", now) === committed.oid &&
        (change.after === undefined || sameBytes(change.after, now))
      )
        continue;
      if (hashObject("blob", change.before) !== committed.oid)
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

/** The blob at `path` in a commit's tree, with its mode. */
function blobAt(repo: Repository, commit: string, path: string): TreeEntry | undefined {
  let tree = parseCommit(repo.objects.expect(commit, "commit")).tree;
  const parts = path.split("/");
  for (const [n, name] of parts.entries()) {
    const entry = parseTree(repo.objects.expect(tree, "tree")).find((e) => e.name === name);
    if (!entry) return undefined;
    if (n === parts.length - 1) return entry.mode === "40000" ? undefined : entry;
    if (entry.mode !== "40000") return undefined;
    tree = entry.oid;
  }
  return undefined;
}

/** Writes the new blobs and the trees above them; answers the new root tree. */
function writeTrees(repo: Repository, rootTree: string, files: Prepared["files"]): string {
  const blobs = new Map(files.map((f) => [f.path, repo.objects.write("blob", f.after)]));
  const rewrite = (tree: string, prefix: string): string => {
    const entries = parseTree(repo.objects.expect(tree, "tree")).map((entry) => {
      const path = prefix === "" ? entry.name : `${prefix}/${entry.name}`;
      if (entry.mode === "40000" && [...blobs.keys()].some((p) => p.startsWith(`${path}/`)))
        return { ...entry, oid: rewrite(entry.oid, path) };
      const blob = blobs.get(path);
      return blob ? { ...entry, oid: blob } : entry;
    });
    return repo.objects.write("tree", serializeTree(entries));
  };
  return rewrite(rootTree, "");
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
export function writeCommit(
  prepared: Prepared,
  author: Author,
  message: string,
  reuse?: (tree: string) => string | undefined,
): { commit: string; tree: string } {
  const { repo, head } = prepared;
  const tree = writeTrees(repo, parseCommit(repo.objects.expect(head.oid, "commit")).tree, prepared.files);
  const existing = reuse?.(tree);
  if (existing !== undefined) return { commit: existing, tree };
  const signature = `${author.ident} ${author.when} +0000`;
  const body = `tree ${tree}\nparent ${head.oid}\nauthor ${signature}\ncommitter ${signature}\n\n${message.endsWith("\n") ? message : `${message}\n`}`;
  return { commit: repo.objects.write("commit", new TextEncoder().encode(body)), tree };
}

/**
 * The commit onto the current branch: index.lock taken first (as Git's commands do), the index
 * read again under it and checked unchanged, the branch moved under its own lock, then the index
 * with the files' entries at the new blobs and their stat data.
 */
export function commitOnBranch(prepared: Prepared, author: Author, message: string): string {
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
    const { commit } = writeCommit(prepared, author, message);
    const updates: EntryUpdate[] = prepared.files.map((file) => {
      const oid = hashObject("blob", file.after);
      const entry = index.entries.find((e) => e.path === file.path && e.stage === 0);
      if (!entry || entry.oid !== file.committed)
        throw gitError(`the index entry of ${file.path} changed while svc was committing`);
      // the stat Git compares goes with these bytes: taken around a last read of the file
      const stat = statSync(file.absolute, { bigint: true });
      const unchanged =
        sameBytes(readUserFile(file.absolute, MAX_COMPOSE_FILE), file.after) &&
        statSync(file.absolute, { bigint: true }).mtimeNs === stat.mtimeNs;
      if (!unchanged) throw gitError(`${file.path} changed on disk while svc was committing`);
      return { path: file.path, oid, stat: stat as never };
    });
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
