/**
 * What the page does on svc, one action at a time, each asked for first where it restarts
 * something (dialogs.ts): update, roll back, snooze, skip a version, accept a new signer. Progress is followed while an
 * action runs (polling.ts); its outcome is said, and what it changed loaded again (data.ts).
 */
import { apiOf, type CopyView } from "./api.ts";
import { load, sayFailure } from "./data.ts";
import { confirmDialog } from "./dialogs.ts";
import { dayTime, fromNow, outcomeWords, shortDigest, sizeWords } from "./format.ts";
import { schedulePoll } from "./polling.ts";
import { labelOf, notify, type Row, say, state } from "./store.ts";

/** Runs one action at a time; progress is followed while it runs, failures are said. */
export async function act(action: () => Promise<unknown>): Promise<void> {
  if (state.acting) return;
  state.acting = true;
  notify("acting");
  schedulePoll(500);
  try {
    await action();
  } catch (failure) {
    await sayFailure(failure);
  } finally {
    state.acting = false;
    // a cycle seen meanwhile was this action's own (cycles exclude each other), and the action
    // loaded what it changed: the next poll must not take its end for another's and check
    // again, which would refuse (409) the next click
    state.running = null;
    notify("acting");
  }
}

/** One update per host (this one, each peer), one after the other. */
export async function updateContainers(rows: Row[], what = rows.map(labelOf).join(", ")): Promise<void> {
  const services = rows.some((row) => row.kind === "service")
    ? " (a Swarm service: Swarm replaces its tasks with the service's own update settings)"
    : "";
  const ok = await confirmDialog.ask(
    "Update and restart?",
    `svc pulls the newer image and replaces ${what}: each container is stopped and started again${services}.`,
    "Update",
  );
  if (!ok) return;
  await act(async () => {
    say(`Updating ${what}...`);
    const lines: string[] = [];
    let ran = false;
    for (const peer of [...new Set(rows.map((row) => row.peer))]) {
      const names = rows.filter((row) => row.peer === peer).map((row) => row.name);
      const answer = await apiOf(peer).update(names);
      if ("queued" in answer) {
        // asked while a cycle runs there: it runs after it, and the page follows it until then
        const where = peer === null ? names.join(", ") : `${names.join(", ")} on ${peer}`;
        lines.push(`${where}: queued, updated once the cycle under way ends`);
        if (peer === null) {
          state.queued = [...state.queued.filter((q) => q.asked_at !== answer.queued.asked_at), answer.queued];
          notify("running");
        }
        continue;
      }
      ran = true;
      for (const c of answer.containers)
        lines.push(`${peer === null ? c.name : `${c.name} on ${peer}`}: ${outcomeWords(c)}`);
    }
    say(lines.length ? lines.join("; ") : "Nothing was updated.");
    if (ran) await load(undefined, true);
  });
}

export async function rollBack(c: Row): Promise<void> {
  const what =
    c.kind === "service"
      ? `Swarm rolls the service ${labelOf(c)} back to its previous spec (${shortDigest(c.previous_image_id ?? "")}); its tasks are replaced with the service's own update settings.`
      : `svc puts ${labelOf(c)} back on the image it ran before its last update (${shortDigest(c.previous_image_id ?? "")}); the container is stopped and started again.`;
  const copy = await copyToGoBackTo(c);
  let withData = false;
  if (copy) {
    const data = `With its data: what it wrote since ${dayTime(copy.created_at)} (${fromNow(copy.created_at)}) is replaced by the copy of version ${copy.version ?? "?"} taken then; its present data is copied first, so that this too can be undone.`;
    const choice = await confirmDialog.choose(
      "Roll back and restart?",
      `${what} ${data}`,
      "Put back",
      [
        ["image", "the image only"],
        ["data", "the image and its data"],
      ],
      "Roll back",
    );
    if (choice === null) return;
    withData = choice === "data";
  } else if (!(await confirmDialog.ask("Roll back and restart?", what, "Roll back"))) {
    return;
  }
  await act(async () => {
    say(`Rolling back ${labelOf(c)}${withData ? " with its data" : ""}...`);
    const result = await apiOf(c.peer).rollback(c.name, withData);
    say(
      `${labelOf(c)}: ${result.state === "updated" ? `back on its earlier image${result.data_guard?.restored ? " and its data" : ""}` : outcomeWords(result)}.`,
    );
    await load(undefined, true);
  });
}

/** The data guard's copy taken when this container left the image a rollback goes back to (a peer's: asked of the peer). */
async function copyToGoBackTo(c: Row) {
  if (c.kind === "service" || !c.previous_image_id) return undefined;
  const copies = await apiOf(c.peer)
    .dataCopies()
    // nothing lost: without the list the dialog offers the rollback alone, and the API decides what a rollback restores
    .catch(() => ({ copies: [] }));
  return copies.copies.find((copy) => copy.container === c.name && copy.image_id === c.previous_image_id);
}

/** Deletes one of the data guard's copies, on the host that keeps it (a peer's: through this svc). */
export async function deleteCopy(peer: string | null, copy: CopyView): Promise<void> {
  const what = peer === null ? copy.container : `${copy.container} on ${peer}`;
  const ok = await confirmDialog.ask(
    "Delete this copy?",
    `The copy of ${what}'s data taken ${dayTime(copy.created_at)} (${fromNow(copy.created_at)}), version ${copy.version ?? "unknown"}, ${sizeWords(copy.bytes)}, is deleted: a rollback with its data can no longer go back to it.`,
    "Delete",
  );
  if (!ok) return;
  await act(async () => {
    try {
      await apiOf(peer).deleteCopy(copy.container, copy.id);
      say(`${what}: the copy of its data (version ${copy.version ?? "unknown"}) is deleted.`);
    } finally {
      // deleted or not (gone meanwhile, being restored), the list says what is kept now
      notify("copies");
    }
  });
}

const SNOOZE_CHOICES: [string, string][] = [
  ["1d", "one day"],
  ["7d", "a week"],
  ["30d", "a month"],
  ["0s", "no snooze (lift it)"],
];

export async function snoozeContainer(c: Row): Promise<void> {
  const choice = await confirmDialog.choose(
    `Snooze ${labelOf(c)}`,
    "Newer images are still shown, but none is applied until the snooze ends.",
    "Snooze for",
    SNOOZE_CHOICES,
  );
  if (choice === null) return;
  await act(async () => {
    const result = await apiOf(c.peer).snooze(c.name, choice);
    say(
      result.until
        ? `${labelOf(c)}: updates snoozed until ${dayTime(result.until)} (${fromNow(result.until)}).`
        : `${labelOf(c)}: snooze lifted.`,
    );
    await load([c.name], true, c.peer);
  });
}

/** An update held for its signer: the new signer (or the lack of one) becomes the repository's, asked first. */
export async function acceptSigner(c: Row): Promise<void> {
  const ok = await confirmDialog.ask(
    "Accept the new signer?",
    `${c.signature?.reason ?? "The new image is signed by someone else."} Accepting makes it the signer svc expects for this repository from now on: updates signed by the former signer are held in turn. The update then runs as any other.`,
    "Accept",
  );
  if (!ok) return;
  await act(async () => {
    const result = await apiOf(c.peer).acceptSigner(c.name);
    say(`${labelOf(c)}: ${result.repository} is now expected to be signed by ${result.signer}.`);
    await load([c.name], true, c.peer);
  });
}

export function skipVersion(c: Row): Promise<void> {
  return act(
    async () => (
      await apiOf(c.peer).skip(c.name),
      say(`${labelOf(c)}: this version is skipped.`),
      await load([c.name], true, c.peer)
    ),
  );
}
