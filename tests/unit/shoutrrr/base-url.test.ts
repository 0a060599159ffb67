/** notifications.services_base_url: one URL or service=URL pairs; http only to this machine. */
import { describe, expect, test } from "bun:test";
import { parseServicesBaseUrl } from "../../../src/shoutrrr/index.ts";
import { load, problems, RUNS } from "../config/helpers.ts";

describe("services_base_url", () => {
  test("one URL serves every fixed-host service; pairs serve only those named", () => {
    expect(parseServicesBaseUrl("https://relay.lan/api/")).toEqual({
      bases: {
        discord: "https://relay.lan/api",
        telegram: "https://relay.lan/api",
        slack: "https://relay.lan/api",
        pushover: "https://relay.lan/api",
        pushbullet: "https://relay.lan/api",
      },
    });
    expect(parseServicesBaseUrl("discord=https://relay.lan, telegram=http://127.0.0.1:8081")).toEqual({
      bases: { discord: "https://relay.lan", telegram: "http://127.0.0.1:8081" },
    });
    expect(parseServicesBaseUrl("http://[::1]:9000")).toHaveProperty("bases");
    expect(parseServicesBaseUrl("http://localhost:9000")).toHaveProperty("bases");
  });

  test("plain http to another host, an unknown service, credentials: refused, saying why", () => {
    expect(parseServicesBaseUrl("http://relay.lan")).toEqual({
      problem: expect.stringContaining("would send the services' tokens over plain http to relay.lan"),
    });
    expect(parseServicesBaseUrl("telegram=http://10.0.0.5")).toEqual({
      problem: expect.stringMatching(/^telegram: would send/),
    });
    expect(parseServicesBaseUrl("gotify=https://relay.lan")).toEqual({
      problem: expect.stringContaining("service=URL pairs"),
    });
    expect(parseServicesBaseUrl("https://u:p@relay.lan")).toEqual({
      problem: expect.stringContaining("no credentials"),
    });
  });

  test("at load: refused with exit 2's message, accepted when safe", async () => {
    expect(await problems({ argv: RUNS, env: { SVC_NOTIFICATIONS_SERVICES_BASE_URL: "http://relay.lan" } })).toEqual([
      expect.stringContaining(
        "SVC_NOTIFICATIONS_SERVICES_BASE_URL: would send the services' tokens over plain http to relay.lan",
      ),
    ]);
    expect(
      (await load({ argv: RUNS, env: { SVC_NOTIFICATIONS_SERVICES_BASE_URL: "discord=http://127.0.0.1:9000" } })).config
        .notifications.services_base_url,
    ).toBe("discord=http://127.0.0.1:9000");
  });
});
