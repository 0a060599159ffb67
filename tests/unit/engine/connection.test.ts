import { describe, expect, test } from "bun:test";
import { isSvcError } from "../../../src/core/errors.ts";
import {
  type DockerConfig,
  normalizeApiVersion,
  parseDockerHost,
  tlsMaterial,
} from "../../../src/engine/connection.ts";
import {
  followPullStream,
  looksLikeImageId,
  platformString,
  sameSignal,
  splitReference,
} from "../../../src/engine/docker.ts";
import { demultiplexLogs, lastLines } from "../../../src/engine/logs.ts";

function thrown(fn: () => unknown): { kind: string; message: string } {
  try {
    fn();
  } catch (error) {
    if (!isSvcError(error)) throw error;
    return { kind: error.kind, message: error.message };
  }
  throw new Error("did not throw");
}

describe("parseDockerHost", () => {
  test("unix sockets", () => {
    expect(parseDockerHost("unix:///var/run/docker.sock")).toEqual({
      kind: "unix",
      socketPath: "/var/run/docker.sock",
    });
  });

  test("tcp, http and https with default ports 2375 / 2376", () => {
    expect(parseDockerHost("tcp://10.0.0.5:2375")).toEqual({ kind: "tcp", host: "10.0.0.5", port: 2375, tls: false });
    expect(parseDockerHost("tcp://docker.local")).toEqual({
      kind: "tcp",
      host: "docker.local",
      port: 2375,
      tls: false,
    });
    expect(parseDockerHost("http://127.0.0.1:1234/")).toEqual({
      kind: "tcp",
      host: "127.0.0.1",
      port: 1234,
      tls: false,
    });
    expect(parseDockerHost("https://docker.local")).toEqual({
      kind: "tcp",
      host: "docker.local",
      port: 2376,
      tls: true,
    });
    expect(parseDockerHost("tcp://[::1]:2375")).toEqual({ kind: "tcp", host: "::1", port: 2375, tls: false });
  });

  test("anything else is a configuration error naming the option", () => {
    for (const bad of ["ssh://me@host", "unix://relative.sock", "/var/run/docker.sock", "tcp://host:99999"]) {
      const error = thrown(() => parseDockerHost(bad));
      expect(error.kind).toBe("config");
      expect(error.message).toContain("docker.host");
    }
  });
});

describe("tlsMaterial", () => {
  const base: DockerConfig = { host: "tcp://docker.local:2376", tls_verify: false };
  const files: Record<string, string> = { "/ca.pem": "CA", "/cert.pem": "CERT", "/key.pem": "KEY" };
  const read = (path: string) => {
    const content = files[path];
    if (content === undefined) throw Object.assign(new Error(`ENOENT: ${path}`), { code: "ENOENT" });
    return content;
  };

  test("no TLS for a plain tcp host without TLS options, nor for a unix socket", () => {
    expect(tlsMaterial(base, parseDockerHost(base.host), read)).toBeNull();
    const unix = { ...base, host: "unix:///s", tls_verify: true };
    expect(tlsMaterial(unix, parseDockerHost(unix.host), read)).toBeNull();
  });

  test("tls_verify reads all three files", () => {
    const docker = { ...base, tls_verify: true, tls_ca_cert: "/ca.pem", tls_cert: "/cert.pem", tls_key: "/key.pem" };
    expect(tlsMaterial(docker, parseDockerHost(docker.host), read)).toEqual({
      verify: true,
      ca: "CA",
      cert: "CERT",
      key: "KEY",
    });
  });

  test("tls_verify without a file names the missing option", () => {
    const docker = { ...base, tls_verify: true, tls_ca_cert: "/ca.pem", tls_cert: "/cert.pem" };
    const error = thrown(() => tlsMaterial(docker, parseDockerHost(docker.host), read));
    expect(error.kind).toBe("config");
    expect(error.message).toBe("docker.tls_key is required when docker.tls_verify is true");
  });

  test("an unreadable file names the option and the path", () => {
    const docker = {
      ...base,
      tls_verify: true,
      tls_ca_cert: "/missing.pem",
      tls_cert: "/cert.pem",
      tls_key: "/key.pem",
    };
    const error = thrown(() => tlsMaterial(docker, parseDockerHost(docker.host), read));
    expect(error.message).toBe("docker.tls_ca_cert: cannot read /missing.pem (ENOENT)");
  });

  test("client certificates without tls_verify: TLS without checking the server", () => {
    const docker = { ...base, tls_cert: "/cert.pem", tls_key: "/key.pem" };
    expect(tlsMaterial(docker, parseDockerHost(docker.host), read)).toEqual({
      verify: false,
      cert: "CERT",
      key: "KEY",
    });
    const https = { ...base, host: "https://docker.local" };
    expect(tlsMaterial(https, parseDockerHost(https.host), read)).toEqual({ verify: false });
  });
});

