/**
 * The name an old container carries while its replacement is made and watched.
 *
 * A container cannot get labels after it was created, so everything crash recovery needs is
 * in the name: the original name, the old short id, and whether the container was running
 * before svc touched it (recovery starts it again only then).
 * Shape: `<name>.svc-old-<12 hex>-running` or `<name>.svc-old-<12 hex>-stopped`.
 */
const OLD_NAME = /^(.+)\.svc-old-([0-9a-f]{12})-(running|stopped)$/;

export interface OldName {
  /** the name the container had, and gets back on rollback */
  original: string;
  shortId: string;
  wasRunning: boolean;
}

export function oldContainerName(name: string, id: string, wasRunning: boolean): string {
  return `${name}.svc-old-${id.slice(0, 12)}-${wasRunning ? "running" : "stopped"}`;
}

/** null when `name` is not one of ours. Accepts the engine's leading slash. */
export function parseOldName(name: string): OldName | null {
  const match = OLD_NAME.exec(name.replace(/^\//, ""));
  if (!match) return null;
  return { original: match[1]!, shortId: match[2]!, wasRunning: match[3] === "running" };
}

export function isOldName(name: string): boolean {
  return parseOldName(name) !== null;
}

/**
 * The helper that finishes a self-update when svc's container publishes ports (see containers/handover.ts):
 * `<name>.svc-handover-<12 hex of the replacement>`. Never selected for updates; removed by the
 * next svc start when it is not running.
 */
const HANDOVER_NAME = /^(.+)\.svc-handover-([0-9a-f]{12})$/;

export function handoverContainerName(name: string, newId: string): string {
  return `${name}.svc-handover-${newId.slice(0, 12)}`;
}

/** The original container name a handover container works for, or null. */
export function parseHandoverName(name: string): string | null {
  return HANDOVER_NAME.exec(name.replace(/^\//, ""))?.[1] ?? null;
}
