/**
 * The image labels the compose trust rule reads come from the cycle's one image list: an engine
 * call only for an image listed without them (docs/compose.md, "Labels an image brings").
 */
import { expect, test } from "bun:test";
import { ComposeFiles } from "../../../src/compose/index.ts";
import type { ImageInspect, ImageSummary } from "../../../src/engine/port.ts";
import { locateCompose } from "../../../src/updater/containers/compose.ts";
import type { ContainerEntry } from "../../../src/updater/containers/entry.ts";
import { newTarget } from "../../../src/updater/cycle/target.ts";

const NAMING = {
  "com.docker.compose.project": "x",
  "com.docker.compose.service": "app",
  "com.docker.compose.project.working_dir": "/etc",
  "com.docker.compose.project.config_files": "/etc/compose.yaml",
};
const HELD = "come from its image: svc does not write files an image names";

function entry(name: string, imageId: string, labels: Record<string, string>): ContainerEntry {
  const summary = { id: name, name, image: "app:1.0.0", imageId, state: "running" as const, labels };
  return {
    ...newTarget(summary, { tagPolicy: "semver:minor" } as never),
    id: name,
    newImageId: null,
    oldDigest: null,
    newDigest: null,
    newImage: null,
  };
}

test("listed labels are used as they are; an image listed without labels is inspected once per container", async () => {
  const inspected: string[] = [];
  const engine = {
    inspectImage: async (reference: string) => {
      inspected.push(reference);
      return reference === "sha256:gone" ? null : ({ Config: { Labels: NAMING } } as unknown as ImageInspect);
    },
  };
  const images: ImageSummary[] = [
    { id: "sha256:named", repoTags: [], repoDigests: [], labels: NAMING },
    { id: "sha256:none", repoTags: [], repoDigests: [], labels: {} },
    { id: "sha256:unlisted-labels", repoTags: [], repoDigests: [] },
  ];
  const entries = [
    entry("named", "sha256:named", NAMING),
    entry("unlisted", "sha256:unlisted-labels", NAMING),
    entry("gone", "sha256:gone", NAMING),
    entry("plain", "sha256:named", {}),
    entry("own", "sha256:none", { ...NAMING, "com.docker.compose.project.config_files": "/nonexistent/compose.yaml" }),
  ];
  const compose = new ComposeFiles({ write: true, stateDir: null, cli: null });
  await locateCompose(compose, engine, images, entries, { dryRun: false });
  expect(inspected).toEqual(["sha256:unlisted-labels", "sha256:gone"]);
  const [named, unlisted, gone, plain, own] = entries.map((e) => e.composeSite);
  expect(named).toMatchObject({ ok: false, optedOut: true, reason: expect.stringContaining(HELD) });
  expect(unlisted).toMatchObject({ ok: false, optedOut: true, reason: expect.stringContaining(HELD) });
  expect(gone).toMatchObject({ ok: false, reason: expect.stringContaining("the labels of its image cannot be read") });
  expect(plain).toBeUndefined();
  // trusted: the files are looked for (and here not found)
  expect(own).toMatchObject({ ok: false, reason: expect.stringContaining("/nonexistent/compose.yaml") });
});
