import { expect, test } from "bun:test";
import { type CredentialSources, type DockerConfigFile, resolveCredential } from "../../../src/registry/credentials.ts";

const b64 = (s: string) => Buffer.from(s).toString("base64");

/** A fake helper runner: `helpers[name][serverUrl]` = [username, secret]. Records calls. */
function fakeHelpers(helpers: Record<string, Record<string, [string, string]>>) {
  const calls: string[] = [];
  const runHelper: CredentialSources["runHelper"] = async (name, server) => {
    calls.push(`${name} ${server}`);
    const found = helpers[name]?.[server];
    return found ? { username: found[0], secret: found[1] } : undefined;
  };
  return { runHelper, calls };
}

interface Row {
  name: string;
  host: string;
  configured?: CredentialSources["configured"];
  global?: [string | undefined, string | undefined];
  docker?: DockerConfigFile;
  helpers?: Record<string, Record<string, [string, string]>>;
  expected: { username?: string; password?: string; identityToken?: string; source: string } | undefined;
}

const table: Row[] = [
  { name: "nothing configured: anonymous", host: "ghcr.io", expected: undefined },
  {
    name: "per-host entry wins over global",
    host: "ghcr.io",
    configured: [{ host: "ghcr.io", username: "u", password: "p" }],
    global: ["g", "gp"],
    expected: { username: "u", password: "p", source: "registry_credentials" },
  },
  {
    name: "entry without username and password forces anonymous despite global and docker config",
    host: "ghcr.io",
    configured: [{ host: "ghcr.io" }],
    global: ["g", "gp"],
    docker: { auths: { "ghcr.io": { auth: b64("d:dp") } } },
    expected: undefined,
  },
  {
    name: "entry for another host does not apply; global does",
    host: "quay.io",
    configured: [{ host: "ghcr.io", username: "u", password: "p" }],
    global: ["g", "gp"],
    expected: { username: "g", password: "gp", source: "global" },
  },
  {
    name: "entry for another host, no global: anonymous",
    host: "quay.io",
    configured: [{ host: "ghcr.io", username: "u", password: "p" }],
    expected: undefined,
  },
  {
    name: "Hub alias in the entry matches the canonical host",
    host: "docker.io",
    configured: [{ host: "index.docker.io", username: "u", password: "p" }],
    expected: { username: "u", password: "p", source: "registry_credentials" },
  },
  {
    name: "entry written as a URL matches",
    host: "registry.example.com:5000",
    configured: [{ host: "https://registry.example.com:5000/", username: "u", password: "p" }],
    expected: { username: "u", password: "p", source: "registry_credentials" },
  },
  {
    name: "port matters",
    host: "registry.example.com:5000",
    configured: [{ host: "registry.example.com", username: "u", password: "p" }],
    expected: undefined,
  },
  {
    name: "global wins over docker config",
    host: "ghcr.io",
    global: ["g", "gp"],
    docker: { auths: { "ghcr.io": { auth: b64("d:dp") } } },
    expected: { username: "g", password: "gp", source: "global" },
  },
  {
    name: "docker config auths, base64 auth (password with a colon)",
    host: "ghcr.io",
    docker: { auths: { "https://ghcr.io": { auth: b64("d:dp:x") } } },
    expected: { username: "d", password: "dp:x", source: "docker-config" },
  },
  {
    name: "docker config auths, username/password fields",
    host: "ghcr.io",
    docker: { auths: { "ghcr.io": { username: "d", password: "dp" } } },
    expected: { username: "d", password: "dp", source: "docker-config" },
  },
  {
    name: "docker config Hub key https://index.docker.io/v1/ matches docker.io",
    host: "docker.io",
    docker: { auths: { "https://index.docker.io/v1/": { auth: b64("hub:hp") } } },
    expected: { username: "hub", password: "hp", source: "docker-config" },
  },
  {
    name: "docker config Hub key does not match another host",
    host: "ghcr.io",
    docker: { auths: { "https://index.docker.io/v1/": { auth: b64("hub:hp") } } },
    expected: undefined,
  },
  {
    name: "credHelpers for the host wins over auths and credsStore",
    host: "ghcr.io",
    docker: { credHelpers: { "ghcr.io": "one" }, credsStore: "store", auths: { "ghcr.io": { auth: b64("d:dp") } } },
    helpers: { one: { "ghcr.io": ["h", "hp"] }, store: { "ghcr.io": ["s", "sp"] } },
    expected: { username: "h", password: "hp", source: "credential-helper" },
  },
  {
    name: "credHelpers that knows nothing: anonymous (no fallback, as the CLI)",
    host: "ghcr.io",
    docker: { credHelpers: { "ghcr.io": "one" }, auths: { "ghcr.io": { auth: b64("d:dp") } } },
    helpers: {},
    expected: undefined,
  },
  {
    name: "credsStore is asked with the Hub server URL",
    host: "docker.io",
    docker: { credsStore: "store" },
    helpers: { store: { "https://index.docker.io/v1/": ["s", "sp"] } },
    expected: { username: "s", password: "sp", source: "credential-helper" },
  },
  {
    name: "credsStore without an answer falls back to auths",
    host: "ghcr.io",
    docker: { credsStore: "store", auths: { "ghcr.io": { auth: b64("d:dp") } } },
    helpers: {},
    expected: { username: "d", password: "dp", source: "docker-config" },
  },
  {
    name: "a helper's <token> username is an identity token",
    host: "registry.example.com",
    docker: { credHelpers: { "registry.example.com": "one" } },
    helpers: { one: { "registry.example.com": ["<token>", "refresh"] } },
    expected: { identityToken: "refresh", source: "credential-helper" },
  },
  {
    name: "identitytoken in auths",
    host: "registry.example.com",
    docker: { auths: { "registry.example.com": { identitytoken: "refresh" } } },
    expected: { identityToken: "refresh", source: "docker-config" },
  },
  {
    name: "empty auths entry (credentials live in a store): anonymous",
    host: "ghcr.io",
    docker: { auths: { "ghcr.io": {} } },
    expected: undefined,
  },
];

for (const row of table) {
  test(row.name, async () => {
    const { runHelper } = fakeHelpers(row.helpers ?? {});
    const credential = await resolveCredential(row.host, {
      configured: row.configured ?? [],
      globalUsername: row.global?.[0],
      globalPassword: row.global?.[1],
      dockerConfig: row.docker,
      runHelper,
    });
    expect(credential).toEqual(row.expected as never);
  });
}

test("a helper is not run when an earlier source decides", async () => {
  const { runHelper, calls } = fakeHelpers({ store: { "ghcr.io": ["s", "sp"] } });
  await resolveCredential("ghcr.io", {
    configured: [{ host: "ghcr.io" }],
    dockerConfig: { credsStore: "store" },
    runHelper,
  });
  await resolveCredential("ghcr.io", {
    configured: [],
    globalUsername: "g",
    globalPassword: "p",
    dockerConfig: { credsStore: "store" },
    runHelper,
  });
  expect(calls).toEqual([]);
});
