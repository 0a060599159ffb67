/**
 * A tag move written into the unit file of a container systemd runs (src/engine/unitfile.ts;
 * docs/podman.md, "A tag move of a container systemd runs"). The oracle for the files' shape is
 * Podman's own (fixtures/podman-units/README.md): quadlet's test files (test/e2e/quadlet/*.container,
 * whose `## assert-podman-final-args` names the image quadlet runs) and the units `podman generate
 * systemd --new` writes (pkg/systemd/generate/containers_test.go); the reading rules are quadlet's
 * parser (pkg/systemd/parser/unitfile.go) and systemd.service(5), "Command lines".
 */
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { dropInFolders, findImage, moveImage, setsImage, shapeOf } from "../../../src/engine/unitfile.ts";
import { runsOnlyOld } from "../../../src/updater/containers/unitmove.ts";

const FIXTURES = join(import.meta.dir, "fixtures/podman-units");
const fixture = (name: string) => readFileSync(join(FIXTURES, name), "utf8");

/** What changed between two texts: the one run of characters that differs. */
function changed(before: string, after: string): { at: number; old: string; new: string } {
  let start = 0;
  while (start < before.length && before[start] === after[start]) start++;
  let endB = before.length;
  let endA = after.length;
  while (endB > start && endA > start && before[endB - 1] === after[endA - 1]) {
    endB--;
    endA--;
  }
  return { at: start, old: before.slice(start, endB), new: after.slice(start, endA) };
}

