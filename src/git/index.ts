/**
 * The Git room (docs/compose.md, "Git"): what svc does with Git once it has moved a version in a
 * compose project's files. It sits above the releases room (whose hosts and request it speaks
 * through, and whose notes it writes into commits and pull requests) and below whatever writes
 * compose files, which calls it through the seam below:
 *
 * - `step.check(change)`: before svc writes the files (they still hold `before`): why Git would
 *   refuse the change, or null. Reads only.
 * - `step.record(change)`: after svc wrote and applied the files (commit, push), or instead of
 *   writing them (pull_request). Never throws: a refusal or a failure is `problem`.
 */

import * as git from "isomorphic-git";
import type { Config } from "../config/index.ts";
import { toSvcError } from "../core/errors.ts";
import type { Logger } from "../log/index.ts";
import { apiUrlOf, hostNames, parseSource, type SourceRepo } from "../releases/source.ts";
import { bytesOf, commitOnBranch, type FileChange, type Prepared, prepare, writeCommit } from "./commit.ts";
import { openOrUpdate, type PullRequest } from "./forges.ts";
import { commitMessage, type Move, pullRequestBody, pullRequestTitle, versionOf } from "./message.ts";
import { gitError, hasObject } from "./objects.ts";
import {
  advertisedRefs,
  isAncestor,
  missingObjects,
  parseRemote,
  type Remote,
  receivePack,
  writePack,
  ZERO_OID,
} from "./push.ts";
import { readRef, refsUnder, updateRef } from "./repo.ts";

export type { FileChange } from "./commit.ts";
export type { PullRequest } from "./forges.ts";
export type { Move, NotesSummary } from "./message.ts";

export type GitMode = "off" | "commit" | "push" | "pull_request";

/**
 * Versions moved in one compose project's files: one service, or the services of a stack updated
 * together (one write of each file, one commit). With pull_request, one move per call: one
 * request per service and version. A rollback that writes the earlier versions back is a move
 * back (from the new version to the old), with a note saying why.
 */
export interface ComposeChange {
  /** the compose project's folder (its working_dir label, as svc sees it) */
  project: string;
  moves: readonly Move[];
  /** a line said first in the commit and the request, e.g. "Rolled back: the new container was not healthy" */
  note?: string;
  /**
   * each file svc changes: its path (absolute, or relative to `project`), its bytes before svc's
   * change and after it (after may be left out once svc wrote the file: what it holds then)
   */
  files: readonly { path: string; before: Uint8Array | string; after?: Uint8Array | string }[];
}

export interface GitOutcome {
  mode: GitMode;
  /** committed: on the current branch; pushed: that commit, pushed; pull_request: a request opened or updated */
  done: "nothing" | "committed" | "pushed" | "pull_request";
  commit: string | null;
  /** the branch the commit is on (the current one, or svc's pull-request branch) */
  branch: string | null;
  pull_request: PullRequest | null;
  /** why Git was left alone or the step failed, for the row, the log and the notifications; null: all done */
  problem: string | null;
}

export interface GitStep {
  check(change: ComposeChange): Promise<string | null>;
  record(change: ComposeChange): Promise<GitOutcome>;
}

export interface GitStepOptions {
  fetch?: typeof fetch;
  /** seconds since the epoch, for the commit's time */
  now?: () => number;
}

/** How long one request to the remote or its forge may take. */
const REQUEST_TIMEOUT_MS = 60_000;

