/**
 * The compose labels a container has from its image name no file svc writes: the engine puts an
 * image's labels into each container of it, under the container's own (moby, daemon/commit.go,
 * `merge`: an image label is added when the container has no label of that key), so a value
 * equal to the image's came from the image. Each row names the source of its shape.
 */
import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { ComposeFiles, inheritedLabels, surveyProjects, untrustedBecause } from "../../../src/compose/index.ts";
import { defaultConfig } from "../../../src/config/index.ts";
import { silentLogger } from "../../../src/log/index.ts";
import { tellComposeProjects } from "../../../src/service/compose-projects.ts";
import { tempDir } from "../../temp.ts";

const PROJECT = "com.docker.compose.project";
const SERVICE = "com.docker.compose.service";
const WORKING_DIR = "com.docker.compose.project.working_dir";
const CONFIG_FILES = "com.docker.compose.project.config_files";
const ENV_FILE = "com.docker.compose.project.environment_file";

/** What compose writes on a container it makes (docker/compose, pkg/compose/loader.go, postProcessProject). */
const composed = {
  [PROJECT]: "media",
  [SERVICE]: "web",
  [WORKING_DIR]: "/srv/media",
  [CONFIG_FILES]: "/srv/media/compose.yaml",
  "com.docker.compose.oneoff": "False",
};
/** An image's own labels naming files of its choice. */
const hostile = {
  [PROJECT]: "x",
  [SERVICE]: "app",
  [WORKING_DIR]: "/etc",
  [CONFIG_FILES]: "/etc/app/compose.yaml",
  [ENV_FILE]: "/etc/app/.env",
};

describe("which compose labels a container has from its image", () => {
  test.each([
    // `docker run IMAGE`: every label is the image's (moby, daemon/commit.go, merge)
    [
      "docker run of an image with compose labels",
      hostile,
      hostile,
      [PROJECT, SERVICE, WORKING_DIR, CONFIG_FILES, ENV_FILE],
    ],
    // compose overrides the labels it sets; environment_file only with --env-file (pkg/compose/loader.go)
    ["compose up of an image with compose labels, no --env-file", { ...hostile, ...composed }, hostile, [ENV_FILE]],
    [
      "compose up --env-file of an image with compose labels",
      { ...hostile, ...composed, [ENV_FILE]: "/srv/media/prod.env" },
      hostile,
      [],
    ],
    ["compose up of an image without labels", composed, {}, []],
    // `docker run --label ...config_files=...` by the user: the value is not the image's
    [
      "docker run with the user's own labels over the image's",
      { ...hostile, [CONFIG_FILES]: "/srv/x.yaml" },
      hostile,
      [PROJECT, SERVICE, WORKING_DIR, ENV_FILE],
    ],
    // `compose build` labels its image with project and service (pkg/compose/build.go, getImageBuildLabels):
    // compose's own container then carries the same names, its folder and files its own
    ["compose up of an image compose built", composed, { [PROJECT]: "media", [SERVICE]: "web" }, []],
    // ... but without its own folder and files, equal names are the image's
    [
      "docker run of an image compose built",
      { [PROJECT]: "media", [SERVICE]: "web" },
      { [PROJECT]: "media", [SERVICE]: "web" },
      [PROJECT, SERVICE],
    ],
    // the folder the container's own, the files the image's: not compose's container
    [
      "only the folder its own",
      { ...hostile, [WORKING_DIR]: "/srv/media" },
      hostile,
      [PROJECT, SERVICE, CONFIG_FILES, ENV_FILE],
    ],
    // other labels of the image (a version, svc's) are not compose's naming labels
    [
      "other labels equal to the image's",
      { ...composed, "org.opencontainers.image.version": "1" },
      { "org.opencontainers.image.version": "1" },
      [],
    ],
  ])("%s", (_what, labels, image, expected) => {
    expect(inheritedLabels(labels, image)).toEqual(expected);
  });
});

