import { describe, expect, test } from "bun:test";
import { defaultConfig } from "../../../src/config/index.ts";
import type { ContainerSummary } from "../../../src/engine/port.ts";
import { oldContainerName, parseOldName } from "../../../src/updater/selection/names.ts";
import {
  enableLabelFilter,
  groupOf,
  imagePrefixFilter,
  namesFilter,
  notDisabledFilter,
  policyFor,
  scopeFilter,
  selectContainers,
  stackFilter,
  stateFilter,
} from "../../../src/updater/selection/selection.ts";

function container(name: string, overrides: Partial<ContainerSummary> = {}): ContainerSummary {
  return {
    id: `${name}-id`,
    name,
    image: "nginx:1.27",
    imageId: "sha256:aa",
    state: "running",
    labels: {},
    ...overrides,
  };
}

describe("state filter", () => {
  const states = ["running", "created", "exited", "restarting", "paused", "dead"] as const;
  const accepted = (config: { revive_stopped: boolean; include_restarting: boolean }) =>
    states.filter((state) => stateFilter(config)(container("a", { state })));
  test("running only by default", () =>
    expect(accepted({ revive_stopped: false, include_restarting: false })).toEqual(["running"]));
  test("revive_stopped adds created and exited", () =>
    expect(accepted({ revive_stopped: true, include_restarting: false })).toEqual(["running", "created", "exited"]));
  test("include_restarting adds restarting", () =>
    expect(accepted({ revive_stopped: false, include_restarting: true })).toEqual(["running", "restarting"]));
});

describe("enable label", () => {
  const on = container("on", { labels: { "svc.enable": "true" } });
  const off = container("off", { labels: { "svc.enable": "false" } });
  const none = container("none");
  test("without label_enable, svc.enable=false still excludes", () => {
    expect([on, off, none].filter(enableLabelFilter(false)).map((c) => c.name)).toEqual(["on", "none"]);
  });
  test("with label_enable only svc.enable=true", () => {
    expect([on, off, none].filter(enableLabelFilter(true)).map((c) => c.name)).toEqual(["on"]);
  });
});

test("disable_containers and names (with or without a leading slash)", () => {
  const list = [container("a"), container("b"), container("c")];
  expect(list.filter(notDisabledFilter(["/b"])).map((c) => c.name)).toEqual(["a", "c"]);
  expect(list.filter(namesFilter(["a", "/c"])).map((c) => c.name)).toEqual(["a", "c"]);
  expect(list.filter(namesFilter([])).length).toBe(3);
});

test("image prefixes match the written and the normalised reference", () => {
  const list = [
    container("web", { image: "nginx:1.27" }),
    container("full", { image: "docker.io/library/nginx:1.27" }),
    container("local", { image: "127.0.0.1:5000/app:latest" }),
  ];
  expect(list.filter(imagePrefixFilter(["nginx"])).map((c) => c.name)).toEqual(["web", "full"]);
  expect(list.filter(imagePrefixFilter(["127.0.0.1:5000/"])).map((c) => c.name)).toEqual(["local"]);
  expect(list.filter(imagePrefixFilter(["docker.io/library/nginx"])).map((c) => c.name)).toEqual(["web", "full"]);
});

test("scope: unset means unscoped containers only; set means that scope only", () => {
  const list = [
    container("plain"),
    container("blue", { labels: { "svc.scope": "blue" } }),
    container("green", { labels: { "svc.scope": "green" } }),
  ];
  expect(list.filter(scopeFilter(undefined)).map((c) => c.name)).toEqual(["plain"]);
  expect(list.filter(scopeFilter("blue")).map((c) => c.name)).toEqual(["blue"]);
});

test("selection composes every rule, the API filter and never picks parked old containers", () => {
  const config = defaultConfig({
    disable_containers: ["d"],
    containers: ["a", "b", "d", "x.svc-old-0123456789ab-running", "s"],
  });
  const list = [
    container("a"),
    container("b", { image: "redis:7" }),
    container("d"),
    container("x.svc-old-0123456789ab-running"),
    container("s", { state: "exited" }),
    container("z"),
  ];
  expect(selectContainers(list, config).map((c) => c.name)).toEqual(["a", "b"]);
  expect(selectContainers(list, config, { container: ["a", "b"], image: ["redis"] }).map((c) => c.name)).toEqual(["b"]);
});

