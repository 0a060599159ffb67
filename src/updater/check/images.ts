/**
 * The local images a cycle's check reads: those of its containers' repositories, asked of the
 * engine repository by repository where it can filter them (engine/docker.ts, docs/decisions.md
 * "Engine"), and the whole list when a container's image is not among them (an image untagged
 * since it was pulled, or created from an id).
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
  const ids = new Set(images.map((image) => image.id));
  return all.every((c) => ids.has(c.imageId)) ? images : engine.listImages();
}
