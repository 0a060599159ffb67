/**
 * Token authentication (the Docker Hub / GHCR flow) against a real distribution registry.
 *
 * What worked (distribution 2.8.2, first tried here):
 * - registry config `auth: { token: { realm, service, issuer, rootcertbundle } }`, where
 *   rootcertbundle is a self-signed certificate made by
 *   `openssl req -x509 -newkey rsa:2048 -nodes -keyout key.pem -out cert.pem -days 1 -subj /CN=...`;
 * - the token server (a Bun.serve below) signs RS256 JWTs with key.pem and puts the certificate
 *   (base64 DER, no PEM armour) in the header's `x5c`: distribution then verifies the chain against
 *   the bundle, so no libtrust `kid` is needed;
 * - claims: iss = issuer, aud = service, sub, iat/nbf/exp (seconds), jti, and
 *   `access: [{ type: "repository", name, actions: ["pull", ...] }]`;
 * - response `{ token, access_token, expires_in, issued_at }`;
 * - images get in with `skopeo copy --dest-creds` (skopeo speaks the same token flow), copied
 *   from the sandbox's plain registry.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createSign, randomBytes, X509Certificate } from "node:crypto";
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { defaultConfig } from "../../../src/config/index.ts";
import { createDockerEngine } from "../../../src/engine/index.ts";
import { silentLogger } from "../../../src/log/index.ts";
import { createRegistry, type LocalImage, parseReference } from "../../../src/registry/index.ts";
import { buildImage, docker, sandbox, uniqueName } from "../../harness.ts";
import { recordingLogger } from "../../support/logger.ts";
import { localImage, type RunningRegistry, startRegistry, tempDir } from "./support.ts";

const USER = "token-user";
const PASS = "token-pass-7Hq";
const SERVICE = "svc-test-registry";
const ISSUER = "svc-test-issuer";
const amd64 = async () => ({ os: "linux", architecture: "amd64" });

const dir = tempDir("svc-token-registry");
let registry: RunningRegistry;
/** the same token service, named by another site's host (localhost, not the registry's 127.0.0.1) */
let elsewhere: RunningRegistry;
let elsewhereReference: string;
let tokenServer: ReturnType<typeof Bun.serve>;
const tokenRequests: { authorized: boolean; scope: string | null; service: string | null }[] = [];
const repository = uniqueName("reg-token");
let reference: string;
let local: LocalImage;

const b64url = (data: string | Buffer) => Buffer.from(data).toString("base64url");

function signToken(
  key: string,
  certDer: Buffer,
  subject: string,
  access: { type: string; name: string; actions: string[] }[],
): string {
  const now = Math.floor(Date.now() / 1000);
  const header = b64url(JSON.stringify({ typ: "JWT", alg: "RS256", x5c: [certDer.toString("base64")] }));
  const claims = b64url(
    JSON.stringify({
      iss: ISSUER,
      sub: subject,
      aud: SERVICE,
      iat: now,
      nbf: now - 10,
      exp: now + 300,
      jti: randomBytes(8).toString("hex"),
      access,
    }),
  );
  const signature = createSign("RSA-SHA256").update(`${header}.${claims}`).sign(key);
  return `${header}.${claims}.${b64url(signature)}`;
}

beforeAll(async () => {
  const openssl = Bun.spawnSync(
    [
      "openssl",
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-keyout",
      join(dir.path, "key.pem"),
      "-out",
      join(dir.path, "cert.pem"),
      "-days",
      "1",
      "-subj",
      "/CN=svc-test-token",
    ],
    { stderr: "pipe" },
  );
  if (openssl.exitCode !== 0) throw new Error(openssl.stderr.toString());
  const key = readFileSync(join(dir.path, "key.pem"), "utf8");
  const certDer = Buffer.from(new X509Certificate(readFileSync(join(dir.path, "cert.pem"))).raw);

  tokenServer = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(request) {
      const url = new URL(request.url);
      const expected = `Basic ${Buffer.from(`${USER}:${PASS}`).toString("base64")}`;
      const given = request.headers.get("authorization");
      if (given !== null && given !== expected) return new Response("bad credentials", { status: 401 });
      const scope = url.searchParams.get("scope");
      tokenRequests.push({ authorized: given !== null, scope, service: url.searchParams.get("service") });
      // Only the authenticated user may pull (and push); anonymous gets a token with no access.
      const access = [];
      const match = scope ? /^repository:([^:]+):(.+)$/.exec(scope) : null;
      if (match && given !== null) access.push({ type: "repository", name: match[1]!, actions: match[2]!.split(",") });
      const token = signToken(key, certDer, given === null ? "" : USER, access);
      return Response.json({ token, access_token: token, expires_in: 300, issued_at: new Date().toISOString() });
    },
  });

  registry = await startRegistry(
    dir.path,
    `auth: { token: { realm: "http://127.0.0.1:${tokenServer.port}/token", service: ${SERVICE}, issuer: ${ISSUER}, rootcertbundle: ${join(dir.path, "cert.pem")} } }`,
  );
  mkdirSync(join(dir.path, "elsewhere"));
  elsewhere = await startRegistry(
    join(dir.path, "elsewhere"),
    `auth: { token: { realm: "http://localhost:${tokenServer.port}/token", service: ${SERVICE}, issuer: ${ISSUER}, rootcertbundle: ${join(dir.path, "cert.pem")} } }`,
  );

  const source = `${sandbox().registry}/${repository}:latest`;
  buildImage(source);
  local = localImage(source);
  reference = `${registry.host}/${repository}:latest`;
  // Asynchronously: the token server skopeo talks to runs in this process.
  elsewhereReference = `${elsewhere.host}/${repository}:latest`;
  for (const destination of [reference, elsewhereReference]) {
    const copy = Bun.spawn(
      [
        "skopeo",
        "copy",
        "--quiet",
        "--src-tls-verify=false",
        "--dest-tls-verify=false",
        "--dest-creds",
        `${USER}:${PASS}`,
        `docker://${source}`,
        `docker://${destination}`,
      ],
      { stdout: "ignore", stderr: "pipe" },
    );
    if ((await copy.exited) !== 0) throw new Error(`skopeo copy failed: ${await new Response(copy.stderr).text()}`);
  }
  // As the engine would record it had it pulled from the token registry.
  local = {
    id: local.id,
    repoDigests: local.repoDigests.map((d) => `${registry.host}/${repository}@${d.split("@")[1]}`),
  };
  tokenRequests.length = 0;
}, 60_000);

