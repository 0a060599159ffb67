import { describe, expect, test } from "bun:test";
import { isPinned, matchesImagePrefix, parseReference, withTag } from "../../../src/registry/index.ts";

const D = `sha256:${"a".repeat(64)}`;

describe("parseReference normalises", () => {
  const table: [string, { registry: string; repository: string; tag?: string; digest?: string; normalized: string }][] =
    [
      [
        "nginx",
        {
          registry: "docker.io",
          repository: "library/nginx",
          tag: "latest",
          normalized: "docker.io/library/nginx:latest",
        },
      ],
      [
        "nginx:1.27",
        { registry: "docker.io", repository: "library/nginx", tag: "1.27", normalized: "docker.io/library/nginx:1.27" },
      ],
      [
        "library/nginx:1.27",
        { registry: "docker.io", repository: "library/nginx", tag: "1.27", normalized: "docker.io/library/nginx:1.27" },
      ],
      [
        "docker.io/nginx",
        {
          registry: "docker.io",
          repository: "library/nginx",
          tag: "latest",
          normalized: "docker.io/library/nginx:latest",
        },
      ],
      [
        "index.docker.io/library/nginx:1",
        { registry: "docker.io", repository: "library/nginx", tag: "1", normalized: "docker.io/library/nginx:1" },
      ],
      [
        "registry-1.docker.io/nginx:1",
        { registry: "docker.io", repository: "library/nginx", tag: "1", normalized: "docker.io/library/nginx:1" },
      ],
      [
        "containrrr/watchtower",
        {
          registry: "docker.io",
          repository: "containrrr/watchtower",
          tag: "latest",
          normalized: "docker.io/containrrr/watchtower:latest",
        },
      ],
      [
        "ghcr.io/acme/app:v1.2.3",
        { registry: "ghcr.io", repository: "acme/app", tag: "v1.2.3", normalized: "ghcr.io/acme/app:v1.2.3" },
      ],
      [
        "quay.io/prometheus/node-exporter",
        {
          registry: "quay.io",
          repository: "prometheus/node-exporter",
          tag: "latest",
          normalized: "quay.io/prometheus/node-exporter:latest",
        },
      ],
      [
        "registry.gitlab.com/group/sub/project/image:main",
        {
          registry: "registry.gitlab.com",
          repository: "group/sub/project/image",
          tag: "main",
          normalized: "registry.gitlab.com/group/sub/project/image:main",
        },
      ],
      [
        "localhost:5000/app",
        { registry: "localhost:5000", repository: "app", tag: "latest", normalized: "localhost:5000/app:latest" },
      ],
      ["localhost/app:1", { registry: "localhost", repository: "app", tag: "1", normalized: "localhost/app:1" }],
      [
        "127.0.0.1:5000/ns/repo:tag",
        { registry: "127.0.0.1:5000", repository: "ns/repo", tag: "tag", normalized: "127.0.0.1:5000/ns/repo:tag" },
      ],
      ["[::1]:5000/app:1", { registry: "[::1]:5000", repository: "app", tag: "1", normalized: "[::1]:5000/app:1" }],
      [
        "Registry.Example.COM/app",
        {
          registry: "registry.example.com",
          repository: "app",
          tag: "latest",
          normalized: "registry.example.com/app:latest",
        },
      ],
      [
        `nginx@${D}`,
        { registry: "docker.io", repository: "library/nginx", digest: D, normalized: `docker.io/library/nginx@${D}` },
      ],
      [
        `nginx:1.27@${D}`,
        {
          registry: "docker.io",
          repository: "library/nginx",
          tag: "1.27",
          digest: D,
          normalized: `docker.io/library/nginx:1.27@${D}`,
        },
      ],
      [
        `host:5000/a/b:t@${D}`,
        { registry: "host:5000", repository: "a/b", tag: "t", digest: D, normalized: `host:5000/a/b:t@${D}` },
      ],
      [
        "my_org/my-app__x.y:Tag_1.0-RC",
        {
          registry: "docker.io",
          repository: "my_org/my-app__x.y",
          tag: "Tag_1.0-RC",
          normalized: "docker.io/my_org/my-app__x.y:Tag_1.0-RC",
        },
      ],
      ["a--b/c", { registry: "docker.io", repository: "a--b/c", tag: "latest", normalized: "docker.io/a--b/c:latest" }],
      [
        "localhost:5000",
        {
          registry: "docker.io",
          repository: "library/localhost",
          tag: "5000",
          normalized: "docker.io/library/localhost:5000",
        },
      ],
    ];
  for (const [text, expected] of table) {
    test(text, () => {
      const ref = parseReference(text);
      expect(ref.original).toBe(text);
      expect({
        registry: ref.registry,
        repository: ref.repository,
        tag: ref.tag,
        digest: ref.digest,
        normalized: ref.normalized,
      }).toEqual({
        tag: undefined,
        digest: undefined,
        ...expected,
      });
    });
  }
});

