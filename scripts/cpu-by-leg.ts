/**
 * Where a test run's CPU goes, leg by leg (docs/testing.md, "Where the CPU goes"): every process
 * that carries a leg's XDG_STATE_HOME (scripts/test.sh's leg_env; the engines, shims, CLIs and svc
 * a leg starts inherit it) is moved into a CPU accounting cgroup named after the leg and what the
 * process is, and `report` sums them. Opt-in (SVC_TEST_CPU=1), as root.
 *   bun scripts/cpu-by-leg.ts watch DIR   until DIR/stop exists
 *   bun scripts/cpu-by-leg.ts report      the seconds of each leg and kind, then clears them
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { basename } from "node:path";

const V1 = "/sys/fs/cgroup/cpuacct";
const ROOT = existsSync(V1) ? V1 : "/sys/fs/cgroup";
const prefixOf = (dir: string) => `svcleg-${basename(dir)}-`;

function kind(comm: string): string {
  if (comm === "dockerd" || comm === "containerd" || comm === "runc" || comm === "exe") return `engine-${comm}`;
  if (comm.startsWith("containerd-shim")) return "engine-shim";
  if (comm === "docker" || comm === "docker-compose") return "cli";
  if (comm === "bun" || comm === "svc") return comm;
  // the rest by name (a registry, Chromium, a broker, git, a shell): a cgroup's name, no dot
  return `other-${comm.replace(/[^A-Za-z0-9_-]/g, "_")}`;
}

function read(path: string): string | null {
  try {
    return readFileSync(path, "latin1");
  } catch {
    return null;
  }
}

function watch(dir: string): void {
  const mine = `XDG_STATE_HOME=${dir.replace(/\/+$/, "")}/state-`;
  const ofJob = "SVC_TEST_JOB=";
  const seen = new Set<string>();
  const made = new Set<string>();
  while (!existsSync(`${dir}/stop`)) {
    for (const pid of readdirSync("/proc")) {
      if (!/^\d+$/.test(pid)) continue;
      const stat = read(`/proc/${pid}/stat`);
      const key = `${pid} ${stat?.slice(stat.lastIndexOf(")") + 2).split(" ")[19]}`;
      if (!stat || seen.has(key)) continue;
      seen.add(key);
      const environ = read(`/proc/${pid}/environ`) ?? "";
      const at = environ.indexOf(mine);
      const leg = at < 0 ? undefined : environ.slice(at + mine.length).split("\0")[0];
      const comm = read(`/proc/${pid}/comm`)?.trim();
      if (!leg || !comm) continue;
      // the job whose `bun test` started it; none for a leg's shared engine and registries
      const jobAt = environ.indexOf(ofJob);
      const job =
        jobAt < 0
          ? ""
          : environ
              .slice(jobAt + ofJob.length)
              .split("\0")[0]
              ?.replace(/\D/g, "");
      const group = `${ROOT}/${prefixOf(dir)}${leg}.j${job || "-"}.${kind(comm)}`;
      try {
        if (!made.has(group)) mkdirSync(group, { recursive: true });
        made.add(group);
        writeFileSync(`${group}/cgroup.procs`, pid);
      } catch {
        // gone meanwhile, or a process of another cgroup tree (a rootless engine's own)
      }
    }
    Bun.sleepSync(300);
  }
}

function seconds(group: string): number {
  const v1 = read(`${group}/cpuacct.usage`);
  if (v1 !== null) return Number(v1) / 1e9;
  return Number(/usage_usec (\d+)/.exec(read(`${group}/cpu.stat`) ?? "")?.[1] ?? 0) / 1e6;
}

/** A job's leg and files, from the run's jobs.tsv (scripts/test.sh: "JOB<tab>LEG<tab>FILES") */
function jobTitle(dir: string, job: string): string | undefined {
  for (const line of (read(`${dir}/jobs.tsv`) ?? "").split("\n")) {
    const [j, leg, files] = line.split("\t");
    if (j === job) return `${leg}: ${(files ?? "").replace(/tests\/integration\//g, "").slice(0, 110)}`;
  }
  return undefined;
}

function report(dir: string): void {
  const prefix = prefixOf(dir);
  const rows = readdirSync(ROOT)
    .filter((name) => name.startsWith(prefix))
    .map((name) => ({ name: name.slice(prefix.length), s: seconds(`${ROOT}/${name}`) }));
  const byLeg = new Map<string, number>();
  const byKind = new Map<string, number>();
  const byJob = new Map<string, number>();
  for (const { name, s } of rows) {
    const [leg = "", job = "j-", what = ""] = name.split(".");
    byLeg.set(leg, (byLeg.get(leg) ?? 0) + s);
    byKind.set(what, (byKind.get(what) ?? 0) + s);
    const title = job === "j-" ? `${leg}: its engine and registries` : (jobTitle(dir, job.slice(1)) ?? `${leg} ${job}`);
    byJob.set(title, (byJob.get(title) ?? 0) + s);
  }
  const lines = (m: Map<string, number>) =>
    [...m].sort((a, b) => b[1] - a[1]).map(([k, s]) => `  ${s.toFixed(0).padStart(6)} s  ${k}`);
  const total = rows.reduce((sum, r) => sum + r.s, 0);
  console.log(`CPU by leg (${total.toFixed(0)} s in all):\n${lines(byLeg).join("\n")}`);
  const others = [...byKind].filter(([k]) => k.startsWith("other-")).sort((a, b) => b[1] - a[1]);
  for (const [k] of others) byKind.delete(k);
  byKind.set(
    "other",
    others.reduce((sum, [, s]) => sum + s, 0),
  );
  console.log(`CPU by kind of process:\n${lines(byKind).join("\n")}`);
  console.log(
    `of which other, by name:\n${lines(new Map(others.slice(0, 12).map(([k, s]) => [k.slice(6), s]))).join("\n")}`,
  );
  console.log(
    `CPU by test process (its svc, CLIs and own engines; a leg's shared engine apart):\n${lines(byJob).join("\n")}`,
  );
  for (const { name } of rows) {
    try {
      rmdirSync(`${ROOT}/${prefix}${name}`);
    } catch {
      // a process still in it: left for the next report
    }
  }
}

const [command, dir] = process.argv.slice(2);
if (command === "watch" && dir) watch(dir);
else if (command === "report" && dir) report(dir);
else {
  console.error("usage: bun scripts/cpu-by-leg.ts watch DIR | report DIR");
  process.exit(2);
}
