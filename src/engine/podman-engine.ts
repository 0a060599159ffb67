/**
 * Podman behind its Docker-compatible API (docs/podman.md): what svc does there otherwise than on
 * Docker, beside the Docker engine (docker.ts), which hands this one its compatible calls and
 * chooses it once, when the engine first answers as Podman (its version, in the negotiation).
 * What each difference is for, and the Podman sources behind it, are podman.ts's:
 * - a replacement's create body corrected, then compared with its old container in libpod's
 *   inspect before it starts;
 * - before an update, probe containers that show what the compatible create would lose; where it
 *   would, Podman's own create (libpod's) made from the same body, used where it keeps everything;
 * - a container systemd runs is systemd's (the systemd port, systemd.ts, restarts its unit);
 * - an image's manifest annotations, and a pull its signature policy refused, told as such.
 */
import { SvcError } from "../core/errors.ts";
import type { ReplacementSpec } from "./clone.ts";
import {
  AUTO_UPDATE_LABEL,
  creationDifferences,
  LIBPOD_API,
  libpodCreateSpec,
  lostSettings,
  podmanCreateBody,
  policyRefusalCause,
  SYSTEMD_UNIT_LABEL,
  signaturePolicyRefusal,
  unreplaceableReason,
} from "./podman.ts";
import type { ContainerInspect, CreateOptions, ImageInspect, UnitClaim, UnitContainer } from "./port.ts";

/** A request outside the Docker API on the engine's connection: its path, and the one status that is an answer. */
export interface RawRequest {
  path: string;
  method: "GET" | "POST";
  body?: unknown;
  status: number;
}

/** What the Podman engine uses of the Docker-compatible one it stands beside (docker.ts). */
export interface CompatibleEngine {
  /** svc reaches the engine on its own machine (a unix socket) */
  local: boolean;
  inspectContainer(idOrName: string): Promise<ContainerInspect>;
  inspectImage(reference: string): Promise<ImageInspect | null>;
  removeContainer(id: string, options?: { force?: boolean }): Promise<void>;
  /** the compatible create body of a replacement (clone.ts) */
  replacementSpec(
    old: ContainerInspect,
    oldImage: ImageInspect | null,
    options: CreateOptions,
  ): Promise<ReplacementSpec>;
  /** the compatible create of that body, its networks connected */
  createFromSpec(name: string, spec: ReplacementSpec): Promise<string>;
  /** one request on the same connection, bounded as every call; a status in `ok` resolves undefined */
  request<T>(what: string, request: RawRequest, ok?: number[]): Promise<T | undefined>;
}

type Json = Record<string, any>;

export class PodmanEngine {
  /** the containers (old ids) whose replacement goes through libpod's create (`probe`) */
  private readonly libpodRoutes = new Set<string>();

  constructor(private readonly compat: CompatibleEngine) {}

  /** The annotations of a local image's manifest (buildah writes `org.opencontainers.image.base.*` there); null: no such image. */
  async imageAnnotations(id: string): Promise<Record<string, string> | null> {
    const image = await this.libpod(`/images/${encodeURIComponent(id)}/json`);
    return image ? stringEntries(image.Annotations) : null;
  }

  /** A pull's `error`, carrying Podman's reason when it is its signature policy (policy.json) refusing the image. */
  pullFailure(error: SvcError): SvcError {
    const refusal = signaturePolicyRefusal(error.message);
    return refusal === null ? error : new SvcError("engine", error.message, { cause: policyRefusalCause(refusal) });
  }

  async createReplacement(
    old: ContainerInspect,
    oldImage: ImageInspect | null,
    options: CreateOptions,
  ): Promise<string> {
    const libpod = await this.libpod(`/containers/${encodeURIComponent(old.Id)}/json`);
    const spec = podmanCreateBody(old, libpod, await this.compat.replacementSpec(old, oldImage, options));
    // Podman's own create where the probe found the compatible one would lose a setting (`probe`)
    const id =
      this.libpodRoutes.has(old.Id) && libpod
        ? await this.createLibpod(libpodCreateSpec(options.name, spec.createBody, libpod))
        : await this.compat.createFromSpec(options.name, spec);
    try {
      await this.keptByPodman(libpod, id);
    } catch (error) {
      // nothing lost to the caller: its error is thrown next; a container that cannot be removed either stays, created and never started, under the name it was given
      await this.compat.removeContainer(id, { force: true }).catch(() => {});
      throw error;
    }
    // the old container's route is used once: its replacement is probed on its own next time
    this.libpodRoutes.delete(old.Id);
    return id;
  }

