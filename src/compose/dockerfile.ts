/**
 * The images a Dockerfile is built from (docs/compose.md, "Built services"): every `FROM` that
 * names no earlier stage and is not `scratch`, and every `COPY --from=` that names an image,
 * with the global `ARG`s (those before the first `FROM`) expanded as BuildKit expands them: the
 * build's args win over an `ARG`'s default, an arg the Dockerfile does not declare is not seen.
 * The Dockerfile is read by dockerfile-ast (line continuations, the `escape` directive, flags,
 * `AS`); only the words are expanded here.
 */
import { Copy, DockerfileParser, From, Run } from "dockerfile-ast";

export interface BaseImage {
  /** the reference, variables expanded ("127.0.0.1:5000/busybox:1.36") */
  reference: string;
  /** `--platform=` as written, variables it can expand expanded; null: none */
  platform: string | null;
  /** 1-based line of the instruction, for what svc says */
  line: number;
  /** `FROM`, `COPY --from`, an additional context of the docker-image:// kind, or the image's annotation */
  via: "FROM" | "COPY" | "additional_contexts" | "annotation";
  /**
   * The one run of the Dockerfile's text that holds the tag, when svc can move it there: the
   * `FROM`'s own tag, or the default of the global `ARG` the tag is (`FROM img:${TAG}`) when no
   * build arg overrides it; absent: the tag comes from elsewhere (build.args, several places)
   */
  tagAt?: { offset: number; text: string; variable: string | null };
  /**
   * The build arg that is the whole tag (`FROM img:${TAG}`, TAG a global ARG the build's args
   * set): the tag is then written where that arg's value is (compose's `build.args`, build.ts)
   */
  tagArg?: string;
}

export type Bases = { ok: true; bases: BaseImage[] } | { ok: false; reason: string };

/** BuildKit's automatic platform args: known to the builder only, left as written in `--platform`. */
const PLATFORM_ARGS = new Set([
  "BUILDPLATFORM",
  "BUILDOS",
  "BUILDARCH",
  "BUILDVARIANT",
  "TARGETPLATFORM",
  "TARGETOS",
  "TARGETARCH",
  "TARGETVARIANT",
]);

/** A Dockerfile larger than this is not read (a real one is a few KB). */
export const MAX_DOCKERFILE_BYTES = 256 * 1024;

/** The external images of `text`, a Dockerfile, built with `args` (compose's `build.args`, already interpolated). */
export function baseImages(text: string, args: ReadonlyMap<string, string | null>): Bases {
  if (text.length > MAX_DOCKERFILE_BYTES) return { ok: false, reason: `the Dockerfile is larger than 256 KB` };
  const dockerfile = DockerfileParser.parse(text);
  const offsetOf = lineOffsets(text);
  const scope = new Map<string, string>();
  /** a global ARG's default as written, where the build takes it (no build arg over it) */
  const written = new Map<string, { offset: number; text: string } | null>();
  /** the global ARGs the build's args set */
  const given = new Set<string>();
  for (const arg of dockerfile.getInitialARGs()) {
    const property = arg.getProperty();
    const name = property?.getName();
    if (!name) continue;
    const fromArgs = args.get(name);
    written.set(name, null);
    given.delete(name);
    if (fromArgs !== undefined && fromArgs !== null) {
      scope.set(name, fromArgs);
      given.add(name);
    } else {
      const value = property?.getValue();
      if (value !== null && value !== undefined) {
        const expanded = expand(value, scope);
        if (typeof expanded !== "string") return { ok: false, reason: `ARG ${name}: ${expanded.problem}` };
        scope.set(name, expanded);
        const range = property?.getValueRange();
        const offset = range ? offsetOf(range.start) : -1;
        if (offset >= 0 && text.slice(offset, offset + value.length) === value && !value.includes("$"))
          written.set(name, { offset, text: value });
      }
    }
  }
  const stages = new Set<string>();
  const bases: BaseImage[] = [];
  for (const instruction of dockerfile.getInstructions()) {
    const line = instruction.getRange().start.line + 1;
    if (instruction instanceof From) {
      const from = instruction;
      const raw = from.getImage();
      if (!raw) return { ok: false, reason: `line ${line}: FROM names no image` };
      const image = expand(raw, scope);
      if (typeof image !== "string") return { ok: false, reason: `line ${line}: ${image.problem}` };
      if (image === "") return { ok: false, reason: `line ${line}: FROM ${raw} names no image once expanded` };
      const stage = from.getBuildStage();
      const external = !stages.has(image.toLowerCase()) && image.toLowerCase() !== "scratch";
      if (stage) stages.add(stage.toLowerCase());
      if (!external) continue;
      const flag = from.getPlatformFlag()?.getValue() ?? null;
      const base: BaseImage = {
        reference: image,
        platform: flag === null ? null : expandPlatform(flag, scope),
        line,
        via: "FROM",
      };
      const site = tagSite(from, text, offsetOf, written, given);
      if (site && "arg" in site) base.tagArg = site.arg;
      else if (site) base.tagAt = site;
      bases.push(base);
      continue;
    }
    if (instruction instanceof Copy) {
      const value = instruction.getFromFlag()?.getValue();
      if (!value) continue;
      const image = expand(value, scope);
      if (typeof image !== "string") return { ok: false, reason: `line ${line}: ${image.problem}` };
      // a stage's name or index names no image
      if (image === "" || stages.has(image.toLowerCase()) || /^\d+$/.test(image)) continue;
      bases.push({ reference: image, platform: null, line, via: "COPY" });
    }
  }
  return { ok: true, bases };
}

