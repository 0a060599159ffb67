/**
 * The one place that knows which values are secret: the schema marks them, and one walk over
 * those slots serves --print-config (each replaced by the mask) and the redactor the log room
 * builds from secretValues. The mask itself is the log room's.
 */
import { decodePercent, maskUserInfo } from "../core/urls.ts";
import { REDACTED } from "../log/redact.ts";
import { redactNotificationUrl } from "../shoutrrr/index.ts";
import { OPTIONS } from "./options.ts";
import type { Config } from "./schema.ts";

export { REDACTED };

/** One secret value of a configuration: where it is, read and replaced through the same slot. */
interface SecretSlot {
  value: string;
  replace(by: string): void;
}

/** Every secret slot of `config` that holds a value, as the schema marks them. */
function secretSlots(config: Config): SecretSlot[] {
  const slots: SecretSlot[] = [];
  const add = (holder: Record<string, unknown>, name: string) => {
    const value = holder[name];
    if (typeof value === "string") slots.push({ value, replace: (by) => (holder[name] = by) });
    // a list of secrets (http_api.viewer_tokens): each entry is one
    if (Array.isArray(value))
      for (const [index, entry] of value.entries())
        if (typeof entry === "string") slots.push({ value: entry, replace: (by) => (value[index] = by) });
  };
  for (const option of OPTIONS) {
    if (!option.meta.secret) continue;
    if (option.meta.kind === "credentials" || option.meta.kind === "tables") {
      const tables = option.path.reduce<any>((node, part) => node?.[part], config) as
        | Record<string, unknown>[]
        | undefined;
      for (const table of tables ?? []) for (const name of option.meta.secretFields ?? []) add(table, name);
      continue;
    }
    const parent = option.path.slice(0, -1).reduce<any>((node, part) => node?.[part], config) as
      | Record<string, unknown>
      | undefined;
    if (parent) add(parent, option.path[option.path.length - 1]!);
  }
  return slots;
}

/** A deep copy of the configuration with every secret replaced by the mask. */
export function redactConfig(config: Config): Config {
  const copy = structuredClone(config);
  for (const slot of secretSlots(copy)) slot.replace(REDACTED);
  // A notification URL is shown with only its secret parts (tokens, passwords) masked.
  if (copy.notifications?.urls) copy.notifications.urls = copy.notifications.urls.map(redactNotificationUrl);
  if (copy.compose?.git_remote) copy.compose.git_remote = maskUserInfo(copy.compose.git_remote, REDACTED);
  return copy;
}

/**
 * The user name and password written in `compose.git_remote`: half of the credential pair sent
 * with the token, and a token of a form svc does not know may stand there (the known forms are
 * refused at start); masked in --print-config and the logs as the token is.
 */
function remoteUserInfo(config: Config): string[] {
  const url = config.compose?.git_remote ? URL.parse(config.compose.git_remote) : null;
  if (!url) return [];
  return [url.username, decodePercent(url.username), url.password, decodePercent(url.password)];
}

/**
 * Every secret value of the options the schema marks secret (non-empty, longest first so scrubbing
 * is greedy); what the notification settings hold beyond them comes from the notify room's
 * notificationSecrets.
 */
export function secretValues(config: Config): string[] {
  const values = [...secretSlots(config).map((slot) => slot.value), ...remoteUserInfo(config)];
  return [...new Set(values.filter((v) => v !== ""))].sort((a, b) => b.length - a.length);
}
