/**
 * A Git work tree as svc finds it from a compose project's folder: the `.git` folder (or a `.git`
 * file pointing to a linked worktree's folder, whose `commondir` holds the shared part), HEAD, the
 * branch's ref (loose or in packed-refs), and the states a careful tool does not touch
 * (docs/compose.md, "Git"): a detached HEAD, a merge, rebase, cherry-pick, revert or bisect in
 * progress, a shallow clone, a bare repository, a repository format or extension svc does not know.
 */
import {
  closeSync,
  constants,
  existsSync,
  fsyncSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  writeSync,
} from "node:fs";
import { dirname, isAbsolute, join, resolve } from "node:path";
import { gitError, isOid, type ObjectAccess, objectAccess, readUserFile, refuseLinks } from "./objects.ts";

export interface Repository {
  /** the work tree's top folder */
  top: string;
  /** this work tree's git folder (HEAD, index, the state files) */
  gitDir: string;
  /** the folder shared by every worktree (objects, refs, packed-refs, config) */
  commonDir: string;
  /** what isomorphic-git is handed to read and write the objects */
  objects: ObjectAccess;
  config: GitConfig;
}

/** Git's config as sections of keys (lower-case section and key; the subsection kept as written). */
export type GitConfig = Map<string, string[]>;

const MAX_DEPTH = 64;
const MAX_FILE = 4 * 1024 * 1024;

