/**
 * Where a compose service's version is written, over the shapes compose reads. Each row names its
 * source: compose-spec/compose-go v2.9.1 (the loader compose 2.40 uses) and docker/compose v2.40.3
 * test fixtures, or the behaviour they test. The resolved image of each row is what `docker
 * compose config` prints for it (tests/integration/updater/compose-write.test.ts checks that against
 * real compose for the shapes users write).
 */
import { describe, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { parseEnvFile } from "../../../src/compose/envfile.ts";
import { interpolate } from "../../../src/compose/interpolate.ts";
import { type Located, locate } from "../../../src/compose/locate.ts";
import { untraced } from "../../../src/compose/text.ts";
import { tempDir } from "../../temp.ts";

function project(files: Record<string, string>, options: { configFiles?: string[]; envFiles?: string[] } = {}) {
  const dir = tempDir("svc-compose-locate-");
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    writeFileSync(join(dir, file), text);
  }
  const configFiles = (options.configFiles ?? ["compose.yaml"]).map((f) => join(dir, f));
  const at = (service: string, running: string): Located =>
    locate(
      { name: "p", service, workingDir: dir, configFiles, envFiles: (options.envFiles ?? []).map((f) => join(dir, f)) },
      running,
    );
  return { dir, at };
}

/** The text at the tag's place, and its file relative to the project. */
function spot(dir: string, located: Located) {
  if (!located.ok) throw new Error(located.reason);
  const { tag, digest, variable, sharedWith } = located.site;
  return {
    file: tag.origin.file.slice(dir.length + 1),
    tag: tag.text,
    at: located.site.texts.get(tag.origin.file)!.slice(tag.origin.offset, tag.origin.offset + tag.text.length),
    digest: digest?.text ?? null,
    variable,
    sharedWith,
  };
}