export function createGitStep(config: Config, log: Logger, options: GitStepOptions = {}): GitStep {
  const settings = config.compose;
  const logger = log.child("git");
  const now = options.now ?? (() => Math.floor(Date.now() / 1000));
  // one change at a time: two services of one stack share a repository and its locks
  let queue: Promise<unknown> = Promise.resolve();
  const inTurn = <T>(task: () => Promise<T>): Promise<T> => {
    const turn = queue.then(task, task);
    // nothing lost: the task's caller gets its error through `turn`; the queue only keeps the order
    queue = turn.catch(() => {});
    return turn;
  };

  const outcome = (partial: Partial<GitOutcome>): GitOutcome => ({
    mode: settings.git,
    done: "nothing",
    commit: null,
    branch: null,
    pull_request: null,
    problem: null,
    ...partial,
  });

  const record = async (change: ComposeChange): Promise<GitOutcome> => {
    if (settings.git === "off") return outcome({});
    const prepared = await prepare(
      change.project,
      changesOf(change),
      settings.git !== "pull_request",
      settings.git_safe_directories,
    );
    if ("skip" in prepared) return outcome({});
    if ("refuse" in prepared) return outcome({ problem: prepared.refuse });
    const author = { ident: settings.git_author, when: now() };
    const message = commitMessage(change);
    if (settings.git === "pull_request") {
      // nothing is written in the work tree: the new text comes with the change
      if (change.files.some((file) => file.after === undefined))
        return outcome({ problem: "a pull request needs each file's new text (files[].after)" });
      return pullRequest(change, prepared, author, message);
    }
    const commit = await commitOnBranch(prepared, author, message);
    logger.info("committed", {
      services: servicesOf(change),
      commit,
      branch: prepared.head.branch,
      repository: prepared.repo.top,
    });
    const committed = outcome({ done: "committed", commit, branch: prepared.head.branch });
    if (settings.git === "commit") return committed;
    const remote = remoteOf(config, options);
    if ("problem" in remote) return { ...committed, problem: remote.problem };
    try {
      await push(prepared, remote.remote, prepared.head.ref, commit, false);
      logger.info("pushed", {
        services: servicesOf(change),
        commit,
        branch: prepared.head.branch,
        remote: remote.remote.url,
      });
      trackPush(prepared, remote.remote, commit, author.ident);
      return { ...committed, done: "pushed" };
    } catch (error) {
      return { ...committed, problem: `committed, not pushed: ${toSvcError(error).message}` };
    }
  };

  const pullRequest = async (
    change: ComposeChange,
    prepared: Prepared,
    author: { ident: string; when: number },
    message: string,
  ): Promise<GitOutcome> => {
    const remote = remoteOf(config, options);
    if ("problem" in remote) return outcome({ problem: remote.problem });
    if (!remote.forge) return outcome({ problem: unknownForge(remote.remote) });
    const branch = branchOf(change.moves);
    try {
      const advertised = await advertisedRefs(remote.remote);
      if (!advertised.refs.has(prepared.head.ref))
        return outcome({ problem: `the remote has no branch ${prepared.head.branch} to open the request against` });
      const old = advertised.refs.get(`refs/heads/${branch}`);
      const objects = prepared.repo.objects;
      const built = await writeCommit(prepared, author, message, async (tree) =>
        old !== undefined &&
        (await hasObject(objects, old)) &&
        (await git.readCommit({ ...objects, oid: old })).commit.tree === tree
          ? old
          : undefined,
      );
      if (built.commit !== old)
        await push(prepared, remote.remote, `refs/heads/${branch}`, built.commit, true, advertised.refs);
      const request = await openOrUpdate(
        {
          repo: remote.forge,
          apiUrl: forgeApiOf(config, remote.forge),
          token: settings.git_token,
          timeoutMs: REQUEST_TIMEOUT_MS,
          fetch: options.fetch,
        },
        {
          branch,
          base: prepared.head.branch,
          commit: built.commit,
          title: pullRequestTitle(change),
          body: pullRequestBody(change),
        },
      );
      logger.info(request.created ? "pull request opened" : "pull request updated", {
        services: servicesOf(change),
        url: request.url,
        branch,
        pushed: built.commit !== old,
      });
      return outcome({ done: "pull_request", commit: built.commit, branch, pull_request: request });
    } catch (error) {
      return outcome({ branch, problem: `pull request not made: ${toSvcError(error).message}` });
    }
  };

  return {
    check: async (change) => {
      if (settings.git === "off") return null;
      const prepared = await prepare(change.project, changesOf(change), false, settings.git_safe_directories);
      if ("refuse" in prepared) return prepared.refuse;
      if (settings.git !== "commit" && !("skip" in prepared)) {
        const remote = remoteOf(config, options);
        if ("problem" in remote) return remote.problem;
        if (settings.git === "pull_request" && !remote.forge) return unknownForge(remote.remote);
      }
      return null;
    },
    record: (change) =>
      inTurn(() =>
        record(change)
          .catch((error) => outcome({ problem: toSvcError(error).message }))
          .then((done) => {
            if (done.problem)
              logger.warn("git step not done", {
                services: servicesOf(change),
                mode: done.mode,
                problem: done.problem,
              });
            return done;
          }),
      ),
  };
}

function unknownForge(remote: Remote): string {
  return `svc does not know which forge ${new URL(remote.url).hostname} is (GitHub, GitLab or Gitea: set its API URL in release_notes)`;
}

function changesOf(change: ComposeChange): FileChange[] {
  return change.files.map((file) => ({
    path: file.path,
    before: bytesOf(file.before),
    ...(file.after === undefined ? {} : { after: bytesOf(file.after) }),
  }));
}

