/**
 * A compose project as its containers' labels name it (compose writes them on every container it
 * makes): the project, the service, the files (host paths, comma-separated, in `-f` order), the
 * project folder and the `--env-file`s, if any.
 */
import { labelName } from "../config/labels.ts";
import { spend } from "../config/work.ts";
import { MAX_LABEL_CHARS } from "../core/bounded.ts";

export const COMPOSE_LABELS = {
  project: "com.docker.compose.project",
  service: "com.docker.compose.service",
  configFiles: "com.docker.compose.project.config_files",
  workingDir: "com.docker.compose.project.working_dir",
  environmentFile: "com.docker.compose.project.environment_file",
  configHash: "com.docker.compose.config-hash",
  oneoff: "com.docker.compose.oneoff",
} as const;

/** The labels that name a project, its service and its files: svc trusts them only as the container's own. */
const NAMING_LABELS = [
  COMPOSE_LABELS.project,
  COMPOSE_LABELS.service,
  COMPOSE_LABELS.workingDir,
  COMPOSE_LABELS.configFiles,
  COMPOSE_LABELS.environmentFile,
] as const;

/** The label that keeps one service's files untouched (docs/compose.md). */
export const WRITE_LABEL = labelName("compose.write");

export interface ComposeProject {
  name: string;
  service: string;
  workingDir: string;
  configFiles: string[];
  /** the `--env-file`s compose was given; empty: the project folder's `.env`, when there is one */
  envFiles: string[];
}

/** The project a container belongs to, or null for a container compose did not make (or a one-off `compose run`). */
export function projectOf(labels: Readonly<Record<string, string>>): ComposeProject | null {
  const name = labels[COMPOSE_LABELS.project];
  const service = labels[COMPOSE_LABELS.service];
  if (!name || !service || labels[COMPOSE_LABELS.oneoff] === "True") return null;
  // a label longer than svc reads (an image can set compose's labels too): not a project svc writes
  if (Object.values(COMPOSE_LABELS).some((label) => (labels[label]?.length ?? 0) > MAX_LABEL_CHARS)) return null;
  const list = (value: string | undefined) => (
    spend(value?.length ?? 0),
    (value ?? "")
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean)
  );
  return {
    name,
    service,
    workingDir: labels[COMPOSE_LABELS.workingDir] ?? "",
    configFiles: list(labels[COMPOSE_LABELS.configFiles]),
    envFiles: list(labels[COMPOSE_LABELS.environmentFile]),
  };
}

/**
 * The labels naming a project or its files that a container has from its image: the engine puts
 * an image's labels into its containers, so a value equal to the image's own came from the image
 * (or cannot be told apart from it), and an image from any registry may name any file.
 * `compose build` labels its images with the project and the service (docker/compose,
 * pkg/compose/build.go), and compose writes both with the folder and the files on every container
 * it makes (pkg/compose/loader.go): when the folder and the files are the container's own, equal
 * names are compose's too.
 */
export function inheritedLabels(
  labels: Readonly<Record<string, string>>,
  imageLabels: Readonly<Record<string, string>>,
): string[] {
  const inherited: string[] = NAMING_LABELS.filter(
    (label) => labels[label] !== undefined && imageLabels[label] === labels[label],
  );
  const ownPaths = [COMPOSE_LABELS.workingDir, COMPOSE_LABELS.configFiles].every(
    (label) => labels[label] !== undefined && !inherited.includes(label),
  );
  if (!ownPaths) return inherited;
  return inherited.filter((label) => label !== COMPOSE_LABELS.project && label !== COMPOSE_LABELS.service);
}

/**
 * Why svc does not write the files a container's labels name, or null when it may: labels it has
 * from its image, or an image whose labels cannot be read (null).
 */
export function untrustedBecause(
  labels: Readonly<Record<string, string>>,
  imageLabels: Readonly<Record<string, string>> | null,
): string | null {
  if (!imageLabels) return "the labels of its image cannot be read: svc does not write files its labels may name";
  const inherited = inheritedLabels(labels, imageLabels);
  if (inherited.length === 0) return null;
  const one = inherited.length === 1;
  return `${one ? "label" : "labels"} ${inherited.join(", ")} ${one ? "comes" : "come"} from its image: svc does not write files an image names`;
}
