/**
 * Podman's corrections and checks (src/engine/podman.ts), on inspect JSON shaped as Podman 4.3.1
 * answers (containers/podman: libpod/define/container_inspect.go, pkg/api/handlers/compat/
 * containers.go, libpod/container_internal_linux.go at v4.3.1; each row names its file).
 */
import { describe, expect, test } from "bun:test";
import { atLeast, lostSettings, podmanCreateBody, podmanVersion, refusedPodman, unreplaceableReason } from "../../../src/engine/podman.ts";

const old = (over: Record<string, any> = {}) => ({ Id: "72c4614bfb3c5a8d", Name: "/app", Config: { Hostname: "72c4614bfb3c", Labels: {} }, HostConfig: {}, ...over }) as any;

describe("which engine", () => {
  test("the version endpoint's components name Podman (pkg/api/handlers/compat/version.go)", () => {
    expect(podmanVersion({ Components: [{ Name: "Podman Engine", Version: "4.3.1" }, { Name: "Conmon", Version: "2.1.6" }] })).toBe("4.3.1");
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
    const out = podmanCreateBody(old(), null, spec({ HostConfig: { Ulimits: [{ Name: "RLIMIT_NOFILE", Soft: 1024, Hard: 2048 }] } }));
    expect((out.createBody as any).HostConfig.Ulimits).toEqual([{ Name: "nofile", Soft: 1024, Hard: 2048 }]);
  });

  test("the HOSTNAME Podman wrote for a generated host name is dropped (libpod/container_internal_linux.go); a user's is kept", () => {
    const generated = podmanCreateBody(old(), null, spec({ Env: ["A=1", "HOSTNAME=72c4614bfb3c"], HostConfig: {} }));
    expect(generated.createBody.Env).toEqual(["A=1"]);
    const chosen = podmanCreateBody(old({ Config: { Hostname: "web" } }), null, spec({ Hostname: "web", Env: ["HOSTNAME=web"], HostConfig: {} }));
    expect(chosen.createBody.Env).toEqual(["HOSTNAME=web"]);
  });

  test("k8s-file, shown as json-file by the compatible inspect (pkg/api/handlers/compat/containers.go), stays k8s-file", () => {
    const libpod = { HostConfig: { LogConfig: { Type: "k8s-file" } } };
    const out = podmanCreateBody(old(), libpod, spec({ HostConfig: { LogConfig: { Type: "json-file", Config: null } } }));
    expect((out.createBody as any).HostConfig.LogConfig).toEqual({ Type: "k8s-file", Config: null });
  });
});

describe("what only libpod shows", () => {
  const libpod = (config: Record<string, any>, rest: Record<string, any> = {}) => ({ Pod: "", HostConfig: {}, ...rest, Config: config });

  test("a lost umask, on-failure action or annotation is named; Podman's own annotations are not compared", () => {
    const a = libpod({ Umask: "0022", HealthcheckOnFailureAction: "restart", Annotations: { "io.kubernetes.cri-o.Created": "t1", "io.container.manager": "libpod", mine: "x" } });
    const b = libpod({ Umask: "0000", HealthcheckOnFailureAction: "none", Annotations: { "io.kubernetes.cri-o.Created": "t2" } });
    expect(lostSettings(a, b)).toEqual(["the healthcheck's on-failure action (--health-on-failure)", "its umask (--umask)", "its annotations (--annotation)"]);
    expect(lostSettings(a, structuredClone(a))).toEqual([]);
  });

  test("a container systemd runs is left to systemd, with the command", () => {
    const unit = unreplaceableReason(old({ Config: { Labels: { PODMAN_SYSTEMD_UNIT: "app.service" } } }));
    expect(unit).toContain("systemctl restart app.service");
    expect(unit).toContain("Image=");
    const auto = unreplaceableReason(old({ Config: { Labels: { PODMAN_SYSTEMD_UNIT: "app.service", "io.containers.autoupdate": "registry" } } }));
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
    const advice = unreachableAdvice({ kind: "unix", socketPath: "/var/run/docker.sock" }, "ENOENT", ["/run/user/1000/podman/podman.sock"]);
    expect(advice).toBe("no Docker socket at /var/run/docker.sock; Podman's is at unix:///run/user/1000/podman/podman.sock: set --docker-host or DOCKER_HOST to it");
  });
});
