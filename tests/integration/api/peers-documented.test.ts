/**
 * docs/dashboard.md, "Several hosts (peers)": the peer's configuration file, the Caddyfile in
 * front of it and the host's configuration file, as written, run on this machine: both svc on the
 * sandbox's engine, Caddy (the Debian package scripts/sandbox.sh installs) as a child process.
 * What the test changes, and only that:
 * - the files' paths are a temporary folder's, the ports free ones (the docs' 8080 and 8443);
 * - the peer's name `nas.lan` is `localhost`, a name that resolves here (Caddy's CA signs it alike);
 * - Caddy's home is a temporary folder: the docs' /var/lib/caddy is the home of the package's
 *   `caddy` user, and its CA's root lands under `.local/share/caddy` in it as there;
 * - a global options block goes before the Caddyfile: `admin off` (Caddy's admin port, 2019, is
 *   the machine's, shared), `skip_install_trust` (as root, Caddy would add its CA to this
 *   machine's trust store; the package's `caddy` user cannot), `auto_https disable_redirects`
 *   (the redirects to https would take port 80).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { copyFileSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { freePort, portOpen, waitUntil } from "../../harness.ts";
import { configBlock, REPO_ROOT } from "../../support/doc-blocks.ts";
import { EngineFixture } from "../../support/fixture.ts";
import { tempDir } from "../../temp.ts";
import { baseFlags, startSvc, stopAll, track, waitForPort } from "../e2e/support.ts";

const dir = tempDir("svc-peers-doc-");
const caddyHome = join(dir, "caddy-home");
/** Where the docs say Caddy's root is, under the home of the package's `caddy` user, /var/lib/caddy. */
const documentedRoot = /`\/var\/lib\/caddy\/([^`]+\/root\.crt)`/.exec(
  readFileSync(join(REPO_ROOT, configBlock("caddy").file), "utf8"),
);
if (!documentedRoot) throw new Error("docs/dashboard.md no longer names Caddy's root under /var/lib/caddy");
const caddyRoot = join(caddyHome, documentedRoot[1]!);
const peerPort = freePort();
const caddyPort = freePort();
const hostPort = freePort();
const hostWithoutCaPort = freePort();
const scope = `peers-doc-${crypto.randomUUID().slice(0, 8)}`;
const hostToken = `host-${crypto.randomUUID()}`;
const fx = new EngineFixture("peers-doc");
let caddy: Subprocess<"ignore", "pipe", "pipe"> | undefined;
let caddyOutput = "";
let container = "";

/** A documented block with each `from` replaced by its `to`; throws when the docs no longer hold one. */
function substitute(text: string, changes: [from: string | RegExp, to: string][]): string {
  return changes.reduce((changed, [from, to]) => {
    if (!(typeof from === "string" ? changed.includes(from) : from.test(changed)))
      throw new Error(`the documented block no longer holds ${from}:\n${text}`);
    return changed.replace(from, to);
  }, text);
}

function startCaddy(): void {
  const caddyfile = substitute(configBlock("caddy").text, [
    ["nas.lan:8443", `localhost:${caddyPort}`],
    ["127.0.0.1:8080", `127.0.0.1:${peerPort}`],
  ]);
  const globalOptions = "{\n\tadmin off\n\tskip_install_trust\n\tauto_https disable_redirects\n}\n\n";
  writeFileSync(join(dir, "Caddyfile"), `${globalOptions}${caddyfile}\n`);
  caddy = track(
    Bun.spawn(["caddy", "run", "--config", join(dir, "Caddyfile"), "--adapter", "caddyfile"], {
      // HOME alone, as the package's service gives: no XDG_DATA_HOME to move the CA elsewhere
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: caddyHome },
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
    }),
  );
  for (const stream of [caddy.stdout, caddy.stderr])
    void (async () => {
      for await (const chunk of stream) caddyOutput += new TextDecoder().decode(chunk);
    })();
}

/** Caddy answers the peer's health over TLS signed by its root (its certificate is made after it listens). */
async function caddyServesPeer(): Promise<boolean> {
  if (caddy?.exitCode !== null) throw new Error(`caddy exited (${caddy?.exitCode}):\n${caddyOutput}`);
  if (!existsSync(caddyRoot) || !(await portOpen(caddyPort))) return false;
  try {
    return (
      (await fetch(`https://localhost:${caddyPort}/v1/health`, { tls: { ca: await Bun.file(caddyRoot).text() } }))
        .status === 200
    );
  } catch {
    return false;
  }
}