  async unreplaceable(old: ContainerInspect): Promise<string | null> {
    // a unit's container is systemd's: whether svc restarts that unit is the systemd port's (systemd.ts)
    return unreplaceableReason(old, (await this.ownUnitLabel(old)) === null) ?? (await this.probe(old));
  }

  /**
   * The unit that claims a container, and where its manager is: on svc's own machine (a unix
   * socket), the system manager for a rootful Podman, the user's for a rootless one (libpod's info
   * says which).
   */
  async unitClaim(old: ContainerInspect): Promise<UnitClaim | null> {
    const unit = await this.ownUnitLabel(old);
    if (!unit) return null;
    const autoUpdate = old.Config?.Labels?.[AUTO_UPDATE_LABEL];
    if (!this.compat.local)
      return { unit, autoUpdate, remote: "svc reaches Podman over the network, not on Podman's machine" };
    const info = await this.libpod("/info");
    const scope = info?.host?.security?.rootless === true ? "user" : "system";
    return { unit, autoUpdate, scope, container: await this.unitContainer(old) };
  }

  /**
   * The container's PODMAN_SYSTEMD_UNIT label when it is its own: undefined without one, null when
   * its image carries the same label (a publisher's, as every image label is: it names no unit of
   * this machine). Podman sets the label on the container a unit runs; an image never needs it.
   * An image that cannot be read is an engine error, thrown: its label is not guessed.
   */
  private async ownUnitLabel(old: ContainerInspect): Promise<string | null | undefined> {
    const unit = old.Config?.Labels?.[SYSTEMD_UNIT_LABEL];
    if (!unit) return undefined;
    const image = await this.compat.inspectImage(old.Image);
    return image?.Config?.Labels?.[SYSTEMD_UNIT_LABEL] === unit ? null : unit;
  }

  /** The container's id, pid and its conmon's pid (libpod's inspect; the compatible one has no conmon), for the unit's proof. */
  private async unitContainer(old: ContainerInspect): Promise<UnitContainer> {
    const libpod = await this.libpod(`/containers/${encodeURIComponent(old.Id)}/json`);
    const number = (value: unknown) => (typeof value === "number" ? value : 0);
    return {
      id: old.Id,
      pid: number(libpod?.State?.Pid ?? old.State?.Pid),
      conmonPid: number(libpod?.State?.ConmonPid),
    };
  }

