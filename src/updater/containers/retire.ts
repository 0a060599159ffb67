/**
 * The replacement of svc's own container passed its checks and now runs as the new svc.
 * Stopping our container through the engine (not just exiting) keeps a restart policy from
 * bringing the old instance back; the engine's SIGTERM makes the service drain and exit, and
 * the new instance's recovery removes this container once it has stopped.
 */
import type { Config } from "../../config/index.ts";
import { toSvcError } from "../../core/errors.ts";
import type { Engine } from "../../engine/port.ts";
import type { AuditLog, Logger } from "../../log/index.ts";
import { policyFor } from "../selection/selection.ts";
import { stopOptionsFor } from "./protocol.ts";

export interface RetireDeps {
  config: Config;
  engine: Engine;
  log: Logger;
  audit: AuditLog;
}

export function retireSelf(deps: RetireDeps, id: string): void {
  deps.log.info("svc's own container was replaced; stopping this instance", { container_id: id });
  // a moment for the caller (API response, notifications) to see the report first
  setTimeout(() => {
    const entry = { action: "stop" as const, container_id: id, trigger: "self_update" };
    deps.engine
      .inspectContainer(id)
      .then((own) =>
        deps.engine.stopContainer(id, stopOptionsFor(own, policyFor({ labels: own.Config.Labels ?? {} }, deps.config))),
      )
      .then(() => deps.audit.record(entry))
      .catch((error) => {
        deps.audit.record({ ...entry, error: toSvcError(error).message });
        deps.log.error("could not stop the old svc container", { error: toSvcError(error).message });
      });
  }, 100);
}
