/**
 * The images a Dockerfile is built from. Each row names its source: moby/buildkit at
 * 73ed6825c4b7 (2026-08-21), frontend/dockerfile/parser/testfiles/<name>/Dockerfile with the
 * `(from ...)` its `result` file gives, and frontend/dockerfile/dockerfile2llb/convert_test.go;
 * rcjsuen/dockerfile-ast at 167771e3c957 (2026-04-21), test/instructions/from.test.ts. The
 * expansion rows follow BuildKit's shell lexer (frontend/dockerfile/shell/lex.go) and its
 * documented rule for global ARGs: declared before the first FROM, overridden by build args.
 */
import { describe, expect, test } from "bun:test";
import { baseImages, expand } from "../../../src/compose/dockerfile.ts";

const DIGEST = "sha256:613685c22f65d01f2264bdd49b8a336488e14faf29f3ff9b6bf76a4da23c4700";

function refs(text: string, args: Record<string, string | null> = {}): string[] | string {
  const found = baseImages(text, new Map(Object.entries(args)));
  return found.ok ? found.bases.map((b) => b.reference) : found.reason;
}

describe("BuildKit's parser testfiles: the FROM each result file gives", () => {
  const rows: [string, string, string[]][] = [
    ["args", 'ARG foo bar=baz\nFROM ubuntu\nARG abc="123 456" def\n', ["ubuntu"]],
    ["escape", "#escape = `\n\nFROM image\nLABEL maintainer foo@bar.com\nENV GOPATH `\n\\go", ["image"]],
    [
      "escape-after-comment (the directive after a comment is a comment)",
      "# Comment here. Should not be looking for the following parser directive.\n# Hence the following line will be ignored, and the subsequent backslash\n# continuation will be the default.\n# escape = `\n\nFROM image\nLABEL maintainer foo@bar.com\nENV GOPATH \\\n\\go",
      ["image"],
    ],
    [
      "escape-nonewline",
      "# escape = `\n# There is no white space line after the directives. This still succeeds, but goes\n# against best practices.\nFROM image\nLABEL maintainer foo@bar.com\nENV GOPATH `\n\\go",
      ["image"],
    ],
    [
      "escape-with-syntax (the image on a continued line)",
      "# syntax = docker/dockerfile\n# escape = `\n\nFROM `\n    image\n",
      ["image"],
    ],
    ["continue-at-eof", "FROM alpine:3.5\n\nRUN something \\", ["alpine:3.5"]],
    [
      "flags (FROM scratch: no base)",
      "FROM scratch\nCOPY foo /tmp/\nCOPY --user=me foo /tmp/\nCOPY -- foo /tmp/\n",
      [],
    ],
    [
      "trailing-backslash",
      "# https://github.com/docker/for-win/issues/5254\n\nFROM hello-world\n\nENV A path\nENV B another\\\\path\nENV C trailing\\\\backslash\\\\\nENV D This should not be appended to C\n",
      ["hello-world"],
    ],
    [
      "lk4d4-the-edge-case-generator",
      'FROM busybox:buildroot-2014.02\n\nLABEL maintainer docker <docker@docker.io>\n\nONBUILD RUN ["echo", "test"]\n',
      ["busybox:buildroot-2014.02"],
    ],
    [
      "brimstone-consuldock",
      "#from consuldock\nFROM brimstone/ubuntu:14.04\n\nLABEL maintainer brimstone@the.narro.ws\n",
      ["brimstone/ubuntu:14.04"],
    ],
    ["cpuguy83-nagios", "FROM cpuguy83/ubuntu\nENV NAGIOS_HOME /opt/nagios\n", ["cpuguy83/ubuntu"]],
  ];
  for (const [name, text, expected] of rows)
    test(`testfiles/${name}`, () => {
      expect(refs(text)).toEqual(expected);
    });
});

