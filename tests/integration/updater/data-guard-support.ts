/** What the data guard's tests share: data a v1 writes, what a v2 does to it, and reading a volume's state. */

import { chownSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { docker, inspect, waitUntil } from "../../harness.ts";
import { setXattr, type TreeManifest, treeManifest } from "../../support/tree-manifest.ts";

/** v1's data: owners, modes (setuid, sticky), an old time, a symlink, a dangling one, a hard link, a fifo, a hidden file, 2 MiB of noise. */
export const WRITE_V1 = [
  "test -e /data/version || (set -e; cd /data",
  "echo v1-data > a; busybox chown 1000:1001 a; busybox chmod 640 a",
  "busybox ln a hard; busybox ln -s a sym; busybox ln -s /nowhere dangling",
  "mkdir -p d/e; echo x > d/e/f; busybox chmod 1777 d; busybox chown 33:33 d/e",
  "echo secret > .hidden; busybox chmod 4755 .hidden",
  "busybox mkfifo fifo",
  "busybox dd if=/dev/urandom of=noise bs=1024 count=2048 2>/dev/null",
  "busybox touch -d '2020-01-02 03:04:05' a d/e/f",
  "echo v1 > version)",
].join("; ");

/** What a migrating v2 does before it fails: rewrites everything, irreversibly. */
export const MIGRATE_V2 =
  "cd /data && rm -rf /data/* /data/.hidden && echo v2-format > a && mkdir -p new/deep && echo junk > new/deep/file && busybox chmod 700 /data && echo v2 > version";

/** Where a container's mount of `destination` lives on the engine's host (the sandbox's engines are local). */
export function hostPathOf(container: string, destination = "/data"): string {
  const mount = (inspect(container).Mounts as { Destination: string; Source: string }[]).find(
    (m) => m.Destination === destination,
  );
  if (!mount) throw new Error(`${container} mounts nothing at ${destination}`);
  // Podman 5.8 serves from a root of its own, where the sandbox's podman folder is /svc
  // (scripts/sandbox.sh, "Podman 5"): the same folder on the host
  if (process.env.SVC_TEST_ENGINE?.startsWith("podman5") && mount.Source.startsWith("/svc/"))
    return `${process.env.SVC_SANDBOX_DIR}/podman/${mount.Source.slice("/svc/".length)}`;
  return mount.Source;
}

/**
 * Waits until `container` has written `version` into /data/version, read on the engine's host (a
 * file read a poll, where a `docker exec` started the CLI and a process in the container).
 */
export async function waitForVersion(container: string, version: string): Promise<void> {
  const file = `${hostPathOf(container)}/version`;
  const written = (): string => {
    try {
      return readFileSync(file, "utf8").trim();
    } catch {
      return "";
    }
  };
  await waitUntil(() => written() === version, 30_000, `${container} to write ${version}`);
}

/**
 * v1's data plus extended attributes (set on the host: busybox has no setfattr) on a file, a hard
 * link's inode, a folder, the mount itself, a path split into ustar's prefix and name, and a name
 * too long for ustar (a PAX path header the attributes join).
 */
export function decorate(container: string): TreeManifest {
  const root = hostPathOf(container);
  setXattr(`${root}/a`, "user.checksum", "v1-sum");
  setXattr(`${root}/a`, "user.note", "\u00e9t\u00e9 = 2");
  setXattr(`${root}/d`, "user.owner", "app");
  setXattr(root, "user.volume", "data");
  mkdirSync(`${root}/${"p".repeat(60)}`);
  writeFileSync(`${root}/${"p".repeat(60)}/${"q".repeat(60)}`, "split\n");
  setXattr(`${root}/${"p".repeat(60)}/${"q".repeat(60)}`, "user.split", "yes");
  writeFileSync(`${root}/${"n".repeat(120)}`, "long\n");
  setXattr(`${root}/${"n".repeat(120)}`, "user.long", "yes");
  // what the test made belongs to the volume's owner, as what the container made does (a rootless
  // engine's root is one of its user's ids: the host's root is no one there)
  const { uid, gid } = statSync(root);
  for (const made of [`${"p".repeat(60)}/${"q".repeat(60)}`, "p".repeat(60), "n".repeat(120)])
    chownSync(`${root}/${made}`, uid, gid);
  return treeManifest(root);
}

export function manifestOf(container: string): TreeManifest {
  return treeManifest(hostPathOf(container));
}

/** Runs `script` in a throwaway container on the volumes of `container` and waits for it to end. */
export function runOn(container: string, image: string, script: string): void {
  docker(["run", "--rm", "--network", "none", "--volumes-from", container, image, "sh", "-c", script]);
}
