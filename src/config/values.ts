/**
 * Values as operators write them (docs/configuration.md), one parser each for the configuration,
 * flags, environment and the `svc.*` container labels.
 *
 * Durations: `30s`, `5m`, `1h`, `1h30m`, `250ms`, `1d`, or a plain integer meaning seconds.
 * Internally always milliseconds.
 */
const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const PART = /(\d+)(ms|s|m|h|d)/gy;

/** Milliseconds, or undefined when the text is not a duration. */
export function parseDuration(input: string | number): number | undefined {
  if (typeof input === "number") return Number.isInteger(input) && input >= 0 ? input * 1_000 : undefined;
  const text = input.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1_000;
  if (text === "") return undefined;
  PART.lastIndex = 0;
  let total = 0;
  let consumed = 0;
  for (let match = PART.exec(text); match; match = PART.exec(text)) {
    total += Number(match[1]) * UNIT_MS[match[2]!]!;
    consumed = PART.lastIndex;
  }
  return consumed === text.length ? total : undefined;
}

/** The shortest form that parses back to the same value: 90_000 -> "1m30s", 250 -> "250ms". */
export function formatDuration(ms: number): string {
  if (ms === 0) return "0s";
  let rest = ms;
  let out = "";
  for (const [unit, size] of [["h", 3_600_000], ["m", 60_000], ["s", 1_000], ["ms", 1]] as const) {
    const count = Math.floor(rest / size);
    if (count > 0) out += `${count}${unit}`;
    rest -= count * size;
  }
  return out;
}

/** Booleans in text (environment, flags, labels): true/false, 1/0, yes/no, any case. */
export function parseBoolean(text: string): boolean | undefined {
  const lower = text.trim().toLowerCase();
  if (lower === "true" || lower === "1" || lower === "yes") return true;
  if (lower === "false" || lower === "0" || lower === "no") return false;
  return undefined;
}
