/**
 * The local images a cycle's check reads: those of its containers' repositories, asked of the
 * engine repository by repository where it can filter them (engine/docker.ts, docs/decisions.md
 * "Engine"); a container's image not among them is looked for among the untagged images (its tag
 * moved on: a pull beside svc, an update rolled back), and the whole list is asked for only when
 * it is not there either (an image tagged in another repository only, or created from an id).
 * A container whose tag moved stays so cycle after cycle, and the whole list costs the containerd
 * store some 9 ms of CPU an image where the untagged images' list costs a few.
 */
import type { Engine, ImageSummary } from "../../engine/port.ts";
import { DOCKER_HUB, parseReference } from "../../registry/reference.ts";

/** "nginx" for docker.io/library/nginx, "user/app" on Docker Hub, "host:5000/app" elsewhere: how the engine's `reference` filter names a repository. */
export function familiarName(image: string): string | null {
  try {
    const ref = parseReference(image);
    if (ref.registry !== DOCKER_HUB) return `${ref.registry}/${ref.repository}`;
    return ref.repository.startsWith("library/") ? ref.repository.slice("library/".length) : ref.repository;
  } catch {
    return null;
  }
}

export async function imagesOfContainers(
  engine: Pick<Engine, "listImages">,
  containers: Iterable<{ image: string; imageId: string }>,
): Promise<ImageSummary[]> {
  const all = [...containers];
  const names = all.map((c) => familiarName(c.image));
  if (names.includes(null)) return engine.listImages();
  const images = await engine.listImages({ repositories: [...new Set(names as string[])] });
  if (holdsEvery(images, all)) return images;
  const known = new Set(images.map((image) => image.id));
  const untagged = (await engine.listImages({ dangling: true })).filter((image) => !known.has(image.id));
  const both = [...images, ...untagged];
  return holdsEvery(both, all) ? both : engine.listImages();
}

function holdsEvery(images: readonly ImageSummary[], containers: readonly { imageId: string }[]): boolean {
  const ids = new Set(images.map((image) => image.id));
  return containers.every((c) => ids.has(c.imageId));
}
