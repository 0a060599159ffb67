/**
 * How svc decides it may restart a Podman container's unit, and what it passes to systemctl
 * (src/engine/systemd.ts; docs/podman.md, "Containers systemd runs"). The answers are systemctl's
 * own (`systemctl show` prints KEY=VALUE lines; systemd.unit(5) names the unit characters).
 */
import { describe, expect, test } from "bun:test";
import {
  parseShow,
  reloadUnits,
  restartUnit,
  type SystemctlAnswer,
  type SystemctlRunner,
  systemctlCommand,
  unitDoesNotRun,
  unitFileOf,
  unreachableUnit,
  validUnitName,
} from "../../../src/engine/systemd.ts";

function runner(answer: SystemctlAnswer): { run: SystemctlRunner; calls: string[][] } {
  const calls: string[][] = [];
  return {
    calls,
    run: async (args) => {
      calls.push(args);
      return answer;
    },
  };
}

describe("unit names", () => {
  test.each([
    ["container-web.service", true],
    ["podman-kube@-etc-kube.yaml.service", true],
    ["app\\x2dweb.service", true],
    ["web.socket", false],
    ["web.service; reboot", false],
    ["--force.service", true],
    ["", false],
    [`${"a".repeat(248)}.service`, false],
  ])("%s: %p", (unit, valid) => {
    expect(validUnitName(unit)).toBe(valid);
  });
});

describe("reaching the unit", () => {
  test("a loaded, active unit of the user's manager: reachable, asked with --user and the name after --", async () => {
    const { run, calls } = runner({ code: 0, stdout: "LoadState=loaded\nActiveState=active\n", stderr: "" });
    expect(await unreachableUnit(run, { unit: "container-web.service", scope: "user" })).toBeNull();
    expect(calls).toEqual([["--user", "show", "--property=LoadState,ActiveState", "--", "container-web.service"]]);
  });

  test("the system manager is asked without --user", async () => {
    const { run, calls } = runner({ code: 0, stdout: "LoadState=loaded\nActiveState=active\n", stderr: "" });
    await unreachableUnit(run, { unit: "web.service", scope: "system" });
    expect(calls[0]?.[0]).toBe("show");
  });

  test("a manager that does not answer, a unit it does not know or does not run: why", async () => {
    const down = runner({ code: 1, stdout: "", stderr: "Failed to connect to bus: No medium found\n" });
    expect(await unreachableUnit(down.run, { unit: "web.service", scope: "user" })).toBe(
      "systemctl --user did not answer svc: Failed to connect to bus: No medium found",
    );
    const unknown = runner({ code: 0, stdout: "LoadState=not-found\nActiveState=inactive\n", stderr: "" });
    expect(await unreachableUnit(unknown.run, { unit: "web.service", scope: "system" })).toBe(
      "systemctl does not know web.service (not-found)",
    );
    const stopped = runner({ code: 0, stdout: "LoadState=loaded\nActiveState=failed\n", stderr: "" });
    expect(await unreachableUnit(stopped.run, { unit: "web.service", scope: "system" })).toBe(
      "web.service is failed, not active",
    );
  });

  test("a label that is no service unit's name never reaches systemctl", async () => {
    const { run, calls } = runner({ code: 0, stdout: "", stderr: "" });
    expect(await unreachableUnit(run, { unit: "x.service\nrestart", scope: "system" })).toContain(
      "is not a service unit's name",
    );
    await expect(restartUnit(run, { unit: "a b.service", scope: "system" })).rejects.toThrow("not a service unit");
    expect(calls).toEqual([]);
  });
});

describe("restarting", () => {
  test("systemctl restart, its error in the message", async () => {
    const ok = runner({ code: 0, stdout: "", stderr: "" });
    await restartUnit(ok.run, { unit: "web.service", scope: "user" });
    expect(ok.calls).toEqual([
      ["--user", "reset-failed", "--", "web.service"],
      ["--user", "restart", "--", "web.service"],
    ]);
    const failed = runner({ code: 1, stdout: "", stderr: "Job for web.service failed.\nSee journalctl.\n" });
    await expect(restartUnit(failed.run, { unit: "web.service", scope: "system" })).rejects.toThrow(
      "systemctl restart web.service failed: See journalctl.",
    );
    const timedOut = runner({ code: null, stdout: "", stderr: "" });
    await expect(restartUnit(timedOut.run, { unit: "web.service", scope: "system" })).rejects.toThrow("timed out");
  });

  test("the command a report names", () => {
    expect(systemctlCommand({ unit: "web.service", scope: "user" }, "restart")).toBe(
      "systemctl --user restart web.service",
    );
  });

  test("systemctl show's lines", () => {
    expect(parseShow("LoadState=loaded\nActiveState=active\nEmpty=\n")).toEqual({
      LoadState: "loaded",
      ActiveState: "active",
      Empty: "",
    });
  });
});

