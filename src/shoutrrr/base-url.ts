/**
 * `notifications.services_base_url`: where the services with a fixed public host (Discord,
 * Telegram, Slack, Pushover, Pushbullet) are sent instead, a relay or a local stand-in. Either
 * one URL for all of them, or `service=URL` pairs (comma-separated) for some. Every request to
 * such a host carries the service's token (in its path or a header), so a base URL over plain
 * http is refused unless its host is this machine (loopback). docs/notifications.md.
 */
import { isLoopbackHostname } from "../core/loopback.ts";
import { FIXED_HOSTS, type FixedHostService } from "./services.ts";

/** Each service's base URL, for those that have one (no trailing slash). */
export type BaseUrls = Partial<Record<FixedHostService, string>>;

/** Parses the option; `{ problem }` says what is wrong (a base URL holds no secret of its own to hide). */
export function parseServicesBaseUrl(text: string): { bases: BaseUrls } | { problem: string } {
  const trimmed = text.trim();
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(trimmed)) {
    const problem = baseUrlProblem(trimmed);
    if (problem) return { problem };
    const base = trimmed.replace(/\/+$/, "");
    return { bases: Object.fromEntries(Object.keys(FIXED_HOSTS).map((name) => [name, base])) };
  }
  const bases: BaseUrls = {};
  for (const entry of trimmed.split(",")) {
    const eq = entry.indexOf("=");
    const name = entry.slice(0, Math.max(eq, 0)).trim().toLowerCase();
    if (eq < 0 || !Object.hasOwn(FIXED_HOSTS, name)) {
      return {
        problem: `must be a URL, or service=URL pairs separated by commas for ${Object.keys(FIXED_HOSTS).join(", ")}`,
      };
    }
    const value = entry.slice(eq + 1).trim();
    const problem = baseUrlProblem(value);
    if (problem) return { problem: `${name}: ${problem}` };
    bases[name as FixedHostService] = value.replace(/\/+$/, "");
  }
  return { bases };
}

function baseUrlProblem(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return "must be a URL starting with https:// (or http:// to this machine)";
  }
  if (url.protocol !== "https:" && url.protocol !== "http:")
    return "must be a URL starting with https:// (or http:// to this machine)";
  if (url.protocol === "http:" && !isLoopbackHostname(url.hostname))
    return `would send the services' tokens over plain http to ${url.hostname}: use https://, or http:// only to this machine (127.0.0.1, ::1, localhost)`;
  if (url.username || url.password || url.search || url.hash)
    return "must be a base URL alone (no credentials, query or fragment)";
  return undefined;
}
