import { expect, test } from "bun:test";
import type { ImageSummary } from "../../../src/engine/port.ts";
import { familiarName, imagesOfContainers } from "../../../src/updater/check/images.ts";

// the engine's `reference` filter matches a repository by its familiar name
// (distribution/reference FamiliarName, which moby's image list filter uses)
test.each([
  ["nginx", "nginx"],
  ["nginx:1.27", "nginx"],
  ["docker.io/library/nginx:1.27", "nginx"],
  ["index.docker.io/library/nginx", "nginx"],
  ["user/app:2", "user/app"],
  ["docker.io/user/app@sha256:" + "a".repeat(64), "user/app"],
  ["ghcr.io/o/app:1", "ghcr.io/o/app"],
  ["127.0.0.1:5000/svc/app:1", "127.0.0.1:5000/svc/app"],
  ["localhost:5000/app", "localhost:5000/app"],
])("familiarName(%p) is %p", (image, name) => {
  expect(familiarName(image)).toBe(name);
});

function engineWith(images: ImageSummary[]) {
  const asked: (readonly string[] | "untagged" | undefined)[] = [];
  return {
    asked,
    async listImages(options: { repositories?: readonly string[]; dangling?: boolean } = {}) {
      asked.push(options.dangling ? "untagged" : options.repositories);
      if (options.dangling) return images.filter((image) => image.repoTags.length === 0);
      const wanted = options.repositories;
      if (!wanted) return images;
      return images.filter((image) =>
        image.repoTags.some((tag) => wanted.includes(tag.slice(0, tag.lastIndexOf(":")))),
      );
    },
  };
}

const app: ImageSummary = { id: "sha256:app", repoTags: ["r.io/app:1"], repoDigests: [] };
const web: ImageSummary = { id: "sha256:web", repoTags: ["r.io/web:2"], repoDigests: [] };
const untagged: ImageSummary = { id: "sha256:old", repoTags: [], repoDigests: [] };

test("the cycle's repositories are asked for, and their lists are enough when they hold every container's image", async () => {
  const engine = engineWith([app, web, untagged]);
  const images = await imagesOfContainers(engine, [{ image: "r.io/app:1", imageId: "sha256:app" }]);
  expect(images).toEqual([app]);
  expect(engine.asked).toEqual([["r.io/app"]]);
});

test("a container whose image those lists lack (its tag moved on) finds it among the untagged images, not in the whole list", async () => {
  const engine = engineWith([app, web, untagged]);
  const images = await imagesOfContainers(engine, [
    { image: "r.io/app:1", imageId: "sha256:app" },
    { image: "r.io/app:1", imageId: "sha256:old" },
  ]);
  expect(images).toEqual([app, untagged]);
  expect(engine.asked).toEqual([["r.io/app"], "untagged"]);
});

test("a container whose image is neither in its repository nor untagged (tagged elsewhere only) brings the whole list", async () => {
  const engine = engineWith([app, web, untagged]);
  const images = await imagesOfContainers(engine, [{ image: "r.io/app:1", imageId: "sha256:web" }]);
  expect(images).toEqual([app, web, untagged]);
  expect(engine.asked).toEqual([["r.io/app"], "untagged", undefined]);
});

test("an image name that does not parse brings the whole list at once", async () => {
  const engine = engineWith([app, web]);
  expect(await imagesOfContainers(engine, [{ image: "Not A Reference", imageId: "sha256:x" }])).toEqual([app, web]);
  expect(engine.asked).toEqual([undefined]);
});
