/**
 * A built service's build and bases, read from its project's files as compose reads them (the
 * shapes of the compose specification's `build` section: a path, a mapping, `args` as a map or a
 * list, `dockerfile_inline`, `additional_contexts`, override files, merge keys, `.env`).
 */
import { describe, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { annotatedBases, basesOf, buildOf, labelledBases } from "../../../src/compose/build.ts";
import { buildCommand, describeCommand } from "../../../src/compose/rebuild.ts";
import { tempDir } from "../../temp.ts";

function project(files: Record<string, string>, configFiles = ["compose.yaml"]) {
  const dir = tempDir("svc-compose-build-");
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    writeFileSync(join(dir, file), text);
  }
  const of = (service: string) =>
    buildOf({ name: "p", service, workingDir: dir, configFiles: configFiles.map((f) => join(dir, f)), envFiles: [] });
  const bases = (service: string) => {
    const found = of(service);
    if (!found?.ok) throw new Error(found ? found.reason : "not built");
    const answer = basesOf(found.spec);
    return answer.ok ? answer.bases.map((b) => b.reference) : answer.reason;
  };
  return { dir, of, bases };
}

describe("a built service's build", () => {
  test("a service without build: is not a built one", () => {
    expect(project({ "compose.yaml": "services:\n  web:\n    image: nginx:1\n" }).of("web")).toBeNull();
  });

  test("build: a path; the image compose names it <project>-<service>", () => {
    const p = project({
      "compose.yaml": "services:\n  web:\n    build: ./app\n",
      "app/Dockerfile": "FROM busybox:1.36\n",
    });
    const found = p.of("web");
    expect(found?.ok && found.spec).toMatchObject({
      context: join(p.dir, "app"),
      dockerfile: join(p.dir, "app", "Dockerfile"),
      image: "p-web",
    });
    expect(p.bases("web")).toEqual(["busybox:1.36"]);
  });

  test("image: beside build: names the built image", () => {
    const p = project({
      "compose.yaml": "services:\n  web:\n    image: me/web:dev\n    build: .\n",
      Dockerfile: "FROM busybox\n",
    });
    const found = p.of("web");
    expect(found?.ok && found.spec.image).toBe("me/web:dev");
  });

  test("the tag in .env through build.args", () => {
    const p = project({
      "compose.yaml": "services:\n  web:\n    build:\n      context: .\n      args:\n        TAG: ${BASE_TAG}\n",
      ".env": "BASE_TAG=1.37\n",
      Dockerfile: "ARG TAG=1.36\nFROM busybox:${TAG}\n",
    });
    expect(p.bases("web")).toEqual(["busybox:1.37"]);
  });

  test("where each build arg's value is written: one run of .env, or why not", () => {
    const p = project({
      "compose.yaml":
        "services:\n  web:\n    build:\n      context: .\n      args:\n        TAG: ${BASE_TAG}\n        PART: v${BASE_TAG}\n        LIT: '1.0'\n",
      ".env": "# tags\nBASE_TAG=1.37\n",
      Dockerfile: "ARG TAG=1.36\nFROM busybox:${TAG}\n",
    });
    const found = p.of("web");
    if (!found?.ok) throw new Error("not built");
    const sites = Object.fromEntries(found.spec.argSites);
    expect(sites.TAG).toEqual({ file: join(p.dir, ".env"), offset: 16, text: "1.37", variable: "BASE_TAG" });
    expect(sites.PART).toHaveProperty("reason");
    expect(sites.LIT).toEqual({ reason: "build.args.LIT is written in the compose file, not in an env file" });
  });

  test("an arg written without a value: its .env line", () => {
    const p = project({
      "compose.yaml": "services:\n  web:\n    build:\n      context: .\n      args: [TAG]\n",
      ".env": "TAG='3.20'\n",
      Dockerfile: "ARG TAG\nFROM alpine:${TAG}\n",
    });
    const found = p.of("web");
    expect(found?.ok && found.spec.argSites.get("TAG")).toEqual({
      file: join(p.dir, ".env"),
      offset: 5,
      text: "3.20",
      variable: "TAG",
    });
  });

  test("a variable named outside build.args, or the env file handed to a container, is not svc's to change", () => {
    const reasons = (compose: string, env = "BASE_TAG=1.37\n") => {
      const p = project({ "compose.yaml": compose, ".env": env, Dockerfile: "ARG TAG\nFROM busybox:${TAG}\n" });
      const found = p.of("web");
      if (!found?.ok) throw new Error("not built");
      const site = found.spec.argSites.get("TAG")!;
      return "reason" in site ? site.reason : null;
    };
    const web = "services:\n  web:\n    build:\n      context: .\n      args:\n        TAG: ${BASE_TAG}\n";
    expect(reasons(web)).toBeNull();
    // another service built from the same tag shares it
    expect(reasons(`${web}  api:\n    build:\n      context: .\n      args: { TAG: "\${BASE_TAG}" }\n`)).toBeNull();
    expect(reasons(`${web}    environment: [BASE_TAG]\n`)).toBe(
      "BASE_TAG, which holds it, is also named at compose.yaml line 7, outside build.args",
    );
    expect(reasons(`${web}  db:\n    image: postgres:\${BASE_TAG}\n`)).toContain("line 8, outside build.args");
    expect(reasons(`${web}    env_file: .env\n`)).toBe(
      ".env, which holds it, is also named at compose.yaml line 7 (a container may read it)",
    );
    expect(reasons(web, "BASE_TAG=1.37\nOTHER=${BASE_TAG}-x\n")).toBe(
      "BASE_TAG, which holds it, is used by another variable at .env line 2",
    );
  });

  test("args as a list, an arg without a value read from .env", () => {
    const p = project({
      "compose.yaml":
        "services:\n  web:\n    build:\n      context: .\n      args:\n        - TAG\n        - REPO=alpine\n",
      ".env": "TAG=3.20\n",
      Dockerfile: "ARG REPO\nARG TAG\nFROM ${REPO}:${TAG}\n",
    });
    expect(p.bases("web")).toEqual(["alpine:3.20"]);
  });

  test("a Dockerfile named in another folder, relative to the context", () => {
    const p = project({
      "compose.yaml": "services:\n  web:\n    build:\n      context: app\n      dockerfile: ../docker/web.Dockerfile\n",
      "app/x": "",
      "docker/web.Dockerfile": "FROM golang:1.23 AS build\nFROM gcr.io/distroless/static\nCOPY --from=build /a /a\n",
    });
    expect(p.bases("web")).toEqual(["golang:1.23", "gcr.io/distroless/static"]);
  });

  test("dockerfile_inline, interpolated", () => {
    const p = project({
      "compose.yaml":
        "services:\n  web:\n    build:\n      dockerfile_inline: |\n        FROM busybox:${BB:-1.36}\n        RUN true\n",
    });
    expect(p.bases("web")).toEqual(["busybox:1.36"]);
  });

  test("additional_contexts of the docker-image:// kind, one replacing the FROM it names", () => {
    const p = project({
      "compose.yaml":
        "services:\n  web:\n    build:\n      context: .\n      additional_contexts:\n        alpine: docker-image://alpine:3.20\n        src: ./src\n        tools: docker-image://caddy:2.8\n",
      Dockerfile: "FROM alpine\nCOPY --from=tools /x /x\n",
    });
    expect(p.bases("web")).toEqual(["alpine:3.20", "caddy:2.8"]);
  });

  test("an override file's args over the first file's, key by key", () => {
    const p = project(
      {
        "compose.yaml":
          "services:\n  web:\n    build:\n      context: .\n      args:\n        REPO: busybox\n        TAG: '1'\n",
        "prod.yaml": "services:\n  web:\n    build:\n      args:\n        TAG: '2'\n",
        Dockerfile: "ARG REPO\nARG TAG\nFROM $REPO:$TAG\n",
      },
      ["compose.yaml", "prod.yaml"],
    );
    expect(p.bases("web")).toEqual(["busybox:2"]);
  });

  test("every profile the project's services name, each once, for the build to enable", () => {
    const p = project({
      "compose.yaml":
        "services:\n  app:\n    build: .\n    profiles: [extra]\n    depends_on: [db]\n  db:\n    image: db:1\n    profiles: [other, extra]\n  web:\n    image: web:1\n",
      Dockerfile: "FROM busybox:1.36\n",
    });
    const found = p.of("app");
    expect(found?.ok && found.spec.profiles).toEqual(["extra", "other"]);
  });

  test("merge keys", () => {
    const p = project({
      "compose.yaml":
        "x-build: &b\n  context: .\n  args:\n    TAG: '9'\nservices:\n  web:\n    build:\n      <<: *b\n      dockerfile: web.Dockerfile\n",
      "web.Dockerfile": "ARG TAG\nFROM busybox:$TAG\n",
    });
    expect(p.bases("web")).toEqual(["busybox:9"]);
  });

  test("a base pinned by digest stays pinned", () => {
    const digest = `sha256:${"a".repeat(64)}`;
    const p = project({
      "compose.yaml": "services:\n  web:\n    build: .\n",
      Dockerfile: `FROM busybox:1@${digest}\n`,
    });
    expect(p.bases("web")).toEqual([`busybox:1@${digest}`]);
  });

  test("a remote context or a Dockerfile svc cannot see is a reason", () => {
    const remote = project({ "compose.yaml": "services:\n  web:\n    build: https://github.com/me/app.git\n" });
    expect(remote.bases("web")).toContain("remote context");
    const missing = project({ "compose.yaml": "services:\n  web:\n    build: ./gone\n" });
    expect(missing.bases("web")).toContain("svc cannot see");
  });
});

