/**
 * A hostile registry served in-process: bodies streamed past every cap, answers of the wrong
 * shape, digests that are not digests. Each fails the one image it concerns with a reason naming
 * the cap or the field (docs/security.md); the same session goes on answering for other images.
 */
import { afterEach, expect, test } from "bun:test";
import { type Config, type DeepPartial, defaultConfig } from "../../../src/config/index.ts";
import { REGISTRY_LIMITS, readCapped } from "../../../src/registry/answers.ts";
import { createRegistry, parseReference } from "../../../src/registry/index.ts";
import { registrableDomain } from "../../../src/registry/transport.ts";
import { recordingLogger } from "../../support/logger.ts";
import {
  amd64,
  BASIC,
  CONFIG_DIGEST,
  MANIFEST_DIGEST,
  manifestResponse,
  PASS,
  registry,
  serve,
  stopServers,
  USER,
} from "./fakes.ts";

afterEach(stopServers);

/** JSON whitespace, streamed without a Content-Length until `limit` bytes; `sent` counts them. */
function flood(limit: number, sent: { bytes: number }): ReadableStream<Uint8Array> {
  const chunk = new Uint8Array(256 * 1024).fill(0x20);
  return new ReadableStream({
    pull(controller) {
      if (sent.bytes >= limit) return controller.close();
      sent.bytes += chunk.byteLength;
      controller.enqueue(chunk);
    },
  });
}

const FLOOD = 64 * 1024 * 1024;
const local = { id: CONFIG_DIGEST, repoDigests: [] };

/** A registry whose /v2/hostile/... answers `hostile(path)`; every other repository is a good one. */
function hostileRegistry(hostile: (path: string, request: Request) => Response | undefined) {
  return serve((request, url) => {
    if (url.pathname === "/v2/") return new Response("{}");
    if (url.pathname.startsWith("/v2/hostile/")) {
      const answer = hostile(url.pathname, request);
      if (answer) return answer;
    }
    return manifestResponse(request.method);
  });
}

async function failure(promise: Promise<unknown>): Promise<{ kind: string; message: string }> {
  const error = await promise.then(
    () => null,
    (e: { kind: string; message: string }) => e,
  );
  expect(error).not.toBeNull();
  return error!;
}

test("a manifest streamed past 4 MiB fails its image, naming the cap; the session checks the next image", async () => {
  const sent = { bytes: 0 };
  const main = hostileRegistry((_path, request) =>
    request.method === "GET" ? new Response(flood(FLOOD, sent)) : new Response(null, { status: 405 }),
  );
  const session = registry().session();
  const error = await failure(session.check(parseReference(`${main.host}/hostile:1`), local, amd64));
  expect(error.kind).toBe("registry");
  expect(error.message).toContain("is larger than 4 MiB");
  expect(sent.bytes).toBeLessThan(FLOOD);
  expect(await session.check(parseReference(`${main.host}/good:1`), local, amd64)).toEqual({
    stale: false,
    digest: MANIFEST_DIGEST,
  });
});

test("a declared Content-Length past the cap is refused before the body is read", async () => {
  let pulled = 0;
  const body = new ReadableStream({ pull: (controller) => void (pulled++, controller.enqueue(new Uint8Array(1))) });
  const response = new Response(body, { headers: { "Content-Length": String(REGISTRY_LIMITS.tokenBytes + 1) } });
  const error = await failure(readCapped(response, REGISTRY_LIMITS.tokenBytes, "the answer"));
  expect(error.message).toBe("the answer is larger than 64 KiB, the most svc reads of it");
  expect(pulled).toBeLessThanOrEqual(1); // a stream may be primed once; nothing is read
});

test("a tags page streamed past 8 MiB fails the listing, naming the cap", async () => {
  const sent = { bytes: 0 };
  const main = hostileRegistry((path) => (path.includes("/tags/") ? new Response(flood(FLOOD, sent)) : undefined));
  const error = await failure(
    registry()
      .session()
      .tags(parseReference(`${main.host}/hostile:1`)),
  );
  expect(error.message).toContain("tags/list is larger than 8 MiB");
  expect(sent.bytes).toBeLessThan(FLOOD);
});

