/**
 * Text rendering of a SessionReport for the human channels (e-mail, Pushover), with mustache:
 * logic-less, so a user's template can only show data, never run code.
 */
import Mustache from "mustache";
import { shortId } from "../core/digests.ts";
import { SvcError } from "../core/errors.ts";
import { ESCAPE, escapeHtml, type Markup } from "../core/markup.ts";
import type { ContainerReport, SessionReport } from "../updater/types.ts";
import { releaseWords, signatureWords, vulnerabilityWords } from "../updater/wrappers/summary.ts";

export { escapeHtml } from "../core/markup.ts";

export const DEFAULT_TEMPLATE = `{{summary}}
Host: {{host}}, trigger: {{trigger}}, finished {{finished_at}} after {{duration_ms}} ms.
{{#has_updated}}

Updated:
{{#updated}}
- {{name}} ({{image}}{{#new_image}} -> {{new_image}}{{/new_image}}): {{old_image_short}} -> {{new_image_short}}{{releases_text}}{{vulnerabilities_text}}{{signature_text}}
{{/updated}}
{{/has_updated}}
{{#has_rolled_back}}

Rolled back:
{{#rolled_back}}
- {{name}} ({{image}}): {{reason}}{{#page_url}} {{page_url}}{{/page_url}}
{{/rolled_back}}
{{/has_rolled_back}}
{{#has_failed}}

Failed:
{{#failed}}
- {{name}} ({{image}}): {{reason}}{{#page_url}} {{page_url}}{{/page_url}}
{{/failed}}
{{/has_failed}}
{{#has_stale}}

Newer image available (not applied):
{{#stale}}
- {{name}} ({{image}}): {{#new_image}}{{new_image}} {{/new_image}}{{new_digest_short}}{{releases_text}}{{vulnerabilities_text}}{{signature_text}}{{#page_url}} {{page_url}}{{/page_url}}
{{/stale}}
{{/has_stale}}
{{#has_pending}}

Pending (applied when the update window opens):
{{#pending}}
- {{name}} ({{image}}): {{#new_image}}{{new_image}} {{/new_image}}{{new_digest_short}}{{#applies_at}}, applies {{applies_at}}{{/applies_at}}{{vulnerabilities_text}}{{#page_url}} {{page_url}}{{/page_url}}
{{/pending}}
{{/has_pending}}
{{#has_held}}

Held (hold_breaking, hold_if_introduces: update by name to apply):
{{#held}}
- {{name}} ({{image}}): {{#new_image}}{{new_image}} {{/new_image}}{{new_digest_short}}{{releases_text}}{{vulnerabilities_text}}{{signature_text}}{{#page_url}} {{page_url}}{{/page_url}}
{{/held}}
{{/has_held}}
{{#has_skipped}}

Skipped:
{{#skipped}}
- {{name}} ({{image}}): {{reason}}
{{/skipped}}
{{/has_skipped}}
`;

/**
 * The short summary of the chat targets (notification URLs: Discord, Telegram, Slack, ...): their
 * title is the subject (host and counts); one line per container that changed or could.
 */
export const CHAT_TEMPLATE = `{{#updated}}
updated {{name}}: {{image}}{{#new_image}} -> {{new_image}}{{/new_image}} ({{old_image_short}} -> {{new_image_short}}){{releases_text}}{{vulnerabilities_text}}{{signature_text}}
{{/updated}}
{{#rolled_back}}
rolled back {{name}} ({{image}}): {{reason}}{{#page_url}} {{page_url}}{{/page_url}}
{{/rolled_back}}
{{#failed}}
failed {{name}} ({{image}}): {{reason}}{{#page_url}} {{page_url}}{{/page_url}}
{{/failed}}
{{#stale}}
newer image for {{name}}: {{image}}{{#new_image}} -> {{new_image}}{{/new_image}} ({{old_digest_short}} -> {{new_digest_short}}){{releases_text}}{{vulnerabilities_text}}{{signature_text}}{{#page_url}} {{page_url}}{{/page_url}}
{{/stale}}
{{#pending}}
pending {{name}}: {{image}}{{#new_image}} -> {{new_image}}{{/new_image}}{{#applies_at}}, applies {{applies_at}}{{/applies_at}}{{vulnerabilities_text}}{{#page_url}} {{page_url}}{{/page_url}}
{{/pending}}
{{#held}}
held {{name}}: {{image}}{{#new_image}} -> {{new_image}}{{/new_image}} ({{old_digest_short}} -> {{new_digest_short}}){{releases_text}}{{vulnerabilities_text}}{{signature_text}}{{#page_url}} {{page_url}}{{/page_url}}
{{/held}}
`;

