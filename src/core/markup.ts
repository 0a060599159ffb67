/**
 * What each service's markup makes of text, and how text that came from outside (an image's name
 * or logs, a registry's answer, a release's title) is made inert in it: no mention, no link or image
 * it did not have as a plain URL (docs/notifications.md, "Text from outside is inert"). One escaper
 * per kind of markup; every channel renders its values through its service's (the templates' own
 * text is the operator's and stays as written).
 *
 * - `plain`: shown as it is, or not read as markup at all (e-mail's text, Pushover, Gotify, ntfy
 *   without `markdown`, Pushbullet, Bark, MQTT, webhooks: a receiver of JSON decides for itself).
 * - `chat`: plain text in a chat that still turns words into mentions (Telegram without
 *   `parse_mode`, Matrix's `m.text` body and its `@room`, Signal): mentions broken.
 * - `markdown` (CommonMark and its kin: Discord, Teams' Adaptive Cards, ntfy with `markdown`):
 *   `\`, `[`, `]` and `<` backslash-escaped (no masked link
 *   `[x](url)`, image `![](url)`, autolink or Discord's `<@id>`, `<@&role>`), mentions broken.
 * - `slack` (Slack's mrkdwn): `&`, `<`, `>` as Slack's entities (no `<url|text>`, `<!channel>`,
 *   `<@U1>`), mentions broken.
 * - `mattermost` (Mattermost, Rocket.Chat: Markdown, and Slack's `<url|text>` in webhooks): both.
 * - `googlechat` (Google Chat's text: `<url|text>` links, `<users/all>` mentions, Markdown links
 *   in its Markdown syntax): `<` and `](` broken by a zero-width space, since its text has no escape.
 * - Home Assistant's release summary: Markdown's marks, links' addresses and bare addresses taken
 *   out (`markdownAsText`): a line that short has no room for a URL anyway.
 * - A forge's pull request body and a commit message (the Git room): as `markdown`, and no word
 *   that closes an issue on merge (`forgeMarkdown`, `forgeText`).
 */

export type Markup = "plain" | "chat" | "markdown" | "slack" | "mattermost" | "googlechat";

/** Between two characters, it keeps a word from being read as markup, and shows nothing. */
const ZERO_WIDTH_SPACE = "\u200b";

/**
 * `@everyone`, `@here`, `@channel`, `@all`, `@room`, `@alice`: an `@` that starts a word is
 * followed by a zero-width space, so no service reads a mention (an e-mail address's `@` is inside
 * a word and stays).
 */
export function breakMentions(text: string): string {
  return text.replace(/(^|[^\p{L}\p{N}_.+-])@(?=[\p{L}\p{N}_])/gu, `$1@${ZERO_WIDTH_SPACE}`);
}

function markdown(text: string): string {
  return breakMentions(text.replace(/[\\[\]<]/g, (c) => `\\${c}`));
}

function slack(text: string): string {
  return breakMentions(text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;"));
}

function googleChat(text: string): string {
  return breakMentions(text.replace(/</g, `<${ZERO_WIDTH_SPACE}`).replace(/\]\(/g, `]${ZERO_WIDTH_SPACE}(`));
}

export const ESCAPE: Record<Markup, (text: string) => string> = {
  plain: (text) => text,
  chat: breakMentions,
  markdown,
  slack,
  mattermost: (text) => slack(text).replace(/[\\[\]]/g, (c) => `\\${c}`),
  googlechat: googleChat,
};

/**
 * Markdown where even a plain address may not be a link (Home Assistant's `release_summary`, a
 * short line under an update): nothing a release's author wrote may become a link, an image, a
 * mention or markup there. Links keep their words, bare addresses go, `@name` loses its `@`, HTML
 * tags and Markdown's marks go.
 */
export function markdownAsText(text: string): string {
  return text
    .replace(/<[^>]*>/g, " ")
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/\b(?:https?|ftp|mailto):\S*/gi, " ")
    .replace(/\bwww\.\S+/gi, " ")
    .replace(/@(?=[A-Za-z0-9_-])/g, "")
    .replace(/[*_`~#>|[\]()\\]/g, "")
    .replace(/\s+/g, " ")
    .trim();
}

/**
 * The words that close or reopen an issue when a reference follows them, in a pull request's body
 * or a commit message that reaches the default branch, on each forge svc opens requests on:
 * - GitHub: close, closes, closed, fix, fixes, fixed, resolve, resolves, resolved (docs.github.com,
 *   "Linking a pull request to an issue", "Linking a pull request to an issue using a keyword");
 * - GitLab: its default `issue_closing_pattern`, Close/Closes/Closed/Closing, Fix/Fixes/Fixed/Fixing,
 *   Resolve/Resolves/Resolved/Resolving, Implement/Implements/Implemented/Implementing
 *   (docs.gitlab.com, "Managing issues", "Default closing pattern");
 * - Gitea/Forgejo: close, closes, closed, fix, fixes, fixed, resolve, resolves, resolved, and to
 *   reopen: reopen, reopens, reopened (modules/references/references.go, the default
 *   `[repository.pull-request]` CLOSE_KEYWORDS and REOPEN_KEYWORDS).
 * Matched in any case, wherever they stand (a forge's own pattern decides what may follow).
 */
const ISSUE_KEYWORDS =
  /(?<![\p{L}\p{N}])(?:clos(?:e[sd]?|ing)|fix(?:e[sd]|ing)?|resolv(?:e[sd]?|ing)|implement(?:s|ed|ing)?|reopen(?:s|ed)?)(?![\p{L}\p{N}])/giu;

/** Each closing keyword with a zero-width space after its first letter: shown the same, read as no keyword. */
export function breakIssueKeywords(text: string): string {
  return text.replace(ISSUE_KEYWORDS, (word) => `${word[0]}${ZERO_WIDTH_SPACE}${word.slice(1)}`);
}

/**
 * Text from outside in a forge's Markdown (a pull request's body, GitHub-flavoured on every forge
 * svc speaks to): Markdown's links, images and HTML escaped, mentions broken, and no word that
 * closes or reopens an issue on merge.
 */
export function forgeMarkdown(text: string): string {
  return breakIssueKeywords(markdown(text));
}

/** Text from outside in a commit message (plain, but read by the forges for closing keywords and mentions). */
export function forgeText(text: string): string {
  return breakIssueKeywords(breakMentions(text));
}

/** HTML's text: what an e-mail's HTML part shows. */
export function escapeHtml(text: string): string {
  return text
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&#39;");
}
