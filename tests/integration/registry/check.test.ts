/**
 * The digest check against the sandbox's real registries: the plain one (SVC_TEST_REGISTRY) and
 * the htpasswd one (SVC_TEST_AUTH_REGISTRY, Basic auth), through proxies of our own for 429s and
 * request counting, and a registry that is down.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type Config, type DeepPartial, defaultConfig } from "../../../src/config/index.ts";
import { createRegistry, type LocalImage, parseReference } from "../../../src/registry/index.ts";
import { buildImage, docker, freePort, sandbox, uniqueName } from "../../harness.ts";
import { recordingLogger } from "../../support/logger.ts";
import { localImage, startProxy, tempDir } from "./support.ts";

const amd64 = async () => ({ os: "linux", architecture: "amd64" });
const images: string[] = [];
const cleanups: (() => void)[] = [];
afterAll(() => {
  for (const cleanup of cleanups) cleanup();
  if (images.length) docker(["rmi", "-f", ...images], { allowFailure: true });
});

function build(reference: string): LocalImage {
  buildImage(reference);
  images.push(reference);
  return localImage(reference);
}

function registryWith(overrides: DeepPartial<Config> = {}, options: Parameters<typeof createRegistry>[2] = {}) {
  const log = recordingLogger();
  const registry = createRegistry(defaultConfig({ registry_timeout: 5_000, ...overrides }), log, {
    retry: { baseDelayMs: 10 },
    ...options,
  });
  return { registry, log };
}

describe("plain registry", () => {
  test("a just-pushed image is fresh; after a new push under the same tag it is stale", async () => {
    const reference = `${sandbox().registry}/${uniqueName("reg-plain")}:latest`;
    const first = build(reference);
    const { registry } = registryWith();

    const fresh = await registry.session().check(parseReference(reference), first, amd64);
    expect(fresh.stale).toBe(false);
    expect(first.repoDigests).toContain(`${reference.replace(/:latest$/, "")}@${fresh.digest}`);

    const second = build(reference);
    const stale = await registry.session().check(parseReference(reference), first, amd64);
    expect(stale).toEqual({ stale: true, digest: second.repoDigests[0]!.split("@")[1]! });
    // The new local image is fresh again.
    expect((await registry.session().check(parseReference(reference), second, amd64)).stale).toBe(false);
  });

  test("an image the engine knows only by ID (no RepoDigests) is compared by config digest", async () => {
    const reference = `${sandbox().registry}/${uniqueName("reg-nodigest")}:v1`;
    const local = build(reference);
    const { registry } = registryWith();
    expect(
      (await registry.session().check(parseReference(reference), { id: local.id, repoDigests: [] }, amd64)).stale,
    ).toBe(false);
    expect(
      (
        await registry
          .session()
          .check(parseReference(reference), { id: `sha256:${"0".repeat(64)}`, repoDigests: [] }, amd64)
      ).stale,
    ).toBe(true);
  });

  test("a tag that does not exist is a registry error naming host and status", async () => {
    const { registry } = registryWith();
    const ref = parseReference(`${sandbox().registry}/${uniqueName("reg-missing")}:nope`);
    const error = await registry
      .session()
      .check(ref, { id: "sha256:x", repoDigests: [] }, amd64)
      .catch((e) => e);
    expect(error.kind).toBe("registry");
    expect(error.message).toContain(sandbox().registry);
    expect(error.message).toContain("404");
  });

  test("a pinned reference is never stale and asks nothing", async () => {
    const proxy = startProxy(sandbox().registry);
    cleanups.push(proxy.stop);
    const { registry } = registryWith();
    const digest = `sha256:${"1".repeat(64)}`;
    const result = await registry
      .session()
      .check(parseReference(`${proxy.host}/x/y@${digest}`), { id: "sha256:z", repoDigests: [] }, amd64);
    expect(result).toEqual({ stale: false, digest });
    expect(proxy.requests).toEqual([]);
  });
});

describe("htpasswd registry (Basic)", () => {
  const { authRegistry, authUser, authPass } = sandbox();
  let reference: string;
  let local: LocalImage;
  const helperDir = tempDir("svc-cred-helper");
  cleanups.push(helperDir.remove);

  beforeAll(() => {
    reference = `${authRegistry}/${uniqueName("reg-basic")}:latest`;
    local = build(reference);
  });

  test("per-registry credentials", async () => {
    const { registry } = registryWith({
      registry_credentials: [{ host: authRegistry, username: authUser, password: authPass }],
    });
    expect((await registry.session().check(parseReference(reference), local, amd64)).stale).toBe(false);
    expect(await registry.pullAuth(parseReference(reference))).toEqual({
      username: authUser,
      password: authPass,
      serveraddress: authRegistry,
    });
  });

  test("global credentials", async () => {
    const { registry } = registryWith({ registry_username: authUser, registry_password: authPass });
    expect((await registry.session().check(parseReference(reference), local, amd64)).stale).toBe(false);
  });

  test("an entry without username and password forces anonymous over global credentials", async () => {
    const { registry } = registryWith({
      registry_username: authUser,
      registry_password: authPass,
      registry_credentials: [{ host: authRegistry }],
    });
    const error = await registry
      .session()
      .check(parseReference(reference), local, amd64)
      .catch((e) => e);
    expect(error.kind).toBe("registry");
    expect(error.message).toContain("401");
    expect(await registry.pullAuth(parseReference(reference))).toBeUndefined();
  });

  test("Docker config.json auths (base64)", async () => {
    const dir = tempDir("svc-docker-config");
    cleanups.push(dir.remove);
    const auth = Buffer.from(`${authUser}:${authPass}`).toString("base64");
    writeFileSync(join(dir.path, "config.json"), JSON.stringify({ auths: { [`http://${authRegistry}`]: { auth } } }));
    const { registry } = registryWith({}, { dockerConfigDir: dir.path });
    expect((await registry.session().check(parseReference(reference), local, amd64)).stale).toBe(false);
  });

  test("a credential helper named by credHelpers, found on the given PATH", async () => {
    const asked = join(helperDir.path, "asked");
    const script = join(helperDir.path, "docker-credential-svctest");
    writeFileSync(
      script,
      [
        "#!/bin/sh",
        `[ "$1" = get ] || exit 1`,
        "read -r server",
        `echo "$server" >> '${asked}'`,
        `if [ "$server" = '${authRegistry}' ]; then`,
        `  echo '{"ServerURL":"${authRegistry}","Username":"${authUser}","Secret":"${authPass}"}'`,
        "  exit 0",
        "fi",
        "echo 'credentials not found in native keychain'",
        "exit 1",
      ].join("\n"),
    );
    chmodSync(script, 0o755);
    const configDir = tempDir("svc-docker-config");
    cleanups.push(configDir.remove);
    writeFileSync(join(configDir.path, "config.json"), JSON.stringify({ credHelpers: { [authRegistry]: "svctest" } }));

    const { registry } = registryWith({}, { dockerConfigDir: configDir.path, helperPath: helperDir.path });
    expect((await registry.session().check(parseReference(reference), local, amd64)).stale).toBe(false);
    expect(await registry.pullAuth(parseReference(reference))).toEqual({
      username: authUser,
      password: authPass,
      serveraddress: authRegistry,
    });
    expect((await Bun.file(asked).text()).trim().split("\n")).toContain(authRegistry);
  });

  test("wrong credentials: a registry error naming host and status, and no secret anywhere", async () => {
    const secret = "wrong-secret-Zq81x";
    const { registry, log } = registryWith({
      head_warn_strategy: "always",
      registry_credentials: [{ host: authRegistry, username: authUser, password: secret }],
    });
    const error = await registry
      .session()
      .check(parseReference(reference), local, amd64)
      .catch((e) => e);
    expect(error.kind).toBe("registry");
    expect(error.message).toContain(authRegistry);
    expect(error.message).toContain("401");
    expect(error.message).not.toContain(secret);
    expect(log.lines.length).toBeGreaterThan(0);
    const logged = JSON.stringify(log.lines);
    expect(logged).not.toContain(secret);
    expect(logged).not.toContain(Buffer.from(`${authUser}:${secret}`).toString("base64"));
  });

  test("head_warn_strategy: auto is quiet on an authentication failure, always warns, never logs at debug", async () => {
    const levels: Record<string, string[]> = {};
    for (const strategy of ["auto", "always", "never"] as const) {
      const { registry, log } = registryWith({ head_warn_strategy: strategy });
      await registry
        .session()
        .check(parseReference(reference), local, amd64)
        .catch(() => undefined);
      levels[strategy] = log.lines.filter((l) => l.message.includes("HEAD")).map((l) => l.level);
    }
    expect(levels).toEqual({ auto: ["debug"], always: ["warn"], never: ["debug"] });
  });
});

describe("unreliable registries", () => {
  test("429 with Retry-After is waited out, then the answer is used", async () => {
    const reference = `${uniqueName("reg-429")}:latest`;
    const local = build(`${sandbox().registry}/${reference}`);
    let refused = 0;
    const proxy = startProxy(sandbox().registry, (_request, url) => {
      if (url.pathname.includes("/manifests/") && refused === 0) {
        refused++;
        return new Response("slow down", { status: 429, headers: { "Retry-After": "1" } });
      }
      return undefined;
    });
    cleanups.push(proxy.stop);
    const { registry } = registryWith();
    const result = await registry.session().check(parseReference(`${proxy.host}/${reference}`), local, amd64);
    expect(result.stale).toBe(false);
    expect(refused).toBe(1);
    expect(proxy.requests.filter((r) => r.includes("/manifests/")).length).toBeGreaterThanOrEqual(2);
  });

  test("5xx answers are retried a bounded number of times, then reported", async () => {
    const proxy = startProxy(sandbox().registry, (_request, url) =>
      url.pathname.includes("/manifests/") ? new Response("down", { status: 503 }) : undefined,
    );
    cleanups.push(proxy.stop);
    const { registry } = registryWith({}, { retry: { retries: 2, baseDelayMs: 1 } });
    const error = await registry
      .session()
      .check(
        parseReference(`${proxy.host}/${uniqueName("reg-503")}:latest`),
        { id: "sha256:x", repoDigests: [] },
        amd64,
      )
      .catch((e) => e);
    expect(error.kind).toBe("registry");
    expect(error.message).toContain(proxy.host);
    expect(error.message).toContain("503");
    // HEAD: 3 attempts, then the GET fallback: 3 attempts.
    expect(proxy.requests.filter((r) => r.includes("/manifests/"))).toHaveLength(6);
  });

  test("a registry that is down is a registry error naming the host", async () => {
    const host = `127.0.0.1:${freePort()}`;
    const { registry } = registryWith();
    const error = await registry
      .session()
      .check(parseReference(`${host}/app:latest`), { id: "sha256:x", repoDigests: [] }, amd64)
      .catch((e) => e);
    expect(error.kind).toBe("registry");
    expect(error.message).toContain(host);
    expect(error.message).toContain("unreachable");
  });
});

test("20 containers on 3 images cost exactly 3 manifest requests", async () => {
  const proxy = startProxy(sandbox().registry);
  cleanups.push(proxy.stop);
  const repositories = [uniqueName("reg-count-a"), uniqueName("reg-count-b"), uniqueName("reg-count-c")];
  const locals = repositories.map((repository) => {
    const local = build(`${sandbox().registry}/${repository}:latest`);
    // As the engine would record it had it pulled through the proxy.
    return {
      id: local.id,
      repoDigests: local.repoDigests.map((d) => `${proxy.host}/${repository}@${d.split("@")[1]}`),
    };
  });
  const { registry } = registryWith({ registry_concurrency: 2 });
  const session = registry.session();
  const results = await Promise.all(
    Array.from({ length: 20 }, (_, i) =>
      session.check(parseReference(`${proxy.host}/${repositories[i % 3]}:latest`), locals[i % 3]!, amd64),
    ),
  );
  expect(results.every((r) => !r.stale)).toBe(true);
  const manifestRequests = proxy.requests.filter((r) => r.includes("/manifests/"));
  expect(manifestRequests.sort()).toEqual(repositories.map((r) => `HEAD /v2/${r}/manifests/latest`).sort());
});