test("more than 100,000 tags over many pages fail the listing, naming the cap", async () => {
  const main = hostileRegistry((path) => {
    if (!path.includes("/tags/")) return undefined;
    const tags = Array.from({ length: 30_000 }, (_, i) => `t${i}`);
    return Response.json({ tags }, { headers: { Link: `</v2/hostile/tags/list?last=${Math.random()}>; rel="next"` } });
  });
  const error = await failure(
    registry()
      .session()
      .tags(parseReference(`${main.host}/hostile:1`)),
  );
  expect(error.message).toContain(`lists more than ${REGISTRY_LIMITS.tagsPerRepository} tags`);
});

test("a token answer past 64 KiB fails, naming the cap", async () => {
  const sent = { bytes: 0 };
  const realm = serve(() => new Response(flood(FLOOD, sent)));
  const main = serve((request) => {
    if (request.headers.get("authorization")) return manifestResponse(request.method);
    return new Response(null, {
      status: 401,
      headers: { "WWW-Authenticate": `Bearer realm="http://${realm.host}/token"` },
    });
  });
  const error = await failure(
    registry()
      .session()
      .check(parseReference(`${main.host}/app:1`), local, amd64),
  );
  expect(error.message).toContain("is larger than 64 KiB");
  expect(sent.bytes).toBeLessThan(FLOOD);
});

const WRONG_SHAPES: {
  name: string;
  path: string;
  body: unknown;
  expected: string;
  ask: "check" | "tags" | "created";
}[] = [
  {
    name: "an index whose manifests is not a list",
    path: "/manifests/",
    body: { mediaType: "application/vnd.oci.image.index.v1+json", manifests: "all" },
    expected: "at manifests",
    ask: "check",
  },
  {
    name: "an index entry whose digest is a path",
    path: "/manifests/",
    body: { manifests: [{ digest: "../../../v2/x", platform: { os: "linux", architecture: "amd64" } }] },
    expected: "at manifests.0.digest: is not a digest",
    ask: "check",
  },
  {
    name: "tags that are not strings",
    path: "/tags/",
    body: { tags: [1, { a: 2 }] },
    expected: "at tags.0",
    ask: "tags",
  },
  {
    name: "a config whose os is a number",
    path: "/blobs/",
    body: { os: 5, architecture: "amd64" },
    expected: "at os",
    ask: "created",
  },
];

for (const shape of WRONG_SHAPES) {
  test(`${shape.name}: a registry error naming the field`, async () => {
    const main = hostileRegistry((path, request) => {
      if (request.method === "HEAD") return new Response(null, { status: 405 });
      return path.includes(shape.path) ? Response.json(shape.body) : undefined;
    });
    const ref = parseReference(`${main.host}/hostile/app:1`);
    const session = registry().session();
    const asked =
      shape.ask === "check"
        ? session.check(ref, { id: "sha256:old", repoDigests: [] }, amd64)
        : shape.ask === "tags"
          ? session.tags(ref)
          : session.created(ref, "1", amd64);
    const error = await failure(asked);
    expect(error.kind).toBe("registry");
    expect(error.message).toContain("is not what a registry answers");
    expect(error.message).toContain(shape.expected);
  });
}

test("a token answer of the wrong type is a registry error, not a crash", async () => {
  const realm = serve(() => Response.json({ token: { nested: true } }));
  const main = serve((request) => {
    if (request.headers.get("authorization")) return manifestResponse(request.method);
    return new Response(null, {
      status: 401,
      headers: { "WWW-Authenticate": `Bearer realm="http://${realm.host}/token"` },
    });
  });
  const error = await failure(
    registry()
      .session()
      .check(parseReference(`${main.host}/app:1`), local, amd64),
  );
  expect(error.message).toContain(`token service ${realm.host}`);
  expect(error.message).toContain("at token");
});

test("a Docker-Content-Digest that is not a digest is ignored: the digest is computed from the manifest", async () => {
  const main = hostileRegistry((_path, request) => {
    const headers = {
      "Docker-Content-Digest": "../../../etc/passwd",
      "Content-Type": "application/vnd.docker.distribution.manifest.v2+json",
    };
    return request.method === "HEAD"
      ? new Response(null, { headers })
      : new Response(manifestResponse("GET", false).body, { headers });
  });
  expect(
    await registry()
      .session()
      .check(parseReference(`${main.host}/hostile:1`), local, amd64),
  ).toEqual({ stale: false, digest: MANIFEST_DIGEST });
});

