/**
 * The challenge flow and the check session against small fake registries (Bun.serve on loopback):
 * where credentials go, GET fallbacks, token lifetimes, concurrency and timeouts.
 */
import { afterEach, expect, setSystemTime, test } from "bun:test";
import { defaultConfig } from "../../../src/config/index.ts";
import { silentLogger } from "../../../src/log/index.ts";
import { createRegistry, parseReference } from "../../../src/registry/index.ts";
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

test("Basic credentials never follow a redirect to another host", async () => {
  const blobStore = serve((request) => manifestResponse(request.method, false));
  const main = serve((request, url) => {
    if (request.headers.get("authorization") !== BASIC)
      return new Response(null, { status: 401, headers: { "WWW-Authenticate": 'Basic realm="r"' } });
    if (url.pathname === "/v2/") return new Response("{}");
    if (request.method === "HEAD") return new Response(null, { status: 405 });
    return new Response(null, {
      status: 307,
      headers: { Location: `http://${blobStore.host}/storage/manifest?sig=x` },
    });
  });
  const svc = registry({ registry_credentials: [{ host: main.host, username: USER, password: PASS }] });
  const result = await svc
    .session()
    .check(parseReference(`${main.host}/app:1`), { id: CONFIG_DIGEST, repoDigests: [] }, amd64);
  expect(result).toEqual({ stale: false, digest: MANIFEST_DIGEST });
  expect(blobStore.seen.map((s) => s.authorization)).toEqual([null]);
  expect(main.seen.filter((s) => s.path.includes("/manifests/")).map((s) => s.authorization)).toEqual([BASIC, BASIC]);
});

test("Bearer: Basic credentials go to the realm the challenge names, the registry sees only the token", async () => {
  let issued = 0;
  const realm = serve((request, url) => {
    issued++;
    if (request.headers.get("authorization") !== BASIC) return new Response(null, { status: 401 });
    return Response.json({ token: `tok-${url.searchParams.get("scope")}`, expires_in: 300 });
  });
  const main = serve((request, url) => {
    const challenge = `Bearer realm="http://${realm.host}/token",service="fake",scope="repository:ns/app:pull"`;
    if (request.headers.get("authorization") !== "Bearer tok-repository:ns/app:pull")
      return new Response(null, { status: 401, headers: { "WWW-Authenticate": challenge } });
    if (url.pathname === "/v2/") return new Response("{}");
    return manifestResponse(request.method);
  });
  const svc = registry({ registry_username: USER, registry_password: PASS });
  const ref = parseReference(`${main.host}/ns/app:1`);
  const local = { id: "sha256:other", repoDigests: [`${main.host}/ns/app@${MANIFEST_DIGEST}`] };
  expect((await svc.session().check(ref, local, amd64)).stale).toBe(false);
  expect((await svc.session().check(ref, local, amd64)).stale).toBe(false);
  expect(issued).toBe(1);
  expect(realm.seen[0]!.path).toBe(`/token?service=fake&scope=${encodeURIComponent("repository:ns/app:pull")}`);
  expect(main.seen.some((s) => s.authorization?.startsWith("Basic"))).toBe(false);
  const head = { method: "HEAD", path: "/v2/ns/app/manifests/1", authorization: "Bearer tok-repository:ns/app:pull" };
  expect(main.seen.filter((s) => s.path.includes("/manifests/"))).toEqual([head, head]);
});

test("an expired token is fetched again", async () => {
  let issued = 0;
  const realm = serve(() => Response.json({ token: `tok${++issued}`, expires_in: 60 }));
  const main = serve((request, url) => {
    if (!request.headers.get("authorization")?.startsWith("Bearer tok")) {
      return new Response(null, {
        status: 401,
        headers: { "WWW-Authenticate": `Bearer realm="http://${realm.host}/token"` },
      });
    }
    return url.pathname === "/v2/" ? new Response("{}") : manifestResponse(request.method);
  });
  const svc = registry();
  const ref = parseReference(`${main.host}/app:1`);
  const local = { id: CONFIG_DIGEST, repoDigests: [] };
  await svc.session().check(ref, local, amd64);
  await svc.session().check(ref, local, amd64);
  expect(issued).toBe(1);
  // a minute later by the clock (not slept: at load two checks can take longer than a short token lives)
  setSystemTime(new Date(Date.now() + 61_000));
  try {
    await svc.session().check(ref, local, amd64);
  } finally {
    setSystemTime();
  }
  expect(issued).toBe(2);
});

test("a HEAD without a digest falls back to GET", async () => {
  const main = serve((request, url) =>
    url.pathname === "/v2/" ? new Response("{}") : manifestResponse(request.method, request.method !== "HEAD"),
  );
  const svc = registry();
  const ref = parseReference(`${main.host}/app:1`);
  expect(await svc.session().check(ref, { id: CONFIG_DIGEST, repoDigests: [] }, amd64)).toEqual({
    stale: false,
    digest: MANIFEST_DIGEST,
  });
  expect(await svc.session().check(ref, { id: "sha256:old", repoDigests: [] }, amd64)).toEqual({
    stale: true,
    digest: MANIFEST_DIGEST,
  });
  expect(main.seen.filter((s) => s.path.includes("/manifests/")).map((s) => s.method)).toEqual([
    "HEAD",
    "GET",
    "HEAD",
    "GET",
  ]);
});