describe("the label svc.build.base", () => {
  test("names bases by hand", () => {
    expect(labelledBases({ "svc.build.base": " caddy:2.8, alpine:3.20 " })?.map((b) => b.reference)).toEqual([
      "caddy:2.8",
      "alpine:3.20",
    ]);
    expect(labelledBases({})).toBeNull();
  });
});

describe("the base buildah's annotations name", () => {
  // what `podman build` (buildah 1.43, new.go) wrote into an image built FROM a base in a registry,
  // as Podman 5.8's own inspect shows them
  const written = {
    "org.opencontainers.image.base.digest": "sha256:a341c97e6480c87dc79880c4a40f9fa1081b26cfea2be335fa93543b8731e438",
    "org.opencontainers.image.base.name": "127.0.0.1:5330/pbase:1",
    "org.opencontainers.image.created": "2026-12-02T13:00:19.445956075Z",
  };
  test("the name, not the digest (the local store's manifest, perhaps one platform's)", () => {
    expect(annotatedBases(written)).toEqual([
      { reference: "127.0.0.1:5330/pbase:1", platform: null, line: 0, via: "annotation" },
    ]);
  });
  test("a digest without a name, no annotations, or a name that is none: no base", () => {
    const { "org.opencontainers.image.base.name": _, ...digestOnly } = written;
    expect(annotatedBases(digestOnly)).toBeNull();
    expect(annotatedBases({})).toBeNull();
    expect(annotatedBases(null)).toBeNull();
    expect(annotatedBases({ "org.opencontainers.image.base.name": " " })).toBeNull();
    expect(annotatedBases({ "org.opencontainers.image.base.name": "a b" })).toBeNull();
  });
});

