import { expect, test } from "bun:test";
import { parseChallenges, pickChallenge } from "../../../src/registry/challenge.ts";

const table: [string, { scheme: string; params: Record<string, string> }[]][] = [
  ['Basic realm="Registry Realm"', [{ scheme: "basic", params: { realm: "Registry Realm" } }]],
  [
    'Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/nginx:pull"',
    [
      {
        scheme: "bearer",
        params: {
          realm: "https://auth.docker.io/token",
          service: "registry.docker.io",
          scope: "repository:library/nginx:pull",
        },
      },
    ],
  ],
  [
    'bearer Realm = "https://ghcr.io/token", Service="ghcr.io", scope="repository:a/b:pull,push"',
    [
      {
        scheme: "bearer",
        params: { realm: "https://ghcr.io/token", service: "ghcr.io", scope: "repository:a/b:pull,push" },
      },
    ],
  ],
  [
    "Bearer realm=https://x/token,service=x",
    [{ scheme: "bearer", params: { realm: "https://x/token", service: "x" } }],
  ],
  [
    'Basic realm="a", Bearer realm="https://b/token",service="b"',
    [
      { scheme: "basic", params: { realm: "a" } },
      { scheme: "bearer", params: { realm: "https://b/token", service: "b" } },
    ],
  ],
  ['Basic realm="with \\"quote\\""', [{ scheme: "basic", params: { realm: 'with "quote"' } }]],
  ["Negotiate", [{ scheme: "negotiate", params: {} }]],
  ["", []],
];

for (const [header, expected] of table) {
  test(`parses ${JSON.stringify(header)}`, () => {
    expect(parseChallenges(header)).toEqual(expected);
  });
}

test("prefers Bearer with a realm, then Basic, else nothing", () => {
  expect(pickChallenge(parseChallenges('Basic realm="a", Bearer realm="https://b/token"'))?.scheme).toBe("bearer");
  expect(pickChallenge(parseChallenges('Basic realm="a", Bearer service="no-realm"'))?.scheme).toBe("basic");
  expect(pickChallenge(parseChallenges("Negotiate"))).toBeUndefined();
  expect(pickChallenge(parseChallenges(null))).toBeUndefined();
});