test("a session never has more than registry_concurrency requests in flight", async () => {
  let inFlight = 0;
  let most = 0;
  const main = serve(async (request, url) => {
    if (url.pathname === "/v2/") return new Response("{}");
    inFlight++;
    most = Math.max(most, inFlight);
    await Bun.sleep(20);
    inFlight--;
    return manifestResponse(request.method);
  });
  const session = registry({ registry_concurrency: 2 }).session();
  await Promise.all(
    Array.from({ length: 8 }, (_, i) =>
      session.check(parseReference(`${main.host}/app${i}:1`), { id: CONFIG_DIGEST, repoDigests: [] }, amd64),
    ),
  );
  expect(most).toBe(2);
  expect(main.seen.filter((s) => s.method === "HEAD")).toHaveLength(8);
});

test("a registry that does not answer in time is a registry error", async () => {
  const main = serve(async (_request, url) => {
    if (url.pathname === "/v2/") return new Response("{}");
    await Bun.sleep(5_000);
    return new Response(null, { status: 500 });
  });
  // 1 s: the probe of /v2/ answers at once, but took past 0.1 s on a loaded machine
  const svc = createRegistry(defaultConfig({ registry_timeout: 1_000 }), silentLogger, {
    retry: { retries: 1, baseDelayMs: 1 },
  });
  const error = await svc
    .session()
    .check(parseReference(`${main.host}/app:1`), { id: CONFIG_DIGEST, repoDigests: [] }, amd64)
    .catch((e) => e);
  expect(error.kind).toBe("registry");
  expect(error.message).toBe(`registry ${main.host} did not answer within 1 s`);
  expect(main.seen.filter((s) => s.method === "HEAD")).toHaveLength(2);
});

test("pullAuth: nothing for anonymous hosts, the resolved credentials otherwise", async () => {
  const svc = registry({
    registry_credentials: [
      { host: "ghcr.io", username: USER, password: PASS },
      { host: "docker.io", username: "hub", password: "hp" },
    ],
  });
  expect(await svc.pullAuth(parseReference("ghcr.io/a/b"))).toEqual({
    username: USER,
    password: PASS,
    serveraddress: "ghcr.io",
  });
  expect(await svc.pullAuth(parseReference("nginx"))).toEqual({
    username: "hub",
    password: "hp",
    serveraddress: "https://index.docker.io/v1/",
  });
  expect(await svc.pullAuth(parseReference("quay.io/a/b"))).toBeUndefined();
});

test("redaction: no credential in any log line or error, whatever the failure", async () => {
  const lines: string[] = [];
  const record = (level: string) => (message: string, fields?: Record<string, unknown>) =>
    void lines.push(`${level} ${message} ${JSON.stringify(fields ?? {})}`);
  const log = {
    trace: record("trace"),
    debug: record("debug"),
    info: record("info"),
    warn: record("warn"),
    error: record("error"),
    child: () => log,
  };
  const realm = serve(
    () => new Response(JSON.stringify({ errors: [{ code: "DENIED", message: `bad ${PASS}` }] }), { status: 403 }),
  );
  const bearer = serve(
    () =>
      new Response(null, {
        status: 401,
        headers: { "WWW-Authenticate": `Bearer realm="http://${realm.host}/token",service="s"` },
      }),
  );
  const basic = serve(
    () =>
      new Response(JSON.stringify({ errors: [{ code: "UNAUTHORIZED", message: `no ${USER}:${PASS}` }] }), {
        status: 401,
        headers: { "WWW-Authenticate": 'Basic realm="r"' },
      }),
  );
  const svc = createRegistry(
    defaultConfig({ head_warn_strategy: "always", registry_username: USER, registry_password: PASS }),
    log,
    { retry: { baseDelayMs: 1 } },
  );
  const errors: string[] = [];
  for (const host of [bearer.host, basic.host]) {
    const error = await svc
      .session()
      .check(parseReference(`${host}/app:1`), { id: CONFIG_DIGEST, repoDigests: [] }, amd64)
      .catch((e) => e);
    expect(error.kind).toBe("registry");
    expect(error.message).toContain(host === bearer.host ? realm.host : host);
    errors.push(error.message);
  }
  expect(lines.length).toBeGreaterThan(0);
  for (const text of [...lines, ...errors]) {
    expect(text).not.toContain(PASS);
    expect(text).not.toContain(BASIC.slice(6));
  }
});

test("concurrent checks of one repository share one token request", async () => {
  let issued = 0;
  const realm = serve(async () => {
    issued++;
    await Bun.sleep(20);
    return Response.json({ token: "tok", expires_in: 300 });
  });
  const main = serve((request, url) => {
    if (request.headers.get("authorization") !== "Bearer tok") {
      return new Response(null, {
        status: 401,
        headers: { "WWW-Authenticate": `Bearer realm="http://${realm.host}/token"` },
      });
    }
    return url.pathname === "/v2/" ? new Response("{}") : manifestResponse(request.method);
  });
  const session = registry().session();
  const results = await Promise.all(
    ["1", "2", "3", "4"].map((tag) =>
      session.check(parseReference(`${main.host}/app:${tag}`), { id: CONFIG_DIGEST, repoDigests: [] }, amd64),
    ),
  );
  expect(results.every((r) => !r.stale)).toBe(true);
  expect(issued).toBe(1);
});