describe("BuildKit's convert_test.go: stages are not bases", () => {
  test("TestDockerfileParsing: FROM a stage, COPY --from a stage and an index", () => {
    expect(refs("FROM scratch AS foo\nENV FOO bar\nFROM foo\nCOPY --from=foo f1 /\nCOPY --from=0 f2 /\n")).toEqual([]);
  });
  test("TestDockerfileParsing with target Foo: stage names are matched without case", () => {
    expect(refs("FROM busybox AS Foo\nFROM foo\nFROM FOO AS bar\n")).toEqual(["busybox"]);
  });
  test("TestCopyFromKeepsStageLabels: stages built from stages", () => {
    expect(
      refs(
        "FROM scratch AS base\nLABEL marker=base\n\nFROM base AS sibling\nFROM base AS consumer\nCOPY --from=sibling / /\n",
      ),
    ).toEqual([]);
  });
  test("TestDockerfileParsing: FROM ${BLANK} AS foo is refused", () => {
    expect(refs("FROM ${BLANK} AS foo")).toContain("names no image once expanded");
  });
});

describe("dockerfile-ast's from.test.ts: the image of a FROM", () => {
  const rows: [string, string][] = [
    ["FROM node", "node"],
    ["FROM node:alpine", "node:alpine"],
    ["FROM node:${tag:-latest}", "node:latest"],
    ["FROM no${de:-de}", "node"],
    ["FROM no${a:-${c:-x}}", "nox"],
    [`FROM node@${DIGEST}`, `node@${DIGEST}`],
    [`FROM custom/node:non-existent-tag@${DIGEST}`, `custom/node:non-existent-tag@${DIGEST}`],
    ["FROM privateregistry.com/base/image:tag", "privateregistry.com/base/image:tag"],
    ["FROM privateregistry.com:5000/image:tag", "privateregistry.com:5000/image:tag"],
    [`FROM privateregistry.com:5000/image@${DIGEST}`, `privateregistry.com:5000/image@${DIGEST}`],
  ];
  for (const [line, expected] of rows)
    test(line, () => {
      expect(refs(line)).toEqual([expected]);
    });
  test("FROM with no image is a reason, not a base", () => {
    expect(refs("FROM")).toContain("names no image");
  });
});

describe("global ARGs, build args and the platform", () => {
  const multi = "ARG BASE=127.0.0.1:5000/busybox\nARG TAG=1.36\nFROM ${BASE}:${TAG} AS build\nRUN true\nFROM build\n";
  test("an ARG's default", () => {
    expect(refs(multi)).toEqual(["127.0.0.1:5000/busybox:1.36"]);
  });
  test("a build arg wins over the default", () => {
    expect(refs(multi, { TAG: "1.37" })).toEqual(["127.0.0.1:5000/busybox:1.37"]);
  });
  test("a build arg with no value leaves the default", () => {
    expect(refs(multi, { TAG: null })).toEqual(["127.0.0.1:5000/busybox:1.36"]);
  });
  test("an arg the Dockerfile does not declare is not seen", () => {
    expect(refs("FROM busybox:${TAG:-1.36}\n", { TAG: "1.37" })).toEqual(["busybox:1.36"]);
  });
  test("an ARG declared after the first FROM is not a global one", () => {
    expect(refs("FROM busybox AS one\nARG TAG=2\nFROM alpine:${TAG:-3}\n")).toEqual(["busybox", "alpine:3"]);
  });
  test("an ARG's default may use an earlier one", () => {
    expect(refs("ARG V=1\nARG IMG=busybox:${V}.36\nFROM $IMG\n")).toEqual(["busybox:1.36"]);
  });
  test("--platform is kept; BuildKit's own platform args as written", () => {
    const found = baseImages(
      "ARG P=linux/arm64\nFROM --platform=$P busybox\nFROM --platform=$BUILDPLATFORM alpine\n",
      new Map(),
    );
    expect(found.ok && found.bases.map((b) => [b.reference, b.platform, b.line])).toEqual([
      ["busybox", "linux/arm64", 2],
      ["alpine", "$BUILDPLATFORM", 3],
    ]);
  });
  test("COPY --from an image is a base", () => {
    expect(refs("FROM busybox AS b\nCOPY --from=caddy:2.8 /usr/bin/caddy /\nCOPY --from=b / /\n")).toEqual([
      "busybox",
      "caddy:2.8",
    ]);
  });
  test("FROM keyword in any case, heredocs and comments in between", () => {
    expect(
      refs("# syntax=docker/dockerfile:1\nfrom busybox:1 as a\nRUN <<EOF\nFROM not-an-image\nEOF\nFrom alpine\n"),
    ).toEqual(["busybox:1", "alpine"]);
  });
});