/** A container entry as templates see it: the report's fields plus short forms of the IDs. */
export interface ContainerView extends ContainerReport {
  old_image_short: string;
  new_image_short: string;
  old_digest_short: string;
  new_digest_short: string;
  /** what the update brings: `; 3 releases, 1 breaking: <newest release's page>`, or "" (docs/release-notes.md) */
  releases_text: string;
  /** what the update fixes and brings in: `; vulnerabilities: fixes 3, 1 high`, or "" (docs/vulnerabilities.md) */
  vulnerabilities_text: string;
  /** who signed the new image: `; signed by <signer>`, `; signature not verified: <why>`, a signature hold's reason, or "" (docs/verification.md) */
  signature_text: string;
  /** the last entry of its list: `{{^last}}, {{/last}}` separates the items of a JSON array */
  last: boolean;
}

/** Everything a template can use; documented in docs/notifications.md. */
export interface ReportView extends Omit<SessionReport, "containers"> {
  containers: ContainerView[];
  host: string;
  subject: string;
  summary: string;
  /** failed + rolled back: the number shown as "failed" in the subject */
  failed_total: number;
  updated: ContainerView[];
  failed: ContainerView[];
  rolled_back: ContainerView[];
  stale: ContainerView[];
  /** stale, waiting for the update window (docs/windows.md) */
  pending: ContainerView[];
  skipped: ContainerView[];
  fresh: ContainerView[];
  /** held by hold_breaking */
  held: ContainerView[];
  has_held: boolean;
  has_updated: boolean;
  has_failed: boolean;
  has_rolled_back: boolean;
  has_stale: boolean;
  has_pending: boolean;
  has_skipped: boolean;
  has_fresh: boolean;
}

function containerView(container: ContainerReport): ContainerView {
  return {
    ...container,
    old_image_short: shortId(container.old_image_id),
    new_image_short: shortId(container.new_image_id),
    old_digest_short: shortId(container.old_digest),
    new_digest_short: shortId(container.new_digest),
    releases_text: releasesText(container),
    vulnerabilities_text: vulnerabilityWords(container) ? `; ${vulnerabilityWords(container)}` : "",
    signature_text: signatureText(container),
    last: false,
  };
}

/** Who signed the new image, for the templates; a held update says why its signature holds it. */
export function signatureText(container: Pick<ContainerReport, "signature">): string {
  const s = container.signature;
  if (s?.status === "held" && s.reason) return `; ${s.reason}`;
  const words = signatureWords(container);
  return words ? `; ${words}` : "";
}

/** `; 3 releases, 1 breaking: <newest release's page>` (docs/release-notes.md), or nothing. */
export function releasesText(container: Pick<ContainerReport, "releases">): string {
  const words = releaseWords(container);
  if (!words) return "";
  return `; ${words}${container.releases?.newest_url ? `: ${container.releases.newest_url}` : ""}`;
}

/** The list's entries, each knowing whether it is the last. */
function positioned(list: ContainerView[]): ContainerView[] {
  return list.map((container, index) => ({ ...container, last: index === list.length - 1 }));
}

