/** Which container svc itself runs in, read from the mount table and cgroups. */
import { describe, expect, test } from "bun:test";
import { ownContainerId } from "../../../src/engine/index.ts";
import { silentLogger } from "../../../src/log/index.ts";

describe("ownContainerId", () => {
  const ID = "a".repeat(64);
  const OTHER = "b".repeat(64);
  const engineKnowing = (...ids: string[]) => ({
    inspectContainer: async (id: string) => {
      if (!ids.includes(id)) throw new Error("no such container");
      return { Id: id, Name: "/svc" } as never;
    },
  });
  const files =
    (mountinfo: string, cgroup = "0::/\n") =>
    (path: string) =>
      path.endsWith("mountinfo") ? mountinfo : cgroup;
  const hostnameMount = (id: string) =>
    `1021 1000 254:1 /var/lib/docker/containers/${id}/hostname /etc/hostname rw,relatime - ext4 /dev/vda1 rw\n`;
  const shmMount = (id: string) =>
    `77 29 0:52 / /var/lib/docker/containers/${id}/mounts/shm rw,nosuid - tmpfs shm rw\n`;

  test("the container whose hostname file is mounted on /etc/hostname", async () => {
    expect(await ownContainerId(engineKnowing(ID), silentLogger, files(hostnameMount(ID)))).toBe(ID);
  });

  test("a host's mount table listing other containers' shm mounts is not a container", async () => {
    expect(await ownContainerId(engineKnowing(OTHER), silentLogger, files(shmMount(OTHER)))).toBeUndefined();
  });

  test("cgroup v1 paths are a fallback", async () => {
    expect(await ownContainerId(engineKnowing(ID), silentLogger, files("", `12:memory:/docker/${ID}\n`))).toBe(ID);
    expect(
      await ownContainerId(
        engineKnowing(ID),
        silentLogger,
        files("", `1:name=systemd:/system.slice/docker-${ID}.scope\n`),
      ),
    ).toBe(ID);
  });

  test("an id the configured engine does not know is ignored", async () => {
    expect(await ownContainerId(engineKnowing(OTHER), silentLogger, files(hostnameMount(ID)))).toBeUndefined();
  });

  test("outside any container: undefined", async () => {
    expect(await ownContainerId(engineKnowing(ID), silentLogger, () => "")).toBeUndefined();
  });
});