beforeAll(async () => {
  container = fx.run("web", fx.image("web").ref, { labels: { "svc.scope": scope } });
  const peerToken = `nas-${crypto.randomUUID()}`;
  writeFileSync(join(dir, "api-token"), peerToken);
  writeFileSync(join(dir, "nas-token"), peerToken); // "a copy of nas's /etc/svc/api-token"
  writeFileSync(join(dir, "host-token"), hostToken);
  const peerToml = substitute(configBlock("peer").text, [
    ["/etc/svc/api-token", join(dir, "api-token")],
    ["port = 8080", `port = ${peerPort}`],
  ]);
  writeFileSync(join(dir, "peer.toml"), peerToml);
  const peer = startSvc([...baseFlags(), "--config", join(dir, "peer.toml"), "--scope", scope]);
  startCaddy();
  await waitForPort(peerPort, peer);
  await waitUntil(caddyServesPeer, 30_000, `Caddy in front of the peer, signing with the root at ${caddyRoot}`);
  copyFileSync(caddyRoot, join(dir, "nas-ca.pem")); // "copy it to the other host as /etc/svc/nas-ca.pem"

  const hostToml = (port: number) =>
    substitute(configBlock("host").text, [
      ["[http_api]", `[http_api]\nport = ${port}`],
      ['token = "/etc/svc/api-token"', `token = "${join(dir, "host-token")}"`],
      ["https://nas.lan:8443", `https://localhost:${caddyPort}`],
      ["/etc/svc/nas-token", join(dir, "nas-token")],
      ["/etc/svc/nas-ca.pem", join(dir, "nas-ca.pem")],
    ]);
  writeFileSync(join(dir, "host.toml"), hostToml(hostPort));
  // the same host without the line that names Caddy's root: the peer's certificate must be refused
  writeFileSync(join(dir, "host-without-ca.toml"), substitute(hostToml(hostWithoutCaPort), [[/^ca_cert = .*$/m, ""]]));
  // a peer behind TLS answers in well under the default 2 s, but not always on a loaded test machine
  const host = startSvc([
    ...baseFlags(),
    "--config",
    join(dir, "host.toml"),
    "--scope",
    scope,
    "--peer-timeout",
    "15s",
  ]);
  const hostWithoutCa = startSvc([...baseFlags(), "--config", join(dir, "host-without-ca.toml"), "--scope", scope]);
  await Promise.all([waitForPort(hostPort, host), waitForPort(hostWithoutCaPort, hostWithoutCa)]);
}, 90_000);

afterAll(async () => {
  await stopAll(); // the svc processes and Caddy, each by its pid
  fx.cleanup();
}, 60_000);

const auth = { authorization: `Bearer ${hostToken}` };
const peersOf = async (port: number) =>
  ((await (await fetch(`http://127.0.0.1:${port}/v1/peers`, { headers: auth })).json()) as { peers: any[] }).peers;

test("the host's page lists the peer behind Caddy as up, with its containers and its update API on", async () => {
  const peers = await peersOf(hostPort);
  expect(peers.map((p) => [p.name, p.up, p.error])).toEqual([["nas", true, null]]);
  expect(peers[0].data.update).toBe(true);
  expect(peers[0].data.containers.map((c: any) => c.name)).toEqual([container]);
  const containers = await fetch(`http://127.0.0.1:${hostPort}/v1/peers/nas/containers`, { headers: auth });
  expect(containers.status).toBe(200);
  expect(((await containers.json()) as any).containers.map((c: any) => c.name)).toEqual([container]);
  expect((await fetch(`http://127.0.0.1:${hostPort}/`)).status).toBe(200);
}, 60_000);

test("without ca_cert the host refuses the certificate of Caddy's own CA: the peer is not up", async () => {
  const peers = await peersOf(hostWithoutCaPort);
  expect(peers.map((p) => [p.name, p.up])).toEqual([["nas", false]]);
  expect(peers[0].error).toMatch(/certificate/i);
  expect(peers[0].data).toBeNull();
}, 60_000);

test("the peer listens on loopback only, and the Caddyfile is as Caddy formats it", async () => {
  expect(configBlock("peer").text).toMatch(/^address = "127\.0\.0\.1"/m);
  expect((await fetch(`http://127.0.0.1:${peerPort}/v1/health`)).status).toBe(200);
  // `caddy fmt` of the block as written changes nothing (else Caddy warns at each start)
  writeFileSync(join(dir, "Caddyfile.documented"), `${configBlock("caddy").text}\n`);
  const formatted = Bun.spawnSync(["caddy", "fmt", join(dir, "Caddyfile.documented")], {
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: caddyHome },
    stdout: "pipe",
    stderr: "pipe",
  });
  expect(formatted.stdout.toString()).toBe(`${configBlock("caddy").text}\n`);
});
