import { readFileSync } from "node:fs";
import type { Logger } from "../log/index.ts";
import type { Engine } from "./port.ts";

/**
 * The id of the container svc itself runs in, if any, so the updater updates itself last and
 * by replacement (docs/decisions.md, "Updater"). Read from the mount table: the engine bind-mounts the
 * container's own .../containers/<id>/hostname on /etc/hostname, on cgroup v1 and v2 alike.
 * Only that mount point counts: a host's mount table lists other containers' shm mounts under
 * .../containers/<id>/ too. The cgroup path (cgroup v1) is the fallback. An id is trusted only
 * when the configured engine knows a container by it.
 */
export async function ownContainerId(
  engine: Pick<Engine, "inspectContainer">,
  log: Logger,
  read = readProcFile,
): Promise<string | undefined> {
  const candidates = new Set<string>();
  for (const line of read("/proc/self/mountinfo").split("\n")) {
    const [, , , root, mountPoint] = line.split(" ");
    const id = mountPoint === "/etc/hostname" ? /\/containers\/([0-9a-f]{64})\//.exec(root ?? "")?.[1] : undefined;
    if (id) candidates.add(id);
  }
  for (const match of read("/proc/self/cgroup").matchAll(/\/(?:docker[/-])([0-9a-f]{64})(?:\.scope)?$/gm))
    candidates.add(match[1]!);
  for (const id of candidates) {
    try {
      const inspected = await engine.inspectContainer(id);
      log.info("svc runs in a container of this engine", {
        container_id: inspected.Id,
        container: inspected.Name.replace(/^\//, ""),
      });
      return inspected.Id;
    } catch {
      // Not a container of this engine (another engine, or not a container id at all).
    }
  }
  return undefined;
}

function readProcFile(path: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return "";
  }
}