/** A registry on 127.0.0.1 whose Bearer challenge names a realm on `realmAddress`, which hands out a token to anyone. */
function realmElsewhere(realmAddress: string) {
  const realm = serve(() => Response.json({ token: "tok", expires_in: 300 }), realmAddress);
  const main = serve((request) => {
    if (request.headers.get("authorization") === "Bearer tok") return manifestResponse(request.method);
    return new Response(null, {
      status: 401,
      headers: { "WWW-Authenticate": `Bearer realm="http://${realm.host}/token",service="s"` },
    });
  });
  return { realm, main };
}

async function checkTwice(main: { host: string }, overrides: DeepPartial<Config>) {
  const log = recordingLogger();
  const svc = createRegistry(defaultConfig({ registry_timeout: 2_000, ...overrides }), log, {
    retry: { baseDelayMs: 1 },
  });
  for (const tag of ["1", "2"])
    expect((await svc.session().check(parseReference(`${main.host}/app:${tag}`), local, amd64)).stale).toBe(false);
  return log.lines.filter((l) => l.level === "warn");
}

test("global credentials never go to a realm on another address: an anonymous token instead, and one warning naming both hosts", async () => {
  const { realm, main } = realmElsewhere("127.0.0.2");
  const warnings = await checkTwice(main, { registry_username: USER, registry_password: PASS });
  expect(realm.seen.map((s) => s.authorization)).toEqual([null]);
  expect(warnings).toEqual([
    expect.objectContaining({
      message: expect.stringContaining("global credentials"),
      fields: { registry: main.host, realm_host: realm.host },
    }),
  ]);
});

test("a registry's own credentials go where its realm says; so do global ones to the same loopback address", async () => {
  const other = realmElsewhere("127.0.0.2");
  expect(
    await checkTwice(other.main, { registry_credentials: [{ host: other.main.host, username: USER, password: PASS }] }),
  ).toEqual([]);
  expect(other.realm.seen.map((s) => s.authorization)).toEqual([BASIC]);
  const same = realmElsewhere("127.0.0.1");
  expect(await checkTwice(same.main, { registry_username: USER, registry_password: PASS })).toEqual([]);
  expect(same.realm.seen.map((s) => s.authorization)).toEqual([BASIC]);
});

test("what the engine is given follows the same rule: the global credentials only for a registry that asked, at its own realm", async () => {
  const global = { registry_username: USER, registry_password: PASS };
  const given = { username: USER, password: PASS };
  // a token realm elsewhere: nothing (and said once); at the same loopback address: given
  const elsewhere = realmElsewhere("127.0.0.2");
  expect(await registry(global).pullAuth(parseReference(`${elsewhere.main.host}/app:1`))).toBeUndefined();
  const same = realmElsewhere("127.0.0.1");
  expect(await registry(global).pullAuth(parseReference(`${same.main.host}/app:1`))).toMatchObject(given);
  // a registry that asks for Basic credentials gets them; one that asks for nothing does not
  const basic = serve(() => new Response(null, { status: 401, headers: { "WWW-Authenticate": 'Basic realm="r"' } }));
  expect(await registry(global).pullAuth(parseReference(`${basic.host}/app:1`))).toMatchObject(given);
  const open = serve(() => new Response("{}"));
  expect(await registry(global).pullAuth(parseReference(`${open.host}/app:1`))).toBeUndefined();
  // a registry's own entry: given wherever its realm may carry it (loopback here)
  expect(
    await registry({ registry_credentials: [{ host: elsewhere.main.host, ...given }] }).pullAuth(
      parseReference(`${elsewhere.main.host}/app:1`),
    ),
  ).toMatchObject(given);
});

test("registrable domains: a registry and its token service share one; other sites do not", () => {
  expect(registrableDomain("registry-1.docker.io")).toBe(registrableDomain("auth.docker.io"));
  expect(registrableDomain("registry.gitlab.com")).toBe(registrableDomain("gitlab.com:443"));
  expect(registrableDomain("registry.example.co.uk")).toBe("example.co.uk");
  expect(registrableDomain("evil.co.uk")).not.toBe(registrableDomain("registry.example.co.uk"));
  expect(registrableDomain("ghcr.io")).not.toBe(registrableDomain("attacker.io"));
  expect(registrableDomain("10.0.0.5:5000")).toBe("10.0.0.5");
});
