/**
 * Links from a notification to a target's row on the page (docs/notifications.md, "Links to the
 * page"): with `http_api.public_url`, each target that asks for someone (stale, pending, held,
 * failed, rolled back) carries `page_url`, `<public_url>/#container=NAME` (or `#service=NAME`).
 * The fragment names a row and nothing else: the page asks for sign-in as always, and the
 * fragment never reaches svc or a proxy's logs.
 */
import type { ContainerReport, SessionReport } from "../updater/types.ts";

const LINKED: ReadonlyArray<ContainerReport["state"]> = ["stale", "pending", "held", "failed", "rolled_back"];

export function rowUrl(publicUrl: string, target: Pick<ContainerReport, "kind" | "name">): string {
  const kind = target.kind === "service" ? "service" : "container";
  return `${publicUrl.replace(/\/+$/, "")}/#${kind}=${encodeURIComponent(target.name)}`;
}

/** The report with `page_url` on each target that asks for someone; unchanged without a public URL. */
export function withRowLinks(report: SessionReport, publicUrl: string | undefined): SessionReport {
  if (!publicUrl) return report;
  return {
    ...report,
    containers: report.containers.map((c) => (LINKED.includes(c.state) ? { ...c, page_url: rowUrl(publicUrl, c) } : c)),
  };
}
