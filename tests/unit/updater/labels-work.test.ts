/**
 * Every parser a label feeds (update windows, tag policies, durations, signals, dependency lists,
 * compose groups and projects, release-note sources, the data guard's mode), given seeded hostile labels from a few characters to
 * 1 MiB: the work each container's labels cost stays within a budget counted in work units
 * (src/config/work.ts), linear in what svc reads of them, and a label past what svc reads skips
 * its container naming the label (docs/security.md). Seeded: the seed is in the test's name.
 */
import { expect, test } from "bun:test";
import { projectOf } from "../../../src/compose/project.ts";
import { defaultConfig, labelName, labelOf } from "../../../src/config/index.ts";
import { workSpent } from "../../../src/config/work.ts";
import { GUARD_LABEL } from "../../../src/dataguard/guard.ts";
import { guardModeOf } from "../../../src/dataguard/mounts.ts";
import { hostNames, parseSource } from "../../../src/releases/source.ts";
import { composeServices } from "../../../src/updater/containers/graph.ts";
import { groupOf, POLICY_LABEL_NAMES, policyFor } from "../../../src/updater/selection/selection.ts";

/** What svc reads of one label (docs/security.md): longer labels skip their container. */
const LABEL_CAP = 4096;
/** Units per character read: a parser linear in its input stays far below it. */
const PER_CHAR = 64;
const PER_CONTAINER = 4096;
const ALL_LABELS = new Set<string>(POLICY_LABEL_NAMES);

function mulberry32(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const SEED = Number(process.env.SVC_FUZZ_SEED ?? Date.now() % 1_000_000);
const DAYS = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];

function generators(random: () => number) {
  const int = (n: number) => Math.floor(random() * n);
  const pick = <T>(list: readonly T[]): T => list[int(list.length)]!;
  const hhmm = (minute: number) =>
    `${String(Math.floor(minute / 60)).padStart(2, "0")}:${String(minute % 60).padStart(2, "0")}`;
  // small windows that never overlap (the parser must read them all), as the review's label did
  const windows = (count: number) =>
    Array.from({ length: count }, (_, i) => {
      const minute = i % 10_080;
      return `${DAYS[Math.floor(minute / 1440)]} ${hhmm(minute % 1440)}-${hhmm((minute % 1440) + 1)}`;
    }).join("; ");
  const overlapping = (count: number) =>
    Array.from(
      { length: count },
      () => `${pick(["", "Mon ", "Sat,Sun ", "Fri-Mon "])}${hhmm(int(1440))}-${hhmm(int(1440))}`,
    ).join(";");
  const sizes = [1, 2, 10, 100, 1000, 10_080];
  const values: Record<string, () => string> = {
    [labelName("update_window")]: () =>
      pick([
        windows(pick(sizes)),
        overlapping(pick(sizes)),
        `Mon ${"0".repeat(int(1 << 16))}:00-01:00`,
        ";".repeat(int(1 << 20)),
        "x".repeat(1 << 20),
      ]),
    [labelName("tag_policy")]: () =>
      pick([
        `regex:${"(a|b)*".repeat(int(2000))}`,
        `regex:${"(".repeat(int(5000))}`,
        `regex:${"a{1000}".repeat(int(50))}`,
        "semver:minor",
        `semver:${"x".repeat(int(1 << 20))}`,
      ]),
    [labelName("stop_timeout")]: () => pick([`${"9".repeat(int(1 << 16))}s`, "25d", "1h", "-1"]),
    [labelName("min_image_age")]: () => pick([`${"1".repeat(int(1 << 20))}`, "3d", "1e309"]),
    [labelName("hook_timeout")]: () => pick(["1m", `${"5".repeat(int(1 << 12))}m`]),
    [labelName("stop_signal")]: () => pick(["SIGTERM", "SIG".repeat(int(1 << 18))]),
    [labelName("depends_on")]: () => Array.from({ length: pick(sizes) }, (_, i) => `/c${i}`).join(","),
    [labelOf("depends_on").watchtower!]: () => ",".repeat(int(1 << 20)),
    [labelName("release_notes")]: () =>
      pick([
        `https://github.com/${"a/".repeat(int(1 << 18))}`,
        "https://github.com/o/r",
        `https://${"x.".repeat(int(1 << 16))}com/o/r`,
      ]),
    "com.docker.compose.depends_on": () =>
      Array.from({ length: pick(sizes) * 10 }, (_, i) => `s${i}:service_started:true`).join(","),
    "com.docker.compose.project": () => " ".repeat(int(1 << 20)) + "p",
    "com.docker.compose.service": () => pick(["web", "s".repeat(int(1 << 16))]),
    "com.docker.compose.project.config_files": () =>
      Array.from({ length: pick(sizes) * 10 }, (_, i) => `/srv/app/compose${i}.yaml`).join(","),
    [GUARD_LABEL]: () => pick(["volumes", " ALL ", " ".repeat(int(1 << 20)) + "off", "x".repeat(int(1 << 16))]),
  };
  return { values, pick, int };
}

