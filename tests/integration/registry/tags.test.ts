/**
 * What tag policies ask the registry, against the sandbox's real registries: a repository's
 * tags (all pages), whether a tag has an image for our platform, and when an image was built.
 * Request counts are seen through a proxy of our own.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type Config, type DeepPartial, defaultConfig } from "../../../src/config/index.ts";
import { createRegistry, parseReference } from "../../../src/registry/index.ts";
import { docker, sandbox, uniqueName } from "../../harness.ts";
import { recordingLogger } from "../../support/logger.ts";
import { type Descriptor, Repository } from "./shapes.ts";
import { startProxy } from "./support.ts";

const amd64 = async () => ({ os: "linux", architecture: "amd64" });
const arm64 = async () => ({ os: "linux", architecture: "arm64" });
const TAGS = [
  "latest",
  "1.2-alpine",
  "2.0.0-rc.1",
  ...Array.from({ length: 3 }, (_, minor) => Array.from({ length: 11 }, (_, patch) => `1.${minor}.${patch}`)).flat(),
];

const repositories: Repository[] = [];
const cleanups: (() => void)[] = [];
afterAll(() => {
  for (const cleanup of cleanups) cleanup();
  for (const repository of repositories) repository.removeLocal();
});

function registryWith(overrides: DeepPartial<Config> = {}, options: Parameters<typeof createRegistry>[2] = {}) {
  return createRegistry(defaultConfig({ registry_timeout: 5_000, ...overrides }), recordingLogger(), {
    retry: { baseDelayMs: 10 },
    ...options,
  });
}

function repository(what: string): Repository {
  const repo = new Repository(uniqueName(`tags-${what}`));
  repositories.push(repo);
  return repo;
}

/** A repository holding an amd64 image and an arm64 image, each under a tag of its own. */
async function twoPlatforms(what: string) {
  const repo = repository(what);
  const amd = await repo.platformImage(await amd64());
  const arm = await repo.platformImage(await arm64());
  return { repo, amd, arm };
}

let versions: Repository;
let image: Descriptor;

beforeAll(async () => {
  versions = repository("many");
  image = await versions.platformImage({ os: "linux", architecture: "amd64" });
  for (const tag of TAGS)
    await versions.putManifest(tag, image.mediaType, await versions.manifestBody(image.digest, image.mediaType));
}, 120_000);

