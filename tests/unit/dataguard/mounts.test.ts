/** Which mounts the data guard copies, the label's forms, sizes, the version a copy belongs to, where a helper finds the copies' folder. */
import { describe, expect, test } from "bun:test";
import { formatSize, parseSize } from "../../../src/config/values.ts";
import { isHelperTag, onEngineHost, throughOwnMounts } from "../../../src/dataguard/helper.ts";
import { archiveParent, guardedMounts, guardModeOf, versionOf } from "../../../src/dataguard/index.ts";

const mounts = (list: object[]) => ({ Mounts: list }) as never;
const volume = (destination: string, rw = true, name = "v") => ({
  Type: "volume",
  Name: name,
  Source: `/var/lib/docker/volumes/${name}/_data`,
  Destination: destination,
  RW: rw,
});
const bind = (destination: string, rw = true) => ({
  Type: "bind",
  Source: `/srv${destination}`,
  Destination: destination,
  RW: rw,
});

describe("guardedMounts", () => {
  const container = mounts([
    volume("/data"),
    volume("/ro", false, "ro"),
    bind("/config"),
    bind("/etc/app.conf", false),
    { Type: "tmpfs", Destination: "/tmp", RW: true },
  ]);

  test("off: nothing", () => expect(guardedMounts(container, "off")).toEqual({ mounts: [] }));

  test("volumes: the read-write volumes only", () => {
    expect(guardedMounts(container, "volumes")).toEqual({
      mounts: [{ destination: "/data", type: "volume", name: "v", source: "/var/lib/docker/volumes/v/_data" }],
    });
  });

  test("all: the read-write bind mounts too, never a read-only one or a tmpfs", () => {
    const guarded = guardedMounts(container, "all");
    expect("mounts" in guarded && guarded.mounts.map((m) => m.destination)).toEqual(["/config", "/data"]);
  });

  test("a mount nested in a guarded one is refused, whatever its own mode", () => {
    const nested = guardedMounts(mounts([volume("/data"), volume("/data/cache", false, "c")]), "volumes");
    expect(nested).toEqual({
      problem: "mount /data/cache lies inside the guarded mount /data; its restore would empty both",
    });
    // a sibling that only starts with the same letters is not nested
    expect("mounts" in guardedMounts(mounts([volume("/data"), volume("/database", true, "d")]), "volumes")).toBe(true);
  });
});

describe("the label svc.data_guard", () => {
  test.each([
    [undefined, "off", "off"],
    ["volumes", "off", "volumes"],
    [" ALL ", "volumes", "all"],
    ["off", "all", "off"],
    ["false", "volumes", "off"],
    ["true", "off", "volumes"],
    ["true", "all", "all"],
    ["", "volumes", "volumes"],
    ["sometimes", "volumes", undefined],
  ] as const)("%p with the option %p: %p", (label, option, expected) => {
    expect(guardModeOf(label, option)).toBe(expected);
  });
});

describe("sizes", () => {
  test.each([
    ["1GiB", 1024 ** 3],
    ["512MiB", 512 * 1024 ** 2],
    ["2g", 2 * 1024 ** 3],
    ["1.5G", 1.5 * 1024 ** 3],
    ["1024", 1024],
    ["10 KB", 10 * 1024],
  ])("%p is %p bytes", (text, bytes) => expect(parseSize(text)).toBe(bytes));

  test.each(["", "1 GB extra", "-1G", "1PB", "G", "1e9"])("%p is not a size", (text) =>
    expect(parseSize(text)).toBeUndefined(),
  );

  test("formatted for people", () => {
    expect([formatSize(900), formatSize(1536 * 1024 ** 2), formatSize(1024 ** 3)]).toEqual([
      "900 B",
      "1.5 GiB",
      "1 GiB",
    ]);
  });
});

test("a copy's version: the image's version label, else its tag, else none", () => {
  expect(versionOf("ghcr.io/acme/app:1.2", { "org.opencontainers.image.version": "1.2.3" })).toBe("1.2.3");
  expect(versionOf("registry:5000/app:1.2", undefined)).toBe("1.2");
  expect(versionOf("registry:5000/app", {})).toBeNull();
});

test("an archive's parent and base: its entries named under the mount's last part", () => {
  expect(archiveParent("/var/lib/postgresql/data")).toEqual({ parent: "/var/lib/postgresql", base: "data" });
  expect(archiveParent("/data")).toEqual({ parent: "/", base: "data" });
});

describe("where a helper finds the copies' folder (helper.ts)", () => {
  test("svc on the engine's host: the folder itself, bound", () => {
    expect(onEngineHost("/var/lib/svc/data-guard/app/1", "/copy")).toEqual({
      mount: { Type: "bind", Source: "/var/lib/svc/data-guard/app/1", Target: "/copy" },
      path: "/copy",
    });
  });

  // the Mounts of `docker inspect` of svc's own container (Docker's Engine API, MountPoint)
  const own = throughOwnMounts([
    { Type: "bind", Source: "/var/run/docker.sock", Destination: "/var/run/docker.sock" },
    {
      Type: "volume",
      Name: "svc-state",
      Source: "/var/lib/docker/volumes/svc-state/_data",
      Destination: "/var/lib/svc",
    },
    { Type: "bind", Source: "/srv/copies", Destination: "/var/lib/svc/data-guard" },
    { Type: "tmpfs", Source: "", Destination: "/tmp" },
  ]);

  test("svc in a container: the deepest of its mounts that holds the folder, mounted in turn", () => {
    expect(own("/var/lib/svc/data-guard/app/1", "/copy")).toEqual({
      mount: { Type: "bind", Source: "/srv/copies", Target: "/copy" },
      path: "/copy/app/1",
    });
    expect(own("/var/lib/svc/other/app/1", "/copy")).toEqual({
      mount: { Type: "volume", Source: "svc-state", Target: "/copy" },
      path: "/copy/other/app/1",
    });
  });

  test("a folder in the container's own files, on a tmpfs, or beside a mount's name: none", () => {
    expect(own("/data/copies/app/1", "/copy")).toBeNull();
    expect(own("/tmp/copies", "/copy")).toBeNull();
    expect(own("/var/lib/svc-other/app", "/copy")).toBeNull();
  });
});

describe("the helper's images, as engines list them (helper.ts)", () => {
  test("Docker's name as imported, Podman's under docker.io/library/ or localhost/: the helper's", () => {
    for (const tag of [
      "svc-data-guard-helper:c31647ad68df0565",
      "docker.io/library/svc-data-guard-helper:c31647ad68df0565",
      "localhost/svc-data-guard-helper:c31647ad68df0565",
    ])
      expect(isHelperTag(tag)).toBe(true);
  });
  test("another repository of that name, or another image: not the helper's", () => {
    for (const tag of [
      "ghcr.io/someone/svc-data-guard-helper:1",
      "docker.io/someone/svc-data-guard-helper:1",
      "svc-data-guard-helper-other:1",
      "busybox:latest",
    ])
      expect(isHelperTag(tag)).toBe(false);
  });
});
