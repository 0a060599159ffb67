/**
 * Home Assistant MQTT discovery: one `update` entity per container, its configuration retained
 * under the discovery prefix (so Home Assistant finds it after its own restart) and its state
 * (installed and latest version) retained beside svc's report topic. A container that is gone
 * from a full cycle (no filter) has both cleared with an empty retained message, which removes
 * the entity. What was announced is remembered in memory: a container removed while svc was not
 * running stays until it is deleted in Home Assistant.
 */
import type { ContainerReport, SessionReport } from "../../updater/types.ts";
import { releaseWords } from "../../updater/wrappers/summary.ts";
import { shortId } from "../../core/digests.ts";

export interface RetainedMessage {
  topic: string;
  payload: string;
}

/** Home Assistant's object ids: letters, digits, `_` and `-`. */
function slug(text: string): string {
  return text.replace(/[^A-Za-z0-9_-]/g, "_");
}

/** The image a container runs after the cycle, and the one available to it. */
function versions(container: ContainerReport): { installed: string; latest: string } {
  const old = shortId(container.old_digest ?? container.old_image_id);
  const next = shortId(container.new_digest ?? container.new_image_id) || old;
  if (container.state === "updated") return { installed: next, latest: next };
  if (container.state === "stale" || container.state === "pending" || container.state === "held" || container.state === "failed" || container.state === "rolled_back") return { installed: old, latest: next };
  return { installed: old, latest: old };
}

/** An update entity's state; what the update brings as its summary and the newest release's page (docs/release-notes.md). */
function stateOf(container: ContainerReport, installed: string, latest: string): Record<string, string> {
  const words = releaseWords(container);
  // Home Assistant takes at most 255 characters of summary
  const summary = (words ? `${words}${container.reason ? `; ${container.reason}` : ""}` : (container.reason ?? container.state)).slice(0, 255);
  const url = container.releases?.newest_url;
  return { installed_version: installed, latest_version: latest, title: container.image, release_summary: summary, ...(url ? { release_url: url } : {}) };
}

export class HomeAssistantDiscovery {
  private readonly announced = new Set<string>();

  constructor(
    private readonly prefix: string,
    private readonly reportTopic: string,
    private readonly hostname: string,
  ) {}

  private objectId(name: string): string {
    return slug(`svc_${this.hostname}_${name}`);
  }

  private configTopic(objectId: string): string {
    return `${this.prefix}/update/${objectId}/config`;
  }

  private stateTopic(objectId: string): string {
    return `${this.reportTopic}/update/${objectId}/state`;
  }

  /** The retained messages after `report`: each container's config and state, and removals. */
  messages(report: SessionReport): RetainedMessage[] {
    const out: RetainedMessage[] = [];
    const seen = new Set<string>();
    for (const container of report.containers) {
      const id = this.objectId(container.name);
      seen.add(id);
      out.push({ topic: this.configTopic(id), payload: JSON.stringify(this.config(container, id)) });
      const { installed, latest } = versions(container);
      out.push({ topic: this.stateTopic(id), payload: JSON.stringify(stateOf(container, installed, latest)) });
    }
    if (isFullCycle(report)) {
      for (const id of this.announced) {
        if (!seen.has(id)) out.push({ topic: this.configTopic(id), payload: "" }, { topic: this.stateTopic(id), payload: "" });
      }
    }
    return out;
  }

  /** Records what `report` announced, once its messages are published. */
  published(report: SessionReport): void {
    if (isFullCycle(report)) this.announced.clear();
    for (const container of report.containers) this.announced.add(this.objectId(container.name));
  }

  private config(container: ContainerReport, id: string): Record<string, unknown> {
    return {
      name: container.name,
      unique_id: id,
      object_id: id,
      state_topic: this.stateTopic(id),
      device_class: "firmware",
      entity_category: "diagnostic",
      device: { identifiers: [slug(`svc_${this.hostname}`)], name: `svc on ${this.hostname}`, manufacturer: "svc" },
    };
  }
}

/** A cycle over every container svc watches: only then does absence mean "gone". */
function isFullCycle(report: SessionReport): boolean {
  return report.filter.container.length === 0 && report.filter.image.length === 0;
}