describe("the build svc runs", () => {
  const cli = { command: ["/usr/bin/docker", "compose"], version: "2.40.3", env: {} };
  const project = {
    name: "web",
    service: "app",
    workingDir: "/srv/my stacks/web",
    configFiles: ["/srv/my stacks/web/compose.yaml", "/srv/my stacks/web/prod.yaml"],
    envFiles: ["/srv/my stacks/web/.env.prod"],
  };
  test("compose build --pull with the project's name, folder, files and env files", () => {
    expect(buildCommand(cli, project)).toEqual([
      "/usr/bin/docker",
      "compose",
      "-p",
      "web",
      "--project-directory",
      "/srv/my stacks/web",
      "-f",
      "/srv/my stacks/web/compose.yaml",
      "-f",
      "/srv/my stacks/web/prod.yaml",
      "--env-file",
      "/srv/my stacks/web/.env.prod",
      "build",
      "--pull",
      "app",
    ]);
  });
  test("each profile enabled, before the command", () => {
    expect(buildCommand(cli, { ...project, envFiles: [] }, ["extra", "other"]).slice(-7)).toEqual([
      "--profile",
      "extra",
      "--profile",
      "other",
      "build",
      "--pull",
      "app",
    ]);
  });
  test("said as a person would type it, quoted where needed", () => {
    expect(
      describeCommand(buildCommand(cli, { ...project, configFiles: [project.configFiles[0]!], envFiles: [] })),
    ).toBe(
      "/usr/bin/docker compose -p web --project-directory '/srv/my stacks/web' -f '/srv/my stacks/web/compose.yaml' build --pull app",
    );
  });
});
