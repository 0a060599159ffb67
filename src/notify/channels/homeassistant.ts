/**
 * Home Assistant MQTT discovery (docs/home-assistant.md): one `update` entity per target
 * (container or Swarm service), its configuration retained under the discovery prefix (so Home
 * Assistant finds it after its own restart) and its state retained beside svc's report topic.
 * With `homeassistant_install`, each entity has a command topic (Install), and a "Check now"
 * button for the host and a "Roll back" button per target come with it. Every entity names svc's
 * availability topic, whose last will says `offline` when svc is gone. A target gone from a full
 * cycle (no filter) has its messages cleared with an empty retained message, which removes the
 * entity. What was announced is remembered where svc keeps its decisions (state_dir, else in
 * memory), so that a target removed while svc was not running, a button no longer offered or an
 * entity of a former host name is cleared by the first full cycle after a restart.
 *
 * The payloads follow Home Assistant's MQTT `update` and `button` platforms
 * (homeassistant/components/mqtt/update.py and button.py; tests/unit/notify/homeassistant.test.ts
 * names the test of theirs each row follows).
 */

import { z } from "zod";
import { parseJsonText } from "../../core/bounded.ts";
import { shortId } from "../../core/digests.ts";
import { markdownAsText } from "../../core/markup.ts";
import { inMemory, type Remembered } from "../../state/index.ts";
import type { ContainerReport, SessionReport } from "../../updater/types.ts";
import { releaseWords, signatureWords, vulnerabilityWords } from "../../updater/wrappers/summary.ts";

export interface RetainedMessage {
  topic: string;
  payload: string;
}

/** Home Assistant keeps at most this much of `release_summary` (its UpdateEntity). */
export const MAX_SUMMARY = 255;
export const PAYLOAD_INSTALL = "install";
/** Home Assistant's MQTT button's default `payload_press`. */
export const PAYLOAD_PRESS = "PRESS";

export type TargetKind = "container" | "service";
export type CommandAction = "install" | "rollback" | "check";

/** Home Assistant's object ids: letters, digits, `_` and `-`. */
function slug(text: string): string {
  return text.replace(/[^A-Za-z0-9_-]/g, "_");
}

function kindOf(target: Pick<ContainerReport, "kind">): TargetKind {
  return target.kind === "service" ? "service" : "container";
}

/** A tag that reads as a version: one with a digit (not `latest`, `stable`, `main`...). */
function versionTag(reference: string | null | undefined): string | undefined {
  if (!reference) return undefined;
  const withoutDigest = reference.split("@")[0]!;
  const lastPart = withoutDigest.slice(withoutDigest.lastIndexOf("/") + 1);
  const colon = lastPart.lastIndexOf(":");
  const tag = colon === -1 ? undefined : lastPart.slice(colon + 1);
  return tag && /\d/.test(tag) ? tag : undefined;
}

/**
 * The versions an entity shows: the image's version label (as the release notes read it, else as
 * the running container carries it) or its tag, a digest prefix only when neither reads as a
 * version. When both sides would read the same
 * (the same tag, a newer digest), each carries its digest prefix, so that Home Assistant sees an
 * update.
 */
export function versions(target: ContainerReport): { installed: string; latest: string } {
  const oldDigest = shortId(target.old_digest ?? target.old_image_id);
  const newDigest = shortId(target.new_digest ?? target.new_image_id) || oldDigest;
  const from = target.releases?.from_version ?? target.version ?? versionTag(target.image);
  const to = target.releases?.to_version ?? versionTag(target.new_image ?? target.image);
  if (target.state === "updated") {
    const now = to ?? newDigest;
    return { installed: now, latest: now };
  }
  if (!["stale", "pending", "held", "failed", "rolled_back"].includes(target.state) || oldDigest === newDigest) {
    const now = from ?? oldDigest;
    return { installed: now, latest: now };
  }
  const installed = from ?? oldDigest;
  const latest = to ?? newDigest;
  if (installed !== latest) return { installed, latest };
  return { installed: `${installed} (${oldDigest})`, latest: `${latest} (${newDigest})` };
}

/** Home Assistant's `release_summary` is Markdown: text from outside goes in as text only (markup.ts). */
export const plainText = markdownAsText;

/** What the state says about the update: its releases, and what happened to it. */
export function summaryOf(target: ContainerReport): string {
  const words = builtWords(target) ?? releaseWords(target);
  const what =
    target.state === "rolled_back"
      ? `rolled back${target.reason ? `: ${target.reason}` : ""}`
      : target.built && target.built.moved.length > 0
        ? builtOutcome(target)
        : target.reason;
  // svc's own arrows ("signer changed: A -> B") would lose their `>` to the Markdown guard
  const text = plainText(
    (
      [words, vulnerabilityWords(target), signatureWords(target), what].filter(Boolean).join("; ") ||
      target.state.replace("_", " ")
    ).replaceAll(" -> ", " → "),
  );
  return text.length > MAX_SUMMARY ? `${text.slice(0, MAX_SUMMARY - 1)}…` : text;
}

