/**
 * The systemd that runs a Podman container (label PODMAN_SYSTEMD_UNIT: quadlet `.container` units,
 * `podman generate systemd --new`), reached with `systemctl` on svc's own machine: the system
 * manager for a rootful Podman, the user's own (`systemctl --user`) for a rootless one
 * (docs/podman.md, "Containers systemd runs"). svc updates such a container as `podman
 * auto-update` does: the new image pulled under the same tag, then the unit restarted, which
 * makes the container again from that tag.
 */
import { closeSync, constants, fstatSync, openSync, readSync } from "node:fs";
import { SvcError } from "../core/errors.ts";
import { systemdReason } from "./podman.ts";
import type { ContainerInspect, Engine, SystemdScope, SystemdUnit, UnitContainer } from "./port.ts";

/**
 * The systemd port: what the updater does with the units that run Podman's containers, beside the
 * engine port (port.ts), which only tells which unit claims a container (`unitClaim`).
 */
export interface Systemd {
  /**
   * A container's unit, when svc reaches its systemd and that systemd shows the unit runs this very
   * container; else (a string) why svc leaves the container to systemd, with what to do instead;
   * null when no unit claims it (docs/podman.md, "Containers systemd runs").
   */
  unitOf(old: ContainerInspect): Promise<SystemdUnit | string | null>;
  /** `systemctl restart` of the unit; the container it runs afterwards, by the old one's `name`. */
  restart(target: SystemdUnit, name: string): Promise<ContainerInspect>;
  /** The file the unit is made from (a quadlet `.container` file, or the unit's `.service` file); throws with why not. */
  unitFile(target: SystemdUnit): Promise<string>;
  /** `systemctl daemon-reload` in the unit's manager, after its file changed. */
  reload(target: SystemdUnit): Promise<void>;
  /** The unit's file as its manager loaded it: for a quadlet unit, the `.service` file quadlet made. */
  loadedUnit(target: SystemdUnit): Promise<string>;
}

/** The systemd port over `systemctl` on svc's own machine, for the units `engine` says claim its containers. */
export function createSystemd(
  engine: Pick<Engine, "unitClaim" | "inspectContainer">,
  run: SystemctlRunner = systemctlRunner(),
): Systemd {
  return {
    async unitOf(old) {
      const claim = await engine.unitClaim?.(old);
      if (!claim) return null;
      if ("remote" in claim) return systemdReason(claim.unit, claim.autoUpdate, claim.remote);
      const target: SystemdUnit = { unit: claim.unit, scope: claim.scope };
      const why = (await unreachableUnit(run, target)) ?? (await unitDoesNotRun(run, target, claim.container));
      return why ? systemdReason(claim.unit, claim.autoUpdate, why) : target;
    },
    async restart(target, name) {
      await restartUnit(run, target);
      return engine.inspectContainer(name);
    },
    unitFile: (target) => unitFileOf(run, target),
    reload: (target) => reloadUnits(run, target),
    loadedUnit: (target) => loadedUnitOf(run, target),
  };
}

/** What one `systemctl` run answered; code null when it could not run (no systemctl, timed out). */
export interface SystemctlAnswer {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `systemctl ARGS`; never throws. */
export type SystemctlRunner = (args: string[]) => Promise<SystemctlAnswer>;

/** A restart waits for the unit's start job: Podman's units allow 90 s to start by default. */
const RESTART_TIMEOUT_MS = 120_000;
const SHOW_TIMEOUT_MS = 10_000;
/** systemctl's answers here are a few lines: anything longer is cut. */
const MAX_OUTPUT_CHARS = 16_384;

/**
 * A service unit's name as systemd allows it (systemd.unit(5): letters, digits, ":-_.\\" and "@"
 * for a template's instance), at most 255 characters. The label is the container's, so anyone's:
 * nothing else is passed to systemctl.
 */
const UNIT_NAME = /^[A-Za-z0-9:_.\\@-]{1,247}\.service$/;

export function validUnitName(unit: string): boolean {
  return UNIT_NAME.test(unit);
}

/** `systemctl` found on PATH, run without a shell, its output capped, every run timed out. */
export function systemctlRunner(which: (command: string) => string | null = Bun.which): SystemctlRunner {
  return async (args) => {
    const command = which("systemctl");
    if (!command) return { code: null, stdout: "", stderr: "no systemctl on svc's PATH" };
    // a restart waits for the unit's start job, a daemon-reload for the generators (quadlet's among them)
    const restart = args.includes("restart") || args.includes("daemon-reload");
    const proc = Bun.spawn([command, ...args], {
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
      timeout: restart ? RESTART_TIMEOUT_MS : SHOW_TIMEOUT_MS,
      killSignal: "SIGKILL",
    });
    const [stdout, stderr, code] = await Promise.all([
      new Response(proc.stdout).text(),
      new Response(proc.stderr).text(),
      proc.exited,
    ]);
    return {
      code: proc.signalCode ? null : code,
      stdout: stdout.slice(0, MAX_OUTPUT_CHARS),
      stderr: stderr.slice(0, MAX_OUTPUT_CHARS),
    };
  };
}

function scopeArgs(scope: SystemdScope): string[] {
  return scope === "user" ? ["--user"] : [];
}

/** The command a person would run, for a report. */
export function systemctlCommand(target: SystemdUnit, verb: string): string {
  return ["systemctl", ...scopeArgs(target.scope), verb, target.unit].join(" ");
}

/** `systemctl show`'s KEY=VALUE lines. */
export function parseShow(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split("\n")) {
    const at = line.indexOf("=");
    if (at > 0) out[line.slice(0, at)] = line.slice(at + 1).trim();
  }
  return out;
}

