/**
 * The build svc makes without the compose CLI: what the engine's classic builder cannot build is
 * named before anything is read, and the context svc packs is what `docker build` would send
 * (its .dockerignore applied, a link kept as a link, an inline Dockerfile added), read back
 * with tar-stream's own extractor.
 */
import { describe, expect, test } from "bun:test";
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import tar from "tar-stream";
import { buildOf } from "../../../src/compose/build.ts";
import { engineBuildProblem, packContext } from "../../../src/compose/context.ts";
import { buildKitOnly } from "../../../src/compose/dockerfile.ts";
import { tempDir } from "../../temp.ts";

function specOf(files: Record<string, string>, service = "app") {
  const dir = tempDir("svc-compose-context-");
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    writeFileSync(join(dir, file), text);
  }
  const found = buildOf({
    name: "p",
    service,
    workingDir: dir,
    configFiles: [join(dir, "compose.yaml")],
    envFiles: [],
  });
  if (!found?.ok) throw new Error(found ? found.reason : "not built");
  return { dir, spec: found.spec };
}

/** name -> the entry's type and text (a link: its target). */
async function unpack(stream: NodeJS.ReadableStream): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const extract = tar.extract();
  const done = new Promise<void>((resolve, reject) => {
    extract.on("entry", (header, body, next) => {
      const chunks: Buffer[] = [];
      body.on("data", (c: Buffer) => chunks.push(c));
      body.on("end", () => {
        out.set(
          header.name,
          header.type === "symlink" ? `link:${header.linkname}` : `${header.type}:${Buffer.concat(chunks)}`,
        );
        next();
      });
      body.resume();
    });
    extract.on("finish", resolve);
    extract.on("error", reject);
  });
  stream.pipe(extract);
  await done;
  return out;
}

describe("what only BuildKit builds", () => {
  test.each([
    ["FROM a\nRUN --mount=type=cache,target=/c make\n", "line 2: RUN --mount"],
    ["FROM a\nRUN --network=none true\n", "line 2: RUN --network"],
    ["FROM a\nCOPY --link . /app\n", "line 2: COPY --link"],
    ["FROM a\nADD --checksum=sha256:00 http://x/y /y\n", "line 2: ADD --checksum"],
    ["FROM a\nRUN <<EOF\necho hi\nEOF\n", "line 2: RUN with a heredoc (<<EOF)"],
    ["# syntax=docker/dockerfile:1\nFROM a\n", "line 1: # syntax=docker/dockerfile:1 names a BuildKit frontend"],
  ])("%j: %s", (text, found) => {
    expect(buildKitOnly(text)).toBe(found);
  });

  test("a Dockerfile of the classic builder's instructions, with FROM --platform and COPY --from, is none", () => {
    expect(
      buildKitOnly("ARG V=1\nFROM --platform=linux/amd64 a:${V} AS b\nRUN echo 'x << y'\nFROM a\nCOPY --from=b / /\n"),
    ).toBeNull();
  });

  test("compose build keys: BuildKit's named, one svc does not pass named, the passed ones none", () => {
    const compose = (build: string) => ({
      "compose.yaml": `services:\n  app:\n    build:\n${build}`,
      Dockerfile: "FROM a\n",
    });
    expect(engineBuildProblem(specOf(compose("      context: .\n      ssh: [default]\n")).spec)).toBe(
      "build.ssh: only BuildKit builds that, and without the compose CLI svc reaches the engine's classic builder",
    );
    expect(engineBuildProblem(specOf(compose("      context: .\n      shm_size: 1g\n")).spec)).toBe(
      "build.shm_size: svc's own build (without the compose CLI) does not pass it",
    );
    expect(
      engineBuildProblem(
        specOf(
          compose("      context: .\n      target: t\n      network: none\n      args: [A]\n      labels: { a: b }\n"),
        ).spec,
      ),
    ).toBeNull();
  });
});

describe("the context svc packs", () => {
  test(".dockerignore applied as moby reads it, the Dockerfile and .dockerignore always sent, a link kept", async () => {
    const { dir, spec } = specOf({
      "compose.yaml": "services:\n  app:\n    build: .\n",
      Dockerfile: "FROM a\n",
      ".dockerignore": "Dockerfile\n*.log\nsecret\nnode_modules\n!node_modules/keep\n",
      "top.log": "x",
      "sub/deep.log": "kept: *.log matches at the root only",
      secret: "no",
      "node_modules/drop": "no",
      "node_modules/keep": "yes",
      "src/main.txt": "main",
    });
    symlinkSync("/etc/passwd", join(dir, "outside"));
    const packed = packContext(spec);
    expect(packed.dockerfile).toBe("Dockerfile");
    const files = await unpack(packed.stream);
    expect([...files.keys()].sort()).toEqual([
      ".dockerignore",
      "Dockerfile",
      "compose.yaml",
      "node_modules/keep",
      "outside",
      "src",
      "src/main.txt",
      "sub",
      "sub/deep.log",
    ]);
    expect(files.get("outside")).toBe("link:/etc/passwd");
    expect(files.get("Dockerfile")).toBe("file:FROM a\n");
    expect(files.get("src/main.txt")).toBe("file:main");
  });

  test("dockerfile_inline is sent at the root under a name of its own", async () => {
    const { spec } = specOf({
      "compose.yaml": "services:\n  app:\n    build:\n      context: .\n      dockerfile_inline: |\n        FROM a\n",
    });
    const packed = packContext(spec);
    expect(packed.dockerfile).toMatch(/^\.svc-dockerfile\.[0-9a-f]{16}$/);
    expect((await unpack(packed.stream)).get(packed.dockerfile)).toBe("file:FROM a\n");
  });
});