/** The work tree that holds `folder`, or undefined when none does. */
export function findRepository(folder: string): Repository | undefined {
  let dir = resolve(folder);
  for (let depth = 0; depth < MAX_DEPTH; depth++) {
    const dotGit = join(dir, ".git");
    if (existsSync(dotGit)) return openRepository(dir, dotGit);
    const parent = dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
  return undefined;
}

function openRepository(top: string, dotGit: string): Repository {
  let gitDir = dotGit;
  if (statSync(dotGit).isFile()) {
    const match = /^gitdir: (.+?)\s*$/.exec(readText(dotGit));
    if (!match) throw gitError(`${dotGit} is a file that names no git folder`);
    gitDir = resolve(top, match[1]!);
  }
  const commonFile = join(gitDir, "commondir");
  refuseLinks(gitDir, commonFile);
  const commonDir = existsSync(commonFile) ? resolve(gitDir, readText(commonFile).trim()) : gitDir;
  refuseLinks(commonDir, join(commonDir, "config"));
  const config = parseConfig(existsSync(join(commonDir, "config")) ? readText(join(commonDir, "config")) : "");
  return { top, gitDir, commonDir, objects: objectAccess(commonDir), config };
}

/**
 * Who may own a repository svc commits in, as Git decides it (setup.c, `ensure_valid_ownership`;
 * git-config(1), `safe.directory`): the work tree, the `.git` file when there is one, and the git
 * folders belong to the user svc runs as (as root, also the user `sudo` was run by: SUDO_UID), or
 * the work tree is named in `safe` (`compose.git_safe_directories`: a path, a path ending in `/*`
 * for everything under it, or `*`). Else another user's repository would have root commit in it,
 * run its config and follow its refs. Undefined: svc may; else why not.
 */
export function ownershipProblem(repo: Repository, safe: readonly string[]): string | undefined {
  const uid = process.geteuid?.();
  if (uid === undefined) return undefined; // Windows: no owner to compare (Git compares SIDs there)
  const top = repo.top.replace(/\/+$/, "");
  const named = safe.some((entry) => {
    const path = entry.replace(/\/+$/, "");
    return entry === "*" || path === top || (path.endsWith("/*") && top.startsWith(path.slice(0, -1)));
  });
  if (named) return undefined;
  const sudo = uid === 0 && /^\d+$/.test(process.env.SUDO_UID ?? "") ? Number(process.env.SUDO_UID) : undefined;
  const dotGit = join(repo.top, ".git");
  for (const path of new Set([repo.top, dotGit, repo.gitDir, repo.commonDir])) {
    const owner = lstatSync(path).uid;
    if (owner !== uid && owner !== sudo)
      return `${path} belongs to user ${owner}, not to the user svc runs as (${uid}): Git refuses such a repository too (safe.directory); name it in compose.git_safe_directories to allow it`;
  }
  return undefined;
}

/**
 * A ref's full name as `git check-ref-format` allows it (git-check-ref-format(1)): under `refs/`,
 * no component empty or starting with `.` or ending with `.lock`, no `..`, no control character,
 * space, `~`, `^`, `:`, `?`, `*`, `[` or `\\`, no `@{`, not ending with `.` or `/`. A name read from
 * HEAD or packed-refs that is not one is refused: `refs/heads/../../x` would make svc write anywhere.
 */
export function isRefName(ref: string): boolean {
  if (!ref.startsWith("refs/") || ref.length > 1024) return false;
  // a control character, the space or DEL
  if ([...ref].some((c) => c.charCodeAt(0) <= 0x20 || c.charCodeAt(0) === 0x7f)) return false;
  if (/[~^:?*[\\]|\.\.|@\{|[./]$/.test(ref)) return false;
  return ref.split("/").every((part) => part !== "" && !part.startsWith(".") && !part.endsWith(".lock"));
}

/** A file of the git folder: a regular one only (a FIFO's read would never return), capped. */
function readText(file: string): string {
  return Buffer.from(readUserFile(file, MAX_FILE)).toString("utf8");
}

/** Git's config syntax, enough for the keys svc reads (core.*, extensions.*): sections, keys, quoted values. */
export function parseConfig(text: string): GitConfig {
  const config: GitConfig = new Map();
  let section = "";
  for (const raw of text.split("\n")) {
    const line = raw.replace(/^\s+/, "");
    if (line === "" || line.startsWith("#") || line.startsWith(";")) continue;
    const head = /^\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\]\s*(.*)$/.exec(line);
    if (head) {
      section = head[2] === undefined ? head[1]!.toLowerCase() : `${head[1]!.toLowerCase()}.${head[2]}`;
      if (head[3] === "" || head[3]!.startsWith("#") || head[3]!.startsWith(";")) continue;
    }
    const entry = /^([A-Za-z][A-Za-z0-9-]*)\s*(?:=\s*(.*))?$/.exec(head ? head[3]! : line);
    if (!entry) continue;
    const key = `${section}.${entry[1]!.toLowerCase()}`;
    const value = entry[2] === undefined ? "true" : unquote(entry[2]);
    config.set(key, [...(config.get(key) ?? []), value]);
  }
  return config;
}

function unquote(value: string): string {
  let out = "";
  let quoted = false;
  for (let i = 0; i < value.length; i++) {
    const c = value[i]!;
    if (c === '"') quoted = !quoted;
    else if (c === "\\" && i + 1 < value.length) out += { n: "\n", t: "\t", b: "\b" }[value[++i]!] ?? value[i];
    else if (!quoted && (c === "#" || c === ";")) break;
    else out += c;
  }
  return out.trim();
}

export function configValue(config: GitConfig, key: string): string | undefined {
  return config.get(key)?.at(-1);
}

const isTrue = (value: string | undefined) => value !== undefined && /^(true|yes|on|1)$/i.test(value);

/** Why svc leaves this repository alone, or undefined when it may commit in it. */
export function unsupportedState(repo: Repository): string | undefined {
  const format = configValue(repo.config, "core.repositoryformatversion") ?? "0";
  if (format !== "0" && format !== "1") return `its repository format version ${format} is not one svc knows`;
  const extensions = [...repo.config.keys()].filter((key) => key.startsWith("extensions.")).map((key) => key.slice(11));
  // version 0 ignores extensions, except that an object format other than SHA-1 is never version 0
  const unknown = extensions.filter((name) => name !== "noop" && (format === "1" || name === "objectformat"));
  if (unknown.length > 0) return `it uses the repository extension ${unknown.join(", ")}, which svc does not support`;
  if (isTrue(configValue(repo.config, "core.bare"))) return "it is a bare repository";
  if (configValue(repo.config, "core.worktree") !== undefined) return "its work tree is set elsewhere (core.worktree)";
  if (existsSync(join(repo.commonDir, "shallow"))) return "it is a shallow clone";
  if (existsSync(join(repo.commonDir, "objects", "info", "grafts"))) return "it has grafts";
  const busy: [string, string][] = [
    ["MERGE_HEAD", "a merge is in progress"],
    ["rebase-merge", "a rebase is in progress"],
    ["rebase-apply", "a rebase or git am is in progress"],
    ["CHERRY_PICK_HEAD", "a cherry-pick is in progress"],
    ["REVERT_HEAD", "a revert is in progress"],
    ["BISECT_LOG", "a bisect is in progress"],
  ];
  for (const [file, why] of busy) if (existsSync(join(repo.gitDir, file))) return why;
  if (existsSync(join(repo.gitDir, "index.lock"))) return "another Git command is running (index.lock exists)";
  return undefined;
}

export interface Head {
  /** refs/heads/<branch> */
  ref: string;
  branch: string;
  /** the branch's commit; undefined on a branch with no commit yet */
  oid: string | undefined;
}

/** HEAD's branch; a detached HEAD is refused. */
export function readHead(repo: Repository): Head {
  refuseLinks(repo.gitDir, join(repo.gitDir, "HEAD"));
  const text = readText(join(repo.gitDir, "HEAD")).trim();
  const match = /^ref: (refs\/heads\/.+)$/.exec(text);
  if (!match) throw gitError(isOid(text) ? "its HEAD is detached (no branch checked out)" : "its HEAD is not a branch");
  if (!isRefName(match[1]!)) throw gitError(`its HEAD names ${JSON.stringify(match[1])}, not a ref name Git allows`);
  return { ref: match[1]!, branch: match[1]!.slice("refs/heads/".length), oid: readRef(repo, match[1]!) };
}

/** A ref's commit: the loose file (following a symbolic ref), else packed-refs; undefined when it does not exist. */
export function readRef(repo: Repository, ref: string, depth = 0): string | undefined {
  if (depth > 5) throw gitError(`${ref} is a chain of symbolic refs`);
  if (ref !== "HEAD" && !isRefName(ref)) throw gitError(`${JSON.stringify(ref)} is not a ref name Git allows`);
  const dir = ref === "HEAD" ? repo.gitDir : repo.commonDir;
  const loose = join(dir, ref);
  refuseLinks(dir, loose);
  if (existsSync(loose) && statSync(loose).isFile()) {
    const text = readText(loose).trim();
    if (isOid(text)) return text;
    const symbolic = /^ref: (refs\/.+)$/.exec(text);
    if (symbolic) return readRef(repo, symbolic[1]!, depth + 1);
    throw gitError(`${ref} holds neither a commit nor a ref`);
  }
  return packedRefs(repo).get(ref);
}

/** The commits of the refs under `prefix` (e.g. "refs/remotes/"), loose and packed, at most `max` of them. */
export function refsUnder(repo: Repository, prefix: string, max = 1000): string[] {
  const found = new Set<string>();
  for (const [ref, oid] of packedRefs(repo)) if (ref.startsWith(prefix)) found.add(oid);
  const root = join(repo.commonDir, prefix);
  if (existsSync(root)) {
    for (const entry of readdirSync(root, { recursive: true, withFileTypes: true })) {
      if (found.size >= max) break;
      if (!entry.isFile()) continue;
      const text = readText(join(entry.parentPath, entry.name)).trim();
      if (isOid(text)) found.add(text);
    }
  }
  return [...found].slice(0, max);
}

function packedRefs(repo: Repository): Map<string, string> {
  const file = join(repo.commonDir, "packed-refs");
  const refs = new Map<string, string>();
  refuseLinks(repo.commonDir, file);
  if (!existsSync(file)) return refs;
  for (const line of readText(file).split("\n")) {
    const match = /^([0-9a-f]{40}) (refs\/\S+)$/.exec(line);
    // a name Git would not write is no ref (git reports it as broken and skips it too)
    if (match && isRefName(match[2]!)) refs.set(match[2]!, match[1]!);
  }
  return refs;
}

/**
 * Moves `ref` from `old` to `next` as Git does: `ref.lock` created exclusively (another Git
 * command holding it makes svc stop), the value checked again under the lock, then renamed over
 * the ref; the reflogs of the ref (and of HEAD, when it points there) get their line.
 */
export function updateRef(
  repo: Repository,
  ref: string,
  old: string | undefined,
  next: string,
  reflog: { who: string; message: string; viaHead: boolean },
): void {
  if (!isRefName(ref)) throw gitError(`${JSON.stringify(ref)} is not a ref name Git allows`);
  // the reflogs are checked before anything moves: a link there refuses the whole commit
  refuseLinks(repo.commonDir, join(repo.commonDir, "logs", ref));
  if (reflog.viaHead) refuseLinks(repo.gitDir, join(repo.gitDir, "logs", "HEAD"));
  const file = join(repo.commonDir, ref);
  const lock = `${file}.lock`;
  refuseLinks(repo.commonDir, lock);
  // a ref kept only in packed-refs may have no folder of loose refs yet (Git makes it too)
  mkdirSync(dirname(file), { recursive: true });
  refuseLinks(repo.commonDir, lock);
  let fd: number;
  try {
    fd = openSync(lock, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY, 0o644);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST")
      throw gitError(`${ref} is locked by another Git command (${lock} exists)`);
    throw error;
  }
  try {
    try {
      writeSync(fd, `${next}\n`);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    const now = readRef(repo, ref);
    if (now !== old) throw gitError(`${ref} moved while svc was committing (now ${now ?? "missing"})`);
    renameSync(lock, file);
  } catch (error) {
    rmSync(lock, { force: true });
    throw error;
  }
  const line = `${old ?? "0".repeat(40)} ${next} ${reflog.who} ${Math.floor(Date.now() / 1000)} +0000\t${reflog.message.replace(/\n/g, " ")}\n`;
  appendLog(repo.commonDir, join(repo.commonDir, "logs", ref), line);
  if (reflog.viaHead) appendLog(repo.gitDir, join(repo.gitDir, "logs", "HEAD"), line);
}

/**
 * Git writes a reflog when its file exists (core.logAllRefUpdates makes it for branches): svc only
 * appends, to the file itself (never through a link: `.git/logs/HEAD` linked to another file would
 * have svc append there).
 */
function appendLog(dir: string, file: string, line: string): void {
  refuseLinks(dir, file);
  if (!existsSync(file)) return;
  const fd = openSync(file, constants.O_WRONLY | constants.O_APPEND | constants.O_NOFOLLOW);
  try {
    writeSync(fd, line);
  } finally {
    closeSync(fd);
  }
}

/** The path of `file` inside the work tree, with "/" as Git writes it; undefined when it lies outside. */
export function pathInTree(repo: Repository, file: string): string | undefined {
  const absolute = isAbsolute(file) ? file : resolve(repo.top, file);
  const relative = absolute.startsWith(`${repo.top}/`) ? absolute.slice(repo.top.length + 1) : undefined;
  if (
    relative === undefined ||
    relative.split("/").some((part) => part === ".git" || part === "" || part === "." || part === "..")
  )
    return undefined;
  return relative;
}
