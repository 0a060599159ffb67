/**
 * When crash recovery (recovery/recovery.ts) runs: at start, over every leftover this instance would
 * select, and again at the start of any cycle whose container list shows leftovers the cycle's
 * filter selects (an engine that failed mid-restore, a recovery that could not run).
 */
import type { Config } from "../../config/index.ts";
import { toSvcError } from "../../core/errors.ts";
import type { ContainerSummary } from "../../engine/port.ts";
import type { Systemd } from "../../engine/systemd.ts";
import type { Logger } from "../../log/index.ts";
import type { Remembered } from "../../state/index.ts";
import type { ProtocolContext } from "../cycle/context.ts";
import {
  allOf,
  enableLabelFilter,
  type Filter,
  imagePrefixFilter,
  namesFilter,
  notDisabledFilter,
  scopeFilter,
  stackFilter,
} from "../selection/selection.ts";
import type { UpdateFilter } from "../types.ts";
import { hasLeftovers, recoverLeftovers } from "./recovery.ts";
import { recoverUnitMoves } from "./units.ts";

export interface RepairDeps {
  config: Config;
  log: Logger;
  selfContainerId?: string;
  context(trigger: string): ProtocolContext;
  /** the journal of tag moves written into units' files (containers/unitmove.ts) */
  unitMoves?: Remembered;
  /** the units a journaled move is finished or undone with */
  systemd: Systemd;
}

export interface Repair {
  /** startup crash recovery over everything in this instance's reach */
  recover(): Promise<void>;
  /** a cycle's repair of the leftovers its filter selects: true when there were some (CycleDeps.repairLeftovers) */
  repairLeftovers(all: readonly ContainerSummary[], filter: UpdateFilter): Promise<boolean>;
}

export function createRepair(deps: RepairDeps): Repair {
  const recoverWithin = async (inScope: Filter): Promise<void> => {
    let result: Awaited<ReturnType<typeof recoverLeftovers>>;
    try {
      result = await recoverLeftovers(deps.context("recovery"), {
        selfContainerId: deps.selfContainerId,
        inScope,
        predecessorGraceMs: deps.config.stop_timeout + deps.config.rollback.startup_timeout + 30_000,
      });
    } catch (error) {
      // the leftovers stay; the next cycle that sees them repairs them first
      const failure = toSvcError(error, "engine");
      deps.log.error("crash recovery could not run; it is retried by the next cycle", { error: failure.message });
      throw failure;
    }
    for (const action of result.actions) deps.log.info("recovery", { action });
    // nothing lost: a predecessor the background could not retire is a leftover still, repaired by the next recovery
    result.background.catch(() => {});
  };

  return {
    async recover() {
      await recoverWithin(recoveryScope(deps.config));
      await recoverUnits(deps);
      tidyCopies(deps);
    },
    async repairLeftovers(all, filter) {
      const inScope = allOf([
        recoveryScope(deps.config),
        namesFilter(filter.container),
        imagePrefixFilter(filter.image),
        stackFilter(filter.stack),
      ]);
      const pending = hasLeftovers(all, inScope, deps.selfContainerId);
      if (!pending) return false;
      // nothing lost: recoverWithin logged why (above); the leftovers stay, and the next cycle repairs them first
      await recoverWithin(inScope).catch(() => {});
      return true;
    },
  };
}

/** A unit's file a tag move was written into, finished or put back (units.ts). */
async function recoverUnits(deps: RepairDeps): Promise<void> {
  if (!deps.unitMoves || deps.unitMoves.entries().length === 0) return;
  try {
    for (const action of await recoverUnitMoves(deps.context("recovery"), deps.systemd, deps.unitMoves))
      deps.log.info("recovery", { action });
  } catch (error) {
    deps.log.error("crash recovery of units' files could not run", { error: toSvcError(error).message });
  }
}

/** After recovery put back what it had to: the copies that are not complete, or past data_guard_keep, go. */
function tidyCopies(deps: RepairDeps): void {
  const guard = deps.context("recovery").guard;
  if (!guard) return;
  try {
    for (const action of guard.tidy()) deps.log.info("data guard", { action });
  } catch (error) {
    deps.log.warn("data guard: could not tidy data_guard_dir", { error: toSvcError(error).message });
  }
}

/** The selection rules crash recovery honours: everything but the container state. */
function recoveryScope(config: Config): Filter {
  return allOf([
    scopeFilter(config.scope),
    enableLabelFilter(config.label_enable),
    notDisabledFilter(config.disable_containers),
    namesFilter(config.containers),
  ]);
}
