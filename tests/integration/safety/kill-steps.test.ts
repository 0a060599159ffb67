/**
 * SIGKILL of svc at each step of an update, then a restart: the container
 * runs under its name, on the old or the new image, configured as before (scenario.ts).
 */
import { describe, test } from "bun:test";
import { first, killScenario, useOwnSandbox } from "./scenario.ts";

useOwnSandbox();

describe("SIGKILL at each step of an update, then a restart repairs it", () => {
  test("after pull, exactly (nothing touched yet)", async () => {
    await killScenario("after pull", {
      what: "pull (the rename of the old container held)",
      gate: (request, path, app) => request.method === "POST" && path === `/containers/${app.before.Id}/rename`,
    });
  });

  test("after rename (the old container parked, its stop just sent)", async () => {
    await killScenario("after rename", first("rename"));
  });

  test("after stop", async () => {
    await killScenario("after stop", first("stop"));
  });

  test("after create (the new container exists, not started)", async () => {
    await killScenario("after create", first("create"));
  });

  test("after start", async () => {
    await killScenario("after start", first("start"));
  });

  test("during the watch (1 s into a 3 s watch)", async () => {
    await killScenario("during watch", (e, all) => (first("start")(e, all) ? 1000 : false));
  });
});