  /**
   * On Podman, before the old container is touched: a replacement on its own image, created
   * under another name and removed at once, shows what the compatible create would lose (the
   * settings Podman's CLI sets and the compatible create does not, such as the umask; a pod).
   * Where it loses something, Podman's own create is tried the same way: it is used for this
   * container when it keeps every libpod setting and makes what the compatible create made
   * (podman.ts: creationDifferences). Null when one of them will do; a probe that fails for another
   * reason says nothing (the update shows it).
   */
  private async probe(old: ContainerInspect): Promise<string | null> {
    const probeName = (route: string) => `svc-probe-${route}-${old.Id.slice(0, 12)}-${Date.now().toString(36)}`;
    // null on 404 only (the image gone); an engine error is thrown: the probe is not planned on no defaults
    const oldImage = await this.compat.inspectImage(old.Image);
    const libpod = await this.libpod(`/containers/${encodeURIComponent(old.Id)}/json`);
    if (!libpod) return null;
    // the replacement svc would make of the old container, under a probe's name
    const specNamed = async (name: string) =>
      podmanCreateBody(old, libpod, await this.compat.replacementSpec(old, oldImage, { name, image: old.Image }));
    const made = async (create: () => Promise<string>) => {
      const id = await create();
      try {
        return {
          compat: await this.compat.inspectContainer(id),
          libpod: await this.libpod(`/containers/${encodeURIComponent(id)}/json`),
        };
      } finally {
        // nothing lost: the probe's answer is read; a probe that cannot be removed stays, never started, named svc-probe-...
        await this.compat.removeContainer(id, { force: true }).catch(() => {});
      }
    };
    let compatible: Awaited<ReturnType<typeof made>> | null = null;
    let why: string;
    try {
      const spec = await specNamed(probeName("compat"));
      compatible = await made(() => this.compat.createFromSpec(probeName("compat"), spec));
      const lost = lostSettings(libpod, compatible.libpod ?? {});
      if (lost.length === 0) {
        this.libpodRoutes.delete(old.Id);
        return null;
      }
      why = `a replacement through Podman's Docker-compatible API would lose ${lost.join(", ")}`;
    } catch (error) {
      // the compatible create refuses it (uid maps): the old container is the reference
      why = `Podman's Docker-compatible API refuses a replacement (${(error as Error).message})`;
    }
    try {
      const spec = await specNamed(probeName("libpod"));
      const own = await made(() => this.createLibpod(libpodCreateSpec(probeName("libpod"), spec.createBody, libpod)));
      const ownLost = lostSettings(libpod, own.libpod ?? {});
      const changed = creationDifferences(compatible?.compat ?? old, own.compat, Boolean(libpod.Pod));
      if (ownLost.length === 0 && changed.length === 0) {
        this.libpodRoutes.add(old.Id);
        return null;
      }
      return `${why}, and through its own API ${[...ownLost, ...changed.map((path) => `${path} would change`)].join(", ")}: it is left as it is`;
    } catch (error) {
      return `${why}, and its own API refused it (${(error as Error).message}): it is left as it is`;
    }
  }

  /**
   * On Podman: the replacement, created and not started, compared with its old container in
   * libpod's inspect (podman.ts); anything libpod reports that the replacement lost fails it.
   */
  private async keptByPodman(old: Record<string, any> | null, newId: string): Promise<void> {
    const fresh = await this.libpod(`/containers/${encodeURIComponent(newId)}/json`);
    if (!old || !fresh)
      throw new SvcError("engine", `Podman's libpod API did not show container ${old ? newId : "the old container"}`);
    const lost = lostSettings(old, fresh);
    if (lost.length > 0)
      throw new LostSettings(
        `a replacement would lose ${lost.join(", ")} (Podman's Docker-compatible API cannot set ${lost.length > 1 ? "them" : "it"}): the old container is kept`,
      );
  }

  /** POST /libpod/containers/create: Podman's own create, its spec built by podman.ts. */
  private async createLibpod(spec: Record<string, unknown>): Promise<string> {
    const request = {
      path: `/${LIBPOD_API}/libpod/containers/create`,
      method: "POST",
      body: spec,
      status: 201,
    } as const;
    const what = `create container ${String(spec.name)} through Podman's libpod API`;
    return (await this.compat.request<{ Id: string }>(what, request))!.Id;
  }

  /** One libpod API answer (Podman's own API beside the compatible one): a GET, null on 404. */
  private async libpod(path: string): Promise<Json | null> {
    const request = { path: `/${LIBPOD_API}/libpod${path}`, method: "GET", status: 200 } as const;
    return (await this.compat.request<Json>(`read ${path} from Podman's libpod API`, request, [404])) ?? null;
  }
}

/** A Podman replacement that lost a setting libpod reports (podman.ts). */
class LostSettings extends SvcError {
  constructor(message: string) {
    super("engine", message);
  }
}

/** An engine's map of strings (annotations, labels), its other values and overlong ones dropped. */
function stringEntries(value: unknown): Record<string, string> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return {};
  return Object.fromEntries(
    Object.entries(value)
      .filter((e): e is [string, string] => typeof e[1] === "string" && e[0].length <= 256 && e[1].length <= 4096)
      .slice(0, 256),
  );
}
