/**
 * Podman's corrections and checks (src/engine/podman.ts), on inspect JSON shaped as Podman 4.3.1
 * answers (containers/podman: libpod/define/container_inspect.go, pkg/api/handlers/compat/
 * containers.go, libpod/container_internal_linux.go at v4.3.1; each row names its file).
 */
import { describe, expect, test } from "bun:test";
import { SvcError } from "../../../src/core/errors.ts";
import {
  atLeast,
  creationDifferences,
  libpodCreateSpec,
  lostSettings,
  podmanCreateBody,
  podmanVersion,
  policyRefusalCause,
  refusedByPolicy,
  refusedPodman,
  signaturePolicyRefusal,
  unreplaceableReason,
} from "../../../src/engine/podman.ts";

const old = (over: Record<string, any> = {}) =>
  ({
    Id: "72c4614bfb3c5a8d",
    Name: "/app",
    Config: { Hostname: "72c4614bfb3c", Labels: {} },
    HostConfig: {},
    ...over,
  }) as any;

describe("which engine", () => {
  test("the version endpoint's components name Podman (pkg/api/handlers/compat/version.go)", () => {
    expect(
      podmanVersion({
        Components: [
          { Name: "Podman Engine", Version: "4.3.1" },
          { Name: "Conmon", Version: "2.1.6" },
        ],
      }),
    ).toBe("4.3.1");
    expect(podmanVersion({ Components: [{ Name: "Engine", Version: "28.5.2" }] })).toBeNull();
    expect(podmanVersion({})).toBeNull();
  });

  test("4.3 and newer are used; older ones refused with what they lack", () => {
    expect(atLeast("4.3.1", "4.3.0")).toBe(true);
    expect(atLeast("5.8.0", "4.3.0")).toBe(true);
    expect(atLeast("4.2.9", "4.3.0")).toBe(false);
    expect(atLeast("garbage", "4.3.0")).toBe(false);
    expect(refusedPodman("4.3.1")).toBeNull();
    expect(refusedPodman("3.4.4")).toContain("older than 4.3.0");
  });
});

describe("the compatible create body, corrected", () => {
  const spec = (body: Record<string, any>) => ({ createBody: body, extraNetworks: [] });

  test("ulimits named as OCI rlimit types (libpod/container_inspect.go) go back to Docker's names", () => {
    const out = podmanCreateBody(
      old(),
      null,
      spec({ HostConfig: { Ulimits: [{ Name: "RLIMIT_NOFILE", Soft: 1024, Hard: 2048 }] } }),
    );
    expect((out.createBody as any).HostConfig.Ulimits).toEqual([{ Name: "nofile", Soft: 1024, Hard: 2048 }]);
  });

  test("the HOSTNAME Podman wrote for a generated host name is dropped (libpod/container_internal_linux.go); a user's is kept", () => {
    const generated = podmanCreateBody(old(), null, spec({ Env: ["A=1", "HOSTNAME=72c4614bfb3c"], HostConfig: {} }));
    expect(generated.createBody.Env).toEqual(["A=1"]);
    const chosen = podmanCreateBody(
      old({ Config: { Hostname: "web" } }),
      null,
      spec({ Hostname: "web", Env: ["HOSTNAME=web"], HostConfig: {} }),
    );
    expect(chosen.createBody.Env).toEqual(["HOSTNAME=web"]);
  });

  test("k8s-file, shown as json-file by the compatible inspect (pkg/api/handlers/compat/containers.go), stays k8s-file", () => {
    const libpod = { HostConfig: { LogConfig: { Type: "k8s-file" } } };
    const out = podmanCreateBody(
      old(),
      libpod,
      spec({ HostConfig: { LogConfig: { Type: "json-file", Config: null } } }),
    );
    expect((out.createBody as any).HostConfig.LogConfig).toEqual({ Type: "k8s-file", Config: null });
  });
});