describe("the text that decides a service's image", () => {
  test("a plain line (compose-go cli/testdata/simple/compose.yaml: `image: nginx`, with a tag)", () => {
    const { dir, at } = project({ "compose.yaml": "services:\n  simple:\n    image: nginx:1.27.3 # web\n" });
    expect(spot(dir, at("simple", "nginx:1.27.3"))).toMatchObject({
      file: "compose.yaml",
      tag: "1.27.3",
      at: "1.27.3",
      variable: null,
    });
  });

  test("an override file wins (compose-go cli/testdata/simple/compose-with-overrides.yaml: haproxy over nginx)", () => {
    const { dir, at } = project(
      {
        "compose.yaml": "services:\n  simple:\n    image: nginx:1.0\n",
        "compose-with-overrides.yaml": "services:\n  simple:\n    image: haproxy:2.9\n",
      },
      { configFiles: ["compose.yaml", "compose-with-overrides.yaml"] },
    );
    expect(spot(dir, at("simple", "haproxy:2.9"))).toMatchObject({ file: "compose-with-overrides.yaml", tag: "2.9" });
  });

  test("an override file that sets no image leaves the base file's (compose-go merge: a key absent from the override is kept)", () => {
    const { dir, at } = project(
      {
        "compose.yaml": "services:\n  simple:\n    image: nginx:1.0\n",
        "override.yaml": "services:\n  simple:\n    ports: ['80:80']\n",
      },
      { configFiles: ["compose.yaml", "override.yaml"] },
    );
    expect(spot(dir, at("simple", "nginx:1.0"))).toMatchObject({ file: "compose.yaml", tag: "1.0" });
  });

  test("$IMAGE_NAME:$IMAGE_TAG from .env (docker/compose pkg/e2e/fixtures/dotenv/development: IMAGE_TAG in .env)", () => {
    const { dir, at } = project({
      "compose.yaml": "services:\n  backend:\n    image: $IMAGE_NAME:$IMAGE_TAG\n",
      ".env": 'IMAGE_NAME=backend\nIMAGE_TAG="1.4.0"\n',
    });
    expect(spot(dir, at("backend", "backend:1.4.0"))).toMatchObject({
      file: ".env",
      tag: "1.4.0",
      at: "1.4.0",
      variable: "IMAGE_TAG",
    });
  });

  test("${VAR:-default} with VAR unset: the default in the compose file (compose-go template: `:-` when unset or empty)", () => {
    const { dir, at } = project({ "compose.yaml": "services:\n  web:\n    image: 'app:${TAG:-2.0.1}'\n" });
    expect(spot(dir, at("web", "app:2.0.1"))).toMatchObject({
      file: "compose.yaml",
      tag: "2.0.1",
      at: "2.0.1",
      variable: null,
    });
  });

  test("${VAR:-default} with VAR empty in .env: the default (compose-go template: `:-` treats empty as unset)", () => {
    const { dir, at } = project({
      "compose.yaml": "services:\n  web:\n    image: app:${TAG:-2.0.1}\n",
      ".env": "TAG=\n",
    });
    expect(spot(dir, at("web", "app:2.0.1"))).toMatchObject({ file: "compose.yaml", tag: "2.0.1" });
  });

  test("${VAR-default} with VAR empty in .env: the empty value, no tag (compose-go template: `-` only when unset)", () => {
    const { at } = project({ "compose.yaml": "services:\n  web:\n    image: app${TAG-:2.0.1}\n", ".env": "TAG=\n" });
    expect(at("web", "app")).toEqual({ ok: false, reason: "web's image app names no tag" });
  });

  test("--env-file replaces .env (compose-go cli/testdata/env-file: override.env)", () => {
    const { dir, at } = project(
      {
        "compose.yaml": "services:\n  web:\n    image: app:${TAG}\n",
        ".env": "TAG=1.0.0\n",
        "override.env": "TAG=9.0.0\n",
      },
      { envFiles: ["override.env"] },
    );
    expect(spot(dir, at("web", "app:9.0.0"))).toMatchObject({ file: "override.env", tag: "9.0.0" });
  });

  test("export, comments and quotes in .env (compose-go dotenv/fixtures/exported.env, quoted.env)", () => {
    const env = parseEnvFile('# c\nexport A=1.0 # note\nB=\'2.0\'\nC="3.0"\nD: 4.0\nE="a\\n"\n', ".env");
    expect([...env].map(([k, v]) => [k, v.value.text, v.value.at[0] !== null])).toEqual([
      ["A", "1.0", true],
      ["B", "2.0", true],
      ["C", "3.0", true],
      ["D", "4.0", true],
      ["E", "a\\n", false],
    ]);
  });

  test("a variable .env builds from another is not text svc can point at (docker/compose env-interpolation-default-value/.env)", () => {
    const { at } = project({
      "compose.yaml": "services:\n  web:\n    image: ${IMAGE}\n",
      ".env": "IMAGE=default_env:${WHEREAMI:-1.0}\n",
    });
    expect(at("web", "default_env:${WHEREAMI:-1.0}").ok).toBe(false);
  });

  test("an anchor and a merge key (compose-go loader/loader_yaml_test.go: `<<: *x`)", () => {
    const { dir, at } = project({
      "compose.yaml":
        "x-app: &app\n  image: app:3.1.0\nservices:\n  a:\n    <<: *app\n  c:\n    image: &anchored other:1.0\n  b:\n    image: *anchored\n",
    });
    expect(spot(dir, at("a", "app:3.1.0"))).toMatchObject({ file: "compose.yaml", tag: "3.1.0", sharedWith: [] });
    // an alias of a scalar: both services name the same text, which moves for both or neither
    expect(spot(dir, at("c", "other:1.0"))).toMatchObject({ tag: "1.0", sharedWith: ["b"] });
  });

  test("a merge key's own keys win over the merged map (YAML merge: explicit keys override)", () => {
    const { dir, at } = project({
      "compose.yaml": "x-app: &app\n  image: app:1.0\nservices:\n  a:\n    <<: *app\n    image: app:2.0\n",
    });
    expect(spot(dir, at("a", "app:2.0"))).toMatchObject({ tag: "2.0" });
  });

  test("extends in the same file (compose-go loader/testdata/extends/base.yaml: `another: extends: base`)", () => {
    const { dir, at } = project({
      "compose.yaml": "services:\n  base:\n    image: base:1.2\n\n  another:\n    extends: base\n",
    });
    expect(spot(dir, at("another", "base:1.2"))).toMatchObject({
      file: "compose.yaml",
      tag: "1.2",
      sharedWith: ["base"],
    });
  });

  test("extends from another file (compose-go loader/testdata/extends/withdir: file relative to the extending file)", () => {
    const { dir, at } = project({
      "compose.yaml": "services:\n  web:\n    extends:\n      file: dir/base.yaml\n      service: base\n",
      "dir/base.yaml": "services:\n  base:\n    image: base:4.0\n",
    });
    expect(spot(dir, at("web", "base:4.0"))).toMatchObject({ file: "dir/base.yaml", tag: "4.0" });
  });

  test("repo:tag@sha256: the tag and the digest (compose spec: image with a digest)", () => {
    const digest = `sha256:${"a".repeat(64)}`;
    const { dir, at } = project({ "compose.yaml": `services:\n  web:\n    image: reg.lan:5000/app:1.0@${digest}\n` });
    expect(spot(dir, at("web", `reg.lan:5000/app:1.0@${digest}`))).toMatchObject({ tag: "1.0", digest });
  });

  test("a registry port is not a tag (reference grammar: the tag follows the last `/`)", () => {
    const { at } = project({ "compose.yaml": "services:\n  web:\n    image: reg.lan:5000/app\n" });
    expect(at("web", "reg.lan:5000/app")).toEqual({ ok: false, reason: "web's image reg.lan:5000/app names no tag" });
  });
});

