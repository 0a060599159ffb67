/** What GET /v1/containers says of each container beside the dry run's verdict; snoozes; the running cycle's steps. */
import { describe, expect, test } from "bun:test";
import { defaultConfig } from "../../../src/config/index.ts";
import type { ServiceSummary } from "../../../src/engine/swarm.ts";
import { inMemory } from "../../../src/state/index.ts";
import { snooze, snoozedUntil } from "../../../src/updater/check/snooze.ts";
import type { ContainerReport } from "../../../src/updater/types.ts";
import { liveProgress } from "../../../src/updater/views/live.ts";
import {
  containerOverviews,
  excludedContainers,
  releaseLink,
  runningVersion,
  updateKind,
} from "../../../src/updater/views/overview.ts";
import { emptyReport } from "../../support/report.ts";

const D_OLD = `sha256:${"a".repeat(64)}`;
const D_NEW = `sha256:${"b".repeat(64)}`;

/** A Swarm service as the engine lists it, pinned to D_OLD. */
function service(name: string, labels: Record<string, string>, fields: Partial<ServiceSummary> = {}): ServiceSummary {
  return {
    id: `s-${name}`,
    name,
    version: 7,
    image: `r/${name}:1@${D_OLD}`,
    labels,
    mode: "replicated",
    failureAction: null,
    update: null,
    previousImage: null,
    spec: {},
    ...fields,
  };
}

function entry(fields: Partial<ContainerReport>): ContainerReport {
  return {
    id: "c1",
    name: "web",
    image: "r/web:1.2.3",
    new_image: null,
    old_image_id: "sha256:img",
    new_image_id: null,
    old_digest: D_OLD,
    new_digest: null,
    state: "fresh",
    reason: null,
    duration_ms: 1,
    ...fields,
  };
}

describe("versions and the kind of update", () => {
  test("the running version: the image's version label, else the tag, else a short digest", () => {
    expect(runningVersion(entry({}), { labels: { "org.opencontainers.image.version": "1.2.3-build7" } })).toBe(
      "1.2.3-build7",
    );
    expect(runningVersion(entry({}), { labels: {} })).toBe("1.2.3");
    expect(runningVersion(entry({ image: "r/web@sha256:" + "c".repeat(64) }), undefined)).toBe("sha256:aaaaaaaaaaaa");
  });

  test("a tag move names the version part that changed; a new digest of the same tag is a digest update", () => {
    expect(updateKind({ image: "r/web:1.2.3", new_image: null })).toBe("digest");
    expect(updateKind({ image: "r/web:1.2.3", new_image: "r/web:1.2.4" })).toBe("patch");
    expect(updateKind({ image: "r/web:1.2.3", new_image: "r/web:1.3.0" })).toBe("minor");
    expect(updateKind({ image: "r/web:v1.2", new_image: "r/web:v2.0" })).toBe("major");
    expect(updateKind({ image: "r/web:stable", new_image: "r/web:edge" })).toBe("tag");
  });
});

describe("the release notes link", () => {
  test("the svc.link template wins, with the version put in (encoded)", () => {
    expect(
      releaseLink(
        { "svc.link": "https://example.org/notes/{version}" },
        { "org.opencontainers.image.source": "https://github.com/a/b" },
        "1.3.0 rc",
      ),
    ).toBe("https://example.org/notes/1.3.0%20rc");
  });

  test("else the image's source: GitHub's release page for a version, the address itself otherwise", () => {
    expect(releaseLink({}, { "org.opencontainers.image.source": "https://github.com/acme/web" }, "1.3.0")).toBe(
      "https://github.com/acme/web/releases/tag/1.3.0",
    );
    expect(releaseLink({}, { "org.opencontainers.image.source": "https://github.com/acme/web.git" }, "latest")).toBe(
      "https://github.com/acme/web.git",
    );
    expect(releaseLink({}, { "org.opencontainers.image.url": "https://acme.example/web" }, "1.0")).toBe(
      "https://acme.example/web",
    );
    expect(releaseLink({}, {}, "1.0")).toBeNull();
  });

  test("anything but http(s) is no link: a label may hold a script", () => {
    expect(releaseLink({ "svc.link": "javascript:alert(1)//{version}" }, {}, "1")).toBeNull();
    expect(releaseLink({}, { "org.opencontainers.image.source": "data:text/html,<script>x</script>" }, "1")).toBeNull();
  });
});