/** `[tag] svc on <host>: <n> updated, <m> failed`; rolled-back containers count as failed. */
export function subjectOf(report: SessionReport, host: string, titleTag?: string): string {
  const tag = titleTag ? `[${titleTag}] ` : "";
  return `${tag}svc on ${host}: ${report.counts.updated} updated, ${failedTotal(report)} failed`;
}

function failedTotal(report: SessionReport): number {
  return report.counts.failed + report.counts.rolled_back;
}

export function summaryOf(report: SessionReport): string {
  const c = report.counts;
  return `${c.scanned} scanned, ${c.updated} updated, ${c.failed} failed, ${c.rolled_back} rolled back, ${c.stale} stale, ${c.pending ? `${c.pending} pending, ` : ""}${c.skipped} skipped, ${c.fresh} fresh${c.held > 0 ? `, ${c.held} held` : ""}`;
}

export function buildView(report: SessionReport, host: string, titleTag?: string): ReportView {
  const all = report.containers.map(containerView);
  const containers = positioned(all);
  const inState = (state: ContainerReport["state"]) => positioned(all.filter((c) => c.state === state));
  const updated = inState("updated");
  const failed = inState("failed");
  const rolled_back = inState("rolled_back");
  const stale = inState("stale");
  const pending = inState("pending");
  const skipped = inState("skipped");
  const fresh = inState("fresh");
  const held = inState("held");
  return {
    ...report,
    containers,
    host,
    subject: subjectOf(report, host, titleTag),
    summary: summaryOf(report),
    failed_total: failedTotal(report),
    updated,
    failed,
    rolled_back,
    stale,
    pending,
    skipped,
    fresh,
    held,
    has_held: held.length > 0,
    has_updated: updated.length > 0,
    has_failed: failed.length > 0,
    has_rolled_back: rolled_back.length > 0,
    has_stale: stale.length > 0,
    has_pending: pending.length > 0,
    has_skipped: skipped.length > 0,
    has_fresh: fresh.length > 0,
  };
}

export interface RenderedReport {
  subject: string;
  text: string;
  html: string;
}

/**
 * Renders reports with one template; built by `loadRenderer`, which checks the template first.
 * Each value is escaped for `markup`, the markup of the service it goes to (markup.ts: text from
 * an image, a registry or a release is inert there); the template's own text is left as written.
 */
export type Renderer = (report: SessionReport, markup?: Markup) => RenderedReport;

/** Plain text: no HTML escaping; the HTML part escapes the whole text itself. */
const plainText = { escape: (value: unknown) => String(value) };

export function createRenderer(template: string, host: string, titleTag?: string): Renderer {
  return (report, markup = "plain") => {
    const view = buildView(report, host, titleTag);
    const text = Mustache.render(template, view, undefined, {
      escape: (value: unknown) => ESCAPE[markup](String(value)),
    });
    // The template is text; the HTML part shows that same text, escaped, in a <pre> so that
    // a user's layout (columns, blank lines) survives in mail clients that prefer HTML.
    const html = `<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>${escapeHtml(view.subject)}</title></head>\n<body><pre style="font-family: monospace; white-space: pre-wrap">${escapeHtml(text)}</pre></body></html>\n`;
    return { subject: view.subject, text, html };
  };
}

/** Is `contentType` JSON (application/json, or any `+json` type)? Then values are JSON-escaped. */
export function isJsonType(contentType: string): boolean {
  const type = contentType.split(";")[0]!.trim().toLowerCase();
  return type === "application/json" || type.endsWith("+json");
}

/** A value inside a JSON string literal: quotes, backslashes, newlines and controls escaped. */
const jsonText = { escape: (value: unknown) => JSON.stringify(String(value)).slice(1, -1) };

/** Renders a webhook body from a template; built by `loadBodyRenderer`, which checks it first. */
export type BodyRenderer = (report: SessionReport) => string;

/**
 * The webhook's body template (`notifications.webhook.template`): the same view as e-mail and
 * Pushover. With a JSON content type every value is escaped for a JSON string, so a reason with
 * quotes or newlines cannot break the body, and the rendered sample report must be valid JSON:
 * a template that is not is refused at startup, not at the first update.
 */