/**
 * Where a `FROM`'s tag is written as one run of text: its own characters, a global ARG's default,
 * or (`arg`) the value of the build arg that sets that ARG.
 */
function tagSite(
  from: From,
  text: string,
  offsetOf: (position: { line: number; character: number }) => number,
  written: ReadonlyMap<string, { offset: number; text: string } | null>,
  given: ReadonlySet<string>,
): NonNullable<BaseImage["tagAt"]> | { arg: string } | null {
  const tag = from.getImageTag();
  const range = from.getImageTagRange();
  if (!tag || !range || from.getImageDigest()) return null;
  const offset = offsetOf(range.start);
  if (offset < 0 || text.slice(offset, offset + tag.length) !== tag) return null;
  if (!tag.includes("$")) return { offset, text: tag, variable: null };
  const name = /^\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))$/.exec(tag);
  const variable = name?.[1] ?? name?.[2];
  if (variable && given.has(variable)) return { arg: variable };
  const site = variable ? written.get(variable) : null;
  return site && variable ? { ...site, variable } : null;
}

/** A (line, character) position of dockerfile-ast as an offset into the text (-1: outside it). */
function lineOffsets(text: string): (position: { line: number; character: number }) => number {
  const starts = [0];
  for (let i = 0; i < text.length; i++) {
    if (text[i] === "\r" && text[i + 1] === "\n") i++;
    if (text[i] === "\n" || text[i] === "\r") starts.push(i + 1);
  }
  return ({ line, character }) => {
    const start = starts[line];
    return start === undefined ? -1 : start + character;
  };
}

