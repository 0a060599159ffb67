/**
 * Where a unit file names a container's image, and the smallest change that moves it to another
 * tag (docs/podman.md, "A tag move of a container systemd runs"). Two shapes:
 *
 * - a quadlet `.container` file: the `Image=` key of its `[Container]` section, read as quadlet
 *   reads it (containers/podman pkg/systemd/parser/unitfile.go: lines trimmed, `#` and `;`
 *   comments, a trailing `\` continues the line, the last value of a key wins, a value in matched
 *   double quotes is unquoted);
 * - a `.service` file (`podman generate systemd --new`): the image argument of the `podman run`
 *   command of `ExecStart=`, split as systemd splits a command line (systemd.service(5), "Command
 *   lines": words, "..." and '...' quotes, backslash escapes, a trailing `\` joins the next line
 *   with a space).
 *
 * Only the characters of the reference change; everything else of the user's file stays byte for
 * byte. svc does not guess: a reference found other than exactly once, or written in a way svc
 * would have to interpret (a continuation inside it, an escape, a variable), is a reason, not an edit.
 */

export type UnitFileShape = "quadlet" | "service";

/** The reference's characters in the file: `offset` into its text, `line` 1-based. */
export interface ImageSite {
  offset: number;
  line: number;
}

/** A move planned in a file's text: its text afterwards, and the line that changes. */
export interface ImageMove {
  after: string;
  line: number;
}

/** What an image reference may hold (distribution's grammar, tag and digest included): nothing a unit file would read otherwise. */
const REFERENCE = /^[A-Za-z0-9][A-Za-z0-9._/:@-]{0,511}$/;

/** A physical line: its text without the newline (a CR kept), and its offset. */
interface Line {
  text: string;
  offset: number;
  number: number;
}

/** A key's line once continuations are joined: its characters with their offsets (-1: a joint). */
interface Logical {
  key: string;
  /** the value after `=` and its leading whitespace, continuations joined */
  value: string;
  at: number[];
  /** a trailing `\` joined the next line into it */
  continued: boolean;
  /** a comment line sat inside the continuation */
  commentInside: boolean;
  line: number;
}

/** The shape a unit's file has, by its name; null for a file svc does not edit. */
export function shapeOf(path: string): UnitFileShape | null {
  if (path.endsWith(".container")) return "quadlet";
  if (path.endsWith(".service")) return "service";
  return null;
}

/** Whether a quadlet file (a drop-in) sets `Image=` in its `[Container]` section. */
export function setsImage(text: string): boolean {
  return keysIn(text, "Container").some((l) => l.key === "Image");
}

/**
 * The folders beside a quadlet file whose `*.conf` drop-ins quadlet reads after it, broadest first
 * (podman-systemd.unit(5), "Drop-in"): the type's (`container.d`), each `-`-ended prefix of the
 * unit's name (`web-.container.d` for `web-app.container`), a template's (`foo@.container.d`), and
 * the file's own (`web-app.container.d`).
 */
export function dropInFolders(fileName: string): string[] {
  const dot = fileName.lastIndexOf(".");
  const ext = fileName.slice(dot);
  const stem = fileName.slice(0, dot);
  const at = stem.indexOf("@");
  const unit = at < 0 ? stem : stem.slice(0, at);
  const folders = [`${ext.slice(1)}.d`];
  const parts = unit.split("-");
  for (let i = 1; i < parts.length; i++) {
    const prefix = `${parts.slice(0, i).join("-")}-`;
    folders.push(`${prefix}${ext}.d`);
    if (at >= 0) folders.push(`${prefix}@${ext}.d`);
  }
  if (at >= 0 && at < stem.length - 1) folders.push(`${unit}@${ext}.d`);
  folders.push(`${fileName}.d`);
  return folders;
}

/** `text` with the image reference `from` moved to `to`, or why svc does not. */
export function moveImage(text: string, shape: UnitFileShape, from: string, to: string): ImageMove | string {
  if (!REFERENCE.test(to)) return `the new reference "${to.slice(0, 80)}" is not one svc writes into a unit file`;
  const site = findImage(text, shape, from);
  if (typeof site === "string") return site;
  return { after: text.slice(0, site.offset) + to + text.slice(site.offset + from.length), line: site.line };
}

/** Where the file names the reference `reference`, exactly once, or why not. */
export function findImage(text: string, shape: UnitFileShape, reference: string): ImageSite | string {
  if (!REFERENCE.test(reference)) return `the container's reference "${reference.slice(0, 80)}" is not a plain one`;
  return shape === "quadlet" ? findInQuadlet(text, reference) : findInService(text, reference);
}

function findInQuadlet(text: string, reference: string): ImageSite | string {
  const images = keysIn(text, "Container").filter((l) => l.key === "Image");
  if (images.length === 0) return "its [Container] section has no Image= line";
  if (images.length > 1)
    return `its [Container] section has ${images.length} Image= lines (the last one wins): svc does not choose`;
  const image = images[0]!;
  if (image.continued) return `its Image= line (line ${image.line}) goes on over a line continuation`;
  const value = image.value.replace(/\s+$/, "");
  const quoted = value.length >= 2 && value.startsWith('"') && value.endsWith('"');
  const named = quoted ? value.slice(1, -1) : value;
  if (named !== reference)
    return `its Image= line (line ${image.line}) names ${named.slice(0, 120)}, not the container's ${reference}`;
  const offset = image.at[quoted ? 1 : 0]!;
  return { offset, line: image.line };
}

