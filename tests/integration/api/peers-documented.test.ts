/**
 * docs/dashboard.md, "Several hosts (peers)": the peer's and the host's configuration files, as
 * written, each run by an svc on the sandbox's engine. The sandbox's changes: the files' paths
 * are a temporary folder's, the ports free ones, and the host reaches the peer on loopback over
 * plain HTTP (Caddy, the TLS in front of the peer in the docs, is not on the test machine), so
 * its `url` names that and `ca_cert` goes.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { freePort } from "../../harness.ts";
import { tempDir } from "../../temp.ts";
import { configBlock } from "../../support/doc-blocks.ts";
import { baseFlags, startSvc, stopAll, waitForPort } from "../e2e/support.ts";

const dir = tempDir("svc-peers-doc-");
const peerPort = freePort();
const hostPort = freePort();
const scope = `peers-doc-${crypto.randomUUID().slice(0, 8)}`;
const hostToken = `host-${crypto.randomUUID()}`;

beforeAll(async () => {
  const peerToken = `nas-${crypto.randomUUID()}`;
  writeFileSync(join(dir, "api-token"), peerToken);
  writeFileSync(join(dir, "nas-token"), peerToken); // "a copy of nas's /etc/svc/api-token"
  writeFileSync(join(dir, "host-token"), hostToken);
  const peerToml = configBlock("peer").text.replace("/etc/svc/api-token", join(dir, "api-token")).replace("port = 8080", `port = ${peerPort}`);
  const hostToml = configBlock("host")
    .text.replace('token = "/etc/svc/api-token"', `token = "${join(dir, "host-token")}"\nport = ${hostPort}`)
    .replace("/etc/svc/nas-token", join(dir, "nas-token"))
    .replace("https://nas.lan:8443", `http://127.0.0.1:${peerPort}`)
    .replace(/^ca_cert = .*$/m, "");
  writeFileSync(join(dir, "peer.toml"), peerToml);
  writeFileSync(join(dir, "host.toml"), hostToml);
  const peer = startSvc([...baseFlags(), "--config", join(dir, "peer.toml"), "--scope", scope]);
  const host = startSvc([...baseFlags(), "--config", join(dir, "host.toml"), "--scope", scope]);
  await Promise.all([waitForPort(peerPort, peer), waitForPort(hostPort, host)]);
}, 60_000);

afterAll(async () => {
  await stopAll();
}, 60_000);

test("the host's page lists the peer as up (its update API on), and reads it through /v1/peers/nas", async () => {
  const auth = { authorization: `Bearer ${hostToken}` };
  const peers = (await (await fetch(`http://127.0.0.1:${hostPort}/v1/peers`, { headers: auth })).json()) as { peers: any[] };
  expect(peers.peers.map((p: any) => [p.name, p.up, p.error])).toEqual([["nas", true, null]]);
  expect(peers.peers[0].data.update).toBe(true);
  expect((await fetch(`http://127.0.0.1:${hostPort}/v1/peers/nas/containers`, { headers: auth })).status).toBe(200);
  expect((await fetch(`http://127.0.0.1:${hostPort}/`)).status).toBe(200);
}, 60_000);

test("the peer listens on loopback only, as the proxy in front of it needs", async () => {
  expect((await fetch(`http://127.0.0.1:${peerPort}/v1/health`)).status).toBe(200);
  const file = configBlock("peer").text;
  expect(file).toMatch(/^address = "127\.0\.0\.1"/m);
  // Caddy's reverse_proxy and the host's url name that port and the proxy's
  expect(configBlock("caddy").text).toContain("reverse_proxy 127.0.0.1:8080");
  expect(configBlock("host").text).toContain('url = "https://nas.lan:8443"');
  expect(configBlock("caddy").text).toStartWith("nas.lan:8443 {");
});
