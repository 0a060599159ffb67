import { describe, expect, test } from "bun:test";
import { isSvcError } from "../../../src/core/errors.ts";
import { brokerAddress, generatedClientId } from "../../../src/notify/channels/mqtt.ts";
import { parseHeaders } from "../../../src/notify/channels/webhook.ts";

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error("expected a throw");
}

describe("webhook headers", () => {
  test('"Key: Value, Key2: Value2"', () => {
    expect(parseHeaders("X-Token: abc, X-Other:  two words ")).toEqual([
      ["X-Token", "abc"],
      ["X-Other", "two words"],
    ]);
  });

  test("values may hold colons; empty entries and an unset option are ignored", () => {
    expect(parseHeaders("X-Url: http://h:8080/x,, ")).toEqual([["X-Url", "http://h:8080/x"]]);
    expect(parseHeaders(undefined)).toEqual([]);
    expect(parseHeaders("  ")).toEqual([]);
    expect(parseHeaders("X-Empty:")).toEqual([["X-Empty", ""]]);
  });

  test("an entry without a colon or with a bad name is a config error that does not echo it", () => {
    for (const spec of ["Authorization Bearer s3cret", "Bad Name: s3cret", ": s3cret"]) {
      const error = thrown(() => parseHeaders(spec));
      expect(isSvcError(error) && error.kind).toBe("config");
      expect((error as Error).message).toContain("notifications.webhook.headers");
      expect((error as Error).message).not.toContain("s3cret");
    }
  });
});

describe("mqtt broker address", () => {
  const none = { tls_skip_verify: false };
  test("tcp:// and mqtt:// are plain, mqtts:// and ssl:// are TLS; default ports 1883 and 8883", () => {
    expect(brokerAddress({ ...none, broker: "tcp://b:1884" })).toEqual({
      protocol: "mqtt",
      host: "b",
      port: 1884,
      tls: false,
    });
    expect(brokerAddress({ ...none, broker: "mqtt://b" })).toEqual({
      protocol: "mqtt",
      host: "b",
      port: 1883,
      tls: false,
    });
    expect(brokerAddress({ ...none, broker: "mqtts://b:9883" })).toEqual({
      protocol: "mqtts",
      host: "b",
      port: 9883,
      tls: true,
    });
    expect(brokerAddress({ ...none, broker: "ssl://b" })).toEqual({
      protocol: "mqtts",
      host: "b",
      port: 8883,
      tls: true,
    });
    expect(brokerAddress({ ...none, broker: "SSL://b" }).tls).toBe(true);
  });

  test("a bare host is plain TCP; IPv6 literals and URL credentials are understood", () => {
    expect(brokerAddress({ ...none, broker: "broker.lan:1883" })).toEqual({
      protocol: "mqtt",
      host: "broker.lan",
      port: 1883,
      tls: false,
    });
    expect(brokerAddress({ ...none, broker: "mqtt://[::1]:1885" })).toMatchObject({ host: "::1", port: 1885 });
    expect(brokerAddress({ ...none, broker: "mqtt://me:p%40ss@b" })).toMatchObject({
      host: "b",
      username: "me",
      password: "p@ss",
    });
    // the URL parser keeps a "%" that starts no escape as it is: taken literally, not an error
    expect(brokerAddress({ ...none, broker: "mqtt://me:100%zz@b" })).toMatchObject({ password: "100%zz" });
  });

  test("any TLS field turns TLS on", () => {
    expect(brokerAddress({ ...none, broker: "tcp://b", tls_ca_cert: "/ca.pem" }).tls).toBe(true);
    expect(brokerAddress({ ...none, broker: "mqtt://b", tls_cert: "/c.pem" }).tls).toBe(true);
    expect(brokerAddress({ ...none, broker: "mqtt://b", tls_key: "/k.pem" }).tls).toBe(true);
    expect(brokerAddress({ broker: "mqtt://b", tls_skip_verify: true }).tls).toBe(true);
  });

  test("other schemes are config errors", () => {
    const error = thrown(() => brokerAddress({ ...none, broker: "ws://b" }));
    expect(isSvcError(error) && error.kind).toBe("config");
  });

  test("a generated client id is short, unique and names the host", () => {
    const a = generatedClientId("raspberrypi.local");
    const b = generatedClientId("raspberrypi.local");
    expect(a).not.toBe(b);
    expect(a).toMatch(/^svc-raspberryp-[0-9a-f]{8}$/);
    expect(a.length).toBeLessThanOrEqual(23);
  });
});