describe("containerOverviews", () => {
  test("from the report and what the cycle listed: versions, policy, snooze, skip, the image to roll back to", () => {
    const report = emptyReport("api", {});
    report.containers = [entry({ state: "stale", new_digest: D_NEW, reason: "would be updated (dry run)" })];
    const labels = {
      "svc.monitor_only": "true",
      "svc.hooks.pre_update": "echo hi",
      "svc.link": "https://x.example/{version}",
    };
    const seen = {
      containers: [
        { id: "c1", name: "web", image: "r/web:1.2.3", imageId: "sha256:img", state: "running" as const, labels },
      ],
      images: [
        { id: "sha256:img", repoTags: [], repoDigests: [], labels: { "org.opencontainers.image.version": "1.2.3" } },
      ],
    };
    const snoozed = inMemory();
    const now = Date.parse("2026-01-01T00:00:00Z");
    snooze(snoozed, "web", 3_600_000, now);
    const skipped = inMemory();
    skipped.set("web", D_OLD);
    const previous = inMemory();
    previous.set("web", "sha256:before r/web:1.2.2");
    // first seen without min_image_age: no creation time asked for
    const firstSeen = inMemory();
    firstSeen.set("web", `${D_NEW} 2025-12-30T00:00:00.000Z -`);
    const [overview] = containerOverviews(
      report,
      seen,
      defaultConfig({ lifecycle_hooks: true }),
      { snoozed, skipped, previous, firstSeen },
      now,
    );
    expect(overview).toMatchObject({
      name: "web",
      version: "1.2.3",
      available_version: "sha256:bbbbbbbbbbbb",
      update_kind: "digest",
      would_update: true,
      policy: { monitor_only: true, no_pull: false, tag_policy: null, min_image_age: null, hooks: ["pre_update"] },
      snoozed_until: "2026-01-01T01:00:00.000Z",
      first_seen_at: "2025-12-30T00:00:00.000Z",
      created_at: null,
      eligible_at: null,
      skipped: D_OLD,
      previous_image_id: "sha256:before",
      link: "https://x.example/1.2.3",
    });
  });

  test("a Swarm service: its spec's labels, its image found by the digest it is pinned to, Swarm's previous spec to roll back to, hooks shown as not applying", () => {
    const report = emptyReport("api", {});
    const D_PREV = `sha256:${"c".repeat(64)}`;
    report.containers = [
      entry({
        kind: "service",
        id: "s1",
        name: "api",
        image: "r/api:2.0.0",
        old_image_id: D_OLD,
        old_digest: D_OLD,
        state: "stale",
        new_digest: D_NEW,
        new_image: "r/api:2.1.0",
        reason: "would be updated (dry run)",
      }),
      // a container svc updated, of the same name as nothing the service has: its memory stays its own
      entry({ name: "web", old_image_id: "sha256:img" }),
    ];
    const spec = service("api", {}, { image: `r/api:2.0.0@${D_OLD}`, previousImage: `r/api:1.9.0@${D_PREV}` });
    const labels = {
      "svc.tag_policy": "semver:minor",
      "svc.no_pull": "true",
      "svc.hooks.pre_update": "echo hi",
      "org.opencontainers.image.source": "https://github.com/acme/not-this",
      "com.docker.stack.namespace": "shop",
    };
    const seen = {
      // the task container's labels are not the service's
      containers: [
        {
          id: "t1",
          name: "api.1.x",
          image: `r/api:2.0.0@${D_OLD}`,
          imageId: "sha256:task",
          state: "running" as const,
          labels: { "svc.monitor_only": "true" },
        },
      ],
      images: [
        {
          id: "sha256:task",
          repoTags: ["r/api:2.0.0"],
          repoDigests: [`r/api@${D_OLD}`],
          labels: {
            "org.opencontainers.image.version": "2.0.0-b1",
            "org.opencontainers.image.source": "https://github.com/acme/api",
          },
        },
      ],
      services: [{ ...spec, labels }],
    };
    const previous = inMemory();
    previous.set("api", "sha256:not-for-a-service");
    const [api] = containerOverviews(report, seen, defaultConfig({ lifecycle_hooks: false }), { previous });
    expect(api).toMatchObject({
      kind: "service",
      version: "2.0.0-b1",
      available_version: "2.1.0",
      update_kind: "minor",
      would_update: true,
      policy: {
        monitor_only: false,
        no_pull: false,
        tag_policy: "semver:minor",
        hooks: [],
        ignored_hooks: ["pre_update"],
      },
      previous_image_id: D_PREV,
      link: "https://github.com/acme/api/releases/tag/2.1.0",
      // its stack, from its spec's labels (docker stack deploy sets it)
      group: { kind: "stack", name: "shop" },
    });

    // a service never updated (no previous spec), whose image is on no node this engine sees
    const [bare] = containerOverviews(
      report,
      { services: [{ ...spec, labels: {}, previousImage: null }] },
      defaultConfig(),
      {},
    );
    expect(bare).toMatchObject({
      kind: "service",
      version: "2.0.0",
      previous_image_id: null,
      link: null,
      policy: { hooks: [], ignored_hooks: [] },
      group: null,
    });
  });
});

