/**
 * The few `docker` CLI calls of the tests that only read or remove (`inspect`, `image inspect`,
 * `logs`, `ps -q`, `rm -f`, `rmi`), answered through the Engine API (engine-api.ts) the way the
 * CLI would answer them, so that polling a container's state does not start a CLI process each
 * time. Whatever the CLI would answer differently (an object that is missing, a template beyond
 * plain fields, another flag) is left to the CLI itself: `shortcut` returns undefined and the
 * caller runs it.
 */
import { enginePathName, engineRequest } from "./engine-api.ts";

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * The CLI's answer to `args` without starting it, or undefined where only the CLI can tell; `cli`
 * runs the CLI for the part of a call only it can answer.
 */
export function shortcut(
  args: string[],
  socketPath: string,
  cli: (args: string[]) => CliResult,
): CliResult | undefined {
  try {
    return answer(args, socketPath, cli);
  } catch {
    // The engine is not there (a test stopped it): the CLI says so in its own words.
    return undefined;
  }
}

function answer(args: string[], socketPath: string, cli: (args: string[]) => CliResult): CliResult | undefined {
  if (args[0] === "inspect")
    return inspectShortcut(args.slice(1), ["containers", "images", "networks", "volumes"], socketPath);
  if (args[0] === "image" && args[1] === "inspect") return inspectShortcut(args.slice(2), ["images"], socketPath);
  if (args[0] === "container" && args[1] === "inspect")
    return inspectShortcut(args.slice(2), ["containers"], socketPath);
  if (args[0] === "rmi" || (args[0] === "image" && args[1] === "rm"))
    return removeImagesShortcut(args.slice(args[0] === "rmi" ? 1 : 2), socketPath, cli);
  if (args[0] === "ps" || (args[0] === "container" && args[1] === "ls"))
    return listShortcut(args.slice(args[0] === "ps" ? 1 : 2), socketPath);
  if (args[0] === "logs" && args.length === 2 && !args[1]!.startsWith("-")) return logsShortcut(args[1]!, socketPath);
  if (args[0] === "rm" && (args[1] === "-f" || args[1] === "-fv" || args[1] === "-vf"))
    return removeShortcut(args.slice(2), args[1], socketPath, cli);
  return undefined;
}

type Kind = "containers" | "images" | "networks" | "volumes";

/** `[--format T | -f T | --format=T] names...` */
function inspectShortcut(rest: string[], kinds: Kind[], socketPath: string): CliResult | undefined {
  let template: string | undefined;
  if (rest[0] === "--format" || rest[0] === "-f") [template, rest] = [rest[1], rest.slice(2)];
  else if (rest[0]?.startsWith("--format=")) [template, rest] = [rest[0].slice("--format=".length), rest.slice(1)];
  if (template !== undefined && !PLAIN_FIELDS.test(template)) return undefined;
  if (!rest.length || rest.some((name) => name.startsWith("-"))) return undefined;
  const found: Record<string, unknown>[] = [];
  for (const name of rest) {
    const object = inspectObject(name, kinds, socketPath);
    if (!object) return undefined;
    found.push(object);
  }
  if (template === undefined) return { code: 0, stdout: JSON.stringify(found, null, 4), stderr: "" };
  const lines: string[] = [];
  for (const object of found) {
    const line = fillTemplate(template, object);
    if (line === undefined) return undefined;
    lines.push(line);
  }
  return { code: 0, stdout: lines.join("\n").trim(), stderr: "" };
}

function inspectObject(name: string, kinds: Kind[], socketPath: string): Record<string, unknown> | undefined {
  for (const kind of kinds) {
    const path =
      kind === "containers" || kind === "images"
        ? `/${kind}/${enginePathName(name)}/json`
        : `/${kind}/${enginePathName(name)}`;
    const answer = engineRequest("GET", path, { socketPath });
    if (answer.status === 200) return JSON.parse(answer.body) as Record<string, unknown>;
    if (answer.status !== 404) return undefined;
  }
  return undefined;
}

/** Text and `{{.Field.Sub}}` only: what Go's template prints the same for a string or a bool. */
const PLAIN_FIELDS = /^(?:[^{}]|\{\{ *(?:\.[A-Za-z][A-Za-z0-9_]*)+ *\}\})*$/;

function fillTemplate(template: string, object: Record<string, unknown>): string | undefined {
  let unknown = false;
  const filled = template.replace(/\{\{ *((?:\.[A-Za-z][A-Za-z0-9_]*)+) *\}\}/g, (_, path: string) => {
    let value: unknown = object;
    for (const key of path.slice(1).split("."))
      value = value && typeof value === "object" ? (value as Record<string, unknown>)[key] : undefined;
    if (
      typeof value === "string" ||
      typeof value === "boolean" ||
      (typeof value === "number" && Number.isSafeInteger(value) && Math.abs(value) < 1e6)
    )
      return String(value);
    unknown = true;
    return "";
  });
  return unknown ? undefined : filled;
}

