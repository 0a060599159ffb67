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