export async function loadBodyRenderer(
  templatePath: string,
  contentType: string,
  host: string,
  titleTag?: string,
  option = "notifications.webhook.template",
): Promise<BodyRenderer> {
  const template = await readTemplate(option, templatePath);
  const json = isJsonType(contentType);
  const render: BodyRenderer = (report) =>
    Mustache.render(template, buildView(report, host, titleTag), undefined, json ? jsonText : plainText);
  try {
    Mustache.parse(template);
    const sample = render(SAMPLE_REPORT);
    if (json) JSON.parse(sample);
  } catch (error) {
    throw new SvcError(
      "startup",
      `${option}: ${templatePath} does not render ${json ? "valid JSON" : "a body"} (${contentType}): ${reasonOf(error)}`,
      { cause: error },
    );
  }
  return render;
}

async function readTemplate(option: string, path: string): Promise<string> {
  try {
    return await Bun.file(path).text();
  } catch (error) {
    throw new SvcError("startup", `${option}: cannot read ${path}: ${reasonOf(error)}`, { cause: error });
  }
}

/**
 * The renderer for `notifications.template` (a file path) or the built-in template. A file that
 * cannot be read, a template that does not parse (unclosed tag) or does not render a sample
 * report is a startup error: better to refuse to start than to lose every notification later.
 */
export async function loadRenderer(
  templatePath: string | undefined,
  host: string,
  builtIn = DEFAULT_TEMPLATE,
  titleTag?: string,
): Promise<Renderer> {
  const template = templatePath === undefined ? builtIn : await readTemplate("notifications.template", templatePath);
  const renderer = createRenderer(template, host, titleTag);
  try {
    Mustache.parse(template);
    renderer(SAMPLE_REPORT);
  } catch (error) {
    throw new SvcError(
      "startup",
      `notifications.template: ${templatePath ?? "built-in template"} is not a valid mustache template: ${reasonOf(error)}`,
      { cause: error },
    );
  }
  return renderer;
}

function reasonOf(error: unknown): string {
  if (error instanceof Error) return (error as NodeJS.ErrnoException).code ?? error.message;
  return String(error);
}

const SAMPLE_REPORT: SessionReport = {
  id: "00000000-0000-4000-8000-000000000000",
  trigger: "schedule",
  started_at: "2026-01-01T00:00:00.000Z",
  finished_at: "2026-01-01T00:00:01.000Z",
  duration_ms: 1000,
  filter: { container: [], image: [] },
  counts: { scanned: 2, updated: 1, failed: 1, skipped: 0, fresh: 0, stale: 0, pending: 0, rolled_back: 0, held: 0 },
  containers: [
    {
      id: "a",
      name: "app",
      image: "app:1",
      new_image: null,
      old_image_id: "sha256:aa",
      new_image_id: "sha256:bb",
      old_digest: null,
      new_digest: "sha256:cc",
      state: "updated",
      reason: null,
      duration_ms: 10,
    },
    {
      id: "b",
      name: "db",
      image: "db:1",
      new_image: null,
      old_image_id: "sha256:dd",
      new_image_id: null,
      old_digest: null,
      new_digest: null,
      state: "failed",
      reason: "pull failed",
      duration_ms: 10,
    },
  ],
};

/** Cuts `text` to at most `max` characters (code points), at a line end when one is near. */
export function truncate(text: string, max: number): string {
  const chars = Array.from(text);
  if (chars.length <= max) return text;
  const ellipsis = "…";
  let cut = chars.slice(0, max - ellipsis.length).join("");
  const lineEnd = cut.lastIndexOf("\n");
  // Prefer dropping whole lines, unless that would throw away most of the message.
  if (lineEnd > cut.length / 2) cut = cut.slice(0, lineEnd);
  return cut.trimEnd() + ellipsis;
}