describe("per-container policy", () => {
  const labels = {
    "svc.monitor_only": "true",
    "svc.no_pull": "TRUE",
    "svc.stop_signal": "SIGQUIT",
    "svc.stop_timeout": "1m30s",
    "svc.depends_on": "db, /cache",
    "svc.min_image_age": "2d",
  };
  test("labels override globals", () => {
    const policy = policyFor({ labels }, defaultConfig({ stop_timeout: 5000 }));
    expect(policy).toEqual({
      monitorOnly: true,
      noPull: true,
      stopSignal: "SIGQUIT",
      stopTimeoutMs: 90_000,
      dependsOn: ["db", "cache"],
      minImageAgeMs: 172_800_000,
      tagPolicy: null,
      moveCompose: false,
      holdBreaking: false,
      window: [],
      prePull: true,
    });
  });
  test("min_image_age: the label over the global; a label that is not a duration is a problem naming it", () => {
    expect(policyFor({ labels: {} }, defaultConfig({ min_image_age: 3_600_000 })).minImageAgeMs).toBe(3_600_000);
    expect(
      policyFor({ labels: { "svc.min_image_age": "0" } }, defaultConfig({ min_image_age: 3_600_000 })).minImageAgeMs,
    ).toBe(0);
    expect(
      policyFor(
        { labels: { "svc.min_image_age": "1d" } },
        defaultConfig({ min_image_age: 60_000, global_takes_precedence: true }),
      ).minImageAgeMs,
    ).toBe(60_000);
    const bad = policyFor({ labels: { "svc.min_image_age": "soon" } }, defaultConfig());
    expect(bad.problem).toBe(
      'label svc.min_image_age="soon" is not a duration (examples: "30s", "5m", "1h30m", "250ms", or plain seconds)',
    );
  });
  test("tag_policy: the label over the global, off switches it off; compose containers move only when labelled; bad labels are problems naming them", () => {
    const global = defaultConfig({ tag_policy: "semver:minor" });
    expect(policyFor({ labels: {} }, global).tagPolicy).toMatchObject({ kind: "semver", level: "minor" });
    expect(policyFor({ labels: { "svc.tag_policy": "semver:patch" } }, global).tagPolicy).toMatchObject({
      level: "patch",
    });
    expect(policyFor({ labels: { "svc.tag_policy": "off" } }, global).tagPolicy).toBeNull();
    expect(
      policyFor(
        { labels: { "svc.tag_policy": "off" } },
        defaultConfig({ tag_policy: "semver:minor", global_takes_precedence: true }),
      ).tagPolicy,
    ).toMatchObject({ level: "minor" });
    expect(policyFor({ labels: {} }, defaultConfig()).tagPolicy).toBeNull();
    expect(policyFor({ labels: { "svc.tag_policy.compose": "move" } }, global).moveCompose).toBe(true);
    const report = policyFor({ labels: { "svc.tag_policy.compose": "report" } }, global);
    expect([report.moveCompose, report.problem]).toEqual([false, undefined]);
    expect(policyFor({ labels: { "svc.tag_policy": "semver:newest" } }, global).problem).toStartWith(
      'label svc.tag_policy="semver:newest" is not a tag policy (examples: ',
    );
    expect(policyFor({ labels: { "svc.tag_policy": "regex:(" } }, global).problem).toStartWith(
      'label svc.tag_policy="regex:(" has a pattern that is not a regular expression svc can match in linear time ',
    );
    expect(policyFor({ labels: { "svc.tag_policy.compose": "yes" } }, global).problem).toBe(
      'label svc.tag_policy.compose="yes" is neither "move" nor "report"',
    );
  });
  test("a label can switch a global off", () => {
    expect(
      policyFor({ labels: { "svc.monitor_only": "false" } }, defaultConfig({ monitor_only: true })).monitorOnly,
    ).toBe(false);
  });
  test("global_takes_precedence ignores the option labels", () => {
    const policy = policyFor({ labels }, defaultConfig({ global_takes_precedence: true, stop_timeout: 5000 }));
    expect(policy.monitorOnly).toBe(false);
    expect(policy.noPull).toBe(false);
    expect(policy.stopTimeoutMs).toBe(5000);
  });
  test("duration labels are read with their option's forms and bounds; out of bounds is a problem naming the label", () => {
    expect(policyFor({ labels: { "svc.stop_timeout": "250ms" } }, defaultConfig()).stopTimeoutMs).toBe(250);
    expect(policyFor({ labels: { "svc.stop_timeout": "25d" } }, defaultConfig()).problem).toBe(
      'label svc.stop_timeout="25d" must be at most 1h',
    );
    expect(policyFor({ labels: { "svc.stop_timeout": "-1" } }, defaultConfig()).problem).toStartWith(
      'label svc.stop_timeout="-1" is not a duration',
    );
    expect(policyFor({ labels: { "svc.min_image_age": "367d" } }, defaultConfig()).problem).toBe(
      'label svc.min_image_age="367d" must be at most 366d',
    );
    expect(
      policyFor({ labels: { "svc.hooks.timeout": "25d" } }, defaultConfig({ lifecycle_hooks: true })).problem,
    ).toBe('label svc.hooks.timeout="25d" must be at most 1d');
    expect(
      policyFor(
        { labels: { "svc.hooks.timeout": "25d" } },
        defaultConfig({ lifecycle_hooks: true, global_takes_precedence: true }),
      ).problem,
    ).toBeUndefined();
  });
  test("a stop signal label that is no signal is a problem naming the label", () => {
    for (const signal of ["SIGTERM", "TERM", "sigquit", "9", "SIGRTMIN+3"])
      expect(policyFor({ labels: { "svc.stop_signal": signal } }, defaultConfig()).problem).toBeUndefined();
    expect(
      policyFor({ labels: { "com.centurylinklabs.watchtower.stop-signal": "SIG\u0000" } }, defaultConfig()).problem,
    ).toBe(
      'label com.centurylinklabs.watchtower.stop-signal="SIG\\u0000" is not a signal (examples: "SIGTERM", "SIGQUIT", "9")',
    );
  });
});

