/**
 * What an update brings, in a row (docs/release-notes.md): "3 releases, 1 breaking" beside the
 * badge, and the notes readable in a panel that opens under it. The notes are a source host's
 * Markdown, and hostile until shown otherwise: they are rendered by a small reader of their lines
 * (headings, lists, code, links) into elements built with dom.ts, so every character of them is
 * text (textContent), and a link is one only for an http(s) address. No HTML of a release ever
 * becomes markup.
 */
import type { ReleaseNotes } from "../../releases/index.ts";
import type { VulnerabilityDiff, VulnerabilityEntry } from "../../updater/views/overview.ts";
import { type Child, h, safeHref } from "./dom.ts";

/** The words beside the badge, the panel, or the reason there are none. */
export function releaseNotesCell(notes: ReleaseNotes | null | undefined): Child {
  if (!notes) return null;
  const count = notes.releases.length + notes.more;
  if (count === 0) return notes.problem ? h("span", { class: "release-problem muted" }, notes.problem) : null;
  const words = `${count} release${count === 1 ? "" : "s"}${notes.breaking > 0 ? `, ${notes.breaking} breaking` : ""}`;
  return h(
    "details",
    { class: `release-notes${notes.breaking > 0 ? " breaking" : ""}` },
    h("summary", {}, words),
    notes.problem && h("p", { class: "note" }, notes.problem),
    ...notes.releases.map((release) =>
      h(
        "section",
        { class: "release" },
        h(
          "h4",
          {},
          linkOr(
            release.url,
            release.title === release.version ? release.version : `${release.version}: ${release.title}`,
          ),
          release.breaking && h("span", { class: "breaking-mark" }, " breaking"),
          release.published_at && h("span", { class: "muted" }, ` ${release.published_at.slice(0, 10)}`),
        ),
        h("div", { class: "markdown" }, ...markdown(release.notes)),
        release.notes_cut && h("p", { class: "muted" }, "(cut: the full notes are on the release's page)"),
      ),
    ),
    notes.more > 0 && h("p", { class: "muted" }, `and ${notes.more} more`),
    notes.source && h("p", {}, linkOr(notes.source, notes.source)),
  );
}

function linkOr(url: string | null, text: string): Child {
  const href = safeHref(url);
  return href ? h("a", { href, target: "_blank", rel: "noopener noreferrer nofollow" }, text) : text;
}

/** Markdown's block shapes, line by line: headings, list items, fenced code, paragraphs. */
export function markdown(text: string): HTMLElement[] {
  const blocks: HTMLElement[] = [];
  let list: HTMLElement | null = null;
  let code: string[] | null = null;
  for (const line of text.replace(/\r\n?/g, "\n").split("\n")) {
    if (code !== null) {
      if (/^\s*```/.test(line)) {
        blocks.push(h("pre", {}, h("code", {}, code.join("\n"))));
        code = null;
      } else code.push(line);
      continue;
    }
    if (/^\s*```/.test(line)) {
      list = null;
      code = [];
      continue;
    }
    const heading = /^(#{1,6})\s+(.*)$/.exec(line);
    const item = /^\s*(?:[-*+]|\d{1,9}[.)])\s+(.*)$/.exec(line);
    if (heading) {
      list = null;
      blocks.push(h("h5", {}, ...inline(heading[2]!)));
    } else if (item) {
      if (!list) blocks.push((list = h("ul", {})));
      list.appendChild(h("li", {}, ...inline(item[1]!)));
    } else if (line.trim() === "") {
      list = null;
    } else {
      list = null;
      blocks.push(h("p", {}, ...inline(line)));
    }
  }
  if (code !== null) blocks.push(h("pre", {}, h("code", {}, code.join("\n"))));
  return blocks;
}

/** Inline code and links; everything else is text as written. */
function inline(text: string): Child[] {
  const parts: Child[] = [];
  // `code` or [text](url): no nesting, no backtracking across the line
  const pattern = /`([^`]{1,500})`|\[([^\][]{1,500})\]\(([^()\s]{1,2048})\)/g;
  let last = 0;
  for (const match of text.matchAll(pattern)) {
    parts.push(text.slice(last, match.index));
    if (match[1] !== undefined) parts.push(h("code", {}, match[1]));
    else parts.push(linkOr(match[3]!, match[2]!));
    last = match.index + match[0].length;
  }
  parts.push(text.slice(last));
  return parts.filter((part) => part !== "");
}

/**
 * What an update fixes and brings in (docs/vulnerabilities.md): the badge ("fixes 3, 1 high;
 * brings in 1, 1 critical") under the release notes, and the lists in a panel under it.
 */
export function vulnerabilitiesCell(diff: VulnerabilityDiff | null | undefined): Child {
  if (!diff) return null;
  if (diff.problem !== null)
    return h("span", { class: "vulns-problem muted" }, `vulnerabilities unknown: ${diff.problem}`);
  if (diff.counts.fixed === 0 && diff.counts.introduced === 0) return null;
  const worst = (entries: readonly VulnerabilityEntry[]) => {
    const top = entries[0]?.severity;
    return top && top !== "unknown" && top !== "low"
      ? `, ${entries.filter((e) => e.severity === top).length} ${top}`
      : "";
  };
  const words = [
    diff.counts.fixed > 0 && `fixes ${diff.counts.fixed}${worst(diff.fixed)}`,
    diff.counts.introduced > 0 && `brings in ${diff.counts.introduced}${worst(diff.introduced)}`,
    diff.passed_min_age && "min_image_age passed over",
  ]
    .filter(Boolean)
    .join("; ");
  const list = (title: string, entries: readonly VulnerabilityEntry[], count: number) =>
    count > 0 &&
    h(
      "section",
      { class: "vulns-list" },
      h("h4", {}, `${title} (${count})`),
      h(
        "ul",
        {},
        ...entries.map((e) =>
          h(
            "li",
            { class: `severity-${e.severity}` },
            `${e.id} ${e.severity}${e.score !== null ? ` ${e.score}` : ""}: ${e.package} ${e.version}`,
            e.fixed_version ? ` (fixed in ${e.fixed_version})` : "",
            e.summary ? h("span", { class: "muted" }, ` ${e.summary}`) : null,
          ),
        ),
      ),
      count > entries.length && h("p", { class: "muted" }, `and ${count - entries.length} more`),
    );
  return h(
    "details",
    { class: `vulnerabilities${diff.counts.introduced > 0 ? " introduces" : ""}` },
    h("summary", {}, words),
    list("Fixes", diff.fixed, diff.counts.fixed),
    list("Brings in", diff.introduced, diff.counts.introduced),
    list("Still open", diff.still_open, diff.counts.still_open),
  );
}