/**
 * Pushes `commit` to `ref`. On the current branch only as a fast-forward of what the remote holds;
 * svc's own pull-request branch is moved whatever it held (svc made it, and the request shows the
 * newest change).
 */
async function push(
  prepared: Prepared,
  remote: Remote,
  ref: string,
  commit: string,
  own: boolean,
  known?: Map<string, string>,
): Promise<void> {
  const store = prepared.repo.objects;
  const refs = known ?? (await advertisedRefs(remote)).refs;
  const old = refs.get(ref);
  if (old !== undefined && !own && !(await isAncestor(store, old, commit))) {
    throw gitError(
      `not a fast-forward: the remote's ${ref.replace(/^refs\/heads\//, "")} holds commits this clone does not have (pull them; nothing was rewritten)`,
    );
  }
  // what the remote advertises, and what it held at this clone's last fetch (refs/remotes/): a clone
  // behind its remote then sends svc's commit alone; had the remote lost those, it refuses the pack
  const haves = new Set<string>();
  for (const oid of [...refs.values(), ...refsUnder(prepared.repo, "refs/remotes/")])
    if (await hasObject(store, oid)) haves.add(oid);
  const pack = await writePack(store, await missingObjects(store, commit, haves));
  await receivePack(remote, { ref, old: old ?? ZERO_OID, next: commit }, pack);
}

/**
 * The clone's remote-tracking ref (refs/remotes/<name>/<branch>) moved as `git push` moves it,
 * when one of its remotes has git_remote's address: `git status` then says it is up to date.
 * Best effort: the push is done either way.
 */
function trackPush(prepared: Prepared, remote: Remote, commit: string, who: string): void {
  const { repo, head } = prepared;
  for (const [key, urls] of repo.config) {
    const name = /^remote\.(.+)\.url$/.exec(key)?.[1];
    const parsed = urls.length === 1 ? parseRemote(urls[0]!) : undefined;
    if (!name || !parsed || "problem" in parsed || parsed.url !== remote.url || !/^[A-Za-z0-9._-]+$/.test(name))
      continue;
    const ref = `refs/remotes/${name}/${head.branch}`;
    try {
      updateRef(repo, ref, readRef(repo, ref), commit, { who, message: "update by push", viaHead: false });
    } catch {
      // a tracking ref locked or moved by a fetch running now: that fetch sets it
    }
    return;
  }
}

interface RemoteSettings {
  remote: Remote;
  forge: SourceRepo | undefined;
}

function remoteOf(config: Config, options: GitStepOptions): RemoteSettings | { problem: string } {
  const settings = config.compose;
  if (!settings.git_remote) return { problem: `compose.git = "${settings.git}" needs compose.git_remote` };
  const parsed = parseRemote(settings.git_remote);
  if ("problem" in parsed) return parsed;
  const notes = config.release_notes;
  const found = parseSource(parsed.url, hostNames(notes.gitlab_api_url, notes.gitea_api_url, notes.github_api_url));
  const forge = "problem" in found ? undefined : found;
  const username = parsed.username ?? (forge?.host === "github" ? "x-access-token" : "oauth2");
  return {
    remote: {
      url: parsed.url,
      username,
      token: settings.git_token,
      timeoutMs: REQUEST_TIMEOUT_MS,
      fetch: options.fetch,
    },
    forge,
  };
}

/** The forge's API on the remote's own host: a github.com remote's requests (and git_token) never go to an Enterprise server. */
function forgeApiOf(config: Config, repo: SourceRepo): string {
  const notes = config.release_notes;
  return apiUrlOf(repo, { github: notes.github_api_url, gitlab: notes.gitlab_api_url, gitea: notes.gitea_api_url });
}

const servicesOf = (change: ComposeChange) => change.moves.map((move) => move.service).join(", ");

/** svc/<service>-<version> (several moves: joined by "+"), kept to what Git allows in a branch name. */
export function branchOf(moves: readonly Pick<Move, "service" | "to">[]): string {
  const clean = (text: string) =>
    text
      .replace(/[^A-Za-z0-9._-]+/g, "-")
      .replace(/\.{2,}/g, ".")
      .replace(/^[.-]+|[.-]+$/g, "")
      .replace(/\.lock$/, "-lock")
      .slice(0, 100) || "x";
  return `svc/${moves.map((move) => `${clean(move.service)}-${clean(versionOf(move.to))}`).join("+")}`
    .slice(0, 200)
    .replace(/[.-]+$/, "");
}
