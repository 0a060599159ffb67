/**
 * Home Assistant over svc's broker connection (docs/home-assistant.md): the entities follow every
 * report and every step of an update as it starts; with `homeassistant_install`, the commands
 * Home Assistant publishes (Install, Check now, Roll back) are done the way the API does them:
 * Install is POST /v1/update naming the target, Check now is POST /v1/check, Roll back is
 * POST /v1/rollback. Each accepted command is one audit line with the broker user as the actor.
 */
import type { Logger } from "../../log/index.ts";
import type { ProgressEvent } from "../../updater/cycle/progress.ts";
import type { SessionReport } from "../../updater/types.ts";
import type { RemoteControl } from "../types.ts";
import type { BrokerConnection, Qos } from "./broker.ts";
import {
  type HomeAssistantDiscovery,
  PAYLOAD_INSTALL,
  PAYLOAD_PRESS,
  type RetainedMessage,
  stateOf,
} from "./homeassistant.ts";

/** How far an update is when each step starts, in the update protocol's order (Home Assistant's `update_percentage`, 0..100). */
const STEP_PERCENT: Partial<Record<ProgressEvent["step"], number>> = {
  pull: 10,
  pre_update: 20,
  rename: 30,
  service_update: 30,
  stop: 40,
  create: 50,
  connect: 55,
  start: 60,
  watch: 80,
  post_update: 90,
  rollback: 90,
  service_rollback: 90,
};

/** One press per target and action in this many ms, and at most PRESSES_PER_MINUTE in all. */
export const PRESS_INTERVAL_MS = 30_000;
export const PRESSES_PER_MINUTE = 10;
/** A command from Home Assistant that passed every check, and what it names. */
interface Checked {
  fields: { topic: string; user: string; target: string; action: string };
  user: string;
  kind: string;
  action: string;
  name: string;
  key: string;
  known: Known | undefined;
}

/** Presses kept while svc starts; more are ignored (and logged). */
const MAX_WAITING = 10;

interface Known {
  id: string;
  state: Record<string, unknown>;
  percent?: number;
}

export interface BridgeSettings {
  qos: Qos;
  /** `homeassistant_install`: the broker user whose commands svc does; absent: commands are not listened to */
  commandUser?: string;
}

export class HomeAssistantBridge {
  private readonly known = new Map<string, Known>();
  private readonly lastPress = new Map<string, number>();
  private presses: number[] = [];
  private control: RemoteControl | undefined;
  /**
   * Presses that came while svc was still starting (Check now is announced as soon as the broker
   * answers, before recovery ends): done once it is ready, never dropped; a few at most.
   */
  private readonly waiting: ((control: RemoteControl) => void)[] = [];
  private retained: RetainedMessage[] = [];
  private sawReport = false;

  constructor(
    private readonly broker: BrokerConnection,
    private readonly discovery: HomeAssistantDiscovery,
    private readonly hostname: string,
    private readonly settings: BridgeSettings,
    private readonly log: Logger | undefined,
    private readonly now: () => number = Date.now,
  ) {
    // The host's button is there from the start: pressing it brings the first report.
    this.retained = discovery.hostMessages();
    // A broker that restarted without persistence has forgotten every retained message.
    // nothing lost: `retained` keeps the messages, published again at the next connection
    broker.onConnect(() => void this.publishAll(this.retained).catch(() => undefined));
    if (settings.commandUser)
      broker.subscribe(discovery.topics.commandFilter, (topic, payload, { retained }) => {
        // an empty message clears a retained one (svc's own clearing comes back so): nothing was pressed
        if (payload.length === 0) return;
        void (retained ? this.retainedCommand(topic) : this.command(topic, payload.toString("utf8")));
      });
  }

  /** Where commands are done; until then they are logged and dropped. */
  attach(control: RemoteControl): void {
    this.control = control;
    for (const act of this.waiting.splice(0)) act(control);
  }

  /** Every report: the entities it names, their state, the removals of a full cycle. */
  async observe(report: SessionReport): Promise<void> {
    this.sawReport = true;
    const messages = this.discovery.messages(report);
    for (const target of report.containers) {
      const id = this.discovery.topics.objectId(target);
      const kind = target.kind === "service" ? "service" : "container";
      this.known.set(`${kind}/${target.name}`, { id, state: stateOf(target, this.hostname) });
    }
    // remembered first: when the broker is away, the reconnection publishes them
    this.discovery.published(report);
    this.remember(messages);
    await this.publishAll(messages);
  }

  /** A step of an update starts: the entity is in progress, its percentage never going back. */
  progress(event: ProgressEvent): void {
    const percent = STEP_PERCENT[event.step];
    // a step names its target without its kind: a container first, as the cycle runs them first
    const known = this.known.get(`container/${event.container}`) ?? this.known.get(`service/${event.container}`);
    if (percent === undefined || !known) return;
    const shown = Math.max(percent, known.percent ?? 0);
    if (shown === known.percent) return;
    known.percent = shown;
    this.publishState(known, { in_progress: true, update_percentage: shown });
  }

  private publishState(known: Known, extra: Record<string, unknown>): void {
    const payload = JSON.stringify({ ...known.state, ...extra });
    this.broker
      .publish(this.discovery.topics.state(known.id), payload, { qos: this.settings.qos, retain: true })
      .catch((error) => {
        this.log?.debug("home assistant state not published", { reason: String((error as Error).message) });
      });
  }

