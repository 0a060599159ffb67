/**
 * What svc writes into Git and the forges (docs/compose.md, "Git"): the commit message (the
 * service, old -> new version, the release notes' summary and link) and the pull request's title
 * and body (the release notes themselves, and whether they break).
 */
import type { ReleaseNotes } from "../releases/index.ts";

export interface Described {
  service: string;
  from: string;
  to: string;
  files: readonly { path: string }[];
  notes: ReleaseNotes | null;
}

/** Releases named in a commit message; the rest are counted. */
const SUMMARY_RELEASES = 10;
/** A pull request's body (GitHub takes 65536 characters). */
const BODY_CHARS = 60_000;

const oneLine = (text: string, max: number) => text.replace(/\s+/g, " ").trim().slice(0, max);

export function subject(change: Described): string {
  return `${oneLine(change.service, 100)}: ${oneLine(change.from, 100)} -> ${oneLine(change.to, 100)}`;
}

/** The newest release's page, else the source repository. */
export function notesLink(notes: ReleaseNotes | null): string | null {
  return notes?.releases.find((release) => release.url)?.url ?? notes?.source ?? null;
}

/** One line per release (newest first), "breaking" where one says so. */
export function notesSummary(notes: ReleaseNotes | null): string {
  if (!notes) return "Release notes: not read.";
  if (notes.releases.length === 0) return `Release notes: ${notes.problem ?? "none published between the two versions"}.`;
  const shown = notes.releases.slice(0, SUMMARY_RELEASES);
  const more = notes.releases.length - shown.length + notes.more;
  const lines = shown.map((release) => `- ${oneLine(release.version, 100)}${release.title && release.title !== release.version ? `: ${oneLine(release.title, 200)}` : ""}${release.breaking ? " (breaking)" : ""}`);
  if (more > 0) lines.push(`- and ${more} more`);
  return lines.join("\n");
}

export function commitMessage(change: Described): string {
  const link = notesLink(change.notes);
  return `${subject(change)}\n\n${notesSummary(change.notes)}\n${link ? `\n${link}\n` : ""}`;
}

export function pullRequestTitle(change: Described): string {
  return `Update ${oneLine(change.service, 100)} to ${oneLine(change.to, 100)}`;
}

export function pullRequestBody(change: Described): string {
  const notes = change.notes;
  const files = change.files.map((file) => `\`${oneLine(file.path, 300)}\``).join(", ");
  const parts = [`svc moves **${oneLine(change.service, 100)}** from \`${oneLine(change.from, 100)}\` to \`${oneLine(change.to, 100)}\` (${files}).`];
  if (notes && notes.breaking > 0) parts.push(`**Breaking:** ${notes.breaking === 1 ? "one release" : `${notes.breaking} releases`} between the two versions ${notes.breaking === 1 ? "says it breaks" : "say they break"}.`);
  else if (notes && notes.releases.length > 0) parts.push("**Breaking:** no release between the two versions says it breaks.");
  else parts.push("**Breaking:** unknown (no release notes).");
  if (!notes || notes.releases.length === 0) parts.push(notesSummary(notes));
  for (const release of notes?.releases ?? []) {
    const title = release.title && release.title !== release.version ? `${release.version}: ${release.title}` : release.version;
    const heading = `### ${oneLine(title, 300)}${release.breaking ? " (breaking)" : ""}`;
    parts.push([heading, release.url ? `<${release.url}>` : "", release.notes.trim(), release.notes_cut ? "_(cut)_" : ""].filter(Boolean).join("\n\n"));
  }
  if (notes && notes.more > 0) parts.push(`And ${notes.more} more releases${notes.source ? `: ${notes.source}` : ""}.`);
  if (notes?.problem && notes.releases.length > 0) parts.push(`_${oneLine(notes.problem, 500)}_`);
  parts.push("<sub>Opened by svc: one request per service and version, updated while it is open.</sub>");
  const body = parts.join("\n\n");
  return body.length <= BODY_CHARS ? body : `${body.slice(0, BODY_CHARS)}\n\n_(the notes are cut here)_`;
}