describe("holds, with the reason", () => {
  test("a variable of the shell that ran compose (compose-go: the process environment wins over .env)", () => {
    const { at } = project({ "compose.yaml": "services:\n  web:\n    image: app:${APP_TAG}\n" });
    expect(at("web", "app:2.3.1")).toEqual({
      ok: false,
      reason:
        "web's tag comes from APP_TAG in the shell that ran compose: not in a file (the files say app:, the container runs app:2.3.1)",
    });
  });

  test("a .env value the shell overrode", () => {
    const { at } = project({
      "compose.yaml": "services:\n  web:\n    image: app:${APP_TAG}\n",
      ".env": "APP_TAG=1.0\n",
    });
    expect((at("web", "app:2.0") as { reason: string }).reason).toStartWith(
      "web's tag comes from APP_TAG in the shell that ran compose",
    );
  });

  test("a tag put together from two variables", () => {
    const { at } = project({
      "compose.yaml": "services:\n  web:\n    image: app:${MAJOR}.${MINOR}\n",
      ".env": "MAJOR=1\nMINOR=2\n",
    });
    expect((at("web", "app:1.2") as { reason: string }).reason).toBe(
      "web's tag is put together from several places (MAJOR from .env, MINOR from .env): svc changes one run of text only",
    );
  });

  test("a variable also used outside an image", () => {
    const { at } = project({
      "compose.yaml": "services:\n  web:\n    image: app:${TAG}\n    environment:\n      VERSION: ${TAG}\n",
      ".env": "TAG=1.0\n",
    });
    expect((at("web", "app:1.0") as { reason: string }).reason).toBe(
      "TAG, which holds web's tag, is also used at compose.yaml line 5, not as an image",
    );
  });

  test("a file svc cannot see", () => {
    const located = locate(
      {
        name: "p",
        service: "web",
        workingDir: "/srv/nowhere",
        configFiles: ["/srv/nowhere/compose.yaml"],
        envFiles: [],
      },
      "app:1",
    );
    expect(located).toEqual({
      ok: false,
      reason: "svc cannot see /srv/nowhere/compose.yaml (mount the project folder at the same path: docs/compose.md)",
    });
  });

  test("a double-quoted line with an escape inside the tag is not changed", () => {
    const { at } = project({ "compose.yaml": 'services:\n  web:\n    image: "app:1\\u002e0"\n' });
    expect((at("web", "app:1.0") as { reason: string }).reason).toStartWith(
      "web's tag is put together from several places",
    );
  });
});

describe("interpolation keeps where each character came from", () => {
  test("$$ is a literal dollar (compose-go template: escaped)", () => {
    expect(interpolate(untraced("a$$b"), new Map()).value.text).toBe("a$b");
  });
  test("${VAR:?err} takes the value when set (compose-go template: required)", () => {
    const env = parseEnvFile("V=1\n", ".env");
    expect(interpolate(untraced("x:${V:?missing}"), env).value.text).toBe("x:1");
  });
});

