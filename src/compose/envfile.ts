/**
 * `.env` files as compose reads them (compose-go's dotenv: `KEY=VALUE`, `export KEY=VALUE`,
 * `KEY: VALUE`, single or double quotes, ` #` comments after an unquoted value), each value with
 * the place of its characters when svc can point at them: an unquoted value without `$`, or a
 * quoted one without escapes or (in double quotes) variables. Later lines win, as in compose.
 */
import { type Traced, traced, untraced } from "./text.ts";

export interface EnvValue {
  value: Traced;
  /** the offset of the line that sets it, for what svc says (".env line 3") */
  lineOffset: number;
  file: string;
}

const KEY = /^(?:export[ \t]+)?([A-Za-z0-9_.\-[\]]+)[ \t]*([=:])[ \t]*/;

export function parseEnvFile(text: string, file: string): Map<string, EnvValue> {
  const out = new Map<string, EnvValue>();
  let pos = 0;
  while (pos < text.length) {
    const lineEnd = text.indexOf("\n", pos) === -1 ? text.length : text.indexOf("\n", pos);
    const start = skipBlank(text, pos, lineEnd);
    if (start === lineEnd || text[start] === "#" || (start === 0 && text[0] === "\uFEFF" && lineEnd === 1)) {
      pos = lineEnd + 1;
      continue;
    }
    const lineStart = text[start] === "\uFEFF" ? start + 1 : start;
    const key = KEY.exec(text.slice(lineStart, lineEnd));
    if (!key) {
      pos = lineEnd + 1;
      continue;
    }
    const valueStart = lineStart + key[0].length;
    const quote = text[valueStart];
    if (quote === '"' || quote === "'") {
      const close = closingQuote(text, valueStart, quote);
      const inner = close === -1 ? "" : text.slice(valueStart + 1, close);
      const plain =
        close !== -1 && !inner.includes("\\") && !inner.includes("\n") && !(quote === '"' && inner.includes("$"));
      out.set(key[1]!, {
        value: plain ? traced(inner, { file, offset: valueStart + 1 }) : untraced(inner),
        lineOffset: lineStart,
        file,
      });
      pos = (close === -1 ? lineEnd : text.indexOf("\n", close) === -1 ? text.length : text.indexOf("\n", close)) + 1;
      continue;
    }
    let raw = text.slice(valueStart, lineEnd);
    const comment = raw.indexOf(" #");
    if (comment !== -1) raw = raw.slice(0, comment);
    raw = raw.replace(/\s+$/, "");
    out.set(key[1]!, {
      value: raw.includes("$") ? untraced(raw) : traced(raw, { file, offset: valueStart }),
      lineOffset: lineStart,
      file,
    });
    pos = lineEnd + 1;
  }
  return out;
}

function skipBlank(text: string, from: number, to: number): number {
  let i = from;
  while (i < to && (text[i] === " " || text[i] === "\t" || text[i] === "\r")) i++;
  return i;
}

function closingQuote(text: string, open: number, quote: string): number {
  for (let i = open + 1; i < text.length; i++) {
    if (text[i] === "\\") i++;
    else if (text[i] === quote) return i;
  }
  return -1;
}