describe("parseReference rejects, naming the problem", () => {
  const table: [string, RegExp][] = [
    ["", /empty/],
    [" nginx", /whitespace/],
    ["ngi nx", /whitespace/],
    ["Nginx", /lowercase/],
    ["library/Nginx:1", /lowercase/],
    ["ghcr.io/Acme/app", /lowercase/],
    ["nginx:", /not a valid tag/],
    ["nginx:-bad", /not a valid tag/],
    [`nginx:${"t".repeat(129)}`, /not a valid tag/],
    ["nginx@sha256:abc", /digest/],
    [`nginx@sha256:${"A".repeat(64)}`, /digest/],
    ["nginx@", /digest/],
    [":tag", /repository name is missing/],
    ["ghcr.io/", /repository name is missing/],
    ["a//b", /empty path component/],
    ["-app", /not a valid repository path component/],
    ["app-", /not a valid repository path component/],
    ["a/b/", /empty path component/],
    ["bad_host.-x.com/app", /not a valid registry host/],
    [`${"a".repeat(256)}`, /longer than 255/],
    ["app!", /not a valid repository path component/],
  ];
  for (const [text, message] of table) {
    test(JSON.stringify(text), () => {
      let thrown: unknown;
      try {
        parseReference(text);
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toMatchObject({ kind: "reference" });
      expect((thrown as Error).message).toContain(`"${text}"`);
      expect((thrown as Error).message).toMatch(message);
    });
  }
});

test("isPinned is true exactly when a digest is written", () => {
  expect(isPinned(parseReference(`nginx@${D}`))).toBe(true);
  expect(isPinned(parseReference(`nginx:1@${D}`))).toBe(true);
  expect(isPinned(parseReference("nginx:1"))).toBe(false);
  expect(isPinned(parseReference("nginx"))).toBe(false);
});

describe("matchesImagePrefix", () => {
  const table: [string, string, boolean][] = [
    ["nginx:1.27", "nginx", true],
    ["nginx:1.27", "nginx:1", true],
    ["nginx:1.27", "nginx:2", false],
    ["docker.io/library/nginx:1.27", "nginx", true],
    ["nginx:1.27", "docker.io/library/nginx", true],
    ["nginx:1.27", "docker.io/nginx", true],
    ["nginx:1.27", "index.docker.io/library/nginx", true],
    ["nginx:1.27", "registry-1.docker.io/nginx:1.27", true],
    ["nginx:1.27", "library/nginx", true],
    ["index.docker.io/library/nginx", "nginx", true],
    ["nginx-proxy:1", "nginx", true],
    ["nginx:1.27", "redis", false],
    ["nginx:1.27", "ghcr.io/nginx", false],
    ["acme/app:1", "acme/", true],
    ["acme/app:1", "docker.io/acme/app", true],
    ["docker.io/acme/app:1", "acme/app", true],
    ["acme/app:1", "app", false],
    ["ghcr.io/acme/app:1", "ghcr.io/acme", true],
    ["ghcr.io/acme/app:1", "acme", false],
    ["ghcr.io/acme/app:1", "GHCR.io/acme", true],
    ["localhost:5000/app:1", "localhost:5000/app", true],
    ["localhost:5000/app:1", "localhost:5001/app", false],
    ["127.0.0.1:5000/svc/app", "127.0.0.1:5000/svc/", true],
    ["nginx", "", true],
  ];
  for (const [written, prefix, expected] of table) {
    test(`${JSON.stringify(prefix)} ${expected ? "matches" : "does not match"} ${written}`, () => {
      expect(matchesImagePrefix(parseReference(written), prefix)).toBe(expected);
    });
  }
});

test("withTag: the reference as written, with another tag in its tag's place or added", () => {
  expect(withTag(parseReference("nginx:1.27"), "1.28")).toBe("nginx:1.28");
  expect(withTag(parseReference("nginx"), "1.28")).toBe("nginx:1.28");
  expect(withTag(parseReference("localhost:5000/acme/app:v1.2.3"), "v1.2.4")).toBe("localhost:5000/acme/app:v1.2.4");
  expect(withTag(parseReference("localhost:5000/acme/app"), "2")).toBe("localhost:5000/acme/app:2");
});
