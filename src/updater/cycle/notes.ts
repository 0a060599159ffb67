/**
 * What an update brings (docs/release-notes.md): for each stale target, and for no other, the
 * releases between the running and the newer version, from the source repository its labels or
 * the configuration name; and hold_breaking, which holds an update that breaks unless it was
 * asked for by name. A failure to read them is a sentence in the answer, never a failed update;
 * and only a target that holds breaking updates waits for its notes before it is replaced.
 */
import { type Config, labelName } from "../../config/index.ts";
import { toSvcError } from "../../core/errors.ts";
import { parseReference, sameRepository } from "../../registry/reference.ts";
import type { ReleaseNotes, ReleasesSession, SourceCandidate } from "../../releases/index.ts";
import type { Checker, Verdict } from "../check/check.ts";
import { labelValue, namedBy } from "../selection/selection.ts";
import type { CycleOptions, ReleaseSummary, UpdateFilter } from "../types.ts";
import { finish, type TargetEntry } from "./target.ts";

/** The OCI labels an image names its repository and its version with (views/overview.ts reads them too). */
export const SOURCE_LABEL = "org.opencontainers.image.source";
export const VERSION_LABEL = "org.opencontainers.image.version";

export interface NotesScope {
  releases?: ReleasesSession;
  filter: UpdateFilter;
  options: CycleOptions;
  trigger: string;
}

export interface NotesStep {
  /** resolves once the targets that hold breaking updates have their notes, and are held when they break */
  decided: Promise<void>;
  /** resolves once every stale target has its notes */
  done: Promise<void>;
}

/** Starts reading the notes of the stale targets; see NotesStep for what to wait for. */
export function readReleaseNotes(
  scope: NotesScope,
  entries: Iterable<TargetEntry>,
  checker: Checker,
  config: Config,
): NotesStep {
  const session = scope.releases;
  const stale = [...entries].filter((entry) => entry.verdict?.state === "stale");
  if (!session || !config.release_notes.enabled || stale.length === 0)
    return { decided: Promise.resolve(), done: Promise.resolve() };
  const reads = stale.map(async (entry) => {
    const notes = await notesOf(session, entry, entry.verdict!, checker, config).catch((error) =>
      unread(toSvcError(error).message),
    );
    entry.releases = summaryOf(notes);
    // the whole notes, for GET /v1/containers (views/overview.ts)
    if (scope.options.seen) (scope.options.seen.releaseNotes ??= new Map()).set(entry.summary.name, notes);
    holdIfBreaking(scope, entry, notes);
  });
  const holding = stale.flatMap((entry, index) => (entry.policy.holdBreaking ? [reads[index]!] : []));
  return { decided: Promise.all(holding).then(() => {}), done: Promise.all(reads).then(() => {}) };
}

async function notesOf(
  session: ReleasesSession,
  entry: TargetEntry,
  verdict: Verdict,
  checker: Checker,
  config: Config,
): Promise<ReleaseNotes> {
  const unknown: string[] = [];
  const labelsOf = async (which: string, read: () => Promise<Readonly<Record<string, string>>>) => {
    try {
      return await read();
    } catch (error) {
      unknown.push(`${which} image's labels are unknown: ${toSvcError(error).message}`);
      return {};
    }
  };
  const [running, candidate] = await Promise.all([
    labelsOf("the running", () => checker.runningLabels(verdict, entry.summary.imageId)),
    labelsOf("the newer", () => checker.candidateLabels(verdict, entry.summary.imageId)),
  ]);
  const sources: SourceCandidate[] = [];
  const add = (url: string | undefined, from: string) => {
    if (url?.trim()) sources.push({ url: url.trim(), from });
  };
  add(labelValue(entry.summary.labels, "release_notes"), `label ${labelName("release_notes")}`);
  add(candidate[SOURCE_LABEL], `the newer image's ${SOURCE_LABEL}`);
  add(running[SOURCE_LABEL], `the running image's ${SOURCE_LABEL}`);
  add(configuredSource(config, entry.summary.image), "release_notes.sources");
  const moved = verdict.newImage !== null ? tagOf(verdict.newImage) : undefined;
  const from = moved !== undefined ? (tagOf(entry.summary.image) ?? null) : (versionLabel(running) ?? null);
  const to = moved !== undefined ? moved : (versionLabel(candidate) ?? null);
  const notes = await session.between({ sources, from, to });
  return unknown.length > 0 && notes.problem !== null
    ? { ...notes, problem: `${notes.problem} (${unknown.join("; ")})` }
    : notes;
}

/** The `release_notes.sources` entry for the image's repository, if any. */
function configuredSource(config: Config, image: string): string | undefined {
  let ref: ReturnType<typeof parseReference>;
  try {
    ref = parseReference(image);
  } catch {
    return undefined;
  }
  return config.release_notes.sources.find((entry) => {
    try {
      return sameRepository(parseReference(entry.image), ref);
    } catch {
      return false;
    }
  })?.source;
}

function tagOf(reference: string): string | undefined {
  try {
    return parseReference(reference).tag;
  } catch {
    return undefined;
  }
}

function versionLabel(labels: Readonly<Record<string, string>>): string | undefined {
  const version = labels[VERSION_LABEL]?.trim();
  return version ? version.slice(0, 128) : undefined;
}

/** Notes that could not be read at all (the room answers a sentence; this is the last guard). */
function unread(why: string): ReleaseNotes {
  return {
    source: null,
    source_from: null,
    from_version: null,
    to_version: null,
    releases: [],
    more: 0,
    breaking: 0,
    problem: `releases not read: ${why}`,
  };
}

function summaryOf(notes: ReleaseNotes): ReleaseSummary {
  return {
    source: notes.source,
    from_version: notes.from_version,
    to_version: notes.to_version,
    count: notes.releases.length + notes.more,
    breaking: notes.breaking,
    newest_url: notes.releases[0]?.url ?? null,
    problem: notes.problem,
  };
}

/**
 * hold_breaking: a target still to be replaced whose notes name a breaking release is held,
 * unless this cycle was asked for it by name (POST /v1/update naming it: the dashboard's Update).
 */
function holdIfBreaking(scope: NotesScope, entry: TargetEntry, notes: ReleaseNotes): void {
  if (!entry.policy.holdBreaking || notes.breaking === 0 || entry.state !== "stale" || entry.finishedAt !== undefined)
    return;
  const askedByName =
    scope.trigger === "api" &&
    !scope.options.dryRun &&
    (scope.filter.container ?? []).some((asked) => namedBy(asked, entry.summary));
  if (askedByName) return;
  const release = notes.releases.find((r) => r.breaking)!;
  finish(
    entry,
    "held",
    `release ${release.version} (${release.title.slice(0, 120)}) breaks: held by hold_breaking until updated by name (the dashboard's Update, or POST /v1/update naming it)`,
  );
}