/**
 * A built service has no releases of its own: what moved is its bases ("base caddy:2.8 moved"),
 * and what svc did is said without the build's command line, which the row and the API carry.
 */
function builtWords(target: ContainerReport): string | null {
  const moved = target.built?.moved ?? [];
  if (moved.length === 0) return null;
  return `${moved.length === 1 ? "base" : "bases"} ${moved.join(", ")} moved`;
}

function builtOutcome(target: ContainerReport): string | null {
  if (target.state === "updated") return target.built?.rebuilt ? "rebuilt" : target.reason;
  if (target.state === "stale") {
    const held = target.reason?.match(/not rebuilt: .*/)?.[0];
    return held ?? "rebuilt once applied";
  }
  return target.reason;
}

/** An update entity's state (the JSON of Home Assistant's `state_topic`), not in progress. */
export function stateOf(target: ContainerReport, hostname: string): Record<string, unknown> {
  const { installed, latest } = versions(target);
  const url = target.releases?.newest_url;
  return {
    installed_version: installed,
    latest_version: latest,
    title: `${target.name} on ${hostname}`,
    release_summary: summaryOf(target),
    ...(url && /^https?:\/\//i.test(url) ? { release_url: url } : {}),
    in_progress: false,
    update_percentage: null,
  };
}

export interface DiscoverySettings {
  prefix: string;
  /** svc's report topic: the states, the availability and the command topics live under it */
  reportTopic: string;
  hostname: string;
  /** with `homeassistant_install`: the user level of the command topics */
  commandUser?: string;
  /** object id -> the JSON list of its retained topics, kept between restarts (default: in memory only) */
  announced?: Remembered;
}

/** The topics of svc's entities, and the reading of a command topic back. */
export class Topics {
  constructor(private readonly settings: DiscoverySettings) {}

  get availability(): string {
    return `${this.settings.reportTopic}/${this.device}/availability`;
  }

  get device(): string {
    return slug(`svc_${this.settings.hostname}`);
  }

  objectId(target: Pick<ContainerReport, "name" | "kind">): string {
    const kind = kindOf(target);
    return slug(`svc_${this.settings.hostname}_${kind === "service" ? "service_" : ""}${target.name}`);
  }

  config(component: "update" | "button", objectId: string): string {
    return `${this.settings.prefix}/${component}/${objectId}/config`;
  }

  state(objectId: string): string {
    return `${this.settings.reportTopic}/update/${objectId}/state`;
  }

  /**
   * `<topic>/command/<user>/<host>/<kind>/<name>/<action>`: the user level is the one broker user
   * allowed to write there (docs/home-assistant.md, the ACL), so svc can name it as the actor;
   * the target's name is in the topic as it is (container and service names hold none of `/ + #`).
   */
  command(user: string, kind: TargetKind, name: string, action: CommandAction): string {
    return `${this.commandRoot}/${user}/${this.device}/${kind}/${name}/${action}`;
  }

  checkCommand(user: string): string {
    return `${this.commandRoot}/${user}/${this.device}/host/-/check`;
  }

  /** What svc subscribes to: every user level, so that a command from another is seen and logged. */
  get commandFilter(): string {
    return `${this.commandRoot}/+/${this.device}/#`;
  }

  parseCommand(topic: string): { user: string; kind: TargetKind | "host"; name: string; action: string } | undefined {
    if (!topic.startsWith(`${this.commandRoot}/`)) return undefined;
    const parts = topic.slice(this.commandRoot.length + 1).split("/");
    if (parts.length !== 5 || parts[1] !== this.device) return undefined;
    const [user, , kind, name, action] = parts as [string, string, string, string, string];
    if (kind !== "container" && kind !== "service" && kind !== "host") return undefined;
    return { user, kind, name, action };
  }

  private get commandRoot(): string {
    return `${this.settings.reportTopic}/command`;
  }
}

export class HomeAssistantDiscovery {
  private readonly announced: Remembered;
  readonly topics: Topics;

  constructor(private readonly settings: DiscoverySettings) {
    this.topics = new Topics(settings);
    this.announced = settings.announced ?? inMemory();
  }

  /** What svc announces before any report: the host's "Check now" button, with commands on. */
  hostMessages(): RetainedMessage[] {
    return this.settings.commandUser ? [this.checkButton(this.settings.commandUser)] : [];
  }

  /**
   * The retained messages after `report`: each target's configurations and state; after a full
   * cycle, an empty message for each topic announced before (by this svc or the one before a
   * restart) that it no longer has.
   */
  messages(report: SessionReport): RetainedMessage[] {
    const groups = this.groups(report);
    const out = [...groups.values()].flat();
    if (!isFullCycle(report)) return out;
    const kept = new Set(out.map((m) => m.topic));
    for (const [, topics] of this.remembered()) {
      for (const topic of topics) if (!kept.has(topic)) out.push({ topic, payload: "" });
    }
    return out;
  }

  /** Records what `report` announced, once its messages are published. */
  published(report: SessionReport): void {
    const groups = this.groups(report);
    if (isFullCycle(report)) {
      for (const [id] of this.announced.entries()) if (!groups.has(id)) this.announced.delete(id);
    }
    for (const [id, messages] of groups) {
      const topics = JSON.stringify(messages.map((m) => m.topic));
      // a write of the state file (under its lock) only for what changed
      if (this.announced.get(id) !== topics) this.announced.set(id, topics);
    }
  }

  /** The messages of `report` by object id: the host's button, then each target's. */
  private groups(report: SessionReport): Map<string, RetainedMessage[]> {
    const groups = new Map<string, RetainedMessage[]>();
    const host = this.hostMessages();
    if (host.length > 0) groups.set(this.topics.device, host);
    for (const target of report.containers) {
      const id = this.topics.objectId(target);
      groups.set(id, this.targetMessages(target, id));
    }
    return groups;
  }

  /** What was announced, as kept; an entry that does not read as a list of topics is passed over. */
  private remembered(): [string, string[]][] {
    return this.announced.entries().flatMap(([id, value]): [string, string[]][] => {
      const topics = announcedTopics(value);
      return topics ? [[id, topics]] : [];
    });
  }

  private targetMessages(target: ContainerReport, id: string): RetainedMessage[] {
    const out = [
      { topic: this.topics.config("update", id), payload: JSON.stringify(this.updateConfig(target, id)) },
      { topic: this.topics.state(id), payload: JSON.stringify(stateOf(target, this.settings.hostname)) },
    ];
    const user = this.settings.commandUser;
    if (user)
      out.push({
        topic: this.topics.config("button", `${id}_rollback`),
        payload: JSON.stringify(this.rollbackButton(target, id, user)),
      });
    return out;
  }

  private get device(): Record<string, unknown> {
    return { identifiers: [this.topics.device], name: `svc on ${this.settings.hostname}`, manufacturer: "svc" };
  }

  private get availability(): Record<string, unknown> {
    return {
      availability_topic: this.topics.availability,
      payload_available: "online",
      payload_not_available: "offline",
    };
  }

  private updateConfig(target: ContainerReport, id: string): Record<string, unknown> {
    const user = this.settings.commandUser;
    return {
      name: target.name,
      unique_id: id,
      object_id: id,
      state_topic: this.topics.state(id),
      device_class: "firmware",
      entity_category: "diagnostic",
      ...(user
        ? {
            command_topic: this.topics.command(user, kindOf(target), target.name, "install"),
            payload_install: PAYLOAD_INSTALL,
          }
        : {}),
      ...this.availability,
      device: this.device,
    };
  }

  private rollbackButton(target: ContainerReport, id: string, user: string): Record<string, unknown> {
    return {
      name: `${target.name}: roll back`,
      unique_id: `${id}_rollback`,
      object_id: `${id}_rollback`,
      command_topic: this.topics.command(user, kindOf(target), target.name, "rollback"),
      payload_press: PAYLOAD_PRESS,
      entity_category: "config",
      ...this.availability,
      device: this.device,
    };
  }

  private checkButton(user: string): RetainedMessage {
    const id = `${this.topics.device}_check`;
    const config = {
      name: "Check now",
      unique_id: id,
      object_id: id,
      command_topic: this.topics.checkCommand(user),
      payload_press: PAYLOAD_PRESS,
      ...this.availability,
      device: this.device,
    };
    return { topic: this.topics.config("button", id), payload: JSON.stringify(config) };
  }
}

/** An entry's topics: strings, each at most a topic's length (MQTT: 65,535 bytes); a few per entry. */
const ANNOUNCED = z.array(z.string().min(1).max(65_535)).max(16);

function announcedTopics(value: string): string[] | null {
  const parsed = parseJsonText(value, ANNOUNCED);
  return "value" in parsed ? parsed.value : null;
}

/** A cycle over every target svc watches: only then does absence mean "gone". */
function isFullCycle(report: SessionReport): boolean {
  return (
    report.filter.container.length === 0 && report.filter.image.length === 0 && (report.filter.stack?.length ?? 0) === 0
  );
}
