/**
 * Auth (docs/api.md): the generated matrix endpoint x enabled x metrics_no_auth x
 * configured token x presented credential, each cell's expected status derived from the rules.
 */
import { describe, expect, test } from "bun:test";
import { bearerCredential, createAuthenticator, createTokenCheck, plainAddress } from "../../../src/api/auth.ts";
import { makeApp, TOKEN } from "./fakes.ts";

type EndpointName = "health" | "metrics" | "update";
const ENDPOINTS: Record<EndpointName, { method: string; path: string }> = {
  health: { method: "GET", path: "/v1/health" },
  metrics: { method: "GET", path: "/v1/metrics" },
  update: { method: "POST", path: "/v1/update" },
};

const CREDENTIALS: Record<string, string | undefined> = {
  "no header": undefined,
  "right token": `Bearer ${TOKEN}`,
  "lower-case scheme": `bearer ${TOKEN}`,
  "wrong token": "Bearer nope",
  "token prefix": `Bearer ${TOKEN.slice(0, -1)}`,
  "token plus a char": `Bearer ${TOKEN}x`,
  "scheme only": "Bearer",
  "Basic scheme": `Basic ${btoa(`user:${TOKEN}`)}`,
  "token without scheme": TOKEN,
  "empty header": "",
};
const ACCEPTED = new Set(["right token", "lower-case scheme"]);

function expectedStatus(
  endpoint: EndpointName,
  enabled: boolean,
  noAuth: boolean,
  tokenSet: boolean,
  credential: string,
): number {
  if (endpoint === "health") return 200;
  if (!enabled) return 404;
  if (endpoint === "metrics" && noAuth) return 200;
  return tokenSet && ACCEPTED.has(credential) ? 200 : 401;
}

describe("auth matrix", () => {
  for (const endpoint of Object.keys(ENDPOINTS) as EndpointName[]) {
    for (const enabled of [true, false]) {
      for (const noAuth of [false, true]) {
        for (const tokenSet of [true, false]) {
          for (const [credential, header] of Object.entries(CREDENTIALS)) {
            const status = expectedStatus(endpoint, enabled, noAuth, tokenSet, credential);
            const name = `${endpoint} enabled=${enabled} metrics_no_auth=${noAuth} token=${tokenSet ? "set" : "unset"} ${credential} -> ${status}`;
            test(name, async () => {
              const ctx = makeApp({
                http_api: {
                  update: endpoint === "update" ? enabled : true,
                  metrics: endpoint === "metrics" ? enabled : true,
                  metrics_no_auth: noAuth,
                  token: tokenSet ? TOKEN : undefined,
                },
              });
              const headers: Record<string, string> = header === undefined ? {} : { authorization: header };
              const response = await ctx.request(ENDPOINTS[endpoint].path, {
                method: ENDPOINTS[endpoint].method,
                headers,
              });
              expect(response.status).toBe(status);
              if (status === 401) {
                expect(response.headers.get("www-authenticate")).toBe('Bearer realm="svc"');
                expect(await response.json()).toEqual({ error: "unauthorized" });
                expect(ctx.runner.calls).toHaveLength(0);
              }
            });
          }
        }
      }
    }
  }
});

describe("token comparison", () => {
  test("extracts the credential of a Bearer header only", () => {
    expect(bearerCredential("Bearer abc")).toBe("abc");
    expect(bearerCredential("BEARER   abc  ")).toBe("abc");
    expect(bearerCredential("Basic abc")).toBeNull();
    expect(bearerCredential("Bearer")).toBeNull();
    expect(bearerCredential(null)).toBeNull();
  });

  test("tokens of any length are compared without throwing (digests have a fixed length)", () => {
    const check = createTokenCheck("short");
    expect(check("Bearer short")).toBe(true);
    expect(check(`Bearer ${"x".repeat(10_000)}`)).toBe(false);
    expect(check("Bearer shor")).toBe(false);
    expect(check("Bearer ünïcödé")).toBe(false);
  });

  test("no configured token accepts nothing", () => {
    const check = createTokenCheck(undefined);
    expect(check("Bearer ")).toBe(false);
    expect(check("Bearer undefined")).toBe(false);
  });
});

test("only the Authorization header carries the token: the scheme in any case, nothing else", () => {
  const check = createTokenCheck("s3cret");
  expect(check("bearer s3cret")).toBe(true);
  expect(check("BEARER   s3cret")).toBe(true);
  expect(check(null)).toBe(false);
  expect(check("Basic s3cret")).toBe(false);
});

describe("roles: who a request comes from", () => {
  const settings = {
    token: "admin-secret",
    viewer_tokens: ["family-1", "family-2"],
    trusted_proxy_header: "remote-user",
    trusted_proxies: ["10.0.0.2", "::1"],
    trusted_proxy_role: "viewer" as const,
  };
  const who = createAuthenticator(settings);
  const noUser = () => null;

  test("the admin token acts; a viewer token is named by its place, never by its value", () => {
    expect(who("Bearer admin-secret", noUser, () => "192.0.2.1")).toEqual({ role: "admin", name: "admin token" });
    expect(who("Bearer family-2", noUser, () => "192.0.2.1")).toEqual({ role: "viewer", name: "viewer token 2" });
    expect(who("Bearer nope", noUser, () => "192.0.2.1")).toBeNull();
  });

  test("the proxy's header is believed only from a configured proxy address (an IPv4 client of a dual-stack socket too)", () => {
    expect(
      who(
        null,
        () => "alice",
        () => "10.0.0.2",
      ),
    ).toEqual({ role: "viewer", name: "alice", via: "proxy" });
    expect(
      who(
        null,
        () => "alice",
        () => "::ffff:10.0.0.2",
      ),
    ).toEqual({ role: "viewer", name: "alice", via: "proxy" });
    expect(
      who(
        null,
        () => "alice",
        () => "10.0.0.3",
      ),
    ).toBeNull();
    expect(
      who(
        null,
        () => "alice",
        () => undefined,
      ),
    ).toBeNull();
    // a user name that is not one signs no one in
    expect(
      who(
        null,
        () => "alice\nadmin",
        () => "10.0.0.2",
      ),
    ).toBeNull();
    expect(
      who(
        null,
        () => "",
        () => "10.0.0.2",
      ),
    ).toBeNull();
  });

  test("a bearer token decides alone, even from the proxy; the proxy role is configurable", () => {
    expect(
      who(
        "Bearer wrong",
        () => "alice",
        () => "10.0.0.2",
      ),
    ).toBeNull();
    expect(
      createAuthenticator({ ...settings, trusted_proxy_role: "admin" })(
        null,
        () => "bob",
        () => "::1",
      ),
    ).toEqual({ role: "admin", name: "bob", via: "proxy" });
    expect(
      createAuthenticator({ ...settings, trusted_proxy_header: undefined })(
        null,
        () => "bob",
        () => "::1",
      ),
    ).toBeNull();
  });

  test("plainAddress", () => {
    expect(plainAddress("::FFFF:10.1.2.3")).toBe("10.1.2.3");
    expect(plainAddress("::1")).toBe("::1");
  });
});