/**
 * Why svc cannot restart this unit through systemd (no systemctl, no manager it may talk to, a
 * unit that manager does not know or does not run), or null when it can.
 */
export async function unreachableUnit(run: SystemctlRunner, target: SystemdUnit): Promise<string | null> {
  if (!validUnitName(target.unit)) return `"${target.unit.slice(0, 80)}" is not a service unit's name`;
  const shown = await run([...scopeArgs(target.scope), "show", "--property=LoadState,ActiveState", "--", target.unit]);
  const command = `systemctl${target.scope === "user" ? " --user" : ""}`;
  if (shown.code !== 0) return `${command} did not answer svc: ${lastLine(shown.stderr) || `exit ${shown.code}`}`;
  const state = parseShow(shown.stdout);
  if (state.LoadState !== "loaded") return `${command} does not know ${target.unit} (${state.LoadState ?? "?"})`;
  if (state.ActiveState !== "active") return `${target.unit} is ${state.ActiveState ?? "?"}, not active`;
  return null;
}

/** Reads a small file of the machine's (/proc, the runtime folder); null when it is not there. */
export type SmallFileReader = (path: string) => string | null;

/** Where systemd keeps a manager's runtime files (`%t`): /run for the system's, the user's runtime folder for a user's. */
export function runtimeDir(scope: SystemdScope): string {
  if (scope === "system") return "/run";
  return process.env.XDG_RUNTIME_DIR || `/run/user/${process.getuid?.() ?? 0}`;
}

/**
 * Whether `target` runs this very container, shown by the manager itself before svc restarts the
 * unit or writes its file: the container's process or its conmon (the unit's main process) lies in
 * the unit's cgroup, or the unit's container-id file (`--cidfile=%t/%n.ctr-id` of `podman generate
 * systemd --new`, `%t/%N.cid` of quadlet) names it. A label says which unit a container claims; only
 * this says the unit runs it (an image's label could name sshd). Null when proven, else why not.
 */
export async function unitDoesNotRun(
  run: SystemctlRunner,
  target: SystemdUnit,
  container: UnitContainer,
  read: SmallFileReader = readSmallFile,
): Promise<string | null> {
  if (!validUnitName(target.unit)) return `"${target.unit.slice(0, 80)}" is not a service unit's name`;
  const shown = await run([...scopeArgs(target.scope), "show", "--property=ControlGroup", "--", target.unit]);
  const group = shown.code === 0 ? (parseShow(shown.stdout).ControlGroup ?? "") : "";
  if (group.startsWith("/") && group !== "/") {
    for (const pid of [container.pid, container.conmonPid]) {
      if (!Number.isSafeInteger(pid) || pid <= 0) continue;
      if (cgroupsOf(read(`/proc/${pid}/cgroup`)).some((path) => path === group || path.startsWith(`${group}/`)))
        return null;
    }
  }
  const dir = runtimeDir(target.scope);
  const base = target.unit.replace(/\.service$/, "");
  for (const file of [`${dir}/${target.unit}.ctr-id`, `${dir}/${base}.cid`]) {
    if (read(file)?.trim() === container.id) return null;
  }
  return `svc cannot show that ${target.unit} runs this container: its cgroup (${group || "none"}) holds neither the container nor its conmon, and no container-id file of the unit names it`;
}

