/**
 * A compose project as its containers' labels name it (compose writes them on every container it
 * makes): the project, the service, the files (host paths, comma-separated, in `-f` order), the
 * project folder and the `--env-file`s, if any.
 */
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

/** The label that keeps one service's files untouched (docs/compose.md). */
export const WRITE_LABEL = "svc.compose.write";

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