test("old-container names carry the original name and whether it ran", () => {
  const name = oldContainerName("my.app", "0123456789abcdef", true);
  expect(name).toBe("my.app.svc-old-0123456789ab-running");
  expect(parseOldName(`/${name}`)).toEqual({ original: "my.app", shortId: "0123456789ab", wasRunning: true });
  expect(parseOldName(oldContainerName("db", "fedcba9876543210", false))?.wasRunning).toBe(false);
  expect(parseOldName("app")).toBeNull();
});

describe("Watchtower's labels", () => {
  const wt = (name: string, value: string) => ({ [`com.centurylinklabs.watchtower.${name}`]: value });

  test("each means what svc's own label of that name means", () => {
    const config = defaultConfig({ stop_timeout: 5000 });
    const labels = {
      ...wt("monitor-only", "true"),
      ...wt("no-pull", "true"),
      ...wt("stop-signal", "SIGHUP"),
      ...wt("depends-on", "db,/cache"),
    };
    const svcTwin = {
      "svc.monitor_only": "true",
      "svc.no_pull": "true",
      "svc.stop_signal": "SIGHUP",
      "svc.depends_on": "db,/cache",
    };
    expect(policyFor({ labels }, config)).toEqual(policyFor({ labels: svcTwin }, config));
    expect(policyFor({ labels }, config)).toMatchObject({
      monitorOnly: true,
      noPull: true,
      stopSignal: "SIGHUP",
      dependsOn: ["db", "cache"],
    });
  });

  test("enable and scope select as svc.enable and svc.scope do; scope none is no scope", () => {
    expect(enableLabelFilter(false)(container("a", { labels: wt("enable", "false") }))).toBe(false);
    expect(enableLabelFilter(true)(container("a", { labels: wt("enable", "true") }))).toBe(true);
    expect(scopeFilter("prod")(container("a", { labels: wt("scope", "prod") }))).toBe(true);
    expect(scopeFilter(undefined)(container("a", { labels: wt("scope", "prod") }))).toBe(false);
    expect(scopeFilter(undefined)(container("a", { labels: wt("scope", "none") }))).toBe(true);
  });

  test("svc's own label wins when both are set", () => {
    const labels = {
      ...wt("monitor-only", "true"),
      "svc.monitor_only": "false",
      ...wt("enable", "false"),
      "svc.enable": "true",
      ...wt("scope", "a"),
      "svc.scope": "b",
    };
    expect(policyFor({ labels }, defaultConfig()).monitorOnly).toBe(false);
    expect(enableLabelFilter(true)(container("x", { labels }))).toBe(true);
    expect(scopeFilter("b")(container("x", { labels }))).toBe(true);
    expect(scopeFilter("a")(container("x", { labels }))).toBe(false);
  });
});