describe("a quadlet .container file: the Image= of [Container]", () => {
  test.each([
    // [fixture (test/e2e/quadlet/), the image its assert-podman-final-args names]
    ["basic.container", "localhost/imagename"],
    ["quotes.container", "localhost/imagename"],
    ["comment-with-continuation.container", "localhost/imagename:latest"],
    ["line-continuation-whitespace.container", "localhost/imagename"],
    ["other-sections.container", "localhost/imagename"],
    ["escapes.container", "localhost/imagename"],
  ])("%s: the image quadlet runs (%s) moves, nothing else changes", (name, image) => {
    const before = fixture(name);
    const to = `${image.replace(/:latest$/, "")}:2.0`;
    const moved = moveImage(before, "quadlet", image, to);
    if (typeof moved === "string") throw new Error(moved);
    const diff = changed(before, moved.after);
    expect(moved.after.split("\n")[moved.line - 1]).toContain(to);
    expect(before.slice(0, diff.at) + diff.new + before.slice(diff.at + diff.old.length)).toBe(moved.after);
    // the only line that changed is the Image= line of [Container]
    expect(before.split("\n")[moved.line - 1]).toMatch(/^Image="?localhost\/imagename/);
    expect(moved.after.split("\n").filter((l, i) => l !== before.split("\n")[i])).toHaveLength(1);
  });

  test("quotes.container: the quotes stay, the reference inside them moves", () => {
    const moved = moveImage(fixture("quotes.container"), "quadlet", "localhost/imagename", "localhost/imagename:2");
    expect(typeof moved !== "string" && moved.after).toContain('Image="localhost/imagename:2"\n');
  });

  test("comment-with-continuation.container: commented-out Image= lines are left alone", () => {
    const moved = moveImage(
      fixture("comment-with-continuation.container"),
      "quadlet",
      "localhost/imagename:latest",
      "localhost/imagename:2",
    );
    if (typeof moved === "string") throw new Error(moved);
    expect(moved.after).toContain(
      "# Image=localhost/otherimagename:latest\nImage=localhost/imagename:2\n; Image=localhost/image:latest\n",
    );
  });

  test("other-sections.container: an Image key of another section ([X-Container]) is not the container's", () => {
    const text = `${fixture("other-sections.container")}\n[X-Container]\nImage=localhost/imagename\n`;
    const moved = moveImage(text, "quadlet", "localhost/imagename", "localhost/imagename:2");
    if (typeof moved === "string") throw new Error(moved);
    expect(moved.after.endsWith("[X-Container]\nImage=localhost/imagename\n")).toBe(true);
  });

  test.each([
    ["CRLF lines", "[Container]\r\nImage=app:1.0\r\nExec=x\r\n", "[Container]\r\nImage=app:1.1\r\nExec=x\r\n"],
    ["spaces around =, trailing spaces", "[Container]\n  Image =  app:1.0  \n", "[Container]\n  Image =  app:1.1  \n"],
    [
      "a [Container] section given twice",
      "[Container]\nExec=x\n[Service]\nRestart=always\n[Container]\nImage=app:1.0",
      "[Container]\nExec=x\n[Service]\nRestart=always\n[Container]\nImage=app:1.1",
    ],
    ["a BOM-less file with no final newline", "[Container]\nImage=app:1.0", "[Container]\nImage=app:1.1"],
  ])("%s: only the reference's characters change", (_, before, after) => {
    const moved = moveImage(before, "quadlet", "app:1.0", "app:1.1");
    expect(typeof moved === "string" ? moved : moved.after).toBe(after);
  });

  test.each([
    ["no Image=", "[Container]\nExec=x\n", "has no Image= line"],
    ["two Image= lines (the last wins in quadlet)", "[Container]\nImage=app:1.0\nImage=app:1.0\n", "2 Image= lines"],
    ["a .image unit", "[Container]\nImage=app.image\n", "names app.image, not the container's app:1.0"],
    ["a reference the old one is a prefix of", "[Container]\nImage=app:1.0.1\n", "names app:1.0.1"],
    [
      "the old one a prefix of the file's (registry)",
      "[Container]\nImage=docker.io/library/app:1.0\n",
      "names docker.io/library/app:1.0",
    ],
    ["a continuation inside Image=", "[Container]\nImage=app:\\\n1.0\n", "goes on over a line continuation"],
    ["Image= outside [Container]", "[Service]\nImage=app:1.0\n", "has no Image= line"],
  ])("%s: not moved, with the reason", (_, text, reason) => {
    const moved = moveImage(text, "quadlet", "app:1.0", "app:1.1");
    expect(moved).toBeTypeOf("string");
    expect(moved as string).toContain(reason);
  });
});

describe("a .service file of `podman generate systemd --new`: the image argument of podman run", () => {
  test("goodWithNameAndGeneric (container run, a command after the image): the image moves, its arguments stay", () => {
    const before = fixture("goodWithNameAndGeneric.service");
    const moved = moveImage(before, "service", "awesome-image:latest", "awesome-image:2.0");
    if (typeof moved === "string") throw new Error(moved);
    expect(changed(before, moved.after)).toMatchObject({ old: "latest", new: "2.0" });
    expect(moved.after).toContain(
      '\t--hostname hello-world awesome-image:2.0 command arg1 ... argN "foo=arg \\"with \\" space"\n',
    );
    expect(before.split("\n")[moved.line - 1]).toContain("awesome-image:latest");
  });

  test("goodNewRootFlags (podman's global flags over continuations before run): the image moves", () => {
    const before = fixture("goodNewRootFlags.service");
    const moved = moveImage(before, "service", "awesome-image:latest", "awesome-image:2.0");
    if (typeof moved === "string") throw new Error(moved);
    expect(moved.after).toBe(before.replace("-d awesome-image:latest\n", "-d awesome-image:2.0\n"));
  });

  test.each([
    ["quoted", 'ExecStart=/usr/bin/podman run -d "app:1.0"', 'ExecStart=/usr/bin/podman run -d "app:1.1"'],
    ["single-quoted", "ExecStart=/usr/bin/podman run -d 'app:1.0'", "ExecStart=/usr/bin/podman run -d 'app:1.1'"],
    [
      "CRLF and a continuation",
      "ExecStart=/usr/bin/podman run \\\r\n\t-d app:1.0\r\n",
      "ExecStart=/usr/bin/podman run \\\r\n\t-d app:1.1\r\n",
    ],
    [
      "a prefix (-) on the command",
      "ExecStart=-/usr/bin/podman run -d app:1.0",
      "ExecStart=-/usr/bin/podman run -d app:1.1",
    ],
    [
      "ExecStartPre and ExecStop naming it too",
      "ExecStartPre=/usr/bin/podman pull app:1.0\nExecStart=/usr/bin/podman run app:1.0\nExecStop=/usr/bin/podman stop app:1.0",
      "ExecStartPre=/usr/bin/podman pull app:1.0\nExecStart=/usr/bin/podman run app:1.1\nExecStop=/usr/bin/podman stop app:1.0",
    ],
    [
      "a reference that is a prefix of another argument",
      "ExecStart=/usr/bin/podman run --label v=app:1.0 app:1.0 app:1.0.1",
      "ExecStart=/usr/bin/podman run --label v=app:1.0 app:1.1 app:1.0.1",
    ],
  ])("%s: only the reference's characters change", (_, line, after) => {
    const moved = moveImage(`[Service]\n${line}`, "service", "app:1.0", "app:1.1");
    expect(typeof moved === "string" ? moved : moved.after).toBe(`[Service]\n${after}`);
  });

  test.each([
    ["named twice", "ExecStart=/usr/bin/podman run app:1.0 echo app:1.0", "names app:1.0 2 times"],
    [
      "only as part of an argument",
      "ExecStart=/usr/bin/podman run --label=x=app:1.0 app:1.0.1",
      "does not name app:1.0 as a whole argument",
    ],
    ["through a variable", "ExecStart=/usr/bin/podman run $IMAGE", "does not name app:1.0"],
    ["escaped characters", "ExecStart=/usr/bin/podman run app\\x3a1.0", "does not name app:1.0"],
    ["not podman run", "ExecStart=/usr/bin/podman start web", "is not a `podman run` command"],
    ["a quote left open", 'ExecStart=/usr/bin/podman run "app:1.0', "a quote that does not close"],
    [
      "a comment inside the continuation",
      "ExecStart=/usr/bin/podman run \\\n# a note\n  app:1.0",
      "a comment inside its continuation",
    ],
  ])("%s: not moved, with the reason", (_, line, reason) => {
    const moved = moveImage(`[Service]\n${line}\n`, "service", "app:1.0", "app:1.1");
    expect(moved).toBeTypeOf("string");
    expect(moved as string).toContain(reason);
  });

  test("the new reference is never one that would change how the line reads", () => {
    for (const to of ["app:1.1 --privileged", "app:1.1\nExecStartPre=/bin/sh", 'app"', "app;x"]) {
      expect(moveImage("[Service]\nExecStart=/usr/bin/podman run app:1.0\n", "service", "app:1.0", to)).toBeTypeOf(
        "string",
      );
    }
  });
});

describe("the shape of a unit's file", () => {
  test.each([
    ["/home/u/.config/containers/systemd/web.container", "quadlet"],
    ["/home/u/.config/systemd/user/container-web.service", "service"],
    ["/etc/containers/systemd/web.kube", null],
  ])("%s: %p", (path, shape) => {
    expect(shapeOf(path)).toBe(shape as ReturnType<typeof shapeOf>);
  });

  test("findImage gives the reference's line and offset", () => {
    const text = "[Unit]\nDescription=x\n\n[Container]\nImage=app:1.0\n";
    expect(findImage(text, "quadlet", "app:1.0")).toEqual({ offset: text.indexOf("app:1.0"), line: 5 });
  });
});

describe('quadlet\'s drop-ins (podman-systemd.unit(5), "Drop-in"; pkg/systemd/parser/unitfile.go, GetUnitDropinPaths)', () => {
  test.each([
    ["web.container", ["container.d", "web.container.d"]],
    ["web-app.container", ["container.d", "web-.container.d", "web-app.container.d"]],
    ["a-b-c.container", ["container.d", "a-.container.d", "a-b-.container.d", "a-b-c.container.d"]],
    ["foo@bar.container", ["container.d", "foo@.container.d", "foo@bar.container.d"]],
    ["a-b@c.container", ["container.d", "a-.container.d", "a-@.container.d", "a-b@.container.d", "a-b@c.container.d"]],
    ["foo@.container", ["container.d", "foo@.container.d"]],
  ])("%s: its folders, broadest first", (file, folders) => {
    expect(dropInFolders(file)).toEqual(folders);
  });

  test("a drop-in sets the image only with Image= in [Container], as quadlet reads keys", () => {
    expect(setsImage("[Container]\nImage=app:1.0\n")).toBe(true);
    expect(setsImage("[Container]\n  Image = app:1.0\n")).toBe(true);
    expect(setsImage("[Container]\n# Image=app:1.0\n; Image=app:1.0\nEnvironment=A=1\n")).toBe(false);
    expect(setsImage("[Service]\nImage=app:1.0\n")).toBe(false);
    expect(setsImage("")).toBe(false);
  });

  test("the unit quadlet made under such a drop-in runs its image, not the file's (quadlet-generated.service)", () => {
    const loaded = fixture("quadlet-generated.service");
    const move = { from: "127.0.0.1:5030/web:1.0.0", to: "127.0.0.1:5030/web:1.1.0" };
    // the file's Image= (in [X-Container]) is not what runs: the podman run line is
    expect(runsOnlyOld(loaded, move)).toBe(true);
    expect(runsOnlyOld(loaded, { from: move.to, to: move.from })).toBe(false);
    expect(runsOnlyOld(loaded, { from: "other:1", to: "other:2" })).toBe(false);
  });
});