/**
 * `logs <name>`: the container's output, its stdout and stderr apart as the CLI prints them (a
 * container without a terminal sends them multiplexed: 8-byte frame headers, stream and length).
 */
function logsShortcut(name: string, socketPath: string): CliResult | undefined {
  const info = engineRequest("GET", `/containers/${enginePathName(name)}/json`, { socketPath });
  if (info.status !== 200) return undefined;
  const answer = engineRequest("GET", `/containers/${enginePathName(name)}/logs?stdout=1&stderr=1`, { socketPath });
  if (answer.status !== 200) return undefined;
  const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes).trim();
  if ((JSON.parse(info.body) as { Config?: { Tty?: boolean } }).Config?.Tty)
    return { code: 0, stdout: decode(answer.bytes), stderr: "" };
  const out: Uint8Array[][] = [[], [], []];
  const bytes = answer.bytes;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let at = 0; at + 8 <= bytes.length; ) {
    const stream = bytes[at]!;
    const size = view.getUint32(at + 4);
    out[stream === 2 ? 2 : 1]!.push(bytes.subarray(at + 8, at + 8 + size));
    at += 8 + size;
  }
  return { code: 0, stdout: decode(Buffer.concat(out[1]!)), stderr: decode(Buffer.concat(out[2]!)) };
}

/**
 * `rm -f[v] names...`: the CLI prints each removed name. A name the engine would not remove (gone,
 * already being removed) goes to the CLI, whose own message and exit code the caller gets.
 */
function removeShortcut(
  names: string[],
  flag: string,
  socketPath: string,
  cli: (args: string[]) => CliResult,
): CliResult | undefined {
  if (!names.length || names.some((name) => name.startsWith("-"))) return undefined;
  const removed: string[] = [];
  const left: string[] = [];
  for (const name of names) {
    const answer = engineRequest(
      "DELETE",
      `/containers/${enginePathName(name)}?force=1${flag === "-f" ? "" : "&v=1"}`,
      { socketPath },
    );
    (answer.status < 300 ? removed : left).push(name);
  }
  if (!left.length) return { code: 0, stdout: removed.join("\n"), stderr: "" };
  const rest = cli(["rm", flag, ...left]);
  return { ...rest, stdout: [...removed, rest.stdout].filter(Boolean).join("\n") };
}

/**
 * `rmi [-f] images...`: the CLI prints what the engine answers, `Untagged: ...` and `Deleted: ...`
 * a line each; an image the engine would not remove is the CLI's to report.
 */
function removeImagesShortcut(
  rest: string[],
  socketPath: string,
  cli: (args: string[]) => CliResult,
): CliResult | undefined {
  const force = rest[0] === "-f" || rest[0] === "--force";
  const images = force ? rest.slice(1) : rest;
  if (!images.length || images.some((image) => image.startsWith("-"))) return undefined;
  const lines: string[] = [];
  const left: string[] = [];
  for (const image of images) {
    const answer = engineRequest("DELETE", `/images/${enginePathName(image)}${force ? "?force=1" : ""}`, {
      socketPath,
    });
    if (answer.status >= 300) {
      left.push(image);
      continue;
    }
    for (const item of JSON.parse(answer.body) as { Untagged?: string; Deleted?: string }[]) {
      if (item.Untagged) lines.push(`Untagged: ${item.Untagged}`);
      if (item.Deleted) lines.push(`Deleted: ${item.Deleted}`);
    }
  }
  if (!left.length) return { code: 0, stdout: lines.join("\n"), stderr: "" };
  const others = cli(["rmi", ...(force ? ["-f"] : []), ...left]);
  return { ...others, stdout: [...lines, others.stdout].filter(Boolean).join("\n") };
}

/** `ps -q [-a] [--filter key=value]...`: the short IDs the engine lists, in its order, as the CLI prints them. */
function listShortcut(rest: string[], socketPath: string): CliResult | undefined {
  let all = false;
  let quiet = false;
  const filters: Record<string, string[]> = {};
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i]!;
    let filter: string | undefined;
    if (arg === "-a" || arg === "--all") all = true;
    else if (arg === "-q" || arg === "--quiet") quiet = true;
    else if (arg === "-aq" || arg === "-qa") all = quiet = true;
    else if (arg === "--filter" || arg === "-f") filter = rest[++i];
    else if (arg.startsWith("--filter=")) filter = arg.slice("--filter=".length);
    else return undefined;
    if (filter !== undefined) {
      const at = filter.indexOf("=");
      if (at < 1) return undefined;
      (filters[filter.slice(0, at)] ??= []).push(filter.slice(at + 1));
    }
  }
  if (!quiet) return undefined;
  const query = `all=${all ? 1 : 0}${Object.keys(filters).length ? `&filters=${encodeURIComponent(JSON.stringify(filters))}` : ""}`;
  const answer = engineRequest("GET", `/containers/json?${query}`, { socketPath });
  if (answer.status !== 200) return undefined;
  const ids = (JSON.parse(answer.body) as { Id: string }[]).map((container) => container.Id.slice(0, 12));
  return { code: 0, stdout: ids.join("\n"), stderr: "" };
}