describe("update window (docs/windows.md)", () => {
  const texts = (policy: ReturnType<typeof policyFor>) => policy.window.map((list) => list.map((w) => w.text));
  test("the host's window, narrowed by the label; the label alone where the host has none", () => {
    expect(texts(policyFor({ labels: {} }, defaultConfig({ update_window: "Sat,Sun 02:00-05:00" })))).toEqual([
      ["Sat,Sun 02:00-05:00"],
    ]);
    expect(
      texts(
        policyFor(
          { labels: { "svc.update_window": "03:00-04:00" } },
          defaultConfig({ update_window: "Sat,Sun 02:00-05:00" }),
        ),
      ),
    ).toEqual([["Sat,Sun 02:00-05:00"], ["03:00-04:00"]]);
    expect(texts(policyFor({ labels: { "svc.update_window": "03:00-04:00" } }, defaultConfig()))).toEqual([
      ["03:00-04:00"],
    ]);
  });
  test("a label that cannot be read, or never meets the host's window, is a problem naming it", () => {
    expect(policyFor({ labels: { "svc.update_window": "soon" } }, defaultConfig()).problem).toStartWith(
      'label svc.update_window="soon": ',
    );
    expect(
      policyFor(
        { labels: { "svc.update_window": "Mon 03:00-04:00" } },
        defaultConfig({ update_window: "Sat,Sun 02:00-05:00" }),
      ).problem,
    ).toContain("never meets the host's update_window");
  });
});

describe("compose projects and Swarm stacks", () => {
  test("a target's group comes from its labels; a stack's task container is in its stack", () => {
    expect(groupOf({ "com.docker.compose.project": "shop" })).toEqual({ kind: "compose", name: "shop" });
    expect(groupOf({ "com.docker.compose.project": "x", "com.docker.stack.namespace": "media" })).toEqual({
      kind: "stack",
      name: "media",
    });
    expect(groupOf({})).toBeNull();
  });

  test("the API's stack filter keeps the targets of the named groups only", () => {
    const keep = stackFilter(["shop"]);
    expect(keep(container("a", { labels: { "com.docker.compose.project": "shop" } }))).toBe(true);
    expect(keep(container("b", { labels: { "com.docker.compose.project": "blog" } }))).toBe(false);
    expect(keep(container("c"))).toBe(false);
    expect(stackFilter(undefined)(container("d"))).toBe(true);
  });

  // moby's daemon/commit.go (merge): a container gets its image's labels; compose writes the
  // project, service, folder and files on every container it makes (docker/compose,
  // pkg/compose/loader.go), and `compose build` labels its images with the project and service
  // (pkg/compose/build.go)
  const composed = {
    "com.docker.compose.project": "shop",
    "com.docker.compose.service": "web",
    "com.docker.compose.project.working_dir": "/srv/shop",
    "com.docker.compose.project.config_files": "/srv/shop/compose.yaml",
  };
  test("a group label the container has from its image names no group (a docker run of a labelled image)", () => {
    const fromImage = { "com.docker.compose.project": "shop" };
    expect(groupOf(fromImage, fromImage)).toBeNull();
    const stack = { "com.docker.stack.namespace": "media" };
    expect(groupOf(stack, stack)).toBeNull();
    // the image's project, the container's own stack: the stack
    expect(groupOf({ ...fromImage, ...stack }, fromImage)).toEqual({ kind: "stack", name: "media" });
  });

  test("compose's own labels group as before: a built image's project and service, another project's image, unknown labels", () => {
    const built = { "com.docker.compose.project": "shop", "com.docker.compose.service": "web" };
    expect(groupOf(composed, built)).toEqual({ kind: "compose", name: "shop" });
    expect(groupOf(composed, { "com.docker.compose.project": "other" })).toEqual({ kind: "compose", name: "shop" });
    expect(groupOf(composed, {})).toEqual({ kind: "compose", name: "shop" });
    expect(groupOf(composed, undefined)).toEqual({ kind: "compose", name: "shop" });
    // an image naming the folder and files too cannot be told apart from compose: no group
    expect(groupOf(composed, composed)).toBeNull();
  });

  test("the stack filter reads each container's image's labels", () => {
    const images: Record<string, Record<string, string>> = {
      "sha256:own": {},
      "sha256:labelled": { "com.docker.compose.project": "shop" },
    };
    const keep = stackFilter(["shop"], (id) => images[id]);
    expect(keep(container("compose", { labels: composed, imageId: "sha256:own" }))).toBe(true);
    const planted = { labels: { "com.docker.compose.project": "shop" }, imageId: "sha256:labelled" };
    expect(keep(container("planted", planted))).toBe(false);
    // an image svc does not know: the container's labels as they are
    expect(keep(container("gone", { ...planted, imageId: "sha256:gone" }))).toBe(true);
  });
});
