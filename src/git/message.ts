/**
 * What svc writes into Git and the forges (docs/compose.md, "Git"): the commit message (each
 * service, old -> new version, the release notes' summary and link) and the pull request's title
 * and body (the release notes themselves, and whether they break). A stack's update moves several
 * services in one write of its files, so one commit names them all.
 *
 * What a release's author wrote (titles, notes) and what a host answered (links, problems) is
 * text from outside: made inert as the chat channels make it (core/markup.ts), and with no word
 * that closes an issue when the commit or the request lands (`Fixes #1` in a release's notes
 * closing the operator's issue #1); links are http(s) ones only.
 */
import { forgeMarkdown, forgeText } from "../core/markup.ts";
import { httpUrl } from "../core/urls.ts";
import type { ReleaseNotes } from "../releases/index.ts";

/** What a report keeps of the release notes, when the whole answer is not at hand. */
export interface NotesSummary {
  /** the newest release's page */
  link: string | null;
  source: string | null;
  /** releases between the two versions, and how many of them break */
  count: number;
  breaking: number;
}

/** One service's version moved. */
export interface Move {
  service: string;
  /** the versions before and after: tags, or image references ("app:2.3.1", their tags are shown) */
  from: string;
  to: string;
  /** the release notes between the two versions (the releases room's answer, or a report's summary of it), when read */
  notes: ReleaseNotes | NotesSummary | null;
}

/** The version a reference names: its tag (without a digest); anything else as written. */
export function versionOf(reference: string): string {
  const plain = reference.replace(/@sha256:[0-9a-f]{64}$/, "");
  const last = plain.slice(plain.lastIndexOf("/") + 1);
  const colon = last.lastIndexOf(":");
  return colon > 0 && colon < last.length - 1 ? last.slice(colon + 1) : reference;
}

const isSummary = (notes: Move["notes"]): notes is NotesSummary => notes !== null && "count" in notes;

/** The whole notes, a summary turned into their shape (no releases listed), or null. */
function fullNotes(move: Move): ReleaseNotes | null {
  const notes = move.notes;
  if (!isSummary(notes)) return notes;
  return {
    source: notes.source,
    source_from: null,
    from_version: move.from,
    to_version: move.to,
    releases: [],
    more: notes.count,
    breaking: notes.breaking,
    problem: null,
  };
}

export interface Described {
  moves: readonly Move[];
  files: readonly { path: string }[];
  /** a line said first, e.g. why a rollback wrote the earlier versions back */
  note?: string;
}

/** Releases named in a commit message per service; the rest are counted. */
const SUMMARY_RELEASES = 10;
/** A pull request's body (GitHub takes 65536 characters). */
const BODY_CHARS = 60_000;
const SUBJECT_CHARS = 200;

const oneLine = (text: string, max: number) => text.replace(/\s+/g, " ").trim().slice(0, max);
const fromTo = (move: Move) => `${oneLine(versionOf(move.from), 100)} -> ${oneLine(versionOf(move.to), 100)}`;
const cut = (text: string, max: number) => (text.length <= max ? text : `${text.slice(0, max - 3)}...`);

export function subject(change: Described): string {
  const [only, ...rest] = change.moves;
  if (only && rest.length === 0) return `${oneLine(only.service, 100)}: ${fromTo(only)}`;
  return cut(change.moves.map((m) => `${oneLine(m.service, 100)} ${fromTo(m)}`).join(", "), SUBJECT_CHARS);
}

/** The newest release's page, else the source repository. */
export function notesLink(notes: Move["notes"]): string | null {
  if (isSummary(notes)) return httpUrl(notes.link) ?? httpUrl(notes.source);
  return httpUrl(notes?.releases.find((release) => httpUrl(release.url))?.url) ?? httpUrl(notes?.source);
}