function findInService(text: string, reference: string): ImageSite | string {
  const sites: ImageSite[] = [];
  let commands = 0;
  for (const exec of keysIn(text, "Service").filter((l) => l.key === "ExecStart")) {
    const words = splitCommand(exec.value);
    if (typeof words === "string") return `its ExecStart= line (line ${exec.line}) ${words}`;
    const run = podmanRunArguments(words);
    if (run === null) continue;
    commands++;
    if (exec.commentInside) return `its ExecStart= line (line ${exec.line}) has a comment inside its continuation`;
    for (const word of run) {
      const inner =
        word.raw === reference ? 0 : word.raw === `"${reference}"` || word.raw === `'${reference}'` ? 1 : -1;
      if (inner < 0) continue;
      const offset = exec.at[word.start + inner]!;
      sites.push({ offset, line: lineAt(text, offset) });
    }
  }
  if (commands === 0) return "its ExecStart= is not a `podman run` command";
  if (sites.length === 0) return `its podman run command does not name ${reference} as a whole argument`;
  if (sites.length > 1)
    return `its podman run command names ${reference} ${sites.length} times (lines ${sites.map((s) => s.line).join(", ")}): svc does not choose`;
  return sites[0]!;
}

/** The arguments after `run` of a `podman ... run ...` command; null for another command. */
function podmanRunArguments(words: Word[]): Word[] | null {
  const command = words[0]?.raw.replace(/^[-@:+!|]+/, "");
  if (command === undefined || (command !== "podman" && !command.endsWith("/podman"))) return null;
  const run = words.findIndex((w, i) => i > 0 && w.raw === "run");
  return run < 0 ? null : words.slice(run + 1);
}

/** One word of a command line, as written (quotes and escapes kept), and where it starts in the value. */
interface Word {
  raw: string;
  start: number;
}

/** A command line split at unquoted whitespace, as systemd does; why not when a quote is left open. */
function splitCommand(value: string): Word[] | string {
  const words: Word[] = [];
  let i = 0;
  while (i < value.length) {
    if (/\s/.test(value[i]!)) {
      i++;
      continue;
    }
    const start = i;
    while (i < value.length && !/\s/.test(value[i]!)) {
      const c = value[i]!;
      if (c === "\\") i += 2;
      else if (c === '"' || c === "'") {
        const close = closingQuote(value, i + 1, c);
        if (close < 0) return "has a quote that does not close on its line";
        i = close + 1;
      } else i++;
    }
    words.push({ raw: value.slice(start, Math.min(i, value.length)), start });
  }
  return words;
}

function closingQuote(value: string, from: number, quote: string): number {
  for (let i = from; i < value.length; i++) {
    if (value[i] === "\\") i++;
    else if (value[i] === quote) return i;
  }
  return -1;
}

/** The key lines of the sections named `section` (a section may come back: they add up), continuations joined. */
function keysIn(text: string, section: string): Logical[] {
  const lines = physicalLines(text);
  const out: Logical[] = [];
  let current: string | null = null;
  for (let n = 0; n < lines.length; n++) {
    const { body, start } = trimmed(lines[n]!);
    if (body === "" || body.startsWith("#") || body.startsWith(";")) continue;
    const group = /^\[([^\]]*)\][ \t]*$/.exec(body);
    if (group) {
      current = group[1]!;
      continue;
    }
    const eq = body.indexOf("=");
    if (eq <= 0) continue;
    const logical = joinValue(lines, n, lines[n]!.offset + start + eq + 1);
    n = logical.last;
    if (current === section) out.push({ ...logical.value, key: body.slice(0, eq).replace(/\s+$/, "") });
  }
  return out;
}

/** A key's value from just after its `=` on line `n`, over its continuations: systemd's joint is a space. */
function joinValue(lines: Line[], n: number, from: number): { value: Omit<Logical, "key">; last: number } {
  let value = "";
  const at: number[] = [];
  let continued = false;
  let commentInside = false;
  let index = n;
  let first = true;
  for (;;) {
    const line = lines[index]!;
    const { body, start } = trimmed(line);
    let begin = first ? from - line.offset : start;
    if (first) while (begin < start + body.length && /[ \t]/.test(line.text[begin]!)) begin++;
    const end = start + body.length;
    const piece = line.text.slice(begin, end);
    if (!endsInContinuation(piece) || index === lines.length - 1) {
      append(piece, line.offset + begin);
      return { value: { value, at, continued, commentInside, line: n + 1 }, last: index };
    }
    append(piece.slice(0, -1), line.offset + begin);
    value += " ";
    at.push(-1);
    continued = true;
    first = false;
    index++;
    // comment lines inside a continuation: quadlet skips them, older systemd does not
    while (index < lines.length - 1 && /^[#;]/.test(trimmed(lines[index]!).body)) {
      commentInside = true;
      index++;
    }
  }

  function append(piece: string, offset: number): void {
    value += piece;
    for (let i = 0; i < piece.length; i++) at.push(offset + i);
  }
}

/** An odd number of trailing backslashes: the last one continues the line (`\\` is an escaped one). */
function endsInContinuation(piece: string): boolean {
  let count = 0;
  for (let i = piece.length - 1; i >= 0 && piece[i] === "\\"; i--) count++;
  return count % 2 === 1;
}

function physicalLines(text: string): Line[] {
  const lines: Line[] = [];
  let offset = 0;
  for (const [i, part] of text.split("\n").entries()) {
    lines.push({ text: part, offset, number: i + 1 });
    offset += part.length + 1;
  }
  return lines;
}

/** A line's text without its surrounding whitespace (a CR included), and where that text starts in it. */
function trimmed(line: Line): { body: string; start: number } {
  const start = line.text.length - line.text.replace(/^\s+/, "").length;
  return { body: line.text.trim(), start };
}

function lineAt(text: string, offset: number): number {
  let line = 1;
  for (let i = 0; i < offset; i++) if (text.charCodeAt(i) === 10) line++;
  return line;
}