describe("excludedContainers", () => {
  test("what the selection leaves out, with the first rule that does; another scope's containers and svc's leftovers are not listed", () => {
    const summary = (name: string, labels: Record<string, string> = {}, state: "running" | "exited" = "running") => ({
      id: name,
      name,
      image: `r/${name}:1`,
      imageId: "sha256:i",
      state,
      labels,
    });
    const seen = {
      containers: [
        summary("web"),
        summary("off", { "svc.enable": "false" }),
        summary("stopped", {}, "exited"),
        summary("skipped-by-name"),
        summary("theirs", { "svc.scope": "other" }),
        summary("web.svc-old-0123456789ab-running"),
      ],
      // Swarm services, by their spec's labels
      services: [
        service("api", {}),
        service("batch", { "svc.enable": "false" }),
        service("their-api", { "svc.scope": "other" }),
      ],
    };
    const report = emptyReport("api", {});
    report.containers = [entry({ name: "web" }), entry({ kind: "service", name: "api" })];
    const config = defaultConfig({ disable_containers: ["skipped-by-name"] });
    expect(excludedContainers(seen, report, config)).toEqual([
      { kind: "service", name: "batch", image: "r/batch:1", state: "running", reason: "label svc.enable=false" },
      { kind: "container", name: "off", image: "r/off:1", state: "running", reason: "label svc.enable=false" },
      {
        kind: "container",
        name: "skipped-by-name",
        image: "r/skipped-by-name:1",
        state: "running",
        reason: "named in disable_containers",
      },
      {
        kind: "container",
        name: "stopped",
        image: "r/stopped:1",
        state: "exited",
        reason: "exited: only running containers are updated (revive_stopped)",
      },
    ]);
  });
});

describe("snooze", () => {
  test("lasts until its time, is lifted by 0, and one that ended is forgotten", () => {
    const snoozed = inMemory();
    const now = 1_000_000;
    expect(snooze(snoozed, "web", 60_000, now)).toBe(new Date(now + 60_000).toISOString());
    expect(snoozedUntil(snoozed, "web", now + 59_999)).toBe(now + 60_000);
    expect(snoozedUntil(snoozed, "web", now + 60_000)).toBeUndefined();
    expect(snoozed.get("web")).toBeUndefined();
    snooze(snoozed, "web", 60_000, now);
    expect(snooze(snoozed, "web", 0, now)).toBeNull();
    expect(snoozedUntil(snoozed, "web", now)).toBeUndefined();
  });
});

describe("liveProgress", () => {
  test("the running cycle's latest step and each container's; none once no cycle runs; a new session starts afresh", () => {
    const live = liveProgress();
    expect(live.running(false)).toBeNull();
    expect(live.running(true)).toEqual({
      session_id: null,
      trigger: null,
      started_at: null,
      current: null,
      containers: [],
    });
    const at = new Date("2026-01-01T00:00:00Z");
    live.listen({ session_id: "s1", trigger: "api", container: "db", step: "check", at });
    live.listen({ session_id: "s1", trigger: "api", container: "web", step: "check", at });
    live.listen({ session_id: "s1", trigger: "api", container: "web", step: "pull", at });
    const running = live.running(true)!;
    expect(running.current).toEqual({ container: "web", step: "pull", at: at.toISOString() });
    expect(running.containers.map((c) => `${c.container}:${c.step}`)).toEqual(["db:check", "web:pull"]);
    live.listen({ session_id: "s2", trigger: "schedule", container: "api", step: "check", at });
    expect(live.running(true)!.containers.map((c) => c.container)).toEqual(["api"]);
    expect(live.running(false)).toBeNull();
  });
});