describe("what only libpod shows", () => {
  const libpod = (config: Record<string, any>, rest: Record<string, any> = {}) => ({
    Pod: "",
    HostConfig: {},
    ...rest,
    Config: config,
  });

  test("a lost umask, on-failure action or annotation is named; Podman's own annotations are not compared", () => {
    const a = libpod({
      Umask: "0022",
      HealthcheckOnFailureAction: "restart",
      Annotations: { "io.kubernetes.cri-o.Created": "t1", "io.container.manager": "libpod", mine: "x" },
    });
    const b = libpod({
      Umask: "0000",
      HealthcheckOnFailureAction: "none",
      Annotations: { "io.kubernetes.cri-o.Created": "t2" },
    });
    expect(lostSettings(a, b)).toEqual([
      "the healthcheck's on-failure action (--health-on-failure)",
      "its umask (--umask)",
      "its annotations (--annotation)",
    ]);
    expect(lostSettings(a, structuredClone(a))).toEqual([]);
  });

  test("a container systemd runs is left to systemd, with the command", () => {
    const unit = unreplaceableReason(old({ Config: { Labels: { PODMAN_SYSTEMD_UNIT: "app.service" } } }));
    expect(unit).toContain("systemctl restart app.service");
    expect(unit).toContain("Image=");
    const auto = unreplaceableReason(
      old({ Config: { Labels: { PODMAN_SYSTEMD_UNIT: "app.service", "io.containers.autoupdate": "registry" } } }),
    );
    expect(auto).toContain("podman auto-update");
    expect(unreplaceableReason(old())).toBeNull();
  });
});

describe("Podman's sockets", () => {
  test("rootful and the user's, where they exist; named when Docker's socket is missing", async () => {
    const { podmanSockets } = await import("../../../src/engine/podman.ts");
    const { unreachableAdvice } = await import("../../../src/engine/connection.ts");
    const here = new Set(["/run/podman/podman.sock", "/run/user/1000/podman/podman.sock"]);
    expect(podmanSockets({ XDG_RUNTIME_DIR: "/run/user/1000" }, (p) => here.has(p))).toEqual([...here]);
    expect(podmanSockets({}, () => false)).toEqual([]);
    const advice = unreachableAdvice({ kind: "unix", socketPath: "/var/run/docker.sock" }, "ENOENT", [
      "/run/user/1000/podman/podman.sock",
    ]);
    expect(advice).toBe(
      "no Docker socket at /var/run/docker.sock; Podman's is at unix:///run/user/1000/podman/podman.sock: set --docker-host or DOCKER_HOST to it",
    );
  });
});

describe("Podman's own create (pkg/specgen/specgen.go, 4.3)", () => {
  const lp = {
    Pod: "d2fdfc2e09e9",
    Mounts: [
      { Type: "volume", Name: "0a1b", Destination: "/anon", Options: ["nodev"], RW: true },
      { Type: "bind", Source: "/srv", Destination: "/srv", Options: ["rbind"], RW: false },
    ],
    HostConfig: {
      IDMappings: { UidMap: ["0:1:1000"], GidMap: ["0:1:1000"] },
      Ulimits: [{ Name: "RLIMIT_NOFILE", Soft: 1024, Hard: 2048 }],
      LogConfig: { Type: "k8s-file" },
    },
    Config: {
      Umask: "0022",
      StopTimeout: 10,
      Annotations: { team: "blue", "io.kubernetes.cri-o.Created": "t", "io.kubernetes.cri-o.TTY": "false" },
      CreateCommand: ["podman", "run", "app"],
    },
  };
  const body = {
    Image: "app:2",
    Env: ["A=1", "B=x=y"],
    Labels: { app: "demo" },
    HostConfig: { NetworkMode: "none", RestartPolicy: { Name: "on-failure", MaximumRetryCount: 3 } },
  };

  test("the pod, maps, umask, volumes by name, binds and rlimits by their short names (pkg/specgen/generate/oci.go adds RLIMIT_)", () => {
    const spec = libpodCreateSpec("app", body, lp);
    expect(spec).toMatchObject({
      name: "app",
      image: "app:2",
      pod: "d2fdfc2e09e9",
      env: { A: "1", B: "x=y" },
      labels: { app: "demo" },
      annotations: { team: "blue", "io.kubernetes.cri-o.TTY": "false" },
      containerCreateCommand: ["podman", "run", "app"],
      restart_policy: "on-failure",
      restart_tries: 3,
      netns: { nsmode: "none" },
      volumes: [{ Name: "0a1b", Dest: "/anon", Options: ["nodev"] }],
      mounts: [{ destination: "/srv", type: "bind", source: "/srv", options: ["rbind", "ro"] }],
      r_limits: [{ type: "nofile", soft: 1024, hard: 2048 }],
      idmappings: {
        UIDMap: [{ container_id: 0, host_id: 1, size: 1000 }],
        GIDMap: [{ container_id: 0, host_id: 1, size: 1000 }],
      },
      userns: { nsmode: "private" },
      umask: "0022",
      log_configuration: { driver: "k8s-file" },
    });
    expect(spec.annotations["io.kubernetes.cri-o.Created"]).toBeUndefined();
  });

  test("two creations differ only where creation decides; in a pod, the pod decides the network", () => {
    const a = {
      Id: "aaaaaaaaaaaa1",
      Name: "/p1",
      Config: { Env: ["A=1", "HOSTNAME=aaaaaaaaaaaa"], Hostname: "aaaaaaaaaaaa" },
      HostConfig: { Binds: ["b:/b", "a:/a"], NetworkMode: "none" },
    };
    const b = {
      Id: "bbbbbbbbbbbb1",
      Name: "/p2",
      Config: { Env: ["A=1", "HOSTNAME=bbbbbbbbbbbb"], Hostname: "bbbbbbbbbbbb" },
      HostConfig: { Binds: ["a:/a", "b:/b"], NetworkMode: "none" },
    };
    expect(creationDifferences(a, b, false)).toEqual([]);
    // a running container's sandbox and addresses are its start's, its user's aliases are not
    const running = {
      ...a,
      NetworkSettings: {
        SandboxKey: "/run/netns/x",
        Networks: { n: { IPAddress: "10.0.0.2", Aliases: ["aaaaaaaaaaaa", "web"] } },
      },
    };
    const created = { ...b, NetworkSettings: { Networks: { n: { Aliases: ["bbbbbbbbbbbb"] } } } };
    expect(creationDifferences(running, created, false)).toEqual(["NetworkSettings.Networks.n.Aliases[0]"]);
    const lostEnv = { ...b, Config: { ...b.Config, Env: ["HOSTNAME=bbbbbbbbbbbb"] } };
    expect(creationDifferences(a, lostEnv, false)).toEqual(["Config.Env.A"]);
    const otherNet = { ...b, HostConfig: { ...b.HostConfig, NetworkMode: "container:infra" } };
    expect(creationDifferences(a, otherNet, false)).toEqual(["HostConfig.NetworkMode"]);
    expect(creationDifferences(a, otherNet, true)).toEqual([]);
  });
});