describe("the file a unit is made from", () => {
  test.each([
    // what systemctl show answers for a quadlet unit: the generator's unit, made from the .container file
    [
      "a quadlet unit: its .container file",
      "FragmentPath=/run/user/1000/systemd/generator/web.service\nSourcePath=/home/u/.config/containers/systemd/web.container\n",
      "/home/u/.config/containers/systemd/web.container",
    ],
    // `podman generate systemd --new --files` in the user's unit folder: no SourcePath
    [
      "a generated unit: its own file",
      "FragmentPath=/home/u/.config/systemd/user/container-web.service\nSourcePath=\n",
      "/home/u/.config/systemd/user/container-web.service",
    ],
  ])("%s", async (_, stdout, file) => {
    const { run, calls } = runner({ code: 0, stdout, stderr: "" });
    expect(await unitFileOf(run, { unit: "web.service", scope: "user" })).toBe(file);
    expect(calls).toEqual([["--user", "show", "--property=FragmentPath,SourcePath", "--", "web.service"]]);
  });

  test.each([
    [
      "a .kube unit",
      "FragmentPath=/run/systemd/generator/web.service\nSourcePath=/etc/containers/systemd/web.kube\n",
      "not a quadlet .container file",
    ],
    ["a transient unit", "FragmentPath=\nSourcePath=\n", "systemd names no file"],
  ])("%s: why svc edits none", async (_, stdout, why) => {
    const { run } = runner({ code: 0, stdout, stderr: "" });
    await expect(unitFileOf(run, { unit: "web.service", scope: "system" })).rejects.toThrow(why);
  });

  test("daemon-reload in the unit's manager, its error in the message", async () => {
    const ok = runner({ code: 0, stdout: "", stderr: "" });
    await reloadUnits(ok.run, { unit: "web.service", scope: "user" });
    expect(ok.calls).toEqual([["--user", "daemon-reload"]]);
    const failed = runner({ code: 1, stdout: "", stderr: "Failed to reload daemon: Access denied\n" });
    await expect(reloadUnits(failed.run, { unit: "web.service", scope: "system" })).rejects.toThrow(
      "systemctl daemon-reload failed: Failed to reload daemon: Access denied",
    );
  });
});

/**
 * The proof a unit runs the container before svc restarts it or writes its file: the cgroup of the
 * container's process (or its conmon's) lies in the unit's, as the sandbox's `systemd --user` shows
 * for a `podman generate systemd --new` unit, or the unit's container-id file names it.
 */
describe("the unit runs this container", () => {
  const target = { unit: "container-web.service", scope: "system" as const };
  const group = "/system.slice/container-web.service";
  const container = { id: "f2a2bec3f682".padEnd(64, "0"), pid: 3594, conmonPid: 3563 };
  const shows = runner({ code: 0, stdout: `ControlGroup=${group}\n`, stderr: "" });
  const files = (entries: Record<string, string>) => (path: string) => entries[path] ?? null;

  test("the container's process in the unit's cgroup (cgroup v1's named hierarchy or v2's): proven", async () => {
    const v1 = `9:name=systemd:${group}/${container.id}\n4:memory:/\n0::${group}\n`;
    expect(await unitDoesNotRun(shows.run, target, container, files({ "/proc/3594/cgroup": v1 }))).toBeNull();
    expect(
      await unitDoesNotRun(shows.run, target, container, files({ "/proc/3563/cgroup": `0::${group}\n` })),
    ).toBeNull();
    expect(shows.calls.at(-1)).toEqual(["show", "--property=ControlGroup", "--", target.unit]);
  });

  test("the unit's container-id file naming it: proven (quadlet's %t/%N.cid, generate systemd's %t/%n.ctr-id)", async () => {
    const none = runner({ code: 0, stdout: "ControlGroup=\n", stderr: "" });
    expect(
      await unitDoesNotRun(none.run, target, container, files({ "/run/container-web.cid": `${container.id}\n` })),
    ).toBeNull();
    expect(
      await unitDoesNotRun(none.run, target, container, files({ "/run/container-web.service.ctr-id": container.id })),
    ).toBeNull();
  });

  test("a unit running something else (sshd), a cgroup merely sharing a prefix, another container's id file: refused with why", async () => {
    const sshd = runner({ code: 0, stdout: "ControlGroup=/system.slice/ssh.service\n", stderr: "" });
    const ssh = { unit: "ssh.service", scope: "system" as const };
    const elsewhere = files({ "/proc/3594/cgroup": `0::/user.slice/libpod-${container.id}.scope\n` });
    expect(await unitDoesNotRun(sshd.run, ssh, container, elsewhere)).toContain(
      "svc cannot show that ssh.service runs this container",
    );
    const prefix = files({ "/proc/3594/cgroup": `0::${group}-other/x\n` });
    expect(await unitDoesNotRun(shows.run, target, container, prefix)).toContain("cannot show");
    const other = files({ "/run/container-web.service.ctr-id": "0".repeat(64) });
    expect(await unitDoesNotRun(shows.run, target, container, other)).toContain("cannot show");
    // no /proc of the host (svc in a container): nothing proven
    expect(await unitDoesNotRun(shows.run, target, container, files({}))).toContain("cannot show");
  });
});