describe("expand", () => {
  const scope = new Map([
    ["SET", "x"],
    ["EMPTY", ""],
  ]);
  const rows: [string, string][] = [
    ["$SET", "x"],
    ["${SET}y", "xy"],
    ["${UNSET}", ""],
    ["${UNSET:-d}", "d"],
    ["${EMPTY:-d}", "d"],
    ["${EMPTY-d}", ""],
    ["${SET:+alt}", "alt"],
    ["${EMPTY:+alt}", ""],
    ["${EMPTY+alt}", "alt"],
    ["${UNSET:-${SET}}", "x"],
    ["a$", "a$"],
  ];
  for (const [word, expected] of rows)
    test(word, () => {
      expect(expand(word, scope)).toBe(expected);
    });
  test("a form svc does not expand is refused", () => {
    expect(expand("${SET#x}", scope)).toHaveProperty("problem");
    expect(expand("${SET", scope)).toHaveProperty("problem");
  });
});

describe("where a base's tag is written (what a tag policy moves)", () => {
  /** Each base's tag as the text at its site says it, with the ARG that holds it; null: no one run to move. */
  function sites(text: string, args: Record<string, string | null> = {}) {
    const found = baseImages(text, new Map(Object.entries(args)));
    if (!found.ok) throw new Error(found.reason);
    return found.bases.map((b) =>
      b.tagAt ? [text.slice(b.tagAt.offset, b.tagAt.offset + b.tagAt.text.length), b.tagAt.variable] : null,
    );
  }
  const rows: [string, string, Record<string, string | null>, ([string, string | null] | null)[]][] = [
    ["a FROM's own tag", "FROM caddy:2.8 AS build\n", {}, [["2.8", null]]],
    ["after CRLF lines and a flag", "# c\r\nFROM --platform=$BUILDPLATFORM caddy:2.8\r\n", {}, [["2.8", null]]],
    ["a global ARG's default", "ARG TAG=2.8\nFROM caddy:${TAG}\n", {}, [["2.8", "TAG"]]],
    ["$VAR without braces", "ARG TAG=2.8\nFROM caddy:$TAG\n", {}, [["2.8", "TAG"]]],
    ["a build arg over the default: not in the Dockerfile", "ARG TAG=2.8\nFROM caddy:${TAG}\n", { TAG: "2.9" }, [null]],
    ["a default quoted", 'ARG TAG="2.8"\nFROM caddy:${TAG}\n', {}, [null]],
    ["a default from another ARG", "ARG V=2.8\nARG TAG=${V}\nFROM caddy:${TAG}\n", {}, [null]],
    ["a tag of two parts", "ARG MAJOR=2\nFROM caddy:${MAJOR}.8\n", {}, [null]],
    ["pinned by digest", `FROM caddy:2.8@${DIGEST}\n`, {}, [null]],
    ["no tag", "FROM caddy\n", {}, [null]],
  ];
  for (const [name, text, args, expected] of rows)
    test(name, () => {
      expect(sites(text, args)).toEqual(expected);
    });

  /** The build arg each base's whole tag is, if any. */
  const tagArgs = (text: string, args: Record<string, string | null>) => {
    const found = baseImages(text, new Map(Object.entries(args)));
    if (!found.ok) throw new Error(found.reason);
    return found.bases.map((b) => b.tagArg ?? null);
  };
  test("a build arg over a global ARG that is the whole tag: the arg names it", () => {
    expect(tagArgs("ARG TAG=2.8\nFROM caddy:${TAG}\n", { TAG: "2.9" })).toEqual(["TAG"]);
    expect(tagArgs("ARG TAG\nFROM caddy:$TAG\n", { TAG: "2.9" })).toEqual(["TAG"]);
  });
  test("a build arg that is part of the tag, or an ARG no build arg sets, names none", () => {
    expect(tagArgs("ARG MAJOR=2\nFROM caddy:${MAJOR}.8\n", { MAJOR: "3" })).toEqual([null]);
    expect(tagArgs("ARG TAG=2.8\nFROM caddy:${TAG}\n", { TAG: null })).toEqual([null]);
    expect(tagArgs("ARG REPO=caddy\nFROM ${REPO}:2.8\n", { REPO: "caddy" })).toEqual([null]);
  });
});
