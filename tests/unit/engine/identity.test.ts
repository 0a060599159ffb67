/**
 * Which engine answers, from its ping's headers or its version answer. The rows are the headers
 * the engines send: Podman's handler_api.go (Api-Version and Libpod-Api-Version on every answer)
 * and compat/ping.go, as Podman 4.3.1 and 5.8.6 answered in the test sandboxes; Docker's ping
 * (moby's api/server/router/system, its Server header from the server's middleware) as Docker
 * 28.5 answered there.
 */
import { describe, expect, test } from "bun:test";
import { identityFromPing, identityFromVersion } from "../../../src/engine/identity.ts";

const headers = (entries: Record<string, string>) => new Headers(entries);

describe("a ping's headers", () => {
  test("Podman 4.3.1 (no Ostype header in 4.3)", () => {
    expect(
      identityFromPing(
        headers({
          "Api-Version": "1.41",
          "Libpod-Api-Version": "4.3.1",
          "Libpod-Buildah-Version": "1.28.2",
          Server: "Libpod/4.3.1 (linux)",
        }),
      ),
    ).toEqual({ apiVersion: "1.41", podman: "4.3.1", product: "Podman 4.3.1", platform: null });
  });

  test("Podman 5.8.6", () => {
    expect(
      identityFromPing(
        headers({
          "Api-Version": "1.44",
          "Libpod-Api-Version": "5.8.6",
          Ostype: "linux",
          Server: "Libpod/5.8.6 (linux)",
        }),
      ),
    ).toEqual({ apiVersion: "1.44", podman: "5.8.6", product: "Podman 5.8.6", platform: null });
  });

  test("Docker 28.5, its package's version suffix kept", () => {
    expect(
      identityFromPing(headers({ "Api-Version": "1.51", Ostype: "linux", Server: "Docker/28.5.2+dfsg4 (linux)" })),
    ).toEqual({ apiVersion: "1.51", podman: null, product: "Docker 28.5.2+dfsg4", platform: null });
  });

  test("a proxy that drops the Server header: Docker, version unsaid", () => {
    expect(identityFromPing(headers({ "Api-Version": "1.43" }))?.product).toBe("Docker");
  });

  test("no API version, or one that is not a version: not read (/version is asked)", () => {
    expect(identityFromPing(headers({ Server: "Docker/28.5.2 (linux)" }))).toBeNull();
    expect(identityFromPing(headers({ "Api-Version": "1.41; rm -rf /" }))).toBeNull();
    expect(identityFromPing(headers({ "Api-Version": "x".repeat(5000) }))).toBeNull();
  });

  test("a Podman version that does not read as one: Podman all the same, refused as too old (podman.ts)", () => {
    expect(identityFromPing(headers({ "Api-Version": "1.41", "Libpod-Api-Version": "<b>" }))).toMatchObject({
      podman: "",
      product: "Podman",
    });
  });
});

describe("a version answer", () => {
  test("Podman's components name it (pkg/api/handlers/compat/version.go); the platform comes with it", () => {
    expect(
      identityFromVersion({
        ApiVersion: "1.41",
        Version: "4.3.1",
        Os: "linux",
        Arch: "amd64",
        Components: [
          { Name: "Podman Engine", Version: "4.3.1" },
          { Name: "Conmon", Version: "conmon version 2.1.6" },
        ],
      }),
    ).toEqual({
      apiVersion: "1.41",
      podman: "4.3.1",
      product: "Podman 4.3.1",
      platform: { os: "linux", architecture: "amd64" },
    });
  });

  test("Docker", () => {
    expect(
      identityFromVersion({
        ApiVersion: "1.41",
        Version: "20.10.24+dfsg1",
        Os: "linux",
        Arch: "arm64",
        Components: [{ Name: "Engine", Version: "20.10.24+dfsg1" }],
      }),
    ).toEqual({
      apiVersion: "1.41",
      podman: null,
      product: "Docker 20.10.24+dfsg1",
      platform: { os: "linux", architecture: "arm64" },
    });
  });
});
