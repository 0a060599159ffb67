/** The digest checked is the digest run: a tag moved in the registry between the check and the pull changes nothing. */
import { afterAll, describe, expect, test } from "bun:test";
import { entryOf, Fixture, inspect, makeUpdater } from "./support.ts";

const fx = new Fixture();
afterAll(() => fx.cleanup(), 120_000);

describe("the pull", () => {
  test("runs the digest the check found, though the tag moved before the pull", async () => {
    const v1 = fx.image("moved");
    const app = fx.run("moved", v1.ref);
    const v2 = fx.image("moved");
    let v3: ReturnType<typeof fx.image> | undefined;
    const h = await makeUpdater(
      { containers: [app] },
      {
        // the moment the pull starts, after the check: the tag moves to a third image
        progress: (event) => {
          if (event.container === app && event.step === "pull" && !v3) v3 = fx.image("moved");
        },
      },
    );
    const entry = entryOf(await h.updater.run("api"), app);

    expect(v3).toBeDefined();
    expect(v3!.digest).not.toBe(v2.digest);
    expect(entry.state).toBe("updated");
    expect(entry.new_digest).toBe(v2.digest);
    expect(inspect(app).Image).toBe(v2.id);
    // the container's own reference names what runs, as after a pull by tag
    expect(inspect(v1.ref).Id).toBe(v2.id);
    expect(inspect(app).Config.Image).toBe(v1.ref);

    // the next cycle finds the tag's newer image and runs it
    const next = entryOf(await (await makeUpdater({ containers: [app] })).updater.run("api"), app);
    expect(next.state).toBe("updated");
    expect(inspect(app).Image).toBe(v3!.id);
  }, 120_000);
});