describe("api version", () => {
  test("normalizeApiVersion accepts 1.41 and v1.41 only", () => {
    expect(normalizeApiVersion("1.41")).toBe("1.41");
    expect(normalizeApiVersion("v1.45")).toBe("1.45");
    expect(thrown(() => normalizeApiVersion("latest")).message).toContain("docker.api_version");
  });
});

describe("references and platforms", () => {
  test("splitReference never leaves the tag empty (an empty tag would pull every tag)", () => {
    expect(splitReference("nginx")).toEqual({ repository: "nginx", tag: "latest" });
    expect(splitReference("127.0.0.1:5000/app")).toEqual({ repository: "127.0.0.1:5000/app", tag: "latest" });
    expect(splitReference("127.0.0.1:5000/app:1.2")).toEqual({ repository: "127.0.0.1:5000/app", tag: "1.2" });
    expect(splitReference("ghcr.io/a/b@sha256:abc")).toEqual({ repository: "ghcr.io/a/b", tag: "sha256:abc" });
  });

  test("sameSignal", () => {
    expect(sameSignal("SIGTERM", "term")).toBe(true);
    expect(sameSignal(" sigquit", "SIGQUIT")).toBe(true);
    expect(sameSignal("SIGTERM", "SIGINT")).toBe(false);
  });

  test("platformString", () => {
    expect(platformString({ os: "linux", architecture: "arm", variant: "v7" })).toBe("linux/arm/v7");
    expect(platformString({ os: "linux", architecture: "amd64" })).toBe("linux/amd64");
  });

  test("looksLikeImageId spots the list's image ID in place of a reference", () => {
    const id = "sha256:5e39aeca0b6bf7c839a4fe90c88c01572cc99b31b7754f7c0c106768fe719c20";
    expect(looksLikeImageId(id, id)).toBe(true);
    expect(looksLikeImageId("5e39aeca0b6b", id)).toBe(true);
    expect(looksLikeImageId("nginx:1.27", id)).toBe(false);
    expect(looksLikeImageId("deadbeefcafe", id)).toBe(false);
  });
});

describe("logs", () => {
  function frame(stream: number, text: string): Buffer {
    const payload = Buffer.from(text);
    const header = Buffer.alloc(8);
    header[0] = stream;
    header.writeUInt32BE(payload.length, 4);
    return Buffer.concat([header, payload]);
  }

  test("demultiplexes stdout and stderr frames in order", () => {
    const data = Buffer.concat([frame(1, "one\n"), frame(2, "two\n"), frame(1, "thr"), frame(1, "ee\n")]);
    expect(demultiplexLogs(data)).toBe("one\ntwo\nthree\n");
  });

  test("keeps a truncated last frame as far as it goes", () => {
    const data = Buffer.concat([frame(1, "one\n"), frame(2, "two\n").subarray(0, 10)]);
    expect(demultiplexLogs(data)).toBe("one\ntw");
  });

  test("lastLines", () => {
    expect(lastLines("a\nb\nc\n", 2)).toBe("b\nc");
    expect(lastLines("a\r\nb", 5)).toBe("a\nb");
    expect(lastLines("a\nb", 0)).toBe("");
  });
});

describe("followPullStream", () => {
  test("reads the progress stream to its end and reports an in-band error, even split across chunks", async () => {
    const { Readable } = await import("node:stream");
    const chunks = [
      '{"status":"Pulling from app","id":"1"}\n{"status":"Downloa',
      'ding"}\n{"errorDetail":{"message":"unauthorized: authentication required"},"error":"unauth',
      'orized: authentication required"}\n',
    ];
    expect(await followPullStream(Readable.from(chunks))).toBe("unauthorized: authentication required");
  });

  test("a clean stream, with a last line lacking its newline, is no failure", async () => {
    const { Readable } = await import("node:stream");
    expect(
      await followPullStream(Readable.from(['{"status":"Pulling"}\n', '{"status":"Status: Downloaded newer image"}'])),
    ).toBeNull();
  });

  test("an error on the last line without a newline counts", async () => {
    const { Readable } = await import("node:stream");
    expect(await followPullStream(Readable.from(['{"status":"x"}\n{"error":"manifest unknown"}']))).toBe(
      "manifest unknown",
    );
  });
});