  private async publishAll(messages: RetainedMessage[]): Promise<void> {
    for (const message of messages)
      await this.broker.publish(message.topic, message.payload, { qos: this.settings.qos, retain: true });
  }

  /** The retained messages now on the broker, to publish again after a reconnection. */
  private remember(messages: RetainedMessage[]): void {
    const byTopic = new Map(this.retained.map((m) => [m.topic, m]));
    for (const message of messages) {
      if (message.payload === "") byTopic.delete(message.topic);
      else byTopic.set(message.topic, message);
    }
    this.retained = [...byTopic.values()];
  }

  /**
   * A command the broker kept (published with the retain flag) comes again with every new
   * subscription: at each start of svc, long after its publisher pressed, or lost the right to. A
   * press is a moment, so a retained one is never done; svc clears it (an empty retained message)
   * where the broker lets it write the command topics, else it stays ignored at each start.
   */
  private async retainedCommand(topic: string): Promise<void> {
    if (!this.discovery.topics.parseCommand(topic)) return;
    this.log?.warn("home assistant command ignored: a retained message (a press is done once, when it is sent)", {
      topic,
    });
    await this.broker.publish(topic, "", { qos: this.settings.qos, retain: true }).catch(() => {
      // the broker's ACL may give svc only read on the command topics: the message stays, ignored at each start
    });
  }

  private async command(topic: string, payload: string): Promise<void> {
    const parsed = this.discovery.topics.parseCommand(topic);
    const log = this.log;
    if (!parsed) return;
    const { user, kind, name, action } = parsed;
    const fields = { topic, user, target: name, action };
    if (user !== this.settings.commandUser)
      return log?.warn("home assistant command ignored: not from the configured user", fields);
    const expected =
      action === "install" ? PAYLOAD_INSTALL : action === "rollback" || action === "check" ? PAYLOAD_PRESS : undefined;
    if (expected === undefined || payload !== expected || (kind === "host") !== (action === "check")) {
      return log?.warn("home assistant command ignored: not a command svc knows", {
        ...fields,
        payload: payload.slice(0, 32),
      });
    }
    const key = `${kind}/${name}`;
    const known = this.known.get(key);
    if (kind !== "host" && this.sawReport && !known) {
      return log?.warn("home assistant command ignored: svc does not manage this target", fields);
    }
    if (!this.allowPress(`${kind}/${name}/${action}`))
      return log?.warn("home assistant command ignored: pressed too often", fields);
    const command: Checked = { fields, user, kind, action, name, key, known };
    const control = this.control;
    if (!control) {
      if (this.waiting.length >= MAX_WAITING)
        return log?.warn("home assistant command ignored: svc is still starting", fields);
      log?.info("home assistant command waits: svc is still starting", fields);
      this.waiting.push((ready) => void this.act(ready, command));
      return;
    }
    await this.act(control, command);
  }

  /** A command that passed the checks, done through svc's own request path. */
  private async act(control: RemoteControl, command: Checked): Promise<void> {
    const { fields, user, kind, action, name, key, known } = command;
    const log = this.log;
    control.audit?.record({
      action: "request",
      trigger: "mqtt",
      actor: `mqtt:${user}`,
      ...(kind === "host" ? {} : { container: name }),
      request: `mqtt ${action}`,
    });
    log?.info("home assistant command", fields);
    try {
      await this.perform(control, action, name, key, known);
    } catch (error) {
      log?.warn("home assistant command failed", { ...fields, reason: String((error as Error).message) });
      if (known && this.known.get(key) === known)
        this.publishState(known, { in_progress: false, update_percentage: null });
    }
  }

  private async perform(
    control: RemoteControl,
    action: string,
    name: string,
    key: string,
    known: Known | undefined,
  ): Promise<void> {
    if (action === "check") {
      const report = await control.runner.run("api", undefined, { dryRun: true });
      if (report === null) this.log?.warn("home assistant check not done: a cycle is running");
      // a dry run's report is told to no channel: the entities follow it here
      else await this.observe(report);
      return;
    }
    if (known) {
      known.percent = 0;
      this.publishState(known, { in_progress: true, update_percentage: 0 });
    }
    // an Install pressed while a cycle runs is queued and runs after it, shown in progress meanwhile
    if (action === "install" && control.runner.busy)
      this.log?.info("home assistant install queued: it runs once the cycle under way ends", { target: name });
    const done =
      action === "install"
        ? await control.runner.run("api", { container: [name] }, { queue: true })
        : await control.runner.rollback(name);
    if (done === null) this.log?.warn(`home assistant ${action} not done: a cycle is running`, { target: name });
    // a report reaches observe() through the dispatcher, which ends the progress with the new
    // state; without one (a cycle was running) the entity is told it is no longer in progress
    if (known && this.known.get(key) === known) {
      known.percent = undefined;
      this.publishState(known, { in_progress: false, update_percentage: null });
    }
  }

  private allowPress(key: string): boolean {
    const now = this.now();
    this.presses = this.presses.filter((at) => now - at < 60_000);
    const last = this.lastPress.get(key);
    if ((last !== undefined && now - last < PRESS_INTERVAL_MS) || this.presses.length >= PRESSES_PER_MINUTE)
      return false;
    this.lastPress.set(key, now);
    this.presses.push(now);
    return true;
  }
}
