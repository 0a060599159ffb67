/**
 * `svc accept-signer NAME`: the signer an update of the container NAME is held for (a signer
 * changed, or no longer signed: docs/verification.md) becomes its repository's, so that the next
 * cycle updates it.
 *
 * As `svc rollback` does (rollback.ts), it hands the request to the service that runs on the same
 * state file (POST /v1/signers/accept, proven with the state folder's secret), whose memory of
 * the pins is the one the next cycle reads; with no such service it accepts in the state file
 * itself, under the state file's lease.
 */
import { z } from "zod";
import { type Config, logSettings } from "../config/index.ts";
import { SvcError } from "../core/errors.ts";
import { createLogging } from "../log/index.ts";
import { notificationSecrets } from "../notify/secrets.ts";
import { stateFile } from "../state/index.ts";
import type { AcceptedSigner } from "../updater/types.ts";
import { commandUpdater, handToOwner, leaseForCommand } from "./rollback.ts";

const AcceptedSchema = z.object({
  container: z.string().max(256),
  repository: z.string().max(512),
  signer: z.string().max(2048),
});

/** Accepting changes a pin only; a running cycle is all there is to wait for. */
const ACCEPT_TIMEOUT_MS = 60_000;

/** Exit 0 when the repository's pin is now the signer the held update carries. */
export async function runAcceptSigner(config: Config, name: string): Promise<number> {
  const logging = createLogging(logSettings(config), { secrets: notificationSecrets(config.notifications) });
  const log = logging.log.child("service");
  try {
    // a signer is remembered only in state_dir: without one, nothing outlives the process
    if (config.state_dir === undefined)
      throw new SvcError("usage", "svc accept-signer needs state_dir: the signers svc remembers are kept there");
    const file = stateFile(config.state_dir, config.scope);
    const handed =
      file === undefined
        ? undefined
        : await handToOwner(
            file,
            {
              path: `/v1/signers/accept?container=${encodeURIComponent(name)}`,
              instead: "accepting from here, between its cycles",
              timeoutMs: ACCEPT_TIMEOUT_MS,
              schema: AcceptedSchema,
              what: "an accepted signer",
            },
            log,
          );
    const accepted = handed ?? (await acceptHere(config, file, name, logging));
    const now =
      accepted.signer === "unsigned"
        ? "is now expected unsigned"
        : `is now expected to be signed by ${accepted.signer}`;
    logging.log
      .child("verify")
      .info(`${accepted.container}: ${accepted.repository} ${now}; the next check updates it`, {
        container: accepted.container,
        image: accepted.repository,
        signer: accepted.signer,
      });
    return 0;
  } finally {
    await logging.close();
  }
}

/** Accepts in the state file, holding its lease: the engine tells which repository NAME runs. */
async function acceptHere(
  config: Config,
  file: string | undefined,
  name: string,
  logging: ReturnType<typeof createLogging>,
): Promise<AcceptedSigner> {
  const release = file ? await leaseForCommand(file, "svc accept-signer", ACCEPT_TIMEOUT_MS, logging.log) : undefined;
  try {
    const updater = await commandUpdater(config, logging);
    return await updater.acceptSigner(name, "run_once");
  } finally {
    release?.();
  }
}
