/**
 * Containers labelled the Watchtower way are treated as their svc-labelled twins: selected,
 * excluded, monitored and ordered alike, by the real updater against the real engine.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { entryOf, expectState, Fixture, inspect, makeUpdater, recordEvents } from "./support.ts";

const fx = new Fixture();
afterAll(() => fx.cleanup(), 120_000);

const WT = "com.centurylinklabs.watchtower";
type Style = "svc" | "watchtower";
const label = (style: Style, svcName: string, wtName: string, value: string) => ({
  labels: { [style === "svc" ? `svc.${svcName}` : `${WT}.${wtName}`]: value },
});

/** One family of containers labelled in one style; returns what a user sees after a cycle. */
async function outcome(style: Style) {
  const image = fx.image(`${style}-img`);
  const excluded = fx.run(`${style}-excluded`, image.ref, label(style, "enable", "enable", "false"));
  const monitored = fx.run(`${style}-monitored`, image.ref, label(style, "monitor_only", "monitor-only", "true"));
  const db = fx.run(`${style}-db`, image.ref);
  const app = fx.run(`${style}-app`, image.ref, label(style, "depends_on", "depends-on", db));
  const before = Object.fromEntries([excluded, monitored, db, app].map((name) => [name, inspect(name).Id]));
  fx.image(`${style}-img`);

  const h = await makeUpdater({ containers: [excluded, monitored, db, app] });
  const recording = recordEvents([db, app], ["stop", "start"]);
  const report = await h.updater.run("api");
  const events = await recording.stop();
  const generic = (name: string) => name.replace(fx.name(`${style}-`), "");
  return {
    states: Object.fromEntries(report!.containers.map((c) => [generic(c.name), c.state])),
    excludedUntouched: inspect(excluded).Id === before[excluded],
    monitoredUntouched: inspect(monitored).Id === before[monitored],
    order: events.map((event) => {
      const [action, name] = event.split(":");
      return `${action}:${generic(name!)}`;
    }),
    appReason: entryOf(report, app).reason,
    dbState: expectState(report, db, "updated").state,
  };
}

describe("Watchtower's labels", () => {
  test("select, exclude, monitor and order a container exactly as svc's own labels do", async () => {
    const svc = await outcome("svc");
    const watchtower = await outcome("watchtower");
    expect(svc.states).toEqual({ monitored: "stale", db: "updated", app: "updated" });
    expect(svc.order).toEqual(["stop:app", "stop:db", "start:db", "start:app"]);
    expect(watchtower).toEqual(svc);
  }, 120_000);

  test("svc's own label wins over a conflicting Watchtower label", async () => {
    const image = fx.image("both");
    const both = fx.run("both", image.ref, {
      labels: {
        [`${WT}.monitor-only`]: "true",
        "svc.monitor_only": "false",
        [`${WT}.enable`]: "false",
        "svc.enable": "true",
      },
    });
    const newer = fx.image("both");
    const h = await makeUpdater({ containers: [both] });
    expectState(await h.updater.run("api"), both, "updated");
    expect(inspect(both).Image).toBe(newer.id);
  }, 60_000);
});
