/**
 * scripts/sandbox.sh down leaves nothing of its engine on the host. A network still defined when
 * the engine stops keeps its bridge in the host's kernel (br-<network id>) for good, so `down`
 * removes the networks a test may have left before it stops the engine.
 */
import { expect, setDefaultTimeout, test } from "bun:test";
import { existsSync } from "node:fs";
import { PrivateSandbox, uniqueName } from "./support.ts";

setDefaultTimeout(180_000);

test("sandbox down removes a network left behind, and its bridge on the host", () => {
  const sb = new PrivateSandbox();
  let bridge = "";
  try {
    sb.up();
    const id = sb.docker(["network", "create", uniqueName("leftover")]).stdout;
    bridge = `/sys/class/net/br-${id.slice(0, 12)}`;
    expect(existsSync(bridge)).toBe(true);
  } finally {
    sb.down();
  }
  expect(existsSync(bridge)).toBe(false);
});
