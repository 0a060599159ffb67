/**
 * Fault injection: runs one real update cycle (sandbox engine and registry) in its own process
 * and SIGKILLs that process right after a chosen engine step, or makes one step fail the way
 * a full disk would. Started by recovery.test.ts; never imported.
 *
 * argv: <container name> <fault>
 *   fault: after-rename | after-stop | after-create | after-start | during-watch | fail-create
 *          | none (the cycle as it is)
 *          | during-copy (the data guard's helper told to copy) | during-restore (its helper told to
 *          put the copy back); SVC_TEST_DATA_GUARD_DIR turns the data guard on
 */
import { defaultConfig } from "../../../src/config/index.ts";
import { SvcError } from "../../../src/core/errors.ts";
import { createDockerEngine } from "../../../src/engine/index.ts";
import type { Engine } from "../../../src/engine/port.ts";
import { silentAudit, silentLogger } from "../../../src/log/index.ts";
import { Metrics } from "../../../src/metrics/index.ts";
import { createRegistry } from "../../../src/registry/index.ts";
import { createUpdater } from "../../../src/updater/index.ts";
import { TEST_SCOPE } from "./support.ts";

const [name, fault] = process.argv.slice(2) as [string, string];
const config = defaultConfig({
  containers: [name],
  scope: TEST_SCOPE,
  stop_timeout: 1000,
  docker: { host: process.env.SVC_TEST_DOCKER_HOST! },
  rollback: { startup_timeout: 5000 },
  ...(process.env.SVC_TEST_DATA_GUARD_DIR
    ? { data_guard: "volumes" as const, data_guard_dir: process.env.SVC_TEST_DATA_GUARD_DIR }
    : {}),
});
const real = await createDockerEngine(config.docker, silentLogger);

const die = (): never => {
  process.kill(process.pid, "SIGKILL");
  throw new Error("unreachable");
};

let started = false;
const engine: Engine = Object.create(real);
engine.renameContainer = async (id, newName) => {
  await real.renameContainer(id, newName);
  if (fault === "after-rename" && newName.includes(".svc-old-")) die();
};
engine.stopContainer = async (id, options) => {
  await real.stopContainer(id, options);
  if (fault === "after-stop") die();
};
engine.createReplacement = async (old, oldImage, options) => {
  if (fault === "fail-create") throw new SvcError("engine", "create container: no space left on device");
  const id = await real.createReplacement(old, oldImage, options);
  if (fault === "after-create") die();
  return id;
};
// the data guard's helpers (src/dataguard/helper.ts): killed once svc told one to copy or restore
// in the engine and waits for it, at once (svc goes on as soon as the helper's answer is written)
const helpers = new Map<string, string>();
engine.createHelper = async (spec) => {
  const id = await real.createHelper(spec);
  helpers.set(id, /^svc-data-guard-(copy|restore)-/.exec(spec.name)?.[1] ?? "");
  return id;
};
engine.waitForExit = (id, timeoutMs) => {
  const helper = helpers.get(id);
  if ((fault === "during-copy" && helper === "copy") || (fault === "during-restore" && helper === "restore")) die();
  return real.waitForExit(id, timeoutMs);
};
engine.startContainer = async (id) => {
  await real.startContainer(id);
  started = true;
  if (fault === "after-start") die();
};
engine.inspectContainer = async (id) => {
  const result = await real.inspectContainer(id);
  if (fault === "during-watch" && started) die();
  return result;
};

const updater = createUpdater({
  config,
  engine,
  registry: createRegistry(config, silentLogger),
  metrics: new Metrics(),
  log: silentLogger,
  audit: silentAudit,
  timing: { pollMs: 200, stableMs: 1000 },
});
const report = await updater.run("run_once");
process.stdout.write(JSON.stringify(report));