describe("a pull Podman's signature policy refused", () => {
  const image = "docker://127.0.0.1:5000/app@sha256:6d4db85fd05883356dfa7df01f642d38d8c24e43cbfb230ed48909eb70916ad8";
  test("its reason, as Podman's compatible API passes it on, after what svc wrote before it", () => {
    expect(
      signaturePolicyRefusal(`pull 127.0.0.1:5000/app@sha256:6d: Running image ${image} is rejected by policy.`),
    ).toBe(`Running image ${image} is rejected by policy.`);
    for (const reason of [
      "A signature was required, but no signature exists",
      "A signature was required, but no signature exists (1 non-sigstore signatures, 0 sigstore non-signature attachments)",
      'None of the signatures were accepted, reasons: Signature for identity "a" is not accepted; Signature for digest sha256:00 does not match',
      'Signature for identity "127.0.0.1:5000/other" is not accepted',
      "Signature for digest sha256:00 does not match",
      "cryptographic signature verification failed: invalid signature when validating ASN.1 encoded signature",
    ])
      expect(signaturePolicyRefusal(`pull x: ${reason}`)).toBe(reason);
  });

  test("as Podman's CLI words it: the text after `Source image rejected:`", () => {
    expect(
      signaturePolicyRefusal(
        "unable to pull image: Source image rejected: A signature was required, but no signature exists",
      ),
    ).toBe("A signature was required, but no signature exists");
  });

  test("any other failure is not one, and a long reason is bounded", () => {
    expect(signaturePolicyRefusal("pull x: manifest unknown")).toBeNull();
    expect(signaturePolicyRefusal("pull x: denied: requested access to the resource is denied")).toBeNull();
    expect(signaturePolicyRefusal(`Source image rejected: ${"x".repeat(5000)}`)?.length).toBe(1003);
  });

  test("the engine's error carries it as its cause; any other error carries none", () => {
    const refused = new SvcError("engine", "pull x: refused", {
      cause: policyRefusalCause("A signature was required"),
    });
    expect(refusedByPolicy(refused)).toBe("A signature was required");
    expect(refusedByPolicy(new SvcError("engine", "pull x: manifest unknown", { cause: new Error("x") }))).toBeNull();
    expect(refusedByPolicy("text")).toBeNull();
  });
});
