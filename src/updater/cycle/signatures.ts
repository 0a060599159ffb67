/**
 * Who signed what an update would run (the verify room, docs/verification.md): asked for each
 * target still to be replaced, for the digest the check found (the one then pulled; of an
 * unsigned index, the manifest the engine pulls from it), and for no other: a check that finds nothing new costs no request. An update the answer holds (a policy
 * enforced, a signer changed) is `held`, with the reason; every answer goes into the report.
 */
import { toSvcError } from "../../core/errors.ts";
import type { Platform } from "../../engine/port.ts";
import type { SignatureCheck } from "../../verify/index.ts";
import type { ProtocolContext } from "./context.ts";
import { finish, type TargetEntry, toReplace } from "./target.ts";

export async function checkSignatures(
  check: SignatureCheck | undefined,
  ctx: ProtocolContext,
  entries: Iterable<TargetEntry>,
  /** the platform the engine pulls an entry's new image for (an unsigned index: its manifest's signature) */
  platformOf?: (entry: TargetEntry) => Promise<Platform>,
): Promise<void> {
  if (!check) return;
  await Promise.all(
    toReplace(entries).map(async (entry) => {
      const ref = entry.verdict?.ref;
      const digest = entry.verdict?.newDigest;
      // a move to another local image (no_pull, a rollback) has no registry digest to ask about
      if (!ref || !digest || entry.policy.noPull) return;
      try {
        const platform = platformOf ? () => platformOf(entry) : undefined;
        const { report, hold } = await check.check(ref, digest, platform);
        entry.signature = report;
        if (hold !== null) {
          ctx.log.warn("update held by its signature", { container: entry.summary.name, reason: hold });
          finish(entry, "held", hold);
        }
      } catch (error) {
        // the room answers its failures as reasons; this is the last guard
        ctx.log.warn("signature check failed", { container: entry.summary.name, error: toSvcError(error).message });
      }
    }),
  );
}
