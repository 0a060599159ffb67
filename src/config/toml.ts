/**
 * Bun.TOML.parse with what it lacks for operator-facing errors: the line of a syntax error
 * (Bun reports none) and the line of every key (a small line scanner), so that validation can
 * say `svc.toml:12: http_api.port: ...`.
 */
import { SvcError } from "../core/errors.ts";

export interface ParsedToml {
  data: Record<string, unknown>;
  /** dotted key (array-of-tables entries as `name[i]`) -> 1-based line */
  lines: Map<string, number>;
}

export function parseToml(text: string, file: string): ParsedToml {
  let data: Record<string, unknown>;
  try {
    data = Bun.TOML.parse(text) as Record<string, unknown>;
  } catch (error) {
    const message = (error instanceof Error ? error.message : String(error)).replace(/^TOML Parse error:\s*/, "");
    const line = syntaxErrorLine(text);
    throw new SvcError("config", `invalid configuration file ${file}`, {
      details: [`${file}:${line}: TOML syntax error: ${message}`],
    });
  }
  return { data, lines: keyLines(text) };
}

/**
 * The line right after the longest prefix of whole lines that still parses. A multi-line value
 * makes shorter prefixes fail too, so search from the end, not from the start.
 */
function syntaxErrorLine(text: string): number {
  const lines = text.split("\n");
  for (let count = lines.length - 1; count > 0; count--) {
    try {
      Bun.TOML.parse(lines.slice(0, count).join("\n"));
      return count + 1;
    } catch {
      // keep shrinking
    }
  }
  return 1;
}

function unquote(part: string): string {
  const trimmed = part.trim();
  return /^(".*"|'.*')$/.test(trimmed) ? trimmed.slice(1, -1) : trimmed;
}

function dotted(raw: string): string {
  return raw
    .split(/\.(?=(?:[^"']|"[^"]*"|'[^']*')*$)/)
    .map(unquote)
    .join(".");
}

/** Lines of table headers and keys. Approximate by design: used only to point at a line. */
function keyLines(text: string): Map<string, number> {
  const lines = new Map<string, number>();
  const arrayCounts = new Map<string, number>();
  let prefix = "";
  let inMultiline: string | undefined;
  text.split("\n").forEach((rawLine, index) => {
    const lineNo = index + 1;
    if (inMultiline) {
      if (rawLine.includes(inMultiline)) inMultiline = undefined;
      return;
    }
    const line = rawLine.trim();
    const arrayHeader = /^\[\[\s*(.+?)\s*\]\]/.exec(line);
    const header = arrayHeader ? undefined : /^\[\s*(.+?)\s*\]/.exec(line);
    if (arrayHeader) {
      const name = dotted(arrayHeader[1]!);
      const count = arrayCounts.get(name) ?? 0;
      arrayCounts.set(name, count + 1);
      prefix = `${name}[${count}]`;
      if (!lines.has(name)) lines.set(name, lineNo);
      lines.set(prefix, lineNo);
      return;
    }
    if (header) {
      prefix = dotted(header[1]!);
      if (!lines.has(prefix)) lines.set(prefix, lineNo);
      return;
    }
    const assignment =
      /^((?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*')(?:\s*\.\s*(?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*'))*)\s*=(.*)$/.exec(line);
    if (!assignment) return;
    const key = prefix ? `${prefix}.${dotted(assignment[1]!)}` : dotted(assignment[1]!);
    if (!lines.has(key)) lines.set(key, lineNo);
    const rest = assignment[2]!;
    for (const quote of ['"""', "'''"]) {
      const first = rest.indexOf(quote);
      if (first >= 0 && rest.indexOf(quote, first + 3) < 0) inMultiline = quote;
    }
  });
  return lines;
}

/** The line of a key, or of its closest enclosing key or table. */
export function lineOf(lines: Map<string, number>, path: (string | number)[]): number | undefined {
  const parts = path.map((p, i) => (typeof p === "number" ? `[${p}]` : i === 0 ? p : `.${p}`));
  for (let n = parts.length; n > 0; n--) {
    const key = parts.slice(0, n).join("");
    const line = lines.get(key);
    if (line !== undefined) return line;
  }
  return undefined;
}

/** A TOML value literal for a plain JS value (strings, numbers, booleans, arrays, inline tables). */
export function tomlLiteral(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value);
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  if (Array.isArray(value)) return `[${value.map(tomlLiteral).join(", ")}]`;
  if (value && typeof value === "object") {
    const fields = Object.entries(value).filter(([, v]) => v !== undefined);
    return `{ ${fields.map(([k, v]) => `${k} = ${tomlLiteral(v)}`).join(", ")} }`;
  }
  throw new Error(`cannot write ${String(value)} as TOML`);
}

/** TOML dates and times come back from Bun as Temporal objects, never as strings. */
export function isTomlDateTime(value: unknown): boolean {
  return (
    typeof value === "object" &&
    value !== null &&
    !Array.isArray(value) &&
    Object.getPrototypeOf(value) !== Object.prototype
  );
}
