/**
 * Fault injection: an update process is SIGKILLed after each step, then a new svc
 * runs crash recovery. Whatever the step, the container ends up running under its name, on the
 * old or the new image, with its configuration, and nothing is left behind.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { containersByPrefix, docker, entryOf, Fixture, inspect, makeUpdater } from "./support.ts";

const fx = new Fixture();
const matrix: { fault: string; child: string; outcome: string }[] = [];
afterAll(() => {
  fx.cleanup();
  console.log(
    `\nfault-injection matrix (step x fault -> outcome)\n${matrix.map((row) => `  ${row.fault.padEnd(14)} ${row.child.padEnd(28)} -> ${row.outcome}`).join("\n")}`,
  );
}, 120_000);

const CHILD = join(import.meta.dir, "crash-child.ts");

async function runChild(name: string, fault: string): Promise<{ killed: boolean; report: any }> {
  const child = Bun.spawn(["bun", CHILD, name, fault], { stdout: "pipe", stderr: "pipe", env: process.env });
  const [stdout, code] = await Promise.all([new Response(child.stdout).text(), child.exited]);
  return { killed: child.signalCode === "SIGKILL" || code === 137, report: stdout ? JSON.parse(stdout) : null };
}

const cases: { fault: string; expect: "old" | "new" }[] = [
  { fault: "after-rename", expect: "old" },
  { fault: "after-stop", expect: "old" },
  { fault: "after-create", expect: "old" },
  { fault: "after-start", expect: "new" },
  { fault: "during-watch", expect: "new" },
  { fault: "fail-create", expect: "old" },
];

describe("killed at each step, repaired by the next start", () => {
  for (const { fault, expect: expected } of cases) {
    test(fault, async () => {
      const v1 = fx.image(fault);
      const net = fx.network(`${fault}-net`);
      const name = fx.run(fault, v1.ref, { network: net, aliases: ["svc-alias"], env: { MODE: "prod" } });
      const v2 = fx.image(fault);

      const child = await runChild(name, fault);
      const leftBehind = Object.keys(containersByPrefix(name)).sort().join(", ");
      if (fault === "fail-create") {
        expect(child.killed).toBe(false);
        const entry = entryOf(child.report, name);
        expect(entry.state).toBe("failed");
        expect(entry.reason).toContain("no space left on device");
      } else {
        if (!child.killed)
          throw new Error(`the update process was not killed at ${fault}: ${JSON.stringify(child.report)}`);
      }

      const h = await makeUpdater({ containers: [name] });
      await h.updater.recover();

      const after = inspect(name);
      expect(Object.keys(containersByPrefix(name))).toEqual([name]);
      expect(after.State.Running).toBe(true);
      expect(after.Image).toBe(expected === "old" ? v1.id : v2.id);
      expect(after.Config.Env).toContain("MODE=prod");
      expect(after.NetworkSettings.Networks[net].Aliases).toContain("svc-alias");
      if (fault !== "fail-create")
        expect(h.audit.entries.some((e) => e.action === "recover" && e.container === name && !e.error)).toBe(true);

      // the next cycle finishes the job
      const report = await h.updater.run("schedule");
      expect(entryOf(report, name).state, JSON.stringify(entryOf(report, name))).toBe(
        expected === "old" ? "updated" : "fresh",
      );
      expect(inspect(name).Image).toBe(v2.id);
      matrix.push({
        fault,
        child: `left: ${leftBehind.replaceAll(name, "<name>")}`,
        outcome: `${expected} image after recovery; next cycle: ${expected === "old" ? "updated" : "fresh"}`,
      });
    }, 90_000);
  }

  test("a stopped container parked by an interrupted revive goes back stopped", async () => {
    const v1 = fx.image("parked");
    const name = fx.run("parked", v1.ref);
    const id = inspect(name).Id as string;
    docker(["stop", "-t", "0", name]);
    docker(["rename", name, `${name}.svc-old-${id.slice(0, 12)}-stopped`]);
    const h = await makeUpdater({ containers: [name] });
    await h.updater.recover();
    const after = inspect(name);
    expect(after.Id).toBe(id);
    expect(after.State.Running).toBe(false);
  }, 60_000);
});
