/**
 * The container labels svc reads and writes, each named once. A label that overrides an option
 * for one container is declared on that option in schema.ts (`labelled`) and known here by the
 * option's key (`stop_timeout` is `svc.stop_timeout`); the labels that override no option are in
 * OTHER_LABELS below, by their own key. Readers ask `labelName(key)` or `labelOf(key)`; the docs'
 * label tables are rendered from both (docs.ts).
 */
import type { LabelSpec, Table } from "./builders.ts";
import { OPTIONS } from "./options.ts";
import type { CONFIG } from "./schema.ts";

/** Every label of svc's own starts with it: the ones a container carries over to its handover helper. */
export const LABEL_PREFIX = "svc.";
/** Watchtower's labels start with it; the label itself (`=true`) marks a Watchtower container. */
export const WATCHTOWER_LABEL = "com.centurylinklabs.watchtower";

interface OtherLabel extends LabelSpec {
  /** its meaning, for docs/configuration.md */
  readonly about: string;
  /** svc writes it on the containers it makes, never reads it from one of yours */
  readonly written?: true;
}

const wt = (suffix: string) => `${WATCHTOWER_LABEL}.${suffix}`;

/** The labels that override no option: what a container asks of svc, and the markers svc writes. */
const OTHER_LABELS = {
  enable: {
    name: "svc.enable",
    watchtower: wt("enable"),
    about: "`false` leaves the container alone; with `label_enable`, only containers with `true` are updated",
  },
  stop_signal: {
    name: "svc.stop_signal",
    watchtower: wt("stop-signal"),
    about: "the signal that stops the container (else its own stop signal)",
  },
  depends_on: {
    name: "svc.depends_on",
    watchtower: wt("depends-on"),
    about: "the containers it depends on (comma-separated names): it is stopped before them and started after them",
  },
  scope: {
    name: "svc.scope",
    watchtower: wt("scope"),
    about: "the `scope` of the svc instance that updates it (Watchtower's `none`: no scope)",
  },
  "tag_policy.compose": {
    name: "svc.tag_policy.compose",
    about:
      "`report` keeps a compose container's newer tags reported only; `move` moves it even when its file cannot be written",
  },
  "hooks.pre_check": {
    name: "svc.hooks.pre_check",
    watchtower: wt("lifecycle.pre-check"),
    about: "a command run in the container before it is checked (docs/policies.md)",
  },
  "hooks.pre_update": {
    name: "svc.hooks.pre_update",
    watchtower: wt("lifecycle.pre-update"),
    about: "a command run in the old container before anything is stopped",
  },
  "hooks.post_update": {
    name: "svc.hooks.post_update",
    watchtower: wt("lifecycle.post-update"),
    about: "a command run in the new container once it passed the rollback checks",
  },
  "hooks.post_check": {
    name: "svc.hooks.post_check",
    watchtower: wt("lifecycle.post-check"),
    about: "a command run after the cycle, in the container that then runs",
  },
  release_notes: {
    name: "svc.release_notes",
    about: "where the container's release notes are read (docs/release-notes.md)",
  },
  link: {
    name: "svc.link",
    about: "the link to its release notes the dashboard shows, `{version}` standing for the version",
  },
  "build.base": {
    name: "svc.build.base",
    about:
      "the base images of a compose service svc builds (`img:1, other:2`), where its Dockerfile cannot be read (docs/compose.md)",
  },
  "data_guard.helper": {
    name: "svc.data-guard-helper",
    about: "a data guard helper container, and the svc process that made it",
    written: true,
  },
  "data_guard.copy": { name: "svc.data-guard-copy", about: "the copy a data guard helper works on", written: true },
  "data_guard.created": {
    name: "svc.data-guard-helper.created",
    about: "when a data guard helper was made (a helper left behind is removed)",
    written: true,
  },
  "vulnerabilities.reader": {
    name: "svc.vulnerabilities.reader",
    about: "a container running the vulnerability reader",
    written: true,
  },
} as const satisfies Record<string, OtherLabel>;

/** The keys of the options that carry a label, read from the declaration's type. */
type LabelledKeys<Shape, Prefix extends string = ""> = {
  [K in keyof Shape & string]: Shape[K] extends Table<infer Inner>
    ? LabelledKeys<Inner, `${Prefix}${K}.`>
    : Shape[K] extends { meta: { label: LabelSpec } }
      ? `${Prefix}${K}`
      : never;
}[keyof Shape & string];

/** A label by its key: the key of the option it overrides, or its key in OTHER_LABELS. */
export type LabelKey = LabelledKeys<(typeof CONFIG)["shape"]> | keyof typeof OTHER_LABELS;

/** Every label with its key, the option-overriding ones first in the declaration's order. */
export interface DeclaredLabel extends LabelSpec {
  key: LabelKey;
  /** the option it overrides */
  option?: string;
  about?: string;
  written?: boolean;
}

export const DECLARED_LABELS: readonly DeclaredLabel[] = [
  ...OPTIONS.filter((o) => o.meta.label).map((o) => ({ ...o.meta.label!, key: o.key as LabelKey, option: o.key })),
  ...Object.entries(OTHER_LABELS).map(([key, label]) => ({ ...label, key: key as LabelKey })),
];

const BY_KEY = new Map(DECLARED_LABELS.map((label) => [label.key, label]));

export function labelOf(key: LabelKey): LabelSpec {
  return BY_KEY.get(key)!;
}

export function labelName(key: LabelKey): string {
  return labelOf(key).name;
}
