/** The peers option: what a peer may be called and where it may be (docs/dashboard.md, docs/security.md). */
import { describe, expect, test } from "bun:test";
import { hostname } from "node:os";
import { loadConfig, printConfig } from "../../../src/config/index.ts";
import { load, problems, RUNS } from "./helpers.ts";

// the peers are shown by the dashboard, so it is on (a peer without it is refused: docs/dashboard.md)
const peer = (fields: string) => ["--http-api-ui", "--http-api-token", "t0k-admin", "--peers", fields];

describe("peers", () => {
  test("a URL with a user name or password is refused, and --print-config never shows it", async () => {
    const given = [...RUNS, ...peer("name=nas,url=https://admin:pw-peer-9f2@nas.lan:8080,token=t0k")];
    const found = await problems({ argv: given });
    expect(found.join("\n")).toContain("url: must not hold a user name or password");
    expect(found.join("\n")).not.toContain("pw-peer-9f2");
    expect(
      (await problems({ argv: [...RUNS, ...peer("name=nas,url=https://admin@nas.lan:8080,token=t0k")] })).join("\n"),
    ).toContain("user name or password");
    const printed = printConfig(await loadConfig({ argv: given, env: {}, cwd: "/", keepGoing: true }));
    expect(printed).not.toContain("pw-peer-9f2");
    expect(printed).toContain("# peers: the value from flag (--peers) is refused (below)");
    // a plain address is taken as it is
    expect(
      (await load({ argv: [...RUNS, ...peer("name=nas,url=https://nas.lan:8080,token=t0k")] })).config.peers[0]!.url,
    ).toBe("https://nas.lan:8080");
  });
});

describe("a peer's name", () => {
  test("this host's own name (any case) is refused: the dashboard would show both hosts as one", async () => {
    const mine = hostname();
    const found = await problems({
      argv: [...RUNS, ...peer(`name=${mine.toUpperCase()},url=https://nas.lan:8080,token=t0k`)],
    });
    expect(found.join("\n")).toContain(`the peer ${mine.toUpperCase()} has this host's name`);
    expect(
      (await load({ argv: [...RUNS, ...peer(`name=${mine}-peer,url=https://nas.lan:8080,token=t0k`)] })).config.peers,
    ).toHaveLength(1);
  });
});