describe("tags", () => {
  test("every tag of a repository in one request; two asks in a session share it", async () => {
    const proxy = startProxy(sandbox().registry);
    cleanups.push(proxy.stop);
    const ref = parseReference(`${proxy.host}/${versions.name}:1.0.0`);
    const session = registryWith().session();
    const tags = await session.tags(ref);
    expect(tags).toEqual(expect.arrayContaining(TAGS));
    expect(tags.filter((t) => !t.startsWith("amd64-")).sort()).toEqual([...TAGS].sort());
    await session.tags(ref);
    expect(proxy.requests.filter((r) => r.endsWith("/tags/list"))).toEqual([`GET /v2/${versions.name}/tags/list`]);
  });

  test("pages are followed through the Link header until the last", async () => {
    // distribution 2.8 answers every tag at once whatever `n` asks; this proxy pages the real
    // answer as Docker Hub and GHCR do (`n` and `last`, a relative Link to the next page)
    const upstream = sandbox().registry;
    const proxy = startProxy(upstream, (_request, url) => {
      if (!url.pathname.endsWith("/tags/list")) return undefined;
      return (async () => {
        const all = (
          (await (await fetch(`http://${upstream}${url.pathname}`)).json()) as { tags: string[] }
        ).tags.sort();
        const n = Number(url.searchParams.get("n") ?? 1000);
        const last = url.searchParams.get("last");
        const start = last === null ? 0 : all.indexOf(last) + 1;
        const page = all.slice(start, start + n);
        const more = start + n < all.length;
        const headers = more
          ? { Link: `<${url.pathname}?n=${n}&last=${encodeURIComponent(page.at(-1)!)}>; rel="next"` }
          : undefined;
        return Response.json({ name: versions.name, tags: page }, { headers });
      })();
    });
    cleanups.push(proxy.stop);
    const ref = parseReference(`${proxy.host}/${versions.name}:1.0.0`);
    const tags = await registryWith({}, { tagsPageSize: 10 }).session().tags(ref);
    expect(tags.filter((t) => !t.startsWith("amd64-")).sort()).toEqual([...TAGS].sort());
    expect(proxy.requests.filter((r) => r.endsWith("/tags/list")).length).toBe(Math.ceil(tags.length / 10));
  });

  test("a registry that refuses our page size is asked with its own", async () => {
    const proxy = startProxy(sandbox().registry, (_request, url) =>
      url.pathname.endsWith("/tags/list") && url.searchParams.get("n") === "1000"
        ? Response.json({ errors: [{ code: "PAGINATION_NUMBER_INVALID" }] }, { status: 400 })
        : undefined,
    );
    cleanups.push(proxy.stop);
    const tags = await registryWith()
      .session()
      .tags(parseReference(`${proxy.host}/${versions.name}:1.0.0`));
    expect(tags).toEqual(expect.arrayContaining(TAGS));
  });

  test("a repository that does not exist is a registry error naming host and status", async () => {
    const ref = parseReference(`${sandbox().registry}/${uniqueName("tags-none")}:1.0.0`);
    await expect(registryWith().session().tags(ref)).rejects.toMatchObject({
      kind: "registry",
      message: expect.stringMatching(
        new RegExp(
          `^registry ${sandbox().registry.replace(/\./g, "\\.")} answered 404 Not Found NAME_UNKNOWN to GET /v2/.+/tags/list$`,
        ),
      ),
    });
  });

  test("through the authenticated registry, with its credentials", async () => {
    const { authRegistry, authUser, authPass } = sandbox();
    const name = uniqueName("tags-auth");
    const reference = `${authRegistry}/${name}`;
    docker(["import", "-c", 'CMD ["/bin/sleep","3600"]', sandbox().rootfs, `${reference}:1.0.0`]);
    docker(["tag", `${reference}:1.0.0`, `${reference}:1.1.0`]);
    for (const tag of ["1.0.0", "1.1.0"]) docker(["push", "-q", `${reference}:${tag}`]);
    cleanups.push(() => docker(["rmi", "-f", `${reference}:1.0.0`, `${reference}:1.1.0`], { allowFailure: true }));
    const ref = parseReference(`${reference}:1.0.0`);
    expect(
      (
        await registryWith({ registry_credentials: [{ host: authRegistry, username: authUser, password: authPass }] })
          .session()
          .tags(ref)
      ).sort(),
    ).toEqual(["1.0.0", "1.1.0"]);
    await expect(registryWith().session().tags(ref)).rejects.toMatchObject({
      kind: "registry",
      message: expect.stringContaining("401"),
    });
  }, 60_000);
});

describe("platformImage", () => {
  test("an index with our platform, an index without it, a single image of another platform, a missing tag", async () => {
    const { repo, amd, arm } = await twoPlatforms("platforms");
    const both = await repo.pushIndex("2.0.0", [amd, arm]);
    await repo.pushIndex("2.1.0", [arm]);
    const armTag = (await repo.putManifest("2.2.0", arm.mediaType, await repo.manifestBody(arm.digest, arm.mediaType)))
      .digest;
    const session = registryWith().session();
    const ref = parseReference(`${repo.reference}:1.0.0`);
    expect(await session.platformImage(ref, "2.0.0", amd64)).toEqual({ digest: both });
    expect(await session.platformImage(ref, "2.1.0", amd64)).toBeNull();
    expect(await session.platformImage(ref, "2.2.0", amd64)).toBeNull();
    expect(await session.platformImage(ref, "2.2.0", arm64)).toEqual({ digest: armTag });
    expect(await session.platformImage(ref, "9.9.9", amd64)).toBeNull();
  }, 60_000);
});

describe("created", () => {
  test("the creation time in the image's config, for a single image and through an index", async () => {
    const { repo, amd, arm } = await twoPlatforms("created");
    await repo.pushIndex("3.0.0", [amd, arm]);
    const config = await repo.configOf(amd);
    const session = registryWith().session();
    const ref = parseReference(`${repo.reference}:3.0.0`);
    const expected = new Date(Date.parse(config.created));
    expect(Number.isNaN(expected.getTime())).toBe(false);
    expect(await session.created(ref, "3.0.0", amd64)).toEqual(expected);
    expect(await session.created(ref, amd.digest, amd64)).toEqual(expected);
    expect(await session.created(ref, "3.0.0", arm64)).toEqual(
      new Date(Date.parse((await repo.configOf(arm)).created)),
    );
  }, 60_000);
});