/** The cgroup paths of a process's `/proc/PID/cgroup` lines (`ID:CONTROLLERS:PATH`). */
function cgroupsOf(text: string | null): string[] {
  if (text === null) return [];
  return text
    .split("\n")
    .map((line) => line.split(":").slice(2).join(":"))
    .filter((path) => path.startsWith("/"));
}

/** /proc files and id files are a few hundred bytes: at most 16 KiB is read, never through a FIFO's wait. */
function readSmallFile(path: string): string | null {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
  } catch {
    return null; // not there (svc in a container of its own does not see the host's /proc): not proven
  }
  try {
    if (!fstatSync(fd).isFile()) return null;
    const buffer = Buffer.alloc(MAX_OUTPUT_CHARS);
    return buffer.subarray(0, readSync(fd, buffer, 0, buffer.length, null)).toString("utf8");
  } catch {
    return null; // unreadable: not proven
  } finally {
    closeSync(fd);
  }
}

/**
 * `systemctl restart UNIT`: waits for the unit's start job; throws with systemctl's words. The
 * unit's failed state is reset first (`reset-failed`): a container that exited at once, brought
 * back by the unit's own `Restart=` until systemd's start limit, leaves the unit refusing starts.
 */
export async function restartUnit(run: SystemctlRunner, target: SystemdUnit): Promise<void> {
  if (!validUnitName(target.unit)) throw new SvcError("engine", `"${target.unit}" is not a service unit's name`);
  await run([...scopeArgs(target.scope), "reset-failed", "--", target.unit]);
  const done = await run([...scopeArgs(target.scope), "restart", "--", target.unit]);
  if (done.code !== 0)
    throw new SvcError(
      "engine",
      `${systemctlCommand(target, "restart")} failed: ${lastLine(done.stderr) || (done.code === null ? "timed out" : `exit ${done.code}`)}`,
    );
}

/**
 * The file the unit is made from, as its manager says (`systemctl show`): a quadlet unit's
 * `.container` file (SourcePath: the generator made the unit from it), else the unit's own file
 * (FragmentPath: `podman generate systemd --new`). Throws with why when there is no such file svc
 * could edit (a unit another generator made, a transient unit).
 */
export async function unitFileOf(run: SystemctlRunner, target: SystemdUnit): Promise<string> {
  const { fragment, source } = await unitPaths(run, target);
  if (source.endsWith(".container")) return source;
  if (source !== "")
    throw new SvcError("engine", `${target.unit} is made from ${source}, not a quadlet .container file`);
  if (fragment.endsWith(".service")) return fragment;
  throw new SvcError("engine", `systemd names no file ${target.unit} is made from`);
}

/** The unit's file as its manager loaded it (FragmentPath): for a quadlet unit, the one quadlet made. */
export async function loadedUnitOf(run: SystemctlRunner, target: SystemdUnit): Promise<string> {
  const { fragment } = await unitPaths(run, target);
  if (fragment === "") throw new SvcError("engine", `systemd names no file it loaded ${target.unit} from`);
  return fragment;
}

async function unitPaths(run: SystemctlRunner, target: SystemdUnit): Promise<{ fragment: string; source: string }> {
  if (!validUnitName(target.unit)) throw new SvcError("engine", `"${target.unit}" is not a service unit's name`);
  const shown = await run([
    ...scopeArgs(target.scope),
    "show",
    "--property=FragmentPath,SourcePath",
    "--",
    target.unit,
  ]);
  if (shown.code !== 0)
    throw new SvcError(
      "engine",
      `${systemctlCommand(target, "show")} failed: ${lastLine(shown.stderr) || `exit ${shown.code}`}`,
    );
  const { FragmentPath: fragment = "", SourcePath: source = "" } = parseShow(shown.stdout);
  return { fragment, source };
}

/** `systemctl daemon-reload`: the manager reads the unit files again (and quadlet makes its units again). */
export async function reloadUnits(run: SystemctlRunner, target: SystemdUnit): Promise<void> {
  const done = await run([...scopeArgs(target.scope), "daemon-reload"]);
  if (done.code !== 0)
    throw new SvcError(
      "engine",
      `systemctl${target.scope === "user" ? " --user" : ""} daemon-reload failed: ${lastLine(done.stderr) || (done.code === null ? "timed out" : `exit ${done.code}`)}`,
    );
}

function lastLine(text: string): string {
  return text.trim().split("\n").at(-1)?.trim() ?? "";
}