/** Top-level `include:` (compose 2.20+), as compose-go's loader/include.go ApplyInclude loads it. */
describe("a service from an included file", () => {
  test("a path in the same folder (compose-go loader/testdata/include/compose.yaml: `include: [{path: included.yaml}]`)", () => {
    const { dir, at } = project({
      "compose.yaml": "include:\n  - path: included.yaml\n",
      "included.yaml": "services:\n  included:\n    image: app:1.0.0\n",
    });
    expect(spot(dir, at("included", "app:1.0.0"))).toMatchObject({ file: "included.yaml", tag: "1.0.0", at: "1.0.0" });
  });

  test("a file in a subfolder with its own .env (ApplyInclude: the included project's folder is its first file's, its .env read from there)", () => {
    const { dir, at } = project({
      "compose.yaml": "include:\n  - ./db/compose.yaml\nservices:\n  web:\n    image: web:1\n",
      "db/compose.yaml": "services:\n  db:\n    image: postgres:${PG_TAG}\n",
      "db/.env": "PG_TAG=16.4\n",
    });
    expect(spot(dir, at("db", "postgres:16.4"))).toMatchObject({ file: "db/.env", tag: "16.4", variable: "PG_TAG" });
  });

  test("the including project's .env wins over the included one's (ApplyInclude: environment.Clone().Merge(envFromFile) keeps what is set)", () => {
    const { dir, at } = project({
      "compose.yaml": "include:\n  - db/compose.yaml\n",
      ".env": "PG_TAG=17.0\n",
      "db/compose.yaml": "services:\n  db:\n    image: postgres:${PG_TAG}\n",
      "db/.env": "PG_TAG=16.4\n",
    });
    expect(spot(dir, at("db", "postgres:17.0"))).toMatchObject({ file: ".env", tag: "17.0" });
  });

  test("env_file and project_directory of an include, relative to the including project's folder (ApplyInclude)", () => {
    const { dir, at } = project({
      "compose.yaml":
        "include:\n  - path: [stacks/db.yaml, stacks/db.override.yaml]\n    project_directory: stacks\n    env_file: stacks/db.env\n",
      "stacks/db.yaml": "services:\n  db:\n    image: postgres:1\n",
      "stacks/db.override.yaml": "services:\n  db:\n    image: postgres:${PG_TAG:-16.3}\n",
      "stacks/db.env": "PG_TAG=16.4\n",
    });
    expect(spot(dir, at("db", "postgres:16.4"))).toMatchObject({ file: "stacks/db.env", tag: "16.4" });
  });

  test("an include inside an included file (ApplyInclude runs for every file it loads)", () => {
    const { dir, at } = project({
      "compose.yaml": "include: [a/compose.yaml]\n",
      "a/compose.yaml": "include: [b/compose.yaml]\n",
      "a/b/compose.yaml": "services:\n  deep:\n    image: deep:2.0\n",
    });
    expect(spot(dir, at("deep", "deep:2.0"))).toMatchObject({ file: "a/b/compose.yaml", tag: "2.0" });
  });

  test("holds: an included file svc cannot see, a remote include, a path with a variable", () => {
    expect(
      project({ "compose.yaml": "include: [gone/compose.yaml]\nservices:\n  web:\n    image: web:1\n" }).at(
        "web",
        "web:1",
      ),
    ).toMatchObject({
      ok: false,
      reason: expect.stringMatching(
        /^svc cannot see \/.*\/gone\/compose\.yaml, which compose\.yaml includes \(mount the project folder at the same path: docs\/compose\.md\)$/,
      ),
    });
    expect(project({ "compose.yaml": "include: [oci://docker.io/me/stack:1]\n" }).at("db", "db:1")).toEqual({
      ok: false,
      reason: expect.stringContaining("names a remote file (oci://docker.io/me/stack:1): svc cannot see it"),
    });
    expect(project({ "compose.yaml": "include:\n  - ${STACK}/compose.yaml\n" }).at("db", "db:1")).toEqual({
      ok: false,
      reason: expect.stringContaining("names its path with a variable: svc does not follow it"),
    });
  });
});