function expandPlatform(flag: string, scope: ReadonlyMap<string, string>): string {
  const names = [...flag.matchAll(/\$\{?([A-Za-z_][A-Za-z0-9_]*)/g)].map((m) => m[1]!);
  if (names.some((name) => PLATFORM_ARGS.has(name) && !scope.has(name))) return flag;
  const expanded = expand(flag, scope);
  return typeof expanded === "string" ? expanded : flag;
}

const NAME = /^[A-Za-z_][A-Za-z0-9_]*/;
const MAX_DEPTH = 8;

/**
 * One word expanded as BuildKit's shell lexer expands it: `$VAR`, `${VAR}`, `${VAR:-word}`,
 * `${VAR-word}`, `${VAR:+word}`, `${VAR+word}` (a word may hold variables itself); an unset
 * variable is empty. Other forms are refused with the reason, not guessed.
 */
export function expand(word: string, scope: ReadonlyMap<string, string>, depth = 0): string | { problem: string } {
  if (depth > MAX_DEPTH) return { problem: `${word} nests variables too deep` };
  let out = "";
  let i = 0;
  while (i < word.length) {
    const c = word[i]!;
    if (c !== "$") {
      out += c;
      i++;
      continue;
    }
    if (word[i + 1] !== "{") {
      const name = NAME.exec(word.slice(i + 1))?.[0];
      if (!name) {
        out += c;
        i++;
        continue;
      }
      out += scope.get(name) ?? "";
      i += 1 + name.length;
      continue;
    }
    const close = matchingBrace(word, i + 1);
    if (close === -1) return { problem: `${word} has a \${ that does not close` };
    const body = word.slice(i + 2, close);
    const name = NAME.exec(body)?.[0];
    if (!name) return { problem: `\${${body}} is not a variable svc reads` };
    const rest = body.slice(name.length);
    const op = /^(:?[-+])?/.exec(rest)![0];
    if (op === "" && rest !== "") return { problem: `\${${body}}: svc does not expand this form` };
    const value = scope.get(name);
    const set = op.startsWith(":") ? value !== undefined && value !== "" : value !== undefined;
    if (op === "") out += value ?? "";
    else if (op.endsWith("-") ? set : !set) out += op.endsWith("-") ? value! : "";
    else {
      const inner = expand(rest.slice(op.length), scope, depth + 1);
      if (typeof inner !== "string") return inner;
      out += inner;
    }
    i = close + 1;
  }
  return out;
}

function matchingBrace(word: string, open: number): number {
  let depth = 0;
  for (let i = open; i < word.length; i++) {
    if (word[i] === "{") depth++;
    else if (word[i] === "}" && --depth === 0) return i;
  }
  return -1;
}

/**
 * Flags of `RUN`, `COPY` and `ADD` only BuildKit knows: the engine's classic builder (its build
 * endpoint without a BuildKit session) refuses them, or (`COPY --chmod` on older engines) them too.
 */
const BUILDKIT_FLAGS: Readonly<Record<string, readonly string[]>> = {
  RUN: ["mount", "network", "security"],
  COPY: ["link", "parents", "exclude", "chmod"],
  ADD: ["link", "parents", "exclude", "chmod", "checksum", "keep-git-dir"],
};

/**
 * What in `text`, a Dockerfile, only BuildKit builds, named with its line (`RUN --mount`, a
 * heredoc, a `# syntax=` frontend, which may add more); null: the classic builder reads it all.
 */
export function buildKitOnly(text: string): string | null {
  if (text.length > MAX_DOCKERFILE_BYTES) return "the Dockerfile is larger than 256 KB";
  const dockerfile = DockerfileParser.parse(text);
  const syntax = dockerfile.getDirectives().find((d) => d.getName().toLowerCase() === "syntax");
  if (syntax)
    return `line ${syntax.getRange().start.line + 1}: # syntax=${syntax.getValue()} names a BuildKit frontend`;
  for (const instruction of dockerfile.getInstructions()) {
    const line = instruction.getRange().start.line + 1;
    const keyword = instruction.getKeyword().toUpperCase();
    const known = BUILDKIT_FLAGS[keyword] ?? [];
    if (known.length > 0 && "getFlags" in instruction) {
      const flags = (instruction as unknown as { getFlags(): { getName(): string }[] }).getFlags();
      const flag = flags.find((f) => known.includes(f.getName().toLowerCase()));
      if (flag) return `line ${line}: ${keyword} --${flag.getName()}`;
    }
    // a heredoc has a name (`<<EOF`); dockerfile-ast also reports a bare `<<` inside quotes
    const heredoc =
      instruction instanceof Run || instruction instanceof Copy
        ? instruction.getHeredocs().find((h) => h.getName() !== "")
        : undefined;
    if (heredoc) return `line ${line}: ${keyword} with a heredoc (<<${heredoc.getName()})`;
  }
  return null;
}