test(`labels work budget (seed ${SEED}): every label parser stays linear in what it reads, and a label past the cap skips its container`, () => {
  const random = mulberry32(SEED);
  const { values, pick, int } = generators(random);
  const hosts = hostNames("https://gitlab.example/api/v4", "https://gitea.example/api/v1");
  const names = Object.keys(values);
  for (let round = 0; round < 40; round++) {
    const config = defaultConfig({
      update_window: pick([undefined, "Sat,Sun 00:00-24:00", "Mon-Fri 22:00-02:00; Sat 01:00-03:00"]),
      lifecycle_hooks: true,
    });
    const labels: Record<string, string> = {};
    for (let n = 1 + int(4); n > 0; n--) {
      const name = pick(names);
      labels[name] = values[name]!();
    }
    const read = Object.values(labels).reduce((sum, value) => sum + Math.min(value.length, LABEL_CAP), 0);
    const before = workSpent();
    const policy = policyFor({ labels }, config);
    parseSource(labels[labelName("release_notes")] ?? "", hosts);
    composeServices(labels["com.docker.compose.depends_on"]);
    groupOf(labels);
    projectOf(labels);
    guardModeOf(labels[GUARD_LABEL], "off");
    const spent = workSpent() - before;
    const described = `round ${round}: ${JSON.stringify(Object.fromEntries(Object.entries(labels).map(([k, v]) => [k, `${v.slice(0, 60)}… (${v.length} chars)`])))}`;
    expect(spent, `${described} spent ${spent} units for ${read} characters read`).toBeLessThanOrEqual(
      PER_CHAR * read + PER_CONTAINER,
    );
    for (const [name, value] of Object.entries(labels)) {
      if (value.length <= LABEL_CAP || !ALL_LABELS.has(name)) continue;
      expect(policy.problem, described).toContain(`label ${name} is ${value.length} characters`);
    }
  }
});

test("a window label of 10,080 one-minute windows is refused at the cap, and one at the cap costs linear work", () => {
  const config = defaultConfig({ update_window: "Mon-Sun 00:00-24:00" });
  const minute = (m: number) => `${String(Math.floor(m / 60)).padStart(2, "0")}:${String(m % 60).padStart(2, "0")}`;
  const windows = (count: number) =>
    Array.from(
      { length: count },
      (_, i) => `${DAYS[Math.floor(i / 1440)]} ${minute(i % 1440)}-${minute((i % 1440) + 1)}`,
    ).join(";");
  const huge = windows(10_080);
  const before = workSpent();
  expect(policyFor({ labels: { [labelName("update_window")]: huge } }, config).problem).toContain(
    `label ${labelName("update_window")} is ${huge.length} characters`,
  );
  expect(workSpent() - before).toBeLessThanOrEqual(PER_CONTAINER);
  // the most windows that fit under the cap: all read, none overlapping, linear work
  let count = 1;
  while (windows(count + 1).length <= LABEL_CAP) count++;
  const atCap = windows(count);
  const start = workSpent();
  const policy = policyFor({ labels: { [labelName("update_window")]: atCap } }, config);
  expect(policy.problem).toBeUndefined();
  expect(policy.window[1]).toHaveLength(count);
  expect(workSpent() - start).toBeLessThanOrEqual(PER_CHAR * atCap.length + PER_CONTAINER);
});
