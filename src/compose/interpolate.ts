/**
 * Compose's interpolation of one value (compose-go's template: `$$`, `$VAR`, `${VAR}`,
 * `${VAR:-default}`, `${VAR-default}`, `${VAR:?error}`, `${VAR?error}`), keeping where each
 * character of the result came from: a variable's value points into its `.env` line, a default
 * into the compose file. A variable set by no env file came from the shell that ran compose,
 * which svc cannot see: its characters point nowhere.
 */

import type { EnvValue } from "./envfile.ts";
import { concat, slice, type Traced, untraced } from "./text.ts";

export interface Use {
  name: string;
  /** where its characters came from */
  from: "env_file" | "default" | "unset";
  env?: EnvValue;
}

export interface Interpolated {
  value: Traced;
  uses: Use[];
  /** a form svc does not follow (a nested default, `:+`), or null */
  problem: string | null;
}

const NAME = /^[A-Za-z_][A-Za-z0-9_]*/;

export function interpolate(input: Traced, env: ReadonlyMap<string, EnvValue>): Interpolated {
  const parts: Traced[] = [];
  const uses: Use[] = [];
  let problem: string | null = null;
  const text = input.text;
  let i = 0;
  let literal = 0;
  const flush = (end: number) => {
    if (end > literal) parts.push(slice(input, literal, end));
  };
  while (i < text.length) {
    if (text[i] !== "$") {
      i++;
      continue;
    }
    flush(i);
    if (text[i + 1] === "$") {
      parts.push(slice(input, i + 1, i + 2));
      i += 2;
      literal = i;
      continue;
    }
    if (text[i + 1] === "{") {
      const close = text.indexOf("}", i + 2);
      const body = close === -1 ? "" : text.slice(i + 2, close);
      const name = NAME.exec(body)?.[0];
      if (close === -1 || !name) {
        problem ??= `"${text}" is not a form of interpolation svc reads`;
        parts.push(slice(input, i));
        i = literal = text.length;
        break;
      }
      const op = /^(:?[-?+])?/.exec(body.slice(name.length))![0];
      const rest = slice(input, i + 2 + name.length + op.length, close);
      if (rest.text.includes("$") || rest.text.includes("{"))
        problem ??= `the default of \${${name}} holds another variable`;
      if (op.endsWith("+")) problem ??= `\${${name}${op}...} (an alternative value) is not followed`;
      parts.push(resolveVariable(name, op, rest, env, uses));
      i = literal = close + 1;
      continue;
    }
    const name = NAME.exec(text.slice(i + 1))?.[0];
    if (!name) {
      i++;
      continue;
    }
    parts.push(resolveVariable(name, "", untraced(""), env, uses));
    i = literal = i + 1 + name.length;
  }
  flush(text.length);
  return { value: concat(parts), uses, problem };
}

function resolveVariable(
  name: string,
  op: string,
  fallback: Traced,
  env: ReadonlyMap<string, EnvValue>,
  uses: Use[],
): Traced {
  const set = env.get(name);
  const emptyCounts = op.startsWith(":");
  const useDefault = op.includes("-") && (set === undefined || (emptyCounts && set.value.text === ""));
  if (useDefault) {
    uses.push({ name, from: "default" });
    return fallback;
  }
  if (set === undefined) {
    uses.push({ name, from: "unset" });
    return untraced("");
  }
  uses.push({ name, from: "env_file", env: set });
  return set.value;
}