describe("why svc does not write the files a container's labels name", () => {
  test("one label, several labels, and an image whose labels cannot be read", () => {
    expect(untrustedBecause({ ...hostile, ...composed }, hostile)).toBe(
      `label ${ENV_FILE} comes from its image: svc does not write files an image names`,
    );
    expect(untrustedBecause({ [PROJECT]: "x", [SERVICE]: "app", [CONFIG_FILES]: "/f" }, { [CONFIG_FILES]: "/f" })).toBe(
      `label ${CONFIG_FILES} comes from its image: svc does not write files an image names`,
    );
    expect(untrustedBecause(hostile, hostile)).toBe(
      `labels ${PROJECT}, ${SERVICE}, ${WORKING_DIR}, ${CONFIG_FILES}, ${ENV_FILE} come from its image: svc does not write files an image names`,
    );
    expect(untrustedBecause(composed, null)).toBe(
      "the labels of its image cannot be read: svc does not write files its labels may name",
    );
    expect(untrustedBecause(composed, {})).toBeNull();
  });

  test("a container whose compose labels came from its image is left alone on purpose, before any file is read", () => {
    const dir = tempDir("svc-compose-trust-");
    const file = join(dir, "compose.yaml");
    writeFileSync(file, "services:\n  app:\n    image: app:1.0.0\n");
    const labels = { [PROJECT]: "x", [SERVICE]: "app", [WORKING_DIR]: dir, [CONFIG_FILES]: file };
    const compose = new ComposeFiles({ write: true, stateDir: null, cli: null });
    expect(compose.where(labels, "app:1.0.0", labels)).toEqual({
      ok: false,
      reason: `labels ${PROJECT}, ${SERVICE}, ${WORKING_DIR}, ${CONFIG_FILES} come from its image: svc does not write files an image names`,
      optedOut: true,
    });
    // the same labels set by compose (or the user) are the container's own: the file is found
    expect(compose.where(labels, "app:1.0.0", {})).toMatchObject({ ok: true });
  });
});

describe("the start-up line", () => {
  test("names a project whose labels came from its image among those svc does not write", () => {
    const dir = tempDir("svc-compose-trust-survey-");
    writeFileSync(join(dir, "compose.yaml"), "services: {}\n");
    const own = { [PROJECT]: "media", [SERVICE]: "web", [WORKING_DIR]: dir, [CONFIG_FILES]: join(dir, "compose.yaml") };
    const images = new Map([
      ["sha256:bad", { ...own, [PROJECT]: "nas" }],
      ["sha256:good", {}],
    ]);
    const line = surveyProjects(
      [
        { labels: own, imageId: "sha256:good" },
        { labels: { ...own, [PROJECT]: "nas" }, imageId: "sha256:bad" },
      ],
      true,
      images,
    );
    expect(line).toBe(
      `compose: svc can write media; not nas (labels ${PROJECT}, ${SERVICE}, ${WORKING_DIR}, ${CONFIG_FILES} come from its image: svc does not write files an image names)`,
    );
  });
});

describe("the start-up line's wiring", () => {
  test("asks for no image when no container in scope is compose's (svc starts often: a whole list costs the engine)", async () => {
    let asked = 0;
    const engine = {
      listContainers: async () => [
        { id: "a", name: "a", image: "app:1", imageId: "sha256:a", state: "running" as const, labels: {} },
      ],
      listImages: async () => {
        asked++;
        return [];
      },
    };
    const lines: string[] = [];
    await tellComposeProjects(engine, defaultConfig(), surveyProjects, {
      ...silentLogger,
      info: (l: string) => lines.push(l),
    });
    expect(asked).toBe(0);
    expect(lines).toEqual([]);
  });

  test("gives the survey the one image list's labels, an image listed as having none as {}", async () => {
    const dir = tempDir("svc-compose-trust-wiring-");
    writeFileSync(join(dir, "compose.yaml"), "services: {}\n");
    const own = { [PROJECT]: "media", [SERVICE]: "web", [WORKING_DIR]: dir, [CONFIG_FILES]: join(dir, "compose.yaml") };
    const named = { ...own, [PROJECT]: "nas" };
    const container = (name: string, imageId: string, labels: Record<string, string>) => ({
      id: name,
      name,
      image: "app:1",
      imageId,
      state: "running" as const,
      labels,
    });
    const engine = {
      listContainers: async () => [container("web", "sha256:plain", own), container("nas", "sha256:named", named)],
      listImages: async () => [
        { id: "sha256:plain", repoTags: [], repoDigests: [], labels: {} },
        { id: "sha256:named", repoTags: [], repoDigests: [], labels: named },
      ],
    };
    const lines: string[] = [];
    const log = { ...silentLogger, info: (line: string) => lines.push(line) };
    await tellComposeProjects(engine, defaultConfig(), surveyProjects, log);
    expect(lines).toEqual([
      `compose: svc can write media; not nas (labels ${PROJECT}, ${SERVICE}, ${WORKING_DIR}, ${CONFIG_FILES} come from its image: svc does not write files an image names)`,
    ]);
  });
});
