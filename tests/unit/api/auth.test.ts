/**
 * Auth (docs/api.md): the generated matrix endpoint x enabled x metrics_no_auth x
 * configured token x presented credential, each cell's expected status derived from the rules.
 */
import { describe, expect, test } from "bun:test";
import { bearerCredential, createTokenCheck } from "../../../src/api/auth.ts";
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

function expectedStatus(endpoint: EndpointName, enabled: boolean, noAuth: boolean, tokenSet: boolean, credential: string): number {
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
              const response = await ctx.request(ENDPOINTS[endpoint].path, { method: ENDPOINTS[endpoint].method, headers });
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
