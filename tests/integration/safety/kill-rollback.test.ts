/**
 * SIGKILL of svc while it rolls back (the new image exits at once), and during a tag policy's
 * move to a newer tag, then a restart: the old container runs again under its name (scenario.ts).
 */
import { describe, test } from "bun:test";
import { first, killScenario, RENAME_BEFORE_START, useOwnSandbox } from "./scenario.ts";

useOwnSandbox();

describe("SIGKILL at each step of a rollback, then a restart repairs it", () => {
  // the same, on the way back: the new image exits, svc is rolling back when it is killed
  const failing = {
    newImage: [`CMD ["/bin/sh","-c","echo failing image >&2; exit 3"]`],
    restart: "no" as const,
    expectFinal: "old" as const,
    expectFinalExit: 1,
  };

  test("rolling back: after the rollback decision", async () => {
    await killScenario("rollback: after decision", first("rollback"), failing);
  });

  test("rolling back: after the new container was removed", async () => {
    await killScenario(
      "rollback: after removing the new one",
      (e, all) => e.action === "remove" && all.some((a) => a.action === "rollback"),
      failing,
    );
  });

  test("rolling back: after the old container got its name back", async () => {
    await killScenario(
      "rollback: after renaming the old one back",
      (e, all) => e.action === "rename" && all.some((a) => a.action === "rollback"),
      { ...failing, bug: RENAME_BEFORE_START },
    );
  });
});

describe("SIGKILL during a tag policy's move to a newer tag, then a restart repairs it", () => {
  const tagged = { tagPolicy: true };
  test("tag move: after create", async () => {
    await killScenario("tag move: after create", first("create"), tagged);
  });

  test("tag move: during the watch", async () => {
    await killScenario("tag move: during watch", (e, all) => (first("start")(e, all) ? 1000 : false), tagged);
  });

  test("tag move: rolling back, after the rollback decision (the old reference comes back)", async () => {
    await killScenario("tag move: rollback after decision", first("rollback"), {
      ...tagged,
      newImage: [`CMD ["/bin/sh","-c","echo failing image >&2; exit 3"]`],
      restart: "no",
      expectFinal: "old",
      expectFinalExit: 1,
    });
  });
});
