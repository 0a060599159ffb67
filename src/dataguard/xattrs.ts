/**
 * The extended attributes of a stopped container's guarded mounts, for a copy through the engine's
 * archive endpoint (docs/data-guard.md, "The helper and extended attributes"; a copy in the engine
 * reads them itself, copier.ts). The engine's archive (GET) carries only `security.capability`,
 * while its extraction (PUT) applies every `SCHILY.xattr.*` record an archive carries: so a helper
 * (helper.ts) runs the reader script (xattr-script.ts) over the mounts, read-only, while the archive
 * streams, and a mount's archive that has some is rewritten once with them added (copy.ts; tar.ts,
 * `XattrMerger`); the restore stays the engine's own. The reader is created while the old
 * container still runs (`prepareXattrHelper`), so that the engine's create is out of the downtime.
 * Where that cannot be done (another architecture than the engine's, an engine that cannot import,
 * the helper failing), the copy is made without the attributes and says so (the manifest's
 * `xattrs_lost`).
 */
import { z } from "zod";
import { parseJsonBytes, readBounded } from "../core/bounded.ts";
import { toSvcError } from "../core/errors.ts";
import type { Engine } from "../engine/port.ts";
import { createHelper, guardMount, helperImageOf, READER, RUNTIME, removeHelper, runHelper } from "./helper.ts";
import { archiveParent, type GuardedMount } from "./mounts.ts";
import { firstFileOf, type XattrsByPath } from "./tar.ts";
import { MAX_ATTRIBUTE_BYTES } from "./xattr-script.ts";

const OUT = "/svc-helper/xattrs.json";
/** The longest a helper may take to read every attribute (it walks every file of the mounts). */
const HELPER_TIMEOUT_MS = 300_000;

const answerSchema = z.array(z.record(z.string(), z.record(z.string().max(255), z.string())));

export type XattrReading = { maps: XattrsByPath[] } | { problem: string };
/**
 * Reads the attributes of `mounts` (of a stopped container); one map per mount, by archive entry
 * name. `prepared`: the helper created for them before the stop (`prepareXattrHelper`).
 */
export type XattrReader = (engine: Engine, mounts: GuardedMount[], prepared?: PreparedHelper) => Promise<XattrReading>;

/** A helper created (not started) for a copy's mounts while the container still ran, or why there is none. */
export type PreparedHelper = Promise<{ id: string } | { problem: string }>;

/**
 * The helper of a copy of `mounts`, created while the container still runs (after the image,
 * imported on first use): the engine's create is then out of the downtime. The copy starts it
 * (`readXattrs`); a plan given up removes it (`discardXattrHelper`).
 */
export function prepareXattrHelper(engine: Engine, mounts: GuardedMount[]): PreparedHelper {
  return (async () => {
    const image = await helperImageOf(engine);
    if ("problem" in image) return image;
    try {
      return { id: await createReader(engine, mounts) };
    } catch (error) {
      return { problem: `the helper that reads them could not be created: ${toSvcError(error).message}` };
    }
  })();
}

/** Removes a prepared helper that will not run. */
export async function discardXattrHelper(engine: Engine, prepared: PreparedHelper | undefined): Promise<void> {
  const helper = await prepared;
  if (helper && "id" in helper) await removeHelper(engine, helper.id);
}

/** The helper reading the attributes of `mounts` through `engine` (the one prepared, else one made now). */
export const readXattrs: XattrReader = async (engine, mounts, prepared) => {
  if (mounts.length === 0) {
    await discardXattrHelper(engine, prepared);
    return { maps: [] };
  }
  const helper = await (prepared ?? prepareXattrHelper(engine, mounts));
  if ("problem" in helper) return helper;
  try {
    const answer = await runReader(engine, helper.id, mounts.length);
    return {
      maps: answer.map((paths, index) => {
        const { base } = archiveParent(mounts[index]!.destination);
        const map: XattrsByPath = new Map();
        for (const [rel, attributes] of Object.entries(paths))
          map.set(
            rel ? `${base}/${rel}` : base,
            Object.entries(attributes).map(([name, value]) => [name, Buffer.from(value, "base64")]),
          );
        return map;
      }),
    };
  } catch (error) {
    return { problem: `the helper that reads them failed: ${toSvcError(error).message}` };
  } finally {
    // not waited for: the copy is downtime, and a helper left is removed before the next is made
    void removeHelper(engine, helper.id);
  }
};

/** Creates (does not start) the reader over `mounts`, each read-only. */
async function createReader(engine: Engine, mounts: GuardedMount[]): Promise<string> {
  const image = await helperImageOf(engine);
  if ("problem" in image) throw new Error(image.problem);
  return createHelper(engine, image, {
    kind: "xattrs",
    cmd: [RUNTIME, READER, OUT, ...mounts.map((_, index) => `/guard/${index}`)],
    env: image.env,
    mounts: mounts.map((mount, index) => guardMount(mount, `/guard/${index}`, true)),
  });
}

/** Starts a prepared reader and returns its answer (one map per mount). */
async function runReader(engine: Engine, id: string, mounts: number): Promise<z.infer<typeof answerSchema>> {
  const { exitCode, said } = await runHelper(engine, id, HELPER_TIMEOUT_MS);
  if (exitCode !== 0) throw new Error(`exit code ${exitCode}${said ? `: ${said}` : ""}`);
  const cap = MAX_ATTRIBUTE_BYTES * 2;
  const body = (await engine.readArchive(id, OUT)) as Request["body"];
  const archive = await readBounded({ headers: new Headers(), body }, cap);
  if (archive.overCap) throw new Error(`its answer is larger than ${cap} bytes`);
  const answer = firstFileOf(archive.bytes);
  if (!answer) throw new Error("it wrote no answer");
  const parsed = parseJsonBytes(answer, answerSchema);
  if ("error" in parsed || parsed.value.length !== mounts) throw new Error("its answer is not one svc reads");
  return parsed.value;
}