afterAll(() => {
  registry?.stop();
  elsewhere?.stop();
  tokenServer?.stop(true);
  docker(["rmi", "-f", `${sandbox().registry}/${repository}:latest`], { allowFailure: true });
  dir.remove();
});

test("credentials go to the token realm; the token is cached across sessions", async () => {
  const svc = createRegistry(
    defaultConfig({ registry_credentials: [{ host: registry.host, username: USER, password: PASS }] }),
    recordingLogger(),
  );
  expect((await svc.session().check(parseReference(reference), local, amd64)).stale).toBe(false);
  expect((await svc.session().check(parseReference(reference), local, amd64)).stale).toBe(false);
  expect(tokenRequests).toEqual([{ authorized: true, scope: `repository:${repository}:pull`, service: SERVICE }]);
});

test("the token registry reports a changed image as stale", async () => {
  const svc = createRegistry(defaultConfig({ registry_username: USER, registry_password: PASS }), recordingLogger());
  const result = await svc
    .session()
    .check(parseReference(reference), { id: `sha256:${"2".repeat(64)}`, repoDigests: [] }, amd64);
  expect(result.stale).toBe(true);
  expect(result.digest).toBe(local.repoDigests[0]!.split("@")[1]!);
});

test("anonymously the token grants nothing: a registry error, quiet HEAD warning in auto mode", async () => {
  const log = recordingLogger();
  const svc = createRegistry(defaultConfig(), log);
  const error = await svc
    .session()
    .check(parseReference(reference), local, amd64)
    .catch((e) => e);
  expect(error.kind).toBe("registry");
  expect(error.message).toContain(registry.host);
  expect(error.message).toContain("401");
  expect(log.lines.filter((l) => l.level === "warn")).toEqual([]);
  expect(tokenRequests.some((r) => !r.authorized)).toBe(true);
});

test("wrong credentials are rejected by the token service, and never shown", async () => {
  const log = recordingLogger();
  const svc = createRegistry(
    defaultConfig({
      registry_credentials: [{ host: registry.host, username: USER, password: "not-the-password-Kx9" }],
    }),
    log,
  );
  const error = await svc
    .session()
    .check(parseReference(reference), local, amd64)
    .catch((e) => e);
  expect(error.kind).toBe("registry");
  expect(error.message).toContain("401");
  expect(error.message).not.toContain("not-the-password-Kx9");
  expect(JSON.stringify(log.lines)).not.toContain("not-the-password-Kx9");
});

test("global credentials reach the engine only for a registry whose token realm is on its own site (pulls and Swarm service specs both take pullAuth), never elsewhere", async () => {
  const log = recordingLogger();
  const svc = createRegistry(defaultConfig({ registry_username: USER, registry_password: PASS }), log);
  // the realm at the registry's own loopback address: the engine is given them
  expect(await svc.pullAuth(parseReference(reference))).toEqual({
    username: USER,
    password: PASS,
    serveraddress: registry.host,
  });
  // a realm on another host: svc's own requests ask anonymously, and the engine gets nothing
  const away = parseReference(elsewhereReference);
  const auth = await svc.pullAuth(away);
  expect(auth).toBeUndefined();
  expect(log.lines.filter((l) => l.level === "warn").map((l) => l.fields)).toEqual([
    { registry: elsewhere.host, realm_host: `localhost:${tokenServer.port}`, credentials: "global" },
  ]);

  // the real engine pulls with what it was given: the token service never sees the credentials
  tokenRequests.length = 0;
  const engine = await createDockerEngine({ host: sandbox().dockerHost, tls_verify: false }, silentLogger);
  const pulled = await engine.pullImage(elsewhereReference, { auth }).catch((error) => error);
  expect(tokenRequests.length).toBeGreaterThan(0);
  expect(tokenRequests.filter((r) => r.authorized)).toEqual([]);
  expect(pulled).toBeInstanceOf(Error); // anonymously the token grants nothing
  // a registry's own entry is its own: given wherever its HTTP realm is on loopback
  const own = createRegistry(
    defaultConfig({ registry_credentials: [{ host: elsewhere.host, username: USER, password: PASS }] }),
    recordingLogger(),
  );
  expect(await own.pullAuth(away)).toMatchObject({ username: USER });
  docker(["rmi", "-f", elsewhereReference], { allowFailure: true });
}, 60_000);