/** One line per release (newest first), "breaking" where one says so. */
export function notesSummary(notes: Move["notes"]): string {
  if (!notes) return "Release notes: not read.";
  if (isSummary(notes))
    return `Release notes: ${notes.count === 1 ? "one release" : `${notes.count} releases`}${notes.breaking > 0 ? `, ${notes.breaking} breaking` : ""}.`;
  if (notes.releases.length === 0)
    return `Release notes: ${forgeText(notes.problem ?? "none published between the two versions")}.`;
  const shown = notes.releases.slice(0, SUMMARY_RELEASES);
  const more = notes.releases.length - shown.length + notes.more;
  const lines = shown.map(
    (release) =>
      `- ${forgeText(oneLine(release.version, 100))}${release.title && release.title !== release.version ? `: ${forgeText(oneLine(release.title, 200))}` : ""}${release.breaking ? " (breaking)" : ""}`,
  );
  if (more > 0) lines.push(`- and ${more} more`);
  return lines.join("\n");
}

export function commitMessage(change: Described): string {
  const several = change.moves.length > 1;
  const parts = change.moves.map((move) => {
    const link = notesLink(move.notes);
    const head = several ? `${oneLine(move.service, 100)} ${fromTo(move)}:\n` : "";
    return `${head}${notesSummary(move.notes)}${link ? `\n\n${link}` : ""}`;
  });
  const note = change.note ? `${oneLine(change.note, 500)}\n\n` : "";
  return `${subject(change)}\n\n${note}${parts.join("\n\n")}\n`;
}

export function pullRequestTitle(change: Described): string {
  return cut(
    `Update ${change.moves.map((m) => `${oneLine(m.service, 100)} to ${oneLine(versionOf(m.to), 100)}`).join(", ")}`,
    SUBJECT_CHARS,
  );
}

export function pullRequestBody(change: Described): string {
  const files = change.files.map((file) => `\`${oneLine(file.path, 300)}\``).join(", ");
  const moved = change.moves.map(
    (m) =>
      `**${oneLine(m.service, 100)}** from \`${oneLine(versionOf(m.from), 100)}\` to \`${oneLine(versionOf(m.to), 100)}\``,
  );
  const parts = [`svc moves ${moved.join(" and ")} (${files}).`, ...(change.note ? [oneLine(change.note, 500)] : [])];
  const several = change.moves.length > 1;
  for (const move of change.moves) parts.push(...moveSection(move, several));
  parts.push("<sub>Opened by svc: one request per service and version, updated while it is open.</sub>");
  const body = parts.join("\n\n");
  return body.length <= BODY_CHARS ? body : `${body.slice(0, BODY_CHARS)}\n\n_(the notes are cut here)_`;
}

/** A service's part of the body: whether it breaks, then each release's notes. */
function moveSection(move: Move, several: boolean): string[] {
  const notes = fullNotes(move);
  const parts = several ? [`## ${oneLine(move.service, 100)}`] : [];
  if (notes && notes.breaking > 0)
    parts.push(
      `**Breaking:** ${notes.breaking === 1 ? "one release" : `${notes.breaking} releases`} between the two versions ${notes.breaking === 1 ? "says it breaks" : "say they break"}.`,
    );
  else if (notes && (notes.releases.length > 0 || notes.more > 0))
    parts.push("**Breaking:** no release between the two versions says it breaks.");
  else parts.push("**Breaking:** unknown (no release notes).");
  if (!notes || notes.releases.length === 0) parts.push(forgeMarkdown(notesSummary(move.notes)));
  const link = notesLink(move.notes);
  if (isSummary(move.notes) && link) parts.push(`<${link}>`);
  for (const release of notes?.releases ?? []) {
    const title =
      release.title && release.title !== release.version ? `${release.version}: ${release.title}` : release.version;
    const heading = `### ${forgeMarkdown(oneLine(title, 300))}${release.breaking ? " (breaking)" : ""}`;
    const url = httpUrl(release.url);
    parts.push(
      [heading, url ? `<${url}>` : "", forgeMarkdown(release.notes.trim()), release.notes_cut ? "_(cut)_" : ""]
        .filter(Boolean)
        .join("\n\n"),
    );
  }
  const source = httpUrl(notes?.source);
  if (notes && notes.more > 0 && notes.releases.length > 0)
    parts.push(`And ${notes.more} more releases${source ? `: ${source}` : ""}.`);
  if (notes?.problem && notes.releases.length > 0) parts.push(`_${forgeMarkdown(oneLine(notes.problem, 500))}_`);
  return parts;
}
